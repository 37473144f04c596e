import itertools
import math

import pytest
import torch

from attnlab.attention import (
    AdditiveScore,
    GeneralScore,
    LocationScore,
    attend,
    dot_score,
)
from attnlab.hard_attention import (
    HardAttentionDecoder,
    hard_attention_loss,
    masked_log_softmax,
    reinforce_loss,
    sample_positions,
    straight_through_gumbel,
)
from attnlab.luong import (
    LocalAttentionDecoder,
    LuongDecoder,
    gather_positions,
    local_window,
    luong_score,
    window_positions,
)
from attnlab.seq2seq import Encoder, Seq2Seq, beam_search
from tests.seq2seq_data import V_SRC, V_TGT, source_batch, target_batch


def make_model(decoder_cls=LuongDecoder, seed=0, cell="gru", hidden=4, **kwargs):
    """Encoder with 2 * hidden outputs; decoder state of the same size, so the dot score works."""
    torch.manual_seed(seed)
    encoder = Encoder(V_SRC, 5, hidden, cell=cell)
    decoder = decoder_cls(V_TGT, 3, 2 * hidden, encoder.output_size, cell=cell, **kwargs)
    return Seq2Seq(encoder, decoder).eval()


def step_loop(decoder, encoded, targets):
    """The decoder's steps fed the true previous words, collected by hand."""
    state = decoder.decode_init(encoded)
    x = torch.full((targets.shape[0],), decoder.bos_id)
    logits, weights = [], []
    for t in range(targets.shape[1]):
        step_logits, state, step_weights = decoder.decode_step(state, x)
        logits.append(step_logits)
        weights.append(step_weights)
        x = targets[:, t]
    return torch.stack(logits, 1), torch.stack(weights, 1)


# ----- the local window -----


def brute_force_window(scores, centre, half_width, lengths, gaussian=True, sigma=None):
    """The local weights by a loop over rows and positions, in plain Python floats."""
    sigma = half_width / 2 if sigma is None else sigma
    out = torch.zeros(scores.shape, dtype=torch.float64)
    for b in range(scores.shape[0]):
        middle = math.floor(float(centre[b]) + 0.5)
        inside = [s for s in range(scores.shape[1]) if abs(s - middle) <= half_width and s < lengths[b]]
        if not inside:
            continue
        total = sum(math.exp(float(scores[b, s])) for s in inside)
        for s in inside:
            weight = math.exp(float(scores[b, s])) / total
            if gaussian:
                weight *= math.exp(-((s - float(centre[b])) ** 2) / (2 * sigma**2))
            out[b, s] = weight
    return out


@pytest.mark.parametrize("gaussian", [True, False])
@pytest.mark.parametrize("half_width", [1, 2, 4])
def test_local_window_is_the_gaussian_times_the_softmax_inside_the_window(gaussian, half_width):
    gen = torch.Generator().manual_seed(half_width)
    scores = torch.randn(6, 9, dtype=torch.float64, generator=gen)
    centre = torch.tensor([0.0, 0.3, 4.49, 4.51, 8.0, 11.2], dtype=torch.float64)  # edges, rounding, outside
    lengths = [9, 3, 9, 6, 9, 9]
    mask = torch.arange(9) < torch.tensor(lengths)[:, None]
    weights = local_window(scores, centre, half_width, mask=mask, gaussian=gaussian)
    torch.testing.assert_close(weights, brute_force_window(scores, centre, half_width, lengths, gaussian))


def test_local_window_is_zero_outside_the_window_and_at_padding_and_clips_at_the_edges():
    scores = torch.zeros(3, 10)
    centre = torch.tensor([0.0, 9.0, 5.0])
    mask = torch.arange(10) < torch.tensor([10, 10, 6])[:, None]
    weights = local_window(scores, centre, 2, mask=mask, gaussian=False)
    # row 0: window -2..2 clipped to 0..2; row 1: 7..11 clipped to 7..9; row 2: 3..7 cut by padding to 3..5
    expected = torch.zeros(3, 10)
    expected[0, :3] = expected[1, 7:] = expected[2, 3:6] = 1 / 3
    torch.testing.assert_close(weights, expected)


