import itertools
import math

import pytest
import sacrebleu
import torch
from torch import nn

from attnlab.attention import AdditiveScore, dot_score
from attnlab.metrics import (
    alignment_accuracy,
    bleu,
    exact_match,
    scores_by_bucket,
    token_accuracy,
)
from attnlab.seq2seq import (
    AttentionDecoder,
    Decoder,
    DecoderBase,
    Encoded,
    Encoder,
    Seq2Seq,
    beam_search,
    check_source,
    map_state,
)
from tests.seq2seq_data import V_SRC, V_TGT, source_batch, target_batch


def make_model(attention=True, cell="gru", bidirectional=True, hidden=8, seed=0, score=None):
    torch.manual_seed(seed)
    encoder = Encoder(V_SRC, 5, hidden, cell=cell, bidirectional=bidirectional)
    if attention:
        decoder = AttentionDecoder(V_TGT, 4, 6, encoder.output_size, cell=cell, score=score)
    else:
        decoder = Decoder(V_TGT, 4, 6, encoder.output_size, cell=cell)
    return Seq2Seq(encoder, decoder).eval()


# ----- encoder -----


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_encoder_shapes(cell, bidirectional):
    encoder = Encoder(V_SRC, 5, 7, cell=cell, bidirectional=bidirectional)
    src, mask = source_batch([4, 6, 2])
    out = encoder(src, mask)
    d = 14 if bidirectional else 7
    assert encoder.output_size == d
    assert out.states.shape == (3, 6, d) and out.final.shape == (3, d) and out.mask is mask


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_encoder_ignores_padding(cell, bidirectional):
    torch.manual_seed(0)
    encoder = Encoder(V_SRC, 5, 7, cell=cell, bidirectional=bidirectional)
    src, mask = source_batch([3, 6])
    batched = encoder(src, mask)
    alone = encoder(src[:1, :3], mask[:1, :3])
    torch.testing.assert_close(batched.states[0, :3], alone.states[0])
    torch.testing.assert_close(batched.final[0], alone.final[0])
    assert batched.states[0, 3:].eq(0).all()
    # whatever sits in the padded positions does not matter
    garbage = src.clone()
    garbage[0, 3:] = torch.tensor([5, 6, 7])
    torch.testing.assert_close(encoder(garbage, mask).states, batched.states)


def test_bidirectional_final_state_is_forward_last_and_backward_first():
    torch.manual_seed(0)
    encoder = Encoder(V_SRC, 5, 7, bidirectional=True)
    src, mask = source_batch([3, 6, 1])
    out = encoder(src, mask)
    for b, n in enumerate([3, 6, 1]):
        torch.testing.assert_close(out.final[b, :7], out.states[b, n - 1, :7])  # forward, after the last word
        torch.testing.assert_close(out.final[b, 7:], out.states[b, 0, 7:])  # backward, after reading back to word 0


def test_unidirectional_encoder_matches_a_manual_gru_loop():
    torch.manual_seed(0)
    encoder = Encoder(V_SRC, 5, 7, bidirectional=False)
    cell = nn.GRUCell(5, 7)
    cell.weight_ih.data, cell.weight_hh.data = encoder.rnn.weight_ih_l0.data, encoder.rnn.weight_hh_l0.data
    cell.bias_ih.data, cell.bias_hh.data = encoder.rnn.bias_ih_l0.data, encoder.rnn.bias_hh_l0.data
    src, mask = source_batch([4])
    h = torch.zeros(1, 7)
    states = []
    for t in range(4):
        h = cell(encoder.embedding(src[:, t]), h)
        states.append(h)
    out = encoder(src, mask)
    torch.testing.assert_close(out.states[0], torch.cat(states))
    torch.testing.assert_close(out.final, h)


@pytest.mark.parametrize(
    ("src", "mask", "message"),
    [
        (torch.ones(2, 3, dtype=torch.long), torch.ones(2, 4, dtype=torch.bool), "src_mask must have shape"),
        (torch.ones(2, 3, dtype=torch.long), torch.ones(2, 3), "boolean"),
        (torch.ones(3, dtype=torch.long), torch.ones(3, dtype=torch.bool), r"src must have shape \(batch, S\)"),
        (torch.ones(2, 3, dtype=torch.long), torch.tensor([[True, False, True], [True, True, True]]), "prefix"),
        (torch.ones(2, 3, dtype=torch.long), torch.tensor([[False] * 3, [True] * 3]), "at least one word"),
    ],
)
def test_bad_source_is_rejected(src, mask, message):
    with pytest.raises(ValueError, match=message):
        check_source(src, mask)


