import numpy as np
import pytest
import torch

from attnlab.exercises import (
    ExerciseError,
    check_local_p_weights,
    check_luong_step,
    check_window_mass,
    check_window_states,
)
from attnlab.exercises import luong as luong_checks
from attnlab.luong import (
    LocalAttentionDecoder,
    LuongDecoder,
    gather_positions,
    local_window,
    window_positions,
)
from attnlab.seq2seq import Encoder, Seq2Seq
from attnlab.tasks.translation import (
    SOURCE_VOCAB,
    TARGET_VOCAB,
    attention_maps,
    examples_per_length,
    make_batch,
    translation_model,
)
from attnlab.train import seed_everything


def stub(*args):
    raise NotImplementedError()


def double(fn):
    """The same answer computed in float64."""

    def wrapped(*args):
        return fn(*(a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args))

    return wrapped


# --- Luong's global step --------------------------------------------------------------------------------------


def good_luong_step(h, memory, mask, w_c):
    scores = (memory @ h[:, :, None])[..., 0].masked_fill(~mask, -torch.inf)
    weights = torch.softmax(scores, dim=-1)
    context = (weights[..., None] * memory).sum(1)
    return torch.tanh(torch.cat([context, h], -1) @ w_c.T), weights


def _luong_variant(*, order="ch", tanh=True, mask=True, scale=1.0, naive=False, give="attentional"):
    def luong_step(h, memory, m, w_c):
        scores = (memory @ h[:, :, None])[..., 0] * scale
        if naive:
            weights = scores.exp() * m / (scores.exp() * m).sum(-1, keepdim=True)
        else:
            weights = torch.softmax(scores.masked_fill(~m, -torch.inf) if mask else scores, dim=-1)
        context = (weights[..., None] * memory).sum(1)
        joined = torch.cat([context, h] if order == "ch" else [h, context], -1) @ w_c.T
        attentional = torch.tanh(joined) if tanh else joined
        return (context if give == "context" else attentional), weights

    return luong_step


def delegating_luong_step(h, memory, mask, w_c):
    decoder = LuongDecoder(5, 3, h.shape[-1], memory.shape[-1])
    with torch.no_grad():
        decoder.combine.weight.copy_(w_c)
    weights = torch.softmax((memory @ h[:, :, None])[..., 0].masked_fill(~mask, -torch.inf), -1)
    attentional, _ = decoder.readout(h, (weights[..., None] * memory).sum(1))
    return attentional, weights


def luong_step_in_place(h, memory, mask, w_c):
    memory.masked_fill_(~mask[..., None], 0.0)
    return good_luong_step(h, memory, mask, w_c)


@pytest.mark.parametrize("answer", [good_luong_step, double(good_luong_step),
                                    lambda *a: tuple(x.numpy() for x in good_luong_step(*a))],
                         ids=["float32", "float64", "numpy"])
def test_luong_step_accepts_correct_answers(answer, capsys):
    check_luong_step(answer)
    check_luong_step(answer, seed=None)
    assert "passed all 2 checks" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (_luong_variant(order="hc"), r"concatenates \[h_t; c_t\]"),
        (_luong_variant(tanh=False), "leaves out the tanh"),
        (_luong_variant(give="context"), "returns the context"),
        (_luong_variant(mask=False), "gives weight to padding"),
        (_luong_variant(scale=5**-0.5), r"divides the scores by sqrt\(d\)"),
        (_luong_variant(naive=True), "overflows; subtract"),
        (lambda h, m, k, w: good_luong_step(h, m, k, w)[0], "return the pair"),
        (lambda h, m, k, w: good_luong_step(h, m, k, w)[::-1], r"returns \(weights, attentional state\)"),
        (lambda h, m, k, w: (good_luong_step(h, m, k, w)[0], torch.softmax((m @ h[:, :, None])[..., 0], 0)),
         "do not sum to 1|padding"),
        (delegating_luong_step, "library's own version"),
        (lambda h, m, k, w: luong_checks._reference_luong_step(h, m, k, w), "library's own version"),
        (luong_step_in_place, "changed its input `memory` in place"),
        (stub, "not implemented yet"),
    ],
    ids=["h-then-c", "no-tanh", "context", "padding", "scaled", "overflow", "only-attentional", "swapped-pair",
         "softmax-over-batch", "delegates", "reference", "in-place", "stub"],
)
def test_luong_step_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_luong_step(wrong)


