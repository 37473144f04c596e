"""The Transformer's layers against torch's, its masks and positions, its decoding against teacher forcing, and its
key/value cache against decoding without one."""

import math
from itertools import pairwise

import pytest
import torch
from torch import nn

from attnlab import attention, selfattention, transformer
from attnlab.attention import padding_mask
from attnlab.seq2seq import DecoderBase, Encoded, Seq2Seq, beam_search
from attnlab.tasks.translation import (
    SOURCE_VOCAB,
    TARGET_VOCAB,
    attention_maps,
    evaluate_translation,
    make_batch,
    sample_examples,
    train_translation,
    translation_loss,
)
from attnlab.transformer import (
    DecoderLayer,
    EncoderLayer,
    LearnedPositions,
    Transformer,
    TransformerDecodeResult,
    causal_mask,
    project_keys_values,
    sinusoidal_positions,
)
from tests.seq2seq_data import V_SRC, V_TGT, source_batch, target_batch
from tests.tensors import randn

D, HEADS, D_FF = 12, 3, 20


def heads_for(positions: str) -> int:
    """ALiBi's encoder needs an even number of heads (half look back, half ahead)."""
    return 4 if positions == "alibi" else HEADS

# --- causal mask and positions --------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 2, 5, 9])
def test_causal_mask_matches_a_loop(size):
    mask = causal_mask(size)
    assert mask.dtype == torch.bool and mask.shape == (size, size)
    for i in range(size):
        for j in range(size):
            assert mask[i, j].item() == (j <= i)  # a query sees itself and the past


def test_causal_mask_is_the_package_mask_and_rejects_bad_sizes():
    assert causal_mask is attention.causal_mask
    with pytest.raises(ValueError, match="size must be > 0, got 0"):
        causal_mask(0)


def test_sinusoidal_positions_hand_computed_case():
    assert sinusoidal_positions is selfattention.sinusoidal_positions
    # d_model = 6: frequencies 1, 10000^(-2/6) = 1/21.544, 10000^(-4/6) = 1/464.16; sine even, cosine odd
    f1, f2 = 10_000 ** (-2 / 6), 10_000 ** (-4 / 6)
    t = 2
    expected = torch.tensor(
        [
            math.sin(t),
            math.cos(t),
            math.sin(t * f1),
            math.cos(t * f1),
            math.sin(t * f2),
            math.cos(t * f2),
        ]
    )
    table = sinusoidal_positions(3, 6)
    torch.testing.assert_close(table[2], expected)
    torch.testing.assert_close(
        table[0], torch.tensor([0.0, 1.0, 0.0, 1.0, 0.0, 1.0])
    )


def test_learned_positions():
    torch.manual_seed(0)
    positions = LearnedPositions(10, 4)
    assert positions(6).shape == (6, 4)
    torch.testing.assert_close(positions(3), positions.weight[:3])
    positions(5).sum().backward()
    assert (
        positions.weight.grad[:5].eq(1).all()
        and positions.weight.grad[5:].eq(0).all()
    )
    with pytest.raises(
        ValueError, match="length must be between 0 and max_len = 10, got 11"
    ):
        positions(11)


# --- layers against torch ---------------------------------------------------------------------------------------