def test_bad_cell_is_rejected():
    with pytest.raises(ValueError, match="cell must be one of"):
        Encoder(V_SRC, 5, 7, cell="rnn")
    with pytest.raises(ValueError, match="cell must be one of"):
        Decoder(V_TGT, 4, 6, 8, cell="transformer")


# ----- decoders -----


@pytest.mark.parametrize("attention", [False, True])
@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_teacher_forcing_shapes_and_weights(attention, cell):
    model = make_model(attention, cell)
    src, mask = source_batch([4, 6, 2])
    out = model(src, mask, target_batch(3, 5))
    assert out.logits.shape == (3, 5, V_TGT) and out.tokens.shape == (3, 5)
    if not attention:
        assert out.weights is None
        return
    assert out.weights.shape == (3, 5, 6)
    torch.testing.assert_close(out.weights.sum(-1), torch.ones(3, 5))
    assert out.weights[0, :, 4:].eq(0).all() and out.weights[2, :, 2:].eq(0).all()  # padding gets no attention


@pytest.mark.parametrize("attention", [False, True])
def test_padding_does_not_change_the_translation(attention):
    model = make_model(attention)
    src, mask = source_batch([3, 6])
    tgt = target_batch(2, 4)
    batched = model(src, mask, tgt)
    alone = model(src[:1, :3], mask[:1, :3], tgt[:1])
    torch.testing.assert_close(batched.logits[0], alone.logits[0])
    if attention:
        torch.testing.assert_close(batched.weights[0, :, :3], alone.weights[0])


@pytest.mark.parametrize("attention", [False, True])
def test_decode_with_targets_is_the_loop_fed_with_the_true_previous_word(attention):
    model = make_model(attention)
    src, mask = source_batch([4, 5])
    tgt = target_batch(2, 6)
    encoded = model.encode(src, mask)
    state = model.decoder.decode_init(encoded)
    x = torch.full((2,), model.decoder.bos_id)
    expected = []
    for t in range(6):
        logits, state, _ = model.decoder.decode_step(state, x)
        expected.append(logits)
        x = tgt[:, t]
    torch.testing.assert_close(model.decoder.decode(encoded, targets=tgt).logits, torch.stack(expected, 1))


@pytest.mark.parametrize("attention", [False, True])
def test_inference_feeds_back_its_predictions(attention):
    model = make_model(attention)
    src, mask = source_batch([4, 5, 3])
    free = model.greedy(src, mask, max_len=7)
    steps = free.logits.shape[1]
    # teacher forcing on the model's own words repeats the inference computation exactly ...
    own = model.decoder.choose(free.logits).argmax(-1)
    forced = model(src, mask, own)
    torch.testing.assert_close(forced.logits, free.logits)
    # ... while different targets change every later step but never the first
    other = (own + 1 - 3) % (V_TGT - 3) + 3
    changed = model(src, mask, other)
    torch.testing.assert_close(changed.logits[:, 0], free.logits[:, 0])
    assert steps > 1 and not torch.allclose(changed.logits[:, 1:], free.logits[:, 1:])


class FixedDecoder(DecoderBase):
    """A decoder whose next-word log-probabilities are a fixed function of the words so far (for testing search).

    ``table`` maps a prefix (tuple of word ids) to a dict {word: probability}; a missing prefix gives <eos>.
    """

    def __init__(self, table, vocab_size=6):
        super().__init__(vocab_size)
        self.table = table

    def decode_init(self, encoded):
        return {"prefix": torch.zeros(encoded.states.shape[0], 0, dtype=torch.long)}

    def decode_step(self, state, x):
        prefix = state["prefix"]
        if not x.eq(self.bos_id).all():  # after the first step: remember the word just read
            prefix = torch.cat([prefix, x[:, None]], 1)
        logits = torch.full((x.shape[0], self.vocab_size), -1e9)
        for b, words in enumerate(prefix.tolist()):
            probs = self.table.get(tuple(w for w in words if w != self.pad_id), {self.eos_id: 1.0})
            for word, p in probs.items():
                logits[b, word] = math.log(p)
        return logits, {"prefix": prefix}, None


def fake_encoded(batch=1):
    return Encoded(torch.zeros(batch, 1, 1), torch.zeros(batch, 1), torch.ones(batch, 1, dtype=torch.bool))


A, B, EOS = 3, 4, 2


