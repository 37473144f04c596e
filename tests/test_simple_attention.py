"""The decoders with simple and parameterized attention, against the slides' equations written out by hand."""

import pytest
import torch

from attnlab.seq2seq import Encoded
from attnlab.simple_attention import (
    ParameterizedAttentionDecoder,
    SimpleAttentionDecoder,
    slide_attention_model,
)
from attnlab.tasks.reversal import (
    REVERSAL_WORDS,
    reversal_batches,
    reversal_example,
    sample_reversals,
)
from attnlab.tasks.translation import DICTIONARY, TARGET_VOCAB, make_batch
from tests.tensors import randn


def encoded(batch=2, length=5, size=6, lengths=(5, 3), seed=0, dtype=torch.float32):
    mask = torch.arange(length) < torch.tensor(lengths)[:, None]
    states = randn(batch, length, size, seed=seed, dtype=dtype).masked_fill(~mask[..., None], 0.0)
    return Encoded(states, randn(batch, size, seed=seed + 1, dtype=dtype), mask)


def test_simple_step_is_the_formula_of_the_slides():
    torch.manual_seed(0)
    decoder = SimpleAttentionDecoder(10, 4, 6)
    enc = encoded()
    state = decoder.decode_init(enc)
    x = torch.tensor([3, 7])
    logits, new_state, a = decoder.decode_step(state, x)
    y_d = decoder.rnn(decoder.embedding(x), torch.tanh(decoder.init(enc.final)))  # y_d(t) from y_d(t-1), y(t-1)
    for b, n in enumerate([5, 3]):
        Y_e = enc.states[b, :n].T  # columns y_e(1) ... y_e(n), as on the slides
        a_b = torch.softmax(Y_e.T @ y_d[b], dim=0)
        y_a = Y_e @ a_b
        torch.testing.assert_close(a[b, :n], a_b)
        assert (a[b, n:] == 0).all()
        torch.testing.assert_close(logits[b], decoder.output.weight @ torch.cat([y_d[b], y_a]) + decoder.output.bias)
    torch.testing.assert_close(new_state["hidden"], y_d)


def test_parameterized_step_is_the_formula_of_the_slides():
    torch.manual_seed(1)
    decoder = ParameterizedAttentionDecoder(10, 4, 6, 8, 5)
    enc = encoded(size=8)
    state = decoder.decode_init(enc)
    x = torch.tensor([2, 9])
    logits, _, a = decoder.decode_step(state, x)
    y_d = decoder.rnn(decoder.embedding(x), torch.tanh(decoder.init(enc.final)))
    W_q, W_k, W_v = (p.weight for p in (decoder.projected.query_proj, decoder.projected.key_proj,
                                        decoder.projected.value_proj))
    for b, n in enumerate([5, 3]):
        Y_e = enc.states[b, :n].T
        a_b = torch.softmax((W_k @ Y_e).T @ (W_q @ y_d[b]), dim=0)
        y_a = (W_v @ Y_e) @ a_b
        torch.testing.assert_close(a[b, :n], a_b)
        torch.testing.assert_close(logits[b], decoder.output.weight @ torch.cat([y_d[b], y_a]) + decoder.output.bias)


def test_identity_projections_turn_parameterized_into_simple():
    torch.manual_seed(2)
    simple = SimpleAttentionDecoder(12, 4, 6)
    parameterized = ParameterizedAttentionDecoder(12, 4, 6, 6, 6)
    parameterized.load_state_dict({**simple.state_dict(), **{f"projected.{n}.weight": torch.eye(6) for n in
                                                            ("query_proj", "key_proj", "value_proj")}})
    enc = encoded()
    targets = torch.tensor([[4, 5, 2], [6, 2, 0]])
    a, b = simple.decode(enc, targets=targets), parameterized.decode(enc, targets=targets)
    torch.testing.assert_close(a.logits, b.logits)
    torch.testing.assert_close(a.weights, b.weights)


