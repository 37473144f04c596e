import numpy as np
import pytest
import torch

from attnlab.exercises import (
    ExerciseError,
    check_local_p_weights,
    check_luong_step,
    check_reinforce_loss,
    check_reinforce_samples,
    check_straight_through,
    check_window_mass,
    check_window_states,
)
from attnlab.exercises import luong as luong_checks
from attnlab.hard_attention import reinforce_loss, straight_through_gumbel
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


# --- REINFORCE with a baseline ---------------------------------------------------------------------------------


def good_reinforce(log_prob, reward, baseline):
    advantage = (reward - baseline).detach()
    return (-advantage * log_prob + (reward.detach() - baseline) ** 2).mean()


def reinforce_under_no_grad(log_prob, reward, baseline):
    with torch.no_grad():
        return good_reinforce(log_prob, reward, baseline)


def reinforce_in_place(log_prob, reward, baseline):
    reward.detach().sub_(1.0)
    return good_reinforce(log_prob, reward, baseline)


@pytest.mark.parametrize("answer", [good_reinforce, double(good_reinforce)], ids=["float32", "float64"])
def test_reinforce_accepts_correct_answers(answer, capsys):
    check_reinforce_loss(answer)
    check_reinforce_loss(answer, seed=None)
    assert "passed all 3 checks" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda lp, r, b: (-(r - b).detach() * lp + (r - b) ** 2).mean(), "gradient flow into the reward"),
        (lambda lp, r, b: ((r - b).detach() * lp + (r.detach() - b) ** 2).mean(), "wrong sign"),
        (lambda lp, r, b: (-r.detach() * lp + (r.detach() - b) ** 2).mean(), "does not subtract the baseline"),
        (lambda lp, r, b: (-(r - b).detach() * lp + (r.detach() - b) ** 2).sum(), "sums over the entries"),
        (lambda lp, r, b: (-(r - b).detach() * lp).mean(), "does not train the baseline"),
        (lambda lp, r, b: (-(r.detach() - b) * lp + (r.detach() - b) ** 2).mean(),
         "baseline receives gradient from the policy term"),
        (lambda lp, r, b: (-(r.detach() - b) * lp + (r.detach() - b.detach()) ** 2).mean(),
         "baseline receives gradient from the policy term"),
        (lambda lp, r, b: good_reinforce(lp, r, b).detach(), "no gradient reaches log_prob"),
        (reinforce_under_no_grad, "no gradient reaches log_prob"),
        (lambda lp, r, b: good_reinforce(lp.detach(), r, b), "no gradient reaches log_prob"),
        (lambda lp, r, b: good_reinforce(lp, r, b).item(), "carries no gradient"),
        (lambda lp, r, b: (-(r - b).detach() * lp).mean() + ((r.detach() - b) ** 2).sum(), "sums the squared"),
        (lambda lp, r, b: -(r - b).detach() * lp + (r.detach() - b) ** 2, "returned shape"),
        (lambda lp, r, b: reinforce_loss(lp, r, b), "library's own version"),
        (reinforce_in_place, "changed its input `reward` in place"),
        (stub, "not implemented yet"),
    ],
    ids=["reward-not-detached", "sign", "no-baseline", "sum", "no-baseline-fit", "advantage-not-detached",
         "baseline-only-through-policy", "detached-loss", "no-grad", "log-prob-detached", "python-float",
         "summed-squares", "not-reduced", "delegates", "in-place", "stub"],
)
def test_reinforce_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_reinforce_loss(wrong)


# --- experiment: sampled REINFORCE estimates -----------------------------------------------------------------


def good_reinforce_samples(theta, rewards, baseline, n, generator):
    probs = torch.softmax(theta, 0)
    choices = torch.multinomial(probs, n, replacement=True, generator=generator)
    return (rewards[choices] - baseline)[:, None] * (torch.eye(len(theta))[choices] - probs)


def autograd_reinforce_samples(theta, rewards, baseline, n, generator):
    """The same estimates from autograd and the library's loss, one draw at a time, in float64."""
    theta = theta.double().detach().requires_grad_()
    log_probs = torch.log_softmax(theta, 0)
    choices = torch.multinomial(log_probs.exp().detach(), n, replacement=True, generator=generator)
    per_choice = torch.stack([-torch.autograd.grad(reinforce_loss(log_probs[j], rewards[j].double(),
                                                                  torch.tensor(float(baseline))), theta,
                                                   retain_graph=True)[0] for j in range(len(theta))])
    return per_choice[choices]


def reinforce_samples_variant(kind):
    def reinforce_samples(theta, rewards, baseline, n, generator):
        probs = torch.softmax(theta, 0)
        if kind == "uniform":
            choices = torch.randint(len(theta), (n,), generator=generator)
        elif kind == "mode":
            choices = probs.argmax().repeat(n)
        elif kind == "global-random-state":
            choices = torch.multinomial(probs, n, replacement=True)
        else:
            choices = torch.multinomial(probs, n, replacement=True, generator=generator)
        one_hot = torch.eye(len(theta))[choices]
        advantage = rewards[choices] - (0.0 if kind == "no-baseline" else baseline)
        if kind == "sign":
            return -advantage[:, None] * (one_hot - probs)
        if kind == "one-hot":
            return advantage[:, None] * one_hot
        if kind == "gradient-of-alpha":
            return (advantage * probs[choices])[:, None] * (one_hot - probs)
        if kind == "expected":
            exact = (probs[:, None] * (rewards - baseline)[:, None] * (torch.eye(len(theta)) - probs)).sum(0)
            return exact.expand(n, -1)
        if kind == "shuffled":
            permuted = choices[torch.randperm(n, generator=torch.Generator().manual_seed(0))]
            return (rewards[permuted] - baseline)[:, None] * (one_hot - probs)
        return advantage[:, None] * (one_hot - probs)

    return reinforce_samples