def test_beam_finds_the_likelier_sequence_that_greedy_misses():
    # greedy takes A (0.6) and then has to stop badly; B (0.4) is followed by a sure end
    table = {(): {A: 0.6, B: 0.4}, (A,): {A: 0.5, B: 0.5}, (A, A): {EOS: 0.5, B: 0.5}, (A, B): {EOS: 0.5, A: 0.5},
             (B,): {EOS: 1.0}}
    decoder = FixedDecoder(table)
    greedy = decoder.decode(fake_encoded(), max_len=5)
    assert greedy.tokens[0].tolist()[:3] == [A, A, EOS]
    tokens, score = beam_search(decoder, fake_encoded(), beam_size=2, max_len=5)
    assert tokens[0].tolist()[:2] == [B, EOS]
    assert score.item() == pytest.approx(math.log(0.4))


def test_beam_never_returns_a_less_likely_sequence_than_greedy_even_when_pruning_drops_it():
    # with width 2, B.. prefixes (0.35 * 0.5 each) push out the greedy prefix A A (0.4 * 0.34) at step 2,
    # but every B.. continuation then falls below greedy's final probability 0.4 * 0.34
    table = {(): {A: 0.4, B: 0.35, EOS: 0.25}, (A,): {A: 0.34, B: 0.33, EOS: 0.33}, (A, A): {EOS: 1.0},
             (B,): {A: 0.5, B: 0.5}, (B, A): {A: 0.34, B: 0.33, EOS: 0.33}, (B, B): {A: 0.34, B: 0.33, EOS: 0.33}}
    decoder = FixedDecoder(table)
    tokens, score = beam_search(decoder, fake_encoded(), beam_size=2, max_len=4)
    assert tokens[0].tolist()[:3] == [A, A, EOS]
    assert score.item() == pytest.approx(math.log(0.4 * 0.34))


def all_sequences(decoder, max_len):
    """Brute force: the log-probability of every output of up to max_len words."""
    out = {}
    for n in range(1, max_len + 1):
        for words in itertools.product(range(2, decoder.vocab_size), repeat=n):
            if EOS in words[:-1] or words[-1] != EOS:  # finished outputs only
                continue
            logp, prefix = 0.0, ()
            for w in words:
                p = decoder.table.get(prefix, {EOS: 1.0}).get(w, 0.0)
                logp += math.log(p) if p > 0 else -math.inf
                prefix += (w,)
            out[words] = logp
    return out


def test_wide_beam_finds_the_most_likely_sequence_found_by_brute_force():
    gen = torch.Generator().manual_seed(0)
    table = {}
    for n in range(3):
        for prefix in itertools.product([A, B, 5], repeat=n):
            p = torch.rand(4, generator=gen)
            p /= p.sum()
            table[prefix] = dict(zip([EOS, A, B, 5], p.tolist(), strict=True))
    decoder = FixedDecoder(table)
    brute = all_sequences(decoder, 4)
    best = max(brute, key=brute.get)
    tokens, score = beam_search(decoder, fake_encoded(), beam_size=64, max_len=4)
    found = tuple(w for w in tokens[0].tolist() if w != 0)
    assert found == best and score.item() == pytest.approx(brute[best], abs=1e-5)


@pytest.mark.parametrize("attention", [False, True])
def test_beam_of_width_one_is_greedy(attention):
    model = make_model(attention, seed=3)
    src, mask = source_batch([4, 5, 3, 6], seed=2)
    greedy = model.greedy(src, mask, max_len=8)
    tokens, scores = model.beam_search(src, mask, beam_size=1, max_len=8)
    torch.testing.assert_close(tokens, greedy.tokens)
    torch.testing.assert_close(scores, model.log_prob(src, mask, greedy.tokens))


@pytest.mark.parametrize("attention", [False, True])
@pytest.mark.parametrize("beam_size", [2, 3, 5])
def test_beam_scores_are_true_log_probs_and_never_below_greedy(attention, beam_size):
    for seed in range(4):
        model = make_model(attention, seed=seed)
        with torch.no_grad():  # peaked output distributions, so that outputs end with <eos>
            model.decoder.readout[-1].weight.mul_(8)
        src, mask = source_batch([4, 5, 3, 6, 2, 6], seed=seed)
        greedy = model.greedy(src, mask, max_len=9)
        tokens, scores = model.beam_search(src, mask, beam_size=beam_size, max_len=9)
        torch.testing.assert_close(scores, model.log_prob(src, mask, tokens))
        assert (scores >= model.log_prob(src, mask, greedy.tokens) - 1e-5).all()


def test_greedy_stops_at_eos_and_pads_after_it():
    table = {(): {A: 1.0}, (A,): {EOS: 0.9, A: 0.1}}
    out = FixedDecoder(table).decode(fake_encoded(), max_len=6)
    assert out.tokens.tolist() == [[A, EOS]]  # the loop stopped once every row had ended
    two_rows = FixedDecoder({(): {A: 1.0}, (A,): {EOS: 1.0}})
    assert two_rows.decode(fake_encoded(2), max_len=6).tokens.tolist() == [[A, EOS]] * 2