def torch_mask(mask):
    return None if mask is None else ~mask  # torch: True = ignore


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.parametrize("masks", ["none", "padding", "causal", "both"])
def test_encoder_layer_matches_torch(norm_first, masks):
    torch.manual_seed(0)
    theirs = nn.TransformerEncoderLayer(
        D, HEADS, D_FF, dropout=0.0, batch_first=True, norm_first=norm_first
    )
    ours = EncoderLayer(D, HEADS, D_FF, norm_first=norm_first).load_torch_weights(
        theirs
    )
    x = randn(3, 6, D, seed=1)
    key_padding = (
        padding_mask(torch.tensor([6, 4, 2]), 6)
        if masks in ("padding", "both")
        else None
    )
    causal = causal_mask(6) if masks in ("causal", "both") else None
    out, weights = ours(x, key_padding_mask=key_padding, attn_mask=causal)
    expected = theirs(
        x, src_mask=torch_mask(causal), src_key_padding_mask=torch_mask(key_padding)
    )
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    assert weights.shape == (3, HEADS, 6, 6)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, HEADS, 6))
    if key_padding is not None:
        assert weights[2, :, :, 2:].eq(0).all()
    if causal is not None:
        assert weights[..., ~causal].eq(0).all()


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.parametrize("padded", [False, True], ids=["full", "padded-memory"])
def test_decoder_layer_matches_torch(norm_first, padded):
    torch.manual_seed(0)
    theirs = nn.TransformerDecoderLayer(
        D, HEADS, D_FF, dropout=0.0, batch_first=True, norm_first=norm_first
    )
    ours = DecoderLayer(D, HEADS, D_FF, norm_first=norm_first).load_torch_weights(
        theirs
    )
    x, memory = randn(3, 5, D, seed=1), randn(3, 7, D, seed=2)
    memory_padding = padding_mask(torch.tensor([7, 3, 1]), 7) if padded else None
    causal = causal_mask(5)
    out, self_weights, cross_weights = ours(
        x, memory, tgt_mask=causal, memory_key_padding_mask=memory_padding
    )
    expected = theirs(
        x,
        memory,
        tgt_mask=~causal,
        memory_key_padding_mask=torch_mask(memory_padding),
    )
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    assert self_weights.shape == (3, HEADS, 5, 5) and cross_weights.shape == (
        3,
        HEADS,
        5,
        7,
    )
    assert self_weights[..., ~causal].eq(0).all()
    if padded:
        assert (
            cross_weights[1, ..., 3:].eq(0).all()
            and cross_weights[2, ..., 1:].eq(0).all()
        )


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_decoder_layer_with_past_equals_the_full_causal_pass(norm_first):
    torch.manual_seed(0)
    layer = DecoderLayer(D, HEADS, D_FF, norm_first=norm_first)
    x, memory = randn(2, 6, D, seed=3), randn(2, 4, D, seed=4)
    full, _, full_cross = layer(x, memory, tgt_mask=causal_mask(6))
    for t in range(6):
        step, _, cross = layer(x[:, t : t + 1], memory, past=x[:, :t])
        torch.testing.assert_close(step[:, 0], full[:, t], atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(
            cross[:, :, 0], full_cross[:, :, t], atol=1e-6, rtol=1e-5
        )


def test_torch_layers_with_other_settings_are_refused():
    with pytest.raises(ValueError, match="norm_first = False, the torch layer True"):
        EncoderLayer(D, HEADS, D_FF).load_torch_weights(
            nn.TransformerEncoderLayer(
                D, HEADS, D_FF, batch_first=True, norm_first=True
            )
        )
    with pytest.raises(ValueError, match="activation='relu'"):
        DecoderLayer(D, HEADS, D_FF).load_torch_weights(
            nn.TransformerDecoderLayer(
                D, HEADS, D_FF, batch_first=True, activation="gelu"
            )
        )
    with pytest.raises(ValueError, match="dim_feedforward = 8"):
        EncoderLayer(D, HEADS, D_FF).load_torch_weights(
            nn.TransformerEncoderLayer(D, HEADS, 8, batch_first=True)
        )
    with pytest.raises(TypeError, match="TransformerDecoderLayer"):
        DecoderLayer(D, HEADS, D_FF).load_torch_weights(nn.Linear(2, 2))


# --- bad input --------------------------------------------------------------------------------------------------


def test_layers_reject_bad_shapes_with_clear_messages():
    encoder_layer, decoder_layer = (
        EncoderLayer(D, HEADS, D_FF),
        DecoderLayer(D, HEADS, D_FF),
    )
    with pytest.raises(
        ValueError, match=r"x must have shape \(batch, T, d_model\), got \(6, 12\)"
    ):
        encoder_layer(randn(6, D))
    with pytest.raises(
        ValueError,
        match=r"x must have shape \(batch, T, d_model\) with d_model = 12, got \(2, 6, 8\)",
    ):
        encoder_layer(randn(2, 6, 8))
    with pytest.raises(
        ValueError,
        match=r"memory must have shape \(batch, S, d_model\) with batch = 2",
    ):
        decoder_layer(randn(2, 5, D), randn(3, 4, D))
    with pytest.raises(
        ValueError,
        match=r"key_padding_mask must have shape \(batch, Tk\) = \(2, 4\)",
    ):
        decoder_layer(
            randn(2, 5, D),
            randn(2, 4, D),
            memory_key_padding_mask=torch.ones(2, 5, dtype=torch.bool),
        )
    with pytest.raises(
        ValueError, match=r"attn_mask must have shape \(Tq, Tk\) = \(5, 5\)"
    ):
        decoder_layer(randn(2, 5, D), randn(2, 4, D), tgt_mask=causal_mask(4))
    with pytest.raises(ValueError, match="d_model must be divisible by n_heads"):
        EncoderLayer(10, 3, D_FF)
    with pytest.raises(ValueError, match="positions must be one of"):
        Transformer(V_SRC, V_TGT, positions="rotary")


def test_model_rejects_bad_decoding_arguments():
    model = Transformer(V_SRC, V_TGT, d_model=D, n_heads=HEADS)
    src, mask = source_batch([4, 2])
    with pytest.raises(ValueError, match="either targets"):
        model.decoder.decode(model.encode(src, mask))
    with pytest.raises(
        ValueError, match=r"targets must have shape \(batch, T\) with batch = 2"
    ):
        model(src, mask, target_batch(3, 4))
    with pytest.raises(ValueError, match="src_mask must be True on a prefix"):
        model(src, mask.flip(-1), target_batch(2, 4))
    model.decoder.shown_head = (5, 0)
    with pytest.raises(ValueError, match=r"shown_head must be \(layer, head\)"):
        model(src, mask, target_batch(2, 4))


# --- the model --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.parametrize("positions", ["sinusoidal", "learned", "alibi"])
def test_greedy_decoding_equals_teacher_forcing_on_its_own_output(
    norm_first, positions
):
    torch.manual_seed(0)
    model = Transformer(
        V_SRC,
        V_TGT,
        d_model=D,
        n_heads=heads_for(positions),
        n_layers=2,
        norm_first=norm_first,
        positions=positions,
    ).eval()
    src, mask = source_batch([5, 3, 1])
    with torch.no_grad():
        greedy = model.greedy(src, mask, max_len=8)
        forced = model(src, mask, greedy.tokens)
    assert isinstance(greedy, TransformerDecodeResult) and greedy.tokens.shape == (
        3,
        greedy.logits.shape[1],
    )
    words = (
        greedy.tokens != model.decoder.pad_id
    )  # up to and including each row's <eos>
    assert torch.equal(forced.tokens[words], greedy.tokens[words])
    torch.testing.assert_close(
        forced.logits[words], greedy.logits[words], atol=1e-5, rtol=1e-5
    )
    for layer_forced, layer_greedy in zip(
        forced.cross_weights, greedy.cross_weights, strict=True
    ):
        assert layer_forced.shape == (
            3,
            heads_for(positions),
            greedy.tokens.shape[1],
            5,
        )
        torch.testing.assert_close(
            layer_forced.transpose(1, 2)[words],
            layer_greedy.transpose(1, 2)[words],
            atol=1e-5,
            rtol=1e-5,
        )


def test_teacher_forcing_does_not_look_ahead():
    torch.manual_seed(0)
    model = Transformer(V_SRC, V_TGT, d_model=D, n_heads=HEADS).eval()
    src, mask = source_batch([5, 4])
    targets = target_batch(2, 6)
    changed = targets.clone()
    changed[:, 3:] = 1 + (
        changed[:, 3:] % (V_TGT - 1)
    )  # change words 3..5: logits 0..3 read only words < 3
    with torch.no_grad():
        a, b = model(src, mask, targets).logits, model(src, mask, changed).logits
    torch.testing.assert_close(a[:, :4], b[:, :4])
    assert not torch.allclose(a[:, 4:], b[:, 4:])


def test_padding_does_not_change_a_sentence():
    torch.manual_seed(0)
    model = Transformer(V_SRC, V_TGT, d_model=D, n_heads=HEADS).eval()
    src, mask = source_batch([6, 3])
    targets = target_batch(2, 4)
    with torch.no_grad():
        alone = model(src[1:, :3], mask[1:, :3], targets[1:])
        together = model(src, mask, targets)
    torch.testing.assert_close(
        together.logits[1], alone.logits[0], atol=1e-5, rtol=1e-5
    )
    assert together.cross_weights[0][1, ..., 3:].eq(0).all()


def test_beam_search_of_width_one_is_greedy():
    torch.manual_seed(0)
    model = Transformer(V_SRC, V_TGT, d_model=D, n_heads=HEADS).eval()
    src, mask = source_batch([5, 3, 4])
    with torch.no_grad():
        greedy = model.greedy(src, mask, max_len=7).tokens
        beam, _ = model.beam_search(src, mask, 1, max_len=7)
    assert torch.equal(beam[:, : greedy.shape[1]], greedy)


def test_weights_are_per_layer_and_head_and_the_shown_map_follows_shown_head():
    torch.manual_seed(0)
    model = Transformer(V_SRC, V_TGT, d_model=D, n_heads=HEADS, n_layers=2).eval()
    src, mask = source_batch([5, 3])
    targets = target_batch(2, 4)
    result = model(src, mask, targets)
    assert len(result.cross_weights) == 2 and result.cross_weights[1].shape == (
        2,
        HEADS,
        4,
        5,
    )
    torch.testing.assert_close(result.weights, result.cross_weights[-1].mean(1))
    model.decoder.shown_head = (0, 2)
    torch.testing.assert_close(
        model(src, mask, targets).weights, result.cross_weights[0][:, 2]
    )


def test_gradients_match_finite_differences():
    torch.manual_seed(0)
    mask = padding_mask(torch.tensor([4, 2]), 4)
    for norm_first in (False, True):
        layer = DecoderLayer(6, 2, 8, norm_first=norm_first).double()
        x, memory = (
            randn(2, 3, 6, seed=5, dtype=torch.float64),
            randn(2, 4, 6, seed=6, dtype=torch.float64),
        )
        x.requires_grad_(True)
        memory.requires_grad_(True)
        assert torch.autograd.gradcheck(
            lambda a, b, layer=layer: layer(
                a, b, tgt_mask=causal_mask(3), memory_key_padding_mask=mask
            )[0],
            (x, memory),
        )
        encoder_layer = EncoderLayer(6, 2, 8, norm_first=norm_first).double()
        assert torch.autograd.gradcheck(
            lambda a, layer=encoder_layer: layer(a, key_padding_mask=mask[:, :3])[0],
            (x,),
        )


def test_every_parameter_gets_a_gradient_from_the_translation_loss():
    torch.manual_seed(0)
    model = Transformer(
        len(SOURCE_VOCAB),
        len(TARGET_VOCAB),
        d_model=16,
        n_heads=2,
        norm_first=True,
        positions="learned",
        max_len=64,
    )
    batch = make_batch(sample_examples(4, 5, 9, seed=0))
    translation_loss(model, batch).backward()
    missing = [
        name
        for name, p in model.named_parameters()
        if p.grad is None or not p.grad.abs().sum() > 0
    ]
    # the learned positions beyond the longest sentence, and the embedding of unused words, get no gradient
    assert all("embedding" in name or "learned" in name for name in missing), missing


def test_fits_the_translation_helpers():
    torch.manual_seed(0)
    model = Transformer(
        len(SOURCE_VOCAB),
        len(TARGET_VOCAB),
        d_model=16,
        n_heads=2,
        pad_id=TARGET_VOCAB.pad,
        bos_id=TARGET_VOCAB.bos,
        eos_id=TARGET_VOCAB.eos,
    )
    assert isinstance(model, Seq2Seq)
    history = train_translation(model, 3, batch_size=8, max_len=12, eval_every=3)
    assert len(history.loss) == 3 and "val_accuracy" in history.evals[-1]
    examples = sample_examples(5, 5, 10, seed=1)
    report = evaluate_translation(model, examples)
    assert len(report.predictions) == 5
    maps, accuracy = attention_maps(model, examples)
    assert [m.shape for m in maps] == [
        (len(e.target), len(e.source)) for e in examples
    ]
    assert 0.0 <= accuracy <= 1.0


# --- the key/value cache ----------------------------------------------------------------------------------------


def small_model(norm_first=False, positions="sinusoidal", n_layers=2):
    torch.manual_seed(0)
    return Transformer(
        V_SRC,
        V_TGT,
        d_model=D,
        n_heads=heads_for(positions),
        n_layers=n_layers,
        norm_first=norm_first,
        positions=positions,
    ).eval()


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_decoder_layer_step_equals_the_full_causal_pass(norm_first):
    torch.manual_seed(0)
    layer = DecoderLayer(D, HEADS, D_FF, norm_first=norm_first)
    x, memory = randn(3, 6, D, seed=3), randn(3, 4, D, seed=4)
    memory_padding = padding_mask(torch.tensor([4, 2, 1]), 4)
    full, _, full_cross = layer(
        x, memory, tgt_mask=causal_mask(6), memory_key_padding_mask=memory_padding
    )
    cache = layer.init_cache(memory)
    for t in range(6):
        out, cache, cross = layer.step(x[:, t : t + 1], cache, memory_padding)
        torch.testing.assert_close(out[:, 0], full[:, t], atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(
            cross[:, :, 0], full_cross[:, :, t], atol=1e-6, rtol=1e-5
        )
        assert cross[2, :, 0, 1:].eq(0).all()  # padding of the memory gets no weight


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.parametrize("positions", ["sinusoidal", "learned", "alibi"])
def test_cached_and_uncached_greedy_decoding_agree(norm_first, positions):
    model = small_model(norm_first, positions)
    src, mask = source_batch([5, 3, 1, 4])  # sources of different lengths, padded
    with torch.no_grad():
        cached = model.greedy(src, mask, max_len=9)
        uncached = model.greedy(src, mask, max_len=9, cache=False)
        by_decode = model.decoder.decode(model.encode(src, mask), max_len=9)
    assert isinstance(uncached, TransformerDecodeResult)
    assert torch.equal(cached.tokens, uncached.tokens) and torch.equal(
        cached.tokens, by_decode.tokens
    )
    assert (
        cached.logits.shape
        == uncached.logits.shape
        == (4, cached.tokens.shape[1], V_TGT)
    )
    torch.testing.assert_close(cached.logits, uncached.logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(
        cached.weights, uncached.weights, atol=1e-5, rtol=1e-5
    )
    for layer_cached, layer_uncached in zip(
        cached.cross_weights, uncached.cross_weights, strict=True
    ):
        torch.testing.assert_close(
            layer_cached, layer_uncached, atol=1e-5, rtol=1e-5
        )


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.parametrize("positions", ["sinusoidal", "learned", "alibi"])
def test_cached_steps_equal_teacher_forcing_on_the_same_prefix(
    norm_first, positions
):
    model = small_model(norm_first, positions)
    decoder = model.decoder
    src, mask = source_batch([6, 2, 4])
    targets = target_batch(3, 7)
    with torch.no_grad():
        encoded = model.encode(src, mask)
        forced = decoder.decode(encoded, targets=targets)
        state = decoder.decode_init(encoded)
        previous = torch.full((3,), decoder.bos_id)
        for t in range(targets.shape[1]):
            logits, state, cross = decoder.step(state, previous)
            torch.testing.assert_close(
                logits, forced.logits[:, t], atol=1e-5, rtol=1e-5
            )
            for layer_step, layer_forced in zip(
                cross, forced.cross_weights, strict=True
            ):
                torch.testing.assert_close(
                    layer_step, layer_forced[:, :, t], atol=1e-5, rtol=1e-5
                )
            # teacher forcing: the true word, whatever the model chose
            previous = targets[:, t]


def test_the_cache_grows_by_one_position_per_step():
    model = small_model(n_layers=3)
    decoder = model.decoder
    src, mask = source_batch([5, 3])
    with torch.no_grad():
        encoded = model.encode(src, mask)
        state = decoder.decode_init(encoded)
        first = state["cache"]
        x = torch.full((2,), decoder.bos_id)
        for t in range(1, 6):
            assert all(
                c["keys"].shape == c["values"].shape == (2, HEADS, t - 1, D // HEADS)
                for c in state["cache"]
            )
            logits, state, _ = decoder.step(state, x)
            x = logits.argmax(-1)
            assert len(state["cache"]) == 3
            for layer_cache, layer_first in zip(state["cache"], first, strict=True):
                assert (
                    layer_cache["keys"].shape
                    == layer_cache["values"].shape
                    == (2, HEADS, t, D // HEADS)
                )
                assert (
                    layer_cache["memory_keys"].shape
                    == layer_cache["memory_values"].shape
                    == (2, HEADS, 5, D // HEADS)
                )
                # the memory's keys and values are the same tensors at every step, never projected again
                assert layer_cache["memory_keys"] is layer_first["memory_keys"]
                assert layer_cache["memory_values"] is layer_first["memory_values"]


def count_calls(module, calls, name):
    def hook(_module, inputs, _output):
        calls.append((name, tuple(inputs[0].shape)))

    return module.register_forward_hook(hook)


def test_the_cross_attention_projects_the_source_once():
    model = small_model()
    decoder = model.decoder
    src, mask = source_batch([5, 3, 2])
    calls = []
    handles = [
        count_calls(getattr(layer.cross_attention, proj), calls, (i, proj))
        for i, layer in enumerate(decoder.layers)
        for proj in ("key_proj", "value_proj")
    ]
    try:
        with torch.no_grad():
            encoded = model.encode(src, mask)
            result = decoder.decode(encoded, max_len=8)
            state = decoder.decode_init(encoded)
    finally:
        for handle in handles:
            handle.remove()
    assert result.tokens.shape[1] > 1
    # one greedy decoding and one more decode_init: each projection ran twice, on the whole source each time
    assert sorted(calls) == sorted(
        2
        * [
            ((i, proj), (3, 5, D))
            for i in range(2)
            for proj in ("key_proj", "value_proj")
        ]
    )
    for layer, layer_cache in zip(decoder.layers, state["cache"], strict=True):
        keys, values = project_keys_values(layer.cross_attention, encoded.states)
        torch.testing.assert_close(layer_cache["memory_keys"], keys)
        torch.testing.assert_close(layer_cache["memory_values"], values)


def test_a_cached_step_feeds_one_query_and_all_keys_so_far_to_the_self_attention(
    monkeypatch,
):
    model = small_model()
    decoder = model.decoder
    src, mask = source_batch([5, 3])
    seen = []
    inner = transformer.attend_projected

    def recording(attention_module, query, keys, values, key_padding_mask=None, **kw):
        if any(attention_module is layer.self_attention for layer in decoder.layers):
            seen.append((tuple(query.shape), tuple(keys.shape)))
        return inner(attention_module, query, keys, values, key_padding_mask, **kw)

    monkeypatch.setattr(transformer, "attend_projected", recording)
    projected = []
    handles = [
        count_calls(getattr(layer.self_attention, proj), projected, proj)
        for layer in decoder.layers
        for proj in ("query_proj", "key_proj", "value_proj")
    ]
    try:
        with torch.no_grad():
            state = decoder.decode_init(model.encode(src, mask))
            x = torch.full((2,), decoder.bos_id)
            for t in range(1, 6):
                seen.clear()
                projected.clear()
                logits, state, _ = decoder.step(state, x)
                x = logits.argmax(-1)
                # every layer: queries (batch, 1, d), and keys (batch, heads, t, d / heads),
                # that is (batch, t, d) with the heads joined
                assert seen == 2 * [((2, 1, D), (2, HEADS, t, D // HEADS))]
                # only the new position is projected, never the prefix again
                assert [shape for _, shape in projected] == 6 * [(2, 1, D)]
            projected.clear()
            decoder.step_uncached(
                model.encode(src, mask), torch.full((2, 5), decoder.bos_id)
            )
            # the uncached step projects all 5 positions again
            assert [shape for _, shape in projected] == 6 * [(2, 5, D)]
    finally:
        for handle in handles:
            handle.remove()


def test_the_work_of_a_cached_step_grows_linearly_and_of_an_uncached_one_faster():
    from torch.utils.flop_counter import FlopCounterMode

    model = small_model()
    decoder = model.decoder
    src, mask = source_batch([5, 3, 4])
    cached, uncached = [], []
    with torch.no_grad():
        encoded = model.encode(src, mask)
        state = decoder.decode_init(encoded)
        x = torch.full((3,), decoder.bos_id)
        previous = x[:, None]
        for _ in range(6):
            with FlopCounterMode(display=False) as counter:
                logits, state, _ = decoder.step(state, x)
            cached.append(counter.get_total_flops())
            with FlopCounterMode(display=False) as counter:
                decoder.step_uncached(encoded, previous)
            uncached.append(counter.get_total_flops())
            x = logits.argmax(-1)
            previous = torch.cat([previous, x[:, None]], dim=1)
    # one more key per step: per layer and sentence, d multiply-adds for the scores and d for the weighted sum
    # of the values (2 flops each); everything else costs the same at every step
    per_key = 2 * 2 * len(decoder.layers) * 3 * D
    assert [b - a for a, b in pairwise(cached)] == 5 * [per_key]
    growth = [b - a for a, b in pairwise(uncached)]
    # the prefix is recomputed: the work grows quadratically in t
    assert all(b > a for a, b in pairwise(growth))
    assert all(c < u for c, u in zip(cached[1:], uncached[1:], strict=True))


class Recomputing(DecoderBase):
    """The Transformer's decoder without a cache: the state is the words read so far, and every step re-runs the
    prefix (step_uncached)."""

    def __init__(self, decoder):
        super().__init__(
            decoder.vocab_size,
            pad_id=decoder.pad_id,
            bos_id=decoder.bos_id,
            eos_id=decoder.eos_id,
        )
        self.inner = decoder

    def decode_init(self, encoded):
        previous = torch.zeros(encoded.states.shape[0], 0, dtype=torch.long)
        return {
            "states": encoded.states,
            "final": encoded.final,
            "mask": encoded.mask,
            "previous": previous,
        }

    def decode_step(self, state, x):
        previous = torch.cat([state["previous"], x[:, None]], dim=1)
        encoded = Encoded(state["states"], state["final"], state["mask"])
        logits, cross = self.inner.step_uncached(encoded, previous)
        return (
            logits,
            {**state, "previous": previous},
            self.inner.shown([w[:, :, None] for w in cross])[:, 0],
        )


@pytest.mark.parametrize("beam_size", [2, 3])
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_beam_search_reorders_the_cache_with_the_beams(beam_size, norm_first):
    model = small_model(norm_first)
    src, mask = source_batch([5, 3, 4, 1], seed=2)
    with torch.no_grad():
        encoded = model.encode(src, mask)
        tokens, scores = beam_search(model.decoder, encoded, beam_size, max_len=8)
        ref_tokens, ref_scores = beam_search(
            Recomputing(model.decoder), encoded, beam_size, max_len=8
        )
        forced = model.log_prob(src, mask, tokens)
    assert torch.equal(tokens, ref_tokens)
    torch.testing.assert_close(scores, ref_scores, atol=1e-5, rtol=1e-5)
    # the score is that of the words returned
    torch.testing.assert_close(scores, forced, atol=1e-5, rtol=1e-5)


def test_decoder_layer_step_rejects_more_than_one_position():
    layer = DecoderLayer(D, HEADS, D_FF)
    cache = layer.init_cache(randn(2, 4, D))
    with pytest.raises(
        ValueError,
        match=r"x must have shape \(batch, 1, d_model\) with batch = 2 like the cache",
    ):
        layer.step(randn(2, 3, D), cache)
    with pytest.raises(
        ValueError,
        match=r"x must have shape \(batch, 1, d_model\) with batch = 2 like the cache",
    ):
        layer.step(randn(3, 1, D), cache)


def test_attention_masks_are_the_masks_the_model_combines():
    """The three masks the chapter's exercise asks for equal what MultiHeadAttention joins from the padding and causal
    masks that the encoder and decoder layers pass it."""
    from attnlab.selfattention import MultiHeadAttention
    from attnlab.transformer import attention_masks, causal_mask

    src_mask = torch.tensor([[True, True, True, False], [True, True, False, False]])
    encoder, decoder, cross = attention_masks(src_mask, 3)
    mha = MultiHeadAttention(8, 2)
    joined = {
        "encoder": mha.combined_mask(2, 4, 4, src_mask, None),
        "decoder": mha.combined_mask(2, 3, 3, None, causal_mask(3)),
        "cross": mha.combined_mask(2, 3, 4, src_mask, None),
    }
    for mine, (name, theirs) in zip((encoder, decoder, cross), joined.items(), strict=True):
        assert torch.equal(mine, theirs[:, 0].expand_as(mine)), name
    assert torch.equal(decoder[1], torch.tensor([[True, False, False], [True, True, False], [True, True, True]]))
    assert cross.shape == (2, 3, 4) and not cross[1, :, 2:].any()


@pytest.mark.parametrize(("d", "heads", "d_ff"), [(96, 2, 192), (96, 4, 192), (16, 4, 32), (8, 1, 40)])
def test_layer_parameter_counts_are_chapter_8s_formulas_whatever_the_heads(d, heads, d_ff):
    """The worked answer of ex-tf-layer-parameters: 4d^2 + 2 d d_ff + d_ff + 9d for an encoder layer,
    8d^2 + 2 d d_ff + d_ff + 15d for a decoder layer; the number of heads does not enter."""
    encoder, decoder = EncoderLayer(d, heads, d_ff), DecoderLayer(d, heads, d_ff)
    assert sum(p.numel() for p in encoder.parameters()) == 4 * d * d + 2 * d * d_ff + d_ff + 9 * d
    assert sum(p.numel() for p in decoder.parameters()) == 8 * d * d + 2 * d * d_ff + d_ff + 15 * d
    if (d, d_ff) == (96, 192):  # the numbers of the answer
        assert sum(p.numel() for p in encoder.parameters()) == 74_784
        assert sum(p.numel() for p in decoder.parameters()) == 112_224