def test_scores_outside_the_window_or_at_padding_do_not_matter():
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(2, 12, generator=gen)
    centre = torch.tensor([3.2, 6.7])
    mask = torch.arange(12) < torch.tensor([12, 8])[:, None]
    changed = scores.clone()
    changed[0, 7:] = 100.0  # outside the window 1..5 of row 0
    changed[1, 8:] = 100.0  # padding of row 1
    torch.testing.assert_close(local_window(scores, centre, 2, mask=mask), local_window(changed, centre, 2, mask=mask))


def test_window_layout_gives_the_dense_weights_at_the_window_positions():
    gen = torch.Generator().manual_seed(1)
    scores = torch.randn(4, 15, generator=gen)
    centre = torch.tensor([0.4, 7.5, 13.9, 3.0])
    mask = torch.arange(15) < torch.tensor([15, 15, 15, 5])[:, None]
    dense = local_window(scores, centre, 3, mask=mask)
    positions = window_positions(centre, 3)
    valid = (positions >= 0) & (positions < 15) & gather_positions(mask[..., None], positions)[..., 0]
    windowed = local_window(gather_positions(scores[..., None], positions)[..., 0], centre, 3, positions=positions,
                            mask=valid)
    torch.testing.assert_close(windowed, torch.where(valid, dense.gather(1, positions.clamp(0, 14)), 0.0))


def test_empty_window_gives_zero_weights_and_finite_gradients():
    scores = torch.randn(1, 5, requires_grad=True)
    centre = torch.tensor([20.0], requires_grad=True)
    weights = local_window(scores, centre, 2)
    assert weights.eq(0).all()
    weights.sum().backward()
    assert torch.isfinite(scores.grad).all() and torch.isfinite(centre.grad).all()


def test_local_window_gradcheck_in_scores_and_centre():
    gen = torch.Generator().manual_seed(2)
    scores = torch.randn(3, 8, dtype=torch.float64, generator=gen, requires_grad=True)
    centre = torch.tensor([1.2, 4.7, 6.1], dtype=torch.float64, requires_grad=True)  # away from rounding points
    mask = torch.arange(8) < torch.tensor([8, 8, 7])[:, None]
    assert torch.autograd.gradcheck(lambda s, c: local_window(s, c, 3, mask=mask), (scores, centre))


def test_window_positions_and_gather():
    positions = window_positions(torch.tensor([[0.2, 2.5], [3.49, 9.0]]), 1)
    torch.testing.assert_close(positions, torch.tensor([[[-1, 0, 1], [2, 3, 4]], [[2, 3, 4], [8, 9, 10]]]))
    values = torch.arange(2 * 5 * 3.0).view(2, 5, 3)
    picked = gather_positions(values, positions)
    for b, t, w in itertools.product(range(2), range(2), range(3)):
        torch.testing.assert_close(picked[b, t, w], values[b, min(max(int(positions[b, t, w]), 0), 4)])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: local_window(torch.zeros(2, 5), torch.zeros(2), -1), "half_width D must be >= 0"),
        (lambda: local_window(torch.zeros(2, 5), torch.zeros(2), 0), "sigma > 0"),
        (lambda: local_window(torch.zeros(2, 5), torch.zeros(3), 2), r"centre must have shape \(2,\)"),
        (lambda: local_window(torch.zeros(2, 5), torch.zeros(2), 2, positions=torch.zeros(2, 5)), "integer tensor"),
        (lambda: local_window(torch.zeros(2, 5), torch.zeros(2), 2, mask=torch.ones(2, 5)), "boolean tensor"),
        (lambda: window_positions(torch.zeros(2), -2), "half_width D must be >= 0"),
        (lambda: gather_positions(torch.zeros(2, 5), torch.zeros(2, 3, dtype=torch.long)), r"\(batch, S, d\)"),
        (lambda: gather_positions(torch.zeros(2, 5, 1), torch.zeros(3, 3, dtype=torch.long)), "batch = 2"),
    ],
)
def test_local_window_rejects_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_local_window_with_zero_half_width_and_an_explicit_sigma_reads_one_word():
    weights = local_window(torch.randn(1, 6), torch.tensor([2.2]), 0, sigma=1.0)
    expected = torch.zeros(1, 6)
    expected[0, 2] = math.exp(-0.2**2 / 2)
    torch.testing.assert_close(weights, expected)