def test_greedy_pads_rows_that_ended_earlier():
    model = make_model(True, seed=1)
    src, mask = source_batch([4, 5, 3, 6, 2, 6], seed=1)
    tokens = model.greedy(src, mask, max_len=9).tokens
    assert not ((tokens == 1).any())  # never <bos>
    for row in tokens.tolist():
        if EOS in row:
            end = row.index(EOS)
            assert all(w == 0 for w in row[end + 1:]) and 0 not in row[:end]


def test_decode_needs_targets_or_max_len_and_checks_them():
    model = make_model(True)
    encoded = model.encode(*source_batch([3, 4]))
    with pytest.raises(ValueError, match="either targets"):
        model.decoder.decode(encoded)
    with pytest.raises(ValueError, match="either targets"):
        model.decoder.decode(encoded, targets=target_batch(2, 3), max_len=3)
    with pytest.raises(ValueError, match=r"targets must have shape \(batch, T\) with batch = 2"):
        model.decoder.decode(encoded, targets=target_batch(3, 3))
    with pytest.raises(ValueError, match=r"targets must have shape \(batch, T\)"):
        model.decoder.decode(encoded, targets=torch.ones(2, 3, 1, dtype=torch.long))
    with pytest.raises(ValueError, match="beam_size must be > 0"):
        beam_search(model.decoder, encoded, beam_size=0, max_len=3)


def test_decoder_rejects_an_encoder_of_the_wrong_size():
    torch.manual_seed(0)
    encoder = Encoder(V_SRC, 5, 8, bidirectional=True)  # states of size 16
    decoder = Decoder(V_TGT, 4, 6, 8)
    with pytest.raises(ValueError, match=r"final state must have shape \(batch, 8\), got \(2, 16\)"):
        decoder.decode(encoder(*source_batch([3, 4])), max_len=3)


def test_attention_step_uses_the_previous_state_as_query_and_the_additive_score():
    model = make_model(True, seed=4)
    src, mask = source_batch([3, 5], seed=4)
    encoded = model.encode(src, mask)
    decoder = model.decoder
    state = decoder.decode_init(encoded)
    x = torch.full((2,), decoder.bos_id)
    for _ in range(3):  # advance a few steps, then check one step by hand
        _, state, _ = decoder.decode_step(state, x)
        x = torch.tensor([4, 5])
    h_prev = state["hidden"]
    logits, new_state, weights = decoder.decode_step(state, x)
    score = decoder.score
    for b, n in enumerate([3, 5]):
        query = score.query_proj.weight @ h_prev[b]
        e = torch.stack([score.v @ torch.tanh(query + score.key_proj(encoded.states[b, j])) for j in range(n)])
        alpha = torch.softmax(e, 0)
        torch.testing.assert_close(weights[b, :n], alpha)
        context = alpha @ encoded.states[b, :n]
        embedded = decoder.embedding(x[b:b + 1])
        h = decoder.rnn(torch.cat([embedded, context[None]], -1), h_prev[b:b + 1])
        torch.testing.assert_close(new_state["hidden"][b], h[0])
        expected = decoder.readout(torch.cat([h, context[None], embedded], -1))
        torch.testing.assert_close(logits[b], expected[0])


def test_any_score_function_can_be_plugged_in():
    torch.manual_seed(0)
    encoder = Encoder(V_SRC, 5, 3, bidirectional=True)  # states of size 6 = decoder state size
    model = Seq2Seq(encoder, AttentionDecoder(V_TGT, 4, 6, 6, score=dot_score)).eval()
    src, mask = source_batch([3, 5])
    out = model(src, mask, target_batch(2, 4))
    torch.testing.assert_close(out.weights.sum(-1), torch.ones(2, 4))


def test_default_score_is_additive_with_keys_projected_once():
    model = make_model(True)
    assert isinstance(model.decoder.score, AdditiveScore)
    encoded = model.encode(*source_batch([3, 5]))
    state = model.decoder.decode_init(encoded)
    torch.testing.assert_close(state["projected_keys"], model.decoder.score.project_keys(encoded.states))