# --- local-p weights -------------------------------------------------------------------------------------------


def good_local_p(scores, centre, half_width, lengths):
    positions = torch.arange(scores.shape[-1])
    real = positions < lengths[:, None]
    inside = ((positions - torch.floor(centre[:, None] + 0.5)).abs() <= half_width) & real
    align = torch.softmax(scores.masked_fill(~inside, -torch.inf), dim=-1)
    sigma = half_width / 2
    return align * torch.exp(-((positions - centre[:, None]) ** 2) / (2 * sigma**2))


@pytest.mark.parametrize("answer", [good_local_p, double(good_local_p)], ids=["float32", "float64"])
def test_local_p_accepts_correct_answers(answer, capsys):
    check_local_p_weights(answer)
    check_local_p_weights(answer, seed=None)
    assert "passed all 4 checks" in capsys.readouterr().out


def _variant(*, gaussian=True, whole_softmax=False, sigma_factor=0.5, padding=True, round_gaussian=False,
             real_window=False, narrow=False, renormalise=False, naive=False):
    def local_p(scores, centre, half_width, lengths):
        positions = torch.arange(scores.shape[-1]).float()
        real = positions < lengths[:, None] if padding else torch.ones_like(scores, dtype=torch.bool)
        middle = torch.floor(centre[:, None] + 0.5)
        distance = (positions - centre[:, None]).abs() if real_window else (positions - middle).abs()
        inside = ((distance < half_width) if narrow else (distance <= half_width)) & real
        if whole_softmax:
            align = torch.softmax(scores.masked_fill(~real, -torch.inf), -1) * inside
        elif naive:
            align = scores.exp() * inside / (scores.exp() * inside).sum(-1, keepdim=True)
        else:
            align = torch.softmax(scores.masked_fill(~inside, -torch.inf), -1)
        if not gaussian:
            return align
        at = middle if round_gaussian else centre[:, None]
        weights = align * torch.exp(-((positions - at) ** 2) / (2 * (sigma_factor * half_width) ** 2))
        return weights / weights.sum(-1, keepdim=True) if renormalise else weights

    return local_p


def local_p_in_place(scores, centre, half_width, lengths):
    out = good_local_p(scores, centre, half_width, lengths)
    scores.mul_(0.5)
    return out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (_variant(gaussian=False), "has no Gaussian"),
        (_variant(whole_softmax=True), "softmax over the whole sentence"),
        (_variant(sigma_factor=1.0), "uses sigma = D"),
        (_variant(padding=False), "gives weight to padding"),
        (_variant(round_gaussian=True), "centres the Gaussian on round"),
        (_variant(real_window=True), r"uses the window \|s - p_t\| <= D"),
        (_variant(narrow=True), r"uses the window \|s - round\(p_t\)\| < D"),
        (_variant(renormalise=True), "renormalises after the Gaussian"),
        (_variant(naive=True), "overflows; subtract the largest score"),
        (lambda s, c, d, n: good_local_p(s, c, d, n)[:, :-1], "returned shape"),
        (lambda s, c, d, n: good_local_p(s, c, d + 1, n), "is wrong"),
        (lambda s, c, d, n: local_window(s, c, d, mask=torch.arange(s.shape[1]) < n[:, None]), "library's own"),
        (local_p_in_place, "changed its input `scores` in place"),
        (stub, "not implemented yet"),
    ],
    ids=["no-gaussian", "whole-softmax", "sigma-D", "padding", "rounded-gaussian", "real-window", "narrow-window",
         "renormalised", "overflow", "shape", "wider-window", "delegates", "in-place", "stub"],
)
def test_local_p_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_local_p_weights(wrong)


# --- the encoder states of a window (debugging) ----------------------------------------------------------------


def good_window_states(memory, centre, half_width, lengths):
    positions = torch.floor(centre + 0.5).long()[:, None] + torch.arange(-half_width, half_width + 1)
    inside = (positions >= 0) & (positions < lengths[:, None])
    index = positions.clamp(0, memory.shape[1] - 1)
    return memory[torch.arange(memory.shape[0])[:, None], index], inside