# ----- Luong's global decoder -----


@pytest.mark.parametrize("score", ["dot", "general", "concat", "location"])
@pytest.mark.parametrize("input_feeding", [True, False])
def test_luong_decoder_shapes_and_weights(score, input_feeding):
    model = make_model(score=score, input_feeding=input_feeding, max_source_len=8)
    src, mask = source_batch([4, 6, 2])
    out = model(src, mask, target_batch(3, 5))
    assert out.logits.shape == (3, 5, V_TGT) and out.tokens.shape == (3, 5) and out.weights.shape == (3, 5, 6)
    torch.testing.assert_close(out.weights.sum(-1), torch.ones(3, 5))
    assert out.weights[0, :, 4:].eq(0).all() and out.weights[2, :, 2:].eq(0).all()


@pytest.mark.parametrize(("decoder", "input_feeding"), [*itertools.product(["global", "local-m", "local-p"],
                                                                           [True, False]), ("hard", False)])
def test_teacher_forcing_is_the_step_loop_fed_with_the_true_previous_words(decoder, input_feeding):
    kwargs = {"global": {"score": "general"}, "local-m": {"half_width": 1, "centre": "monotonic"},
              "local-p": {"half_width": 2}, "hard": {}}[decoder]
    cls = {"global": LuongDecoder, "local-m": LocalAttentionDecoder, "local-p": LocalAttentionDecoder,
           "hard": HardAttentionDecoder}[decoder]
    if decoder != "hard":
        kwargs["input_feeding"] = input_feeding
    model = make_model(cls, **kwargs)
    src, mask = source_batch([5, 3])
    tgt = target_batch(2, 6)
    encoded = model.encode(src, mask)
    logits, weights = step_loop(model.decoder, encoded, tgt)
    out = model.decoder.decode(encoded, targets=tgt)
    torch.testing.assert_close(out.logits, logits)
    torch.testing.assert_close(out.weights, weights)


def test_global_dot_attention_is_attend_with_dot_score_from_the_current_state():
    model = make_model(score="dot", input_feeding=True)
    decoder = model.decoder
    src, mask = source_batch([5, 3])
    encoded = model.encode(src, mask)
    state = decoder.decode_init(encoded)
    x = torch.tensor([4, 5])
    logits, new_state, weights = decoder.decode_step(state, x)
    # by hand: update the RNN first (input: the word and h~_0 = 0), then attend from the new state h_t
    h_t = nn_gru_step(decoder, torch.cat([decoder.embedding(x), torch.zeros(2, 8)], -1), state["hidden"])
    context, expected = attend(h_t[:, None], encoded.states, encoded.states, score=dot_score, mask=mask[:, None])
    torch.testing.assert_close(weights, expected[:, 0])
    attentional = torch.tanh(decoder.combine(torch.cat([context[:, 0], h_t], -1)))
    torch.testing.assert_close(logits, decoder.out(attentional))
    torch.testing.assert_close(new_state["hidden"], h_t)
    torch.testing.assert_close(new_state["feed"], attentional)  # input feeding: h~_t goes into the next step


def nn_gru_step(decoder, inputs, hidden):
    """One step of the decoder's nn.GRU written out with a GRUCell holding the same weights."""
    cell = torch.nn.GRUCell(inputs.shape[-1], decoder.hidden_size)
    with torch.no_grad():
        for name in ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]:
            getattr(cell, name).copy_(getattr(decoder.rnn, f"{name}_l0"))
    return cell(inputs, hidden)


def test_input_feeding_passes_the_attention_on_to_the_next_rnn_update():
    for feeding in (True, False):
        model = make_model(score="dot", input_feeding=feeding)
        src, mask = source_batch([5])
        state = model.decoder.decode_init(model.encode(src, mask))
        # another memory changes the attention of the next step; only input feeding carries that into h_(t+1)
        other = {**state, "memory": state["memory"] + 1.0}
        _, after, _ = model.decoder.decode_step(state, torch.tensor([4]))
        _, after_other, _ = model.decoder.decode_step(other, torch.tensor([4]))
        torch.testing.assert_close(after["hidden"], after_other["hidden"])  # h_t is computed before attending
        h_next = model.decoder.decode_step(after, torch.tensor([5]))[1]["hidden"]
        h_next_other = model.decoder.decode_step(after_other, torch.tensor([5]))[1]["hidden"]
        assert torch.allclose(h_next, h_next_other) != feeding