@pytest.mark.parametrize("attention", [False, True])
def test_gradient_reaches_every_parameter(attention):
    model = make_model(attention).train()
    src, mask = source_batch([4, 6, 2])
    tgt = target_batch(3, 5)
    logits = model(src, mask, tgt).logits
    nn.functional.cross_entropy(logits.flatten(0, 1), tgt.flatten()).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_gradcheck_of_the_attention_decoder_in_float64():
    model = make_model(True, hidden=3).double()
    src, mask = source_batch([2, 3])
    encoded = model.encode(src, mask)
    tgt = target_batch(2, 3)
    states = encoded.states.detach().requires_grad_()

    def logits_of(states):
        return model.decoder.decode(Encoded(states, encoded.final.detach(), mask), targets=tgt).logits

    assert torch.autograd.gradcheck(logits_of, (states,))


def test_map_state_walks_nested_states():
    state = {"h": (torch.ones(2, 3), torch.zeros(2, 3)), "m": torch.arange(4).view(2, 2), "n": 5}
    out = map_state(state, lambda t: t[[1, 1, 0]])
    assert out["h"][0].shape == (3, 3) and isinstance(out["h"], tuple)
    assert out["m"].tolist() == [[2, 3], [2, 3], [0, 1]] and out["n"] == 5


# ----- metrics -----


def test_token_accuracy_and_exact_match_by_hand():
    refs = [["a", "b", "c", "d"], ["x", "y"]]
    preds = [["a", "c", "c"], ["x", "y", "z"]]
    assert token_accuracy(preds, refs) == pytest.approx(4 / 6)  # missing and shifted words are wrong
    assert exact_match(preds, refs) == 0.0
    assert exact_match([["a", "b", "c", "d"], ["x", "y"]], refs) == 1.0
    with pytest.raises(ValueError, match="one prediction per reference"):
        token_accuracy(preds[:1], refs)
    with pytest.raises(ValueError, match="no words"):
        token_accuracy([[]], [[]])


def test_bleu_by_hand():
    # precisions 4/5, 3/4, 2/3, 1/2 and no brevity penalty: BLEU = 100 * (0.8 * 0.75 * 2/3 * 0.5) ** 0.25
    assert bleu([["a", "b", "c", "d", "e"]], [["a", "b", "c", "d", "f"]]) == pytest.approx(100 * 0.2**0.25, abs=1e-3)
    assert bleu([["a", "b", "c", "d"]], [["a", "b", "c", "d"]]) == pytest.approx(100.0)
    # a short hypothesis is penalised by exp(1 - r / c) = exp(1 - 5 / 4)
    short = bleu([["a", "b", "c", "d"]], [["a", "b", "c", "d", "e"]])
    assert short == pytest.approx(100 * math.exp(1 - 5 / 4), abs=1e-3)
    # no 4-gram at all: BLEU is 0 even for a perfect translation
    assert bleu([["a", "b", "c"]], [["a", "b", "c"]]) == 0.0
    # tokens are taken as given: punctuation-like words are not split again
    words = [["el", "perro", ",", "rojo"]]
    assert bleu(words, words) == pytest.approx(sacrebleu.corpus_bleu(["el perro , rojo"], [["el perro , rojo"]]).score)


def test_alignment_accuracy_by_hand():
    weights = torch.tensor([[[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4]],
                            [[0.2, 0.8, 0.0], [0.9, 0.1, 0.0], [1.0, 0.0, 0.0]]])
    alignment = torch.tensor([[0, 1, -1], [1, 0, -1]])
    assert alignment_accuracy(weights, alignment) == pytest.approx(3 / 4)
    with pytest.raises(ValueError, match="alignment must have shape"):
        alignment_accuracy(weights, alignment[:, :2])
    with pytest.raises(ValueError, match="all -1"):
        alignment_accuracy(weights, torch.full((2, 3), -1))
    with pytest.raises(ValueError, match="only has S = 3"):
        alignment_accuracy(weights, torch.tensor([[0, 3, -1], [0, 0, 0]]))


def test_scores_by_bucket():
    lengths = [5, 7, 12, 33]
    refs = [["a"] * n for n in lengths]
    preds = [["a"] * 5, ["a"] * 6, ["a"] * 12, ["b"] * 33]
    rows = scores_by_bucket(lengths, preds, refs, [(5, 10), (11, 20), (21, 30), (31, 40)])
    assert [r["bucket"] for r in rows] == ["5-10", "11-20", "31-40"]  # the empty bucket is left out
    assert rows[0]["n"] == 2 and rows[0]["token_accuracy"] == pytest.approx(11 / 12)
    assert rows[0]["exact_match"] == 0.5 and rows[1]["bleu"] == pytest.approx(100.0)
    assert rows[2]["token_accuracy"] == 0.0
    with pytest.raises(ValueError, match="one length per sentence"):
        scores_by_bucket(lengths[:2], preds, refs, [(5, 10)])