def window_states_variant(*, cut=False, clamp_first=False, padding=False, narrow=False, shifted_states=False):
    def window_states(memory, centre, half_width, lengths):
        middle = centre.long() if cut else torch.floor(centre + 0.5).long()
        width = half_width - 1 if narrow else half_width
        positions = middle[:, None] + torch.arange(-width, width + 1)
        index = positions.clamp(0, memory.shape[1] - 1)
        checked = index if clamp_first else positions
        inside = (checked >= 0) & (checked < (memory.shape[1] if padding else lengths[:, None]))
        read = (index + 1).clamp(max=memory.shape[1] - 1) if shifted_states else index
        return memory[torch.arange(memory.shape[0])[:, None], read], inside

    return window_states


def window_states_in_place(memory, centre, half_width, lengths):
    out = good_window_states(memory, centre, half_width, lengths)
    centre.add_(0.5)
    return out


@pytest.mark.parametrize(
    "answer",
    [good_window_states, double(good_window_states),
     lambda *a: tuple(x.numpy() for x in good_window_states(*a)),
     lambda *a: (good_window_states(*a)[0], good_window_states(*a)[1].float())],
    ids=["float32", "float64", "numpy", "float-mask"],
)
def test_window_states_accepts_correct_answers(answer, capsys):
    check_window_states(answer)
    check_window_states(answer, seed=None)
    assert "passed all 3 checks" in capsys.readouterr().out


def test_window_states_ignores_what_is_read_outside_the_sentence(capsys):
    def zero_outside(memory, centre, half_width, lengths):
        states, inside = good_window_states(memory, centre, half_width, lengths)
        return states * inside[..., None], inside

    check_window_states(zero_outside)
    assert "passed all 3 checks" in capsys.readouterr().out


def buggy_window_states(memory, centre, half_width, lengths):
    """The notebook's buggy version: both bugs."""
    positions = centre.long()[:, None] + torch.arange(-half_width, half_width + 1)
    positions = positions.clamp(0, memory.shape[1] - 1)
    inside = positions < lengths[:, None]
    return memory[torch.arange(memory.shape[0])[:, None], positions], inside


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (buggy_window_states, "marks positions outside the sentence as inside"),
        (window_states_variant(clamp_first=True), "marks positions outside the sentence as inside"),
        (window_states_variant(cut=True), "fraction cut off"),
        (window_states_variant(padding=True), "treats padding as words"),
        (window_states_variant(narrow=True), "returned shape"),
        (window_states_variant(shifted_states=True), "reads the wrong encoder states"),
        (lambda m, c, d, n: good_window_states(m, c, d, n)[0], "must return a pair"),
        (lambda m, c, d, n: (good_window_states(m, c, d, n)[0], torch.ones(len(c), 2 * d + 1)),
         "marks positions as inside that are not words|outside the sentence"),
        (lambda m, c, d, n: (good_window_states(m, c, d, n)[0], torch.zeros(len(c), 2 * d + 1)),
         "leaves words of the window out"),
        (lambda m, c, d, n: (gather_positions(m, window_positions(c, d)), good_window_states(m, c, d, n)[1]),
         "library's own version"),
        (lambda m, c, d, n: luong_checks._reference_window_states(m, c, d, n), "library's own version"),
        (window_states_in_place, "changed its input `centre` in place"),
        (stub, "not implemented yet"),
    ],
    ids=["the-buggy-version", "clamped-before-mask", "cut-centre", "padding", "narrow", "shifted-states",
         "only-states", "all-inside", "none-inside", "delegates", "reference", "in-place", "stub"],
)
def test_window_states_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_window_states(wrong)


# --- experiment: attention mass inside a window ----------------------------------------------------------------


@pytest.fixture(scope="module")
def global_model():
    seed_everything(0)
    encoder = Encoder(len(SOURCE_VOCAB), 8, 4, bidirectional=True)
    decoder = LuongDecoder(len(TARGET_VOCAB), 8, 8, encoder.output_size, pad_id=TARGET_VOCAB.pad,
                           bos_id=TARGET_VOCAB.bos, eos_id=TARGET_VOCAB.eos, score="dot", input_feeding=False)
    return Seq2Seq(encoder, decoder)


@pytest.fixture(scope="module")
def examples():
    return examples_per_length(1, 5, 14, seed=3)