def test_luong_scores_by_name():
    assert luong_score("dot", 6, 6) is dot_score
    assert isinstance(luong_score("general", 6, 4), GeneralScore)
    assert isinstance(luong_score("concat", 6, 4, attention_size=3), AdditiveScore)
    assert isinstance(luong_score("location", 6, 4, max_source_len=9), LocationScore)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: luong_score("dot", 6, 4), "hidden_size = context_size"),
        (lambda: luong_score("location", 6, 4), "max_source_len"),
        (lambda: luong_score("cosine", 6, 6), "score must be one of"),
        (lambda: LocalAttentionDecoder(9, 3, 8, 8, half_width=2, score="location"), "location score"),
        (lambda: LocalAttentionDecoder(9, 3, 8, 8, half_width=2, centre="middle"), "centre must be one of"),
        (lambda: LocalAttentionDecoder(9, 3, 8, 8, half_width=-1), "half_width D must be >= 0"),
        (lambda: LocalAttentionDecoder(9, 3, 8, 8, half_width=0), "local-p needs half_width D >= 1"),
        (lambda: HardAttentionDecoder(9, 3, 8, 8, estimator="exact"), "estimator must be one of"),
        (lambda: HardAttentionDecoder(9, 3, 8, 8, baseline="median"), "baseline must be one of"),
        (lambda: HardAttentionDecoder(9, 3, 8, 8, decay=1.0), r"decay must be in \[0, 1\)"),
        (lambda: LuongDecoder(9, 3, 8, 8, cell="rnn"), "cell must be one of"),
    ],
)
def test_bad_configurations_are_rejected(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_decoder_rejects_an_encoder_of_the_wrong_size():
    torch.manual_seed(0)
    model = Seq2Seq(Encoder(V_SRC, 5, 3), LuongDecoder(V_TGT, 3, 8, 8, score="general"))
    src, mask = source_batch([3])
    with pytest.raises(ValueError, match="d_enc = 8"):
        model(src, mask, target_batch(1, 2))


@pytest.mark.parametrize("decoder", ["global", "local-p"])
def test_padding_does_not_change_the_translation(decoder):
    model = make_model(LocalAttentionDecoder, half_width=2) if decoder == "local-p" else make_model(score="concat")
    src, mask = source_batch([3, 7])
    tgt = target_batch(2, 5)
    batched = model(src, mask, tgt)
    alone = model(src[:1, :3], mask[:1, :3], tgt[:1])
    torch.testing.assert_close(batched.logits[0], alone.logits[0])
    torch.testing.assert_close(batched.weights[0, :, :3], alone.weights[0])


@pytest.mark.parametrize("decoder", ["global", "local-m", "local-p", "hard"])
@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_greedy_and_beam_search_run_every_decoder(decoder, cell):
    cls, kwargs = {"global": (LuongDecoder, {}), "local-m": (LocalAttentionDecoder, {"half_width": 1,
                                                                                       "centre": "monotonic"}),
                   "local-p": (LocalAttentionDecoder, {"half_width": 2}), "hard": (HardAttentionDecoder, {})}[decoder]
    model = make_model(cls, cell=cell, **kwargs)
    src, mask = source_batch([4, 6])
    greedy = model.greedy(src, mask, max_len=6)
    # teacher forcing on the model's own words repeats inference exactly (the step counter included)
    forced = model(src, mask, model.decoder.choose(greedy.logits).argmax(-1))
    torch.testing.assert_close(forced.logits, greedy.logits)
    tokens, _ = beam_search(model.decoder, model.encode(src, mask), 1, 6)
    torch.testing.assert_close(tokens[:, : greedy.tokens.shape[1]], greedy.tokens)


@pytest.mark.parametrize("input_feeding", [True, False])
def test_gradcheck_of_the_luong_decoder_in_float64(input_feeding):
    model = make_model(score="general", input_feeding=input_feeding, hidden=2).double()
    src, mask = source_batch([3])
    encoded = model.encode(src, mask)
    tgt = target_batch(1, 3)

    def logits(states):
        return model.decoder.decode(type(encoded)(states, encoded.final, mask), targets=tgt).logits

    states = encoded.states.detach().requires_grad_()
    assert torch.autograd.gradcheck(logits, (states,))


def test_gradient_reaches_every_parameter_of_the_local_p_decoder():
    model = make_model(LocalAttentionDecoder, half_width=2).train()
    src, mask = source_batch([6, 4])
    model(src, mask, target_batch(2, 5)).logits.sum().backward()
    missing = [name for name, p in model.named_parameters() if p.grad is None or p.grad.abs().sum() == 0]
    assert missing == []


# ----- local attention decoders -----


def test_local_m_attends_only_inside_the_window_around_the_target_position():
    model = make_model(LocalAttentionDecoder, half_width=1, centre="monotonic", score="dot")
    src, mask = source_batch([7, 5])
    weights = model(src, mask, target_batch(2, 8)).weights
    t = torch.arange(8)[:, None]
    outside = ((torch.arange(7) - t).abs() > 1) | ~mask[:, None, :]
    assert weights.masked_select(outside).eq(0).all()
    sums = weights.sum(-1)
    torch.testing.assert_close(sums[0, :7], torch.ones(7))  # a window with a real word sums to 1 (no Gaussian)
    assert sums[1, 7].eq(0) and sums[1, 5].gt(0.99)  # row 1 has 5 words: step 7's window 6..8 is empty


def test_local_m_with_a_window_over_the_whole_source_is_global_attention():
    local = make_model(LocalAttentionDecoder, half_width=10, centre="monotonic", score="general")
    global_ = make_model(LuongDecoder, score="general")
    global_.load_state_dict(local.state_dict())
    src, mask = source_batch([6, 4])
    tgt = target_batch(2, 5)
    a, b = local(src, mask, tgt), global_(src, mask, tgt)
    torch.testing.assert_close(a.logits, b.logits)
    torch.testing.assert_close(a.weights, b.weights)


def test_local_p_weights_are_local_window_at_the_predicted_centre():
    model = make_model(LocalAttentionDecoder, half_width=2, centre="predictive", score="dot", input_feeding=False)
    decoder = model.decoder
    src, mask = source_batch([7, 4])
    tgt = target_batch(2, 5)
    encoded = model.encode(src, mask)
    out = decoder.decode(encoded, targets=tgt)
    state = decoder.decode_init(encoded)
    previous = torch.cat([torch.full((2, 1), decoder.bos_id), tgt[:, :-1]], 1)
    h, _ = decoder.run_rnn(state["hidden"], decoder.embedding(previous))
    centre = torch.tensor([[7.0], [4.0]]) * torch.sigmoid(decoder.position(h)[..., 0])  # p_t = S sigmoid(...)
    scores = h @ encoded.states.transpose(1, 2)
    expected = local_window(scores, centre, 2, mask=mask[:, None, :].expand_as(scores))
    torch.testing.assert_close(out.weights, expected)
    assert ((centre >= 0) & (centre <= torch.tensor([[7.0], [4.0]]))).all()


@pytest.mark.parametrize("score", ["dot", "general", "concat"])
def test_window_weights_without_the_dense_copy_are_the_same_weights(score):
    dense = make_model(LocalAttentionDecoder, half_width=2, score=score)
    windowed = make_model(LocalAttentionDecoder, half_width=2, score=score, dense_weights=False)
    windowed.load_state_dict(dense.state_dict())
    src, mask = source_batch([7, 4])
    tgt = target_batch(2, 5)
    a, b = dense(src, mask, tgt), windowed(src, mask, tgt)
    torch.testing.assert_close(a.logits, b.logits)
    assert b.weights.shape == (2, 5, 5)
    torch.testing.assert_close(b.weights.sum(-1), a.weights.sum(-1))


def test_a_local_step_reads_nothing_outside_its_window():
    """The memory outside the window can be anything (even NaN): the step never reads it."""
    model = make_model(LocalAttentionDecoder, half_width=1, centre="monotonic", score="dot", dense_weights=False)
    src, mask = source_batch([30])
    encoded = model.encode(src, mask)
    state = model.decoder.decode_init(encoded)
    poisoned = encoded.states.clone()
    poisoned[:, 2:] = torch.nan
    logits, _, weights = model.decoder.decode_step({**state, "memory": poisoned}, torch.tensor([4]))  # step 0
    assert torch.isfinite(logits).all() and torch.isfinite(weights).all()


# ----- hard attention -----


def test_sampled_positions_follow_the_weights_and_skip_zero_weights():
    weights = torch.tensor([[0.5, 0.0, 0.3, 0.2], [0.0, 0.0, 1.0, 0.0]])
    gen = torch.Generator().manual_seed(0)
    draws = torch.stack([sample_positions(weights, gen) for _ in range(4000)])
    frequencies = torch.stack([torch.bincount(draws[:, b], minlength=4) / 4000 for b in range(2)])
    torch.testing.assert_close(frequencies, weights, atol=0.03, rtol=0)
    assert not (draws[:, 0] == 1).any()


def test_sample_positions_rejects_a_row_with_nothing_to_choose():
    with pytest.raises(ValueError, match="positive sum in every row"):
        sample_positions(torch.tensor([[0.2, 0.8], [0.0, 0.0]]))


def test_masked_log_softmax():
    scores = torch.tensor([[1.0, 2.0, 3.0]])
    mask = torch.tensor([[True, False, True]])
    out = masked_log_softmax(scores, mask)
    torch.testing.assert_close(out[0, [0, 2]], torch.log_softmax(torch.tensor([1.0, 3.0]), -1))
    assert out[0, 1] == -math.inf


@pytest.mark.parametrize("baseline", [None, 0.7])
def test_reinforce_expectation_is_the_true_gradient(baseline):
    """E_s[grad of the surrogate] = -grad E_s[r(s)], computed exactly by enumerating the 5 choices."""
    theta = torch.tensor([0.3, -1.0, 0.5, 2.0, 0.1], dtype=torch.float64, requires_grad=True)
    reward = torch.tensor([1.0, -2.0, 0.5, 3.0, -0.4], dtype=torch.float64)
    probs = torch.softmax(theta, 0)
    (true_grad,) = torch.autograd.grad(-(probs * reward).sum(), theta)
    expected = torch.zeros(5, dtype=torch.float64)
    for s in range(5):
        log_prob = torch.log_softmax(theta, 0)[s]
        b = None if baseline is None else torch.tensor(baseline, dtype=torch.float64)
        (grad,) = torch.autograd.grad(reinforce_loss(log_prob, reward[s], b), theta)
        expected += probs[s].detach() * grad
    torch.testing.assert_close(expected, true_grad)


def test_reinforce_treats_the_advantage_as_a_constant_and_fits_the_baseline():
    log_prob = torch.tensor([-0.5, -1.5], requires_grad=True)
    reward = torch.tensor([2.0, -1.0], requires_grad=True)
    baseline = torch.tensor([0.5, 0.5], requires_grad=True)
    loss = reinforce_loss(log_prob, reward, baseline)
    loss.backward()
    torch.testing.assert_close(loss, torch.tensor((-(1.5 * -0.5) + 1.5**2 - (-1.5 * -1.5) + 1.5**2) / 2))
    torch.testing.assert_close(log_prob.grad, -(reward - baseline).detach() / 2)
    torch.testing.assert_close(baseline.grad, 2 * (baseline - reward).detach() / 2)  # from (r - b)^2 alone
    assert reward.grad is None  # the reward is a constant


def test_reinforce_loss_mask_and_errors():
    log_prob, reward = torch.tensor([-1.0, -2.0, -3.0]), torch.tensor([1.0, 2.0, 100.0])
    mask = torch.tensor([True, True, False])
    torch.testing.assert_close(reinforce_loss(log_prob, reward, mask=mask), torch.tensor(2.5))
    with pytest.raises(ValueError, match="reward must have the shape of log_prob"):
        reinforce_loss(log_prob, reward[:2])
    with pytest.raises(ValueError, match="at least one True"):
        reinforce_loss(log_prob, reward, mask=torch.zeros(3, dtype=torch.bool))


def test_straight_through_gumbel_is_a_one_hot_sample_with_the_softmax_gradient():
    scores = torch.tensor([[0.5, -1.0, 1.5, 0.0]], requires_grad=True)
    mask = torch.tensor([[True, True, True, False]])
    gen = torch.Generator().manual_seed(0)
    draws = torch.stack([straight_through_gumbel(scores, mask, generator=gen) for _ in range(4000)])
    one_hot = draws.detach().round()
    torch.testing.assert_close(draws.detach(), one_hot)  # equal up to rounding: hard + soft - soft
    assert one_hot.sum(-1).eq(1).all() and one_hot[..., 3].eq(0).all()
    torch.testing.assert_close(one_hot.mean(0), torch.softmax(scores.detach().masked_fill(~mask, -torch.inf),
                                                                      -1), atol=0.03, rtol=0)
    # backward: the gradient of the relaxed softmax with the same noise (tau = 0.5)
    gen_a, gen_b = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    weights = torch.tensor([[1.0, 2.0, -1.0, 3.0]])
    (grad,) = torch.autograd.grad((straight_through_gumbel(scores, mask, 0.5, gen_a) * weights).sum(), scores)
    noise = -torch.empty(1, 4).exponential_(generator=gen_b).log()
    relaxed = torch.softmax(((scores + noise) / 0.5).masked_fill(~mask, -torch.inf), -1)
    (expected,) = torch.autograd.grad((relaxed * weights).sum(), scores)
    torch.testing.assert_close(grad, expected)


def test_hard_decoder_reads_one_encoder_state_chosen_by_argmax_in_eval_mode():
    model = make_model(HardAttentionDecoder)
    src, mask = source_batch([6, 3])
    tgt = target_batch(2, 4)
    encoded = model.encode(src, mask)
    sample = model.decoder.sample(encoded, tgt)
    torch.testing.assert_close(sample.positions, sample.weights.argmax(-1))
    assert (sample.positions[1] < 3).all()
    # the logits are those of the readout with the chosen encoder state as the context
    given = model.decoder.sample(encoded, tgt, positions=sample.positions)
    torch.testing.assert_close(given.logits, sample.logits)
    other = model.decoder.sample(encoded, tgt, positions=(sample.positions + 1) % 3)
    assert not torch.allclose(other.logits, sample.logits)
    torch.testing.assert_close(sample.log_prob, sample.weights.gather(-1, sample.positions[..., None])[..., 0].log())


def test_hard_decoder_samples_in_training_mode():
    model = make_model(HardAttentionDecoder).train()
    src, mask = source_batch([6])
    encoded = model.encode(src, mask)
    torch.manual_seed(0)
    draws = {tuple(model.decoder.sample(encoded, target_batch(1, 3)).positions[0].tolist()) for _ in range(30)}
    assert len(draws) > 1


class Batch:
    def __init__(self, src, src_mask, tgt):
        self.src, self.src_mask, self.tgt = src, src_mask, tgt


def test_hard_attention_loss_is_unbiased_by_enumerating_every_path():
    """E over all 3^2 position choices of the loss' gradient = gradient of the exact expected NLL."""
    model = make_model(HardAttentionDecoder, hidden=2, baseline="learned").double().train()
    src, mask = source_batch([3])
    tgt = target_batch(1, 2)
    params = [p for name, p in model.named_parameters() if not name.startswith("decoder.baseline_net")]
    encoded = model.encode(src, mask)
    exact = 0.0
    estimates = [torch.zeros_like(p) for p in params]
    for path in itertools.product(range(3), repeat=2):
        positions = torch.tensor([path])
        sample = model.decoder.sample(model.encode(src, mask), tgt, positions=positions)
        log_p = torch.log_softmax(sample.logits, -1).gather(-1, tgt[..., None])[..., 0]
        probability = sample.log_prob.sum().exp()
        exact = exact + probability * -log_p.mean()
        # the loss on this path, the sampler forced onto it
        loss = hard_attention_loss(model, Batch(src, mask, tgt), positions=positions)
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        for e, g in zip(estimates, grads, strict=True):
            e += probability.detach() * (torch.zeros_like(e) if g is None else g)
    assert encoded is not None
    true = torch.autograd.grad(exact, params)
    for e, t in zip(estimates, true, strict=True):
        torch.testing.assert_close(e, t)


def test_hard_attention_loss_needs_a_hard_decoder():
    model = make_model()
    src, mask = source_batch([3])
    with pytest.raises(ValueError, match="HardAttentionDecoder"):
        hard_attention_loss(model, Batch(src, mask, target_batch(1, 2)))


def test_gumbel_estimator_trains_through_the_straight_through_sample():
    model = make_model(HardAttentionDecoder, estimator="gumbel").train()
    src, mask = source_batch([5, 4])
    loss = hard_attention_loss(model, Batch(src, mask, target_batch(2, 3)))
    loss.backward()
    assert model.encoder.embedding.weight.grad.abs().sum() > 0
    assert model.decoder.reward_average.eq(0) and model.decoder.rewards_seen.eq(0)  # no REINFORCE, no baseline


@pytest.mark.parametrize(("centre", "input_feeding"), [("monotonic", True), ("predictive", True),
                                                       ("predictive", False)])
def test_centre_trace_gives_the_centre_of_every_window(centre, input_feeding):
    model = make_model(LocalAttentionDecoder, half_width=2, centre=centre, input_feeding=input_feeding,
                       cell="lstm")
    src, mask = source_batch([7, 4])
    tgt = target_batch(2, 5)
    encoded = model.encode(src, mask)
    centres = model.decoder.centre_trace(encoded, tgt)
    weights = model.decoder.decode(encoded, targets=tgt).weights
    if centre == "monotonic":
        torch.testing.assert_close(centres, torch.arange(5.0).expand(2, 5))
    scores = torch.zeros_like(weights)  # where the weights may be non-zero: the window around round(p_t)
    window = local_window(scores, centres, 2, mask=mask[:, None, :].expand_as(scores), gaussian=False) > 0
    assert weights.masked_select(~window).eq(0).all() and weights.masked_select(window).gt(0).all()


def test_average_baseline_is_a_running_mean_of_past_rewards():
    decoder = HardAttentionDecoder(V_TGT, 3, 8, 8, decay=0.75)
    decoder.update_average(torch.tensor([-2.0, -4.0]))  # the first batch sets it
    assert decoder.reward_average.item() == -3.0
    decoder.update_average(torch.tensor([-1.0]))
    assert decoder.reward_average.item() == 0.75 * -3.0 + 0.25 * -1.0 and decoder.rewards_seen.item() == 2
    torch.testing.assert_close(decoder.reward_baseline(torch.zeros(2, 3, 8)), torch.full((2, 3), -2.5))


def test_hard_attention_loss_updates_the_average_after_using_it_and_only_in_training():
    model = make_model(HardAttentionDecoder).train()
    src, mask = source_batch([5, 4])
    batch = Batch(src, mask, target_batch(2, 3))
    seen = []
    original = model.decoder.update_average
    model.decoder.update_average = lambda reward: (seen.append(model.decoder.reward_average.item()),
                                                   original(reward))
    hard_attention_loss(model, batch)
    hard_attention_loss(model, batch)
    assert seen[0] == 0.0 and model.decoder.rewards_seen.item() == 2 and seen[1] != 0.0
    assert -10 < model.decoder.reward_average.item() < 0  # a mean log-likelihood of words
    model.eval()
    hard_attention_loss(model, batch)
    assert model.decoder.rewards_seen.item() == 2


@pytest.mark.parametrize("baseline", ["average", "learned", "none"])
def test_hard_attention_loss_trains_with_every_baseline(baseline):
    model = make_model(HardAttentionDecoder, baseline=baseline).train()
    src, mask = source_batch([5, 4])
    loss = hard_attention_loss(model, Batch(src, mask, target_batch(2, 3)))
    loss.backward()
    assert torch.isfinite(loss) and model.encoder.embedding.weight.grad.abs().sum() > 0
    assert (model.decoder.baseline_net.weight.grad.abs().sum() > 0) if baseline == "learned" else True
