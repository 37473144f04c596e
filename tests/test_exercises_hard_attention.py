"""The checks of chapter 6, soft and hard attention, accept right answers and explain typical wrong ones."""

import pytest
import torch

from attnlab.exercises import (
    ExerciseError,
    check_reinforce_loss,
    check_reinforce_samples,
    check_straight_through,
)
from attnlab.exercises import hard_attention as hard_attention_checks
from attnlab.hard_attention import reinforce_loss, straight_through_gumbel


def stub(*args):
    raise NotImplementedError()


def double(fn):
    """The same answer computed in float64."""

    def wrapped(*args):
        return fn(*(a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args))

    return wrapped


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
        (lambda t, r, b, n, g: hard_attention_checks._reference_reinforce_samples(t, r, b, n, g), "library's own version"),
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


def test_the_checks_declare_what_they_exercise():
    from attnlab.exercises._checking import CHECKS

    assert CHECKS["check_reinforce_loss"].exercised == (reinforce_loss,)
    assert CHECKS["check_straight_through"].exercised == (straight_through_gumbel,)
    assert CHECKS["check_reinforce_samples"].exercised == ()