def good_window_mass(model, examples, half_width):
    maps, _ = attention_maps(model, examples)
    inside = 0.0
    for weights in maps:
        t = torch.arange(weights.shape[0])[:, None]
        s = torch.arange(weights.shape[1])[None]
        inside += weights[(s - t).abs() <= half_width].sum().item()
    return inside / sum(w.shape[0] for w in maps)


def direct_window_mass(model, examples, half_width):
    """The same measurement straight from the model's teacher-forced pass, as a one-element tensor."""
    batch = make_batch(examples)
    with torch.no_grad():
        weights = model.eval()(batch.src, batch.src_mask, batch.tgt).weights.double()
    t = torch.arange(weights.shape[1])[:, None]
    s = torch.arange(weights.shape[2])[None]
    words = batch.tgt_mask.clone()
    words[torch.arange(len(examples)), [len(e.target) for e in examples]] = False  # the <eos> step
    inside = (weights * ((s - t).abs() <= half_width)).sum(-1)
    return (inside[words].sum() / words.sum()).reshape(1)


def window_mass_variant(*, narrow=False, per_sentence=False, with_eos=False, total=False):
    def window_mass(model, examples, half_width):
        batch = make_batch(examples)
        with torch.no_grad():
            weights = model.eval()(batch.src, batch.src_mask, batch.tgt).weights
        shares, counts = [], []
        for b, e in enumerate(examples):
            rows = len(e.target) + (1 if with_eos else 0)
            w = weights[b, :rows, : len(e.source)]
            distance = (torch.arange(w.shape[1])[None] - torch.arange(rows)[:, None]).abs()
            inside = w[(distance < half_width) if narrow else (distance <= half_width)].sum().item()
            shares.append(inside / rows if per_sentence else inside)
            counts.append(rows)
        if total:
            return sum(shares)
        return float(np.mean(shares)) if per_sentence else sum(shares) / sum(counts)

    return window_mass


@pytest.mark.parametrize("answer", [good_window_mass, direct_window_mass,
                                    lambda *a: np.float32(good_window_mass(*a))],
                         ids=["python-float", "tensor-float64", "numpy-float32"])
def test_window_mass_accepts_correct_answers(answer, global_model, examples, capsys):
    check_window_mass(answer, global_model, examples)
    check_window_mass(answer, global_model, examples, seed=None)
    assert "passed all 5 checks" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (window_mass_variant(narrow=True), r"uses the window \|s - t\| < D"),
        (window_mass_variant(per_sentence=True), "averages over sentences"),
        (window_mass_variant(with_eos=True), "counts the <eos> step"),
        (window_mass_variant(total=True), "more than the whole mass"),
        (lambda m, e, d: good_window_mass(m, e, d + 1), "is wrong for D"),
        (lambda m, e, d: [good_window_mass(m, e, d)] * 2, "must return one number"),
        (lambda m, e, d: luong_checks._reference_window_mass(attention_maps(m, e)[0], d), "library's own version"),
        (stub, "not implemented yet"),
    ],
    ids=["narrow-window", "per-sentence", "with-eos", "total", "wider-window", "two-numbers", "reference", "stub"],
)
def test_window_mass_rejects_typical_mistakes(wrong, message, global_model, examples):
    with pytest.raises(ExerciseError, match=message):
        check_window_mass(wrong, global_model, examples)


def test_window_mass_needs_examples(global_model):
    with pytest.raises(ExerciseError, match="non-empty list"):
        check_window_mass(good_window_mass, global_model, [])


def test_window_mass_needs_a_model_with_attention(examples):
    seed_everything(0)
    plain = translation_model(attention=False, hidden_size=8, embed_size=8)
    with pytest.raises(ExerciseError, match="model with attention"):
        check_window_mass(good_window_mass, plain, examples)


def test_the_checks_declare_what_they_exercise():
    from attnlab.exercises._checking import CHECKS

    assert CHECKS["check_luong_step"].exercised == (LuongDecoder.decode_step, LuongDecoder.readout)
    assert CHECKS["check_local_p_weights"].exercised == (local_window,)
    assert CHECKS["check_window_mass"].exercised == ()
    assert CHECKS["check_window_states"].exercised == (
        window_positions, gather_positions, LocalAttentionDecoder.window_attention)