def reinforce_samples_in_place(theta, rewards, baseline, n, generator):
    out = good_reinforce_samples(theta, rewards, baseline, n, generator)
    rewards.sub_(baseline)
    return out


@pytest.mark.parametrize(
    "answer",
    [good_reinforce_samples, double(good_reinforce_samples), autograd_reinforce_samples,
     lambda *a: good_reinforce_samples(*a).numpy()],
    ids=["float32", "float64", "autograd-float64", "numpy"],
)
def test_reinforce_samples_accepts_correct_answers(answer, capsys):
    check_reinforce_samples(answer)
    check_reinforce_samples(answer, seed=None)
    assert "passed all 3 checks" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (reinforce_samples_variant("no-baseline"), "does not subtract the baseline"),
        (reinforce_samples_variant("sign"), "wrong sign"),
        (reinforce_samples_variant("one-hot"), "one-hot vector e_j as the gradient of log alpha_j"),
        (reinforce_samples_variant("gradient-of-alpha"), "gradient of alpha_j, not of log alpha_j"),
        (reinforce_samples_variant("uniform"), "spread evenly over the choices"),
        (reinforce_samples_variant("mode"), "same choice in every draw"),
        (reinforce_samples_variant("global-random-state"), "draw the choices with the `generator` argument"),
        (reinforce_samples_variant("expected"), "expected gradient in every row"),
        (reinforce_samples_variant("shuffled"), "not the estimates of single draws"),
        (lambda t, r, b, n, g: good_reinforce_samples(t, r, b, n, g)[:-1], "returned shape"),
        (lambda t, r, b, n, g: luong_checks._reference_reinforce_samples(t, r, b, n, g), "library's own version"),
        (reinforce_samples_in_place, "changed its input `rewards` in place"),
        (stub, "not implemented yet"),
    ],
    ids=["no-baseline", "sign", "one-hot", "gradient-of-alpha", "uniform", "mode", "global-random-state",
         "expected", "shuffled", "shape", "reference", "in-place", "stub"],
)
def test_reinforce_samples_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_reinforce_samples(wrong)


def test_reinforce_samples_rejects_rows_that_ignore_the_generator():
    def same_rows(theta, rewards, baseline, n, generator):
        return good_reinforce_samples(theta, rewards, baseline, n, torch.Generator().manual_seed(1))

    with pytest.raises(ExerciseError, match="same rows whatever the generator"):
        check_reinforce_samples(same_rows)


# --- straight-through Gumbel-softmax ---------------------------------------------------------------------------


def one_hot_of(x):
    return torch.nn.functional.one_hot(x.argmax(-1), x.shape[-1]).to(x.dtype)


def good_straight_through(scores, noise, tau):
    soft = torch.softmax((scores + noise) / tau, dim=-1)
    return one_hot_of(scores + noise) + soft - soft.detach()


def buggy_straight_through(scores, noise, tau):
    soft = torch.softmax((scores + noise) / tau, dim=-1)
    return one_hot_of(scores) + soft.detach() - soft


def straight_through_in_place(scores, noise, tau):
    noise.div_(tau)
    soft = torch.softmax(scores / tau + noise, dim=-1)
    return one_hot_of(scores + noise) + soft - soft.detach()


@pytest.mark.parametrize("answer", [good_straight_through, double(good_straight_through)], ids=["float32", "float64"])
def test_straight_through_accepts_correct_answers(answer, capsys):
    check_straight_through(answer)
    check_straight_through(answer, seed=None)
    assert "passed all 2 checks" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (buggy_straight_through, "picks the largest score without the noise"),
        (lambda s, g, t: buggy_straight_through(s + g, torch.zeros_like(g), t) * 1, "wrong sign"),
        (lambda s, g, t: one_hot_of(s + g) + torch.softmax((s + g) / t, -1), "not one-hot"),
        (lambda s, g, t: torch.softmax((s + g) / t, -1), "returns the softmax itself"),
        (lambda s, g, t: one_hot_of(s + g), "no gradient reaches the scores"),
        (lambda s, g, t: good_straight_through(s, g, 1.0), "ignores the temperature"),
        (lambda s, g, t: one_hot_of(s + g) + torch.softmax(s / t, -1) - torch.softmax(s / t, -1).detach(),
         r"that of softmax\(scores / tau\)"),
        (lambda s, g, t: straight_through_gumbel(s, tau=t), "library's own version"),
        (straight_through_in_place, "changed its input `noise` in place"),
        (stub, "not implemented yet"),
    ],
    ids=["the-buggy-version", "sign", "not-one-hot", "soft", "detached", "no-temperature", "noise-free-relaxation",
         "delegates", "in-place", "stub"],
)
def test_straight_through_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_straight_through(wrong)


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
    assert CHECKS["check_reinforce_loss"].exercised == (reinforce_loss,)
    assert CHECKS["check_straight_through"].exercised == (straight_through_gumbel,)
    assert CHECKS["check_window_mass"].exercised == ()
    assert CHECKS["check_window_states"].exercised == (
        window_positions, gather_positions, LocalAttentionDecoder.window_attention)
    assert CHECKS["check_reinforce_samples"].exercised == ()