@pytest.mark.parametrize("parameterized", [False, True])
def test_padding_changes_nothing(parameterized):
    torch.manual_seed(3)
    model = slide_attention_model(parameterized, hidden_size=8, embed_size=4).eval()
    batch = make_batch(sample_reversals(3, 2, 6, seed=1))
    full = model(batch.src, batch.src_mask, batch.tgt)
    for i in range(3):
        n, t = int(batch.src_mask[i].sum()), int(batch.tgt_mask[i].sum())
        alone = model(batch.src[i:i + 1, :n], batch.src_mask[i:i + 1, :n], batch.tgt[i:i + 1, :t])
        torch.testing.assert_close(alone.logits[0], full.logits[i, :t], atol=1e-5, rtol=0)
        torch.testing.assert_close(alone.weights[0], full.weights[i, :t, :n], atol=1e-6, rtol=0)
        assert (full.weights[i, :, n:] == 0).all()


@pytest.mark.parametrize("parameterized", [False, True])
def test_greedy_and_beam_search_run(parameterized):
    torch.manual_seed(4)
    model = slide_attention_model(parameterized, hidden_size=8, embed_size=4, cell="lstm").eval()
    batch = make_batch(sample_reversals(2, 3, 5, seed=2))
    assert model.greedy(batch.src, batch.src_mask, max_len=7).tokens.shape[0] == 2
    tokens, scores = model.beam_search(batch.src, batch.src_mask, 3, max_len=7)
    assert tokens.shape[0] == 2 and torch.isfinite(scores).all()


@pytest.mark.parametrize("parameterized", [False, True])
def test_gradcheck_through_the_decoder(parameterized):
    torch.manual_seed(5)
    decoder = (ParameterizedAttentionDecoder(7, 3, 4, 4, 3) if parameterized else SimpleAttentionDecoder(7, 3, 4))
    decoder = decoder.double()
    enc = encoded(length=4, size=4, lengths=(4, 2), dtype=torch.float64)
    states = enc.states.clone().requires_grad_()
    targets = torch.tensor([[3, 4, 2], [5, 2, 0]])

    def run(states):
        return decoder.decode(Encoded(states, enc.final, enc.mask), targets=targets).logits

    assert torch.autograd.gradcheck(run, (states,))


def test_errors():
    with pytest.raises(ValueError, match=r"encoder states must have shape \(batch, S, 6\), got \(2, 5, 8\)"):
        SimpleAttentionDecoder(10, 4, 6).decode_init(encoded(size=8))
    with pytest.raises(ValueError, match="cell must be one of"):
        SimpleAttentionDecoder(10, 4, 6, cell="rnn")
    with pytest.raises(ValueError, match="odd 7"):
        slide_attention_model(True, hidden_size=7)
    with pytest.raises(ValueError, match="d_model is only used with parameterized=True"):
        slide_attention_model(False, d_model=8)

    class Scaled(SimpleAttentionDecoder):
        pass

    with pytest.raises(ValueError, match="the parameterized model has none, got simple_decoder = Scaled"):
        slide_attention_model(True, simple_decoder=Scaled)
    assert isinstance(slide_attention_model(False, simple_decoder=Scaled).decoder, Scaled)


# --- the reversal task ------------------------------------------------------------------------------------------


def test_reversal_example_reverses_and_translates():
    a, b, c = REVERSAL_WORDS[:3]
    example = reversal_example([a, b, b, c])
    assert example.target == (DICTIONARY[c], DICTIONARY[b], DICTIONARY[b], DICTIONARY[a])
    assert example.alignment == (3, 2, 1, 0)
    assert [example.source[i] for i in example.alignment] == list(reversed(example.source))


def test_reversal_batches_are_reproducible_and_in_range():
    next_batch = reversal_batches(16, 4, 9, seed=3)
    first, again = next_batch(5), next_batch(5)
    assert torch.equal(first.src, again.src) and not torch.equal(first.src, next_batch(6).src)
    lengths = first.src_lengths
    assert lengths.min() >= 4 and lengths.max() <= 9
    assert all(set(e.source) <= set(REVERSAL_WORDS) for e in first.examples)
    assert (first.tgt_mask.sum(-1) == lengths + 1).all()  # the target is as long as the source, plus <eos>
    assert (first.tgt[torch.arange(16), lengths] == TARGET_VOCAB.eos).all()


def test_reversal_errors():
    with pytest.raises(ValueError, match="unknown source words"):
        reversal_example([REVERSAL_WORDS[0], "unicorn"])
    with pytest.raises(ValueError, match="need 1 <= min_len <= max_len"):
        sample_reversals(3, 5, 4)
    with pytest.raises(ValueError, match="at least one source word"):
        reversal_batches(4, words=())
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        reversal_batches(0)
