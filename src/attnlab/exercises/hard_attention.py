"""Checks for chapter 6, "Soft and hard attention".

The REINFORCE loss with a baseline, sampled REINFORCE estimates whose variance the
chapter measures against the baseline (an experiment), and the straight-through
Gumbel-softmax (a debugging exercise).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from attnlab.exercises._checking import (
    ExerciseError,
    call,
    close,
    exercise_check,
    expect_close,
    expect_number,
    expect_tensor,
    generator,
    passed,
)
from attnlab.hard_attention import reinforce_loss, straight_through_gumbel

# -----------------------------------------------------------------------------------
# REINFORCE with a baseline


@exercise_check(reinforce_loss)
def check_reinforce_loss(reinforce_loss_fn: Callable, seed: int | None = 0) -> None:
    """Check ``reinforce_loss(log_prob (N,), reward (N,), baseline (N,)) -> scalar``.

    The mean over the entries of ``-(r - b) log p + (r - b)^2``, where the advantage
    ``r - b`` is a constant in the first term and the reward is always a constant.
    """
    name = "reinforce_loss"
    gen = generator(seed)
    cases = [4, 1, 9]
    for n in cases:
        log_prob = -torch.rand(n, generator=gen) * 3 - 0.1
        reward = torch.randn(n, generator=gen) * 2
        baseline = torch.randn(n, generator=gen)
        inputs = [x.clone().requires_grad_() for x in (log_prob, reward, baseline)]
        out = call(reinforce_loss_fn, name, *inputs)
        what = f"for {n} sampled choice{'s' if n > 1 else ''}"
        if not isinstance(out, torch.Tensor):
            raise ExerciseError(
                f"{name} returned a {type(out).__name__}, which carries no gradient"
                f" {what}: return the loss as a torch tensor computed from log_prob,"
                " so that backward() can train the attention"
            )
        expect_tensor(name, out, ())
        if not out.requires_grad:
            raise ExerciseError(
                f"no gradient reaches log_prob from the loss of {name} {what}: the"
                " loss is detached (or computed under torch.no_grad()). Detach only"
                " the advantage and the reward, never log_prob or the loss itself"
            )
        grads = torch.autograd.grad(out, inputs, allow_unused=True)
        g_log_prob, g_reward, g_baseline = (
            torch.zeros(n) if g is None else g for g in grads
        )
        advantage = reward - baseline
        if g_log_prob.abs().max() < 1e-7:
            raise ExerciseError(
                f"no gradient reaches log_prob from the loss of {name} {what}:"
                " log_prob must stay attached, it is the only path from the loss to"
                " the attention"
            )
        if g_reward.abs().max() > 1e-6:
            raise ExerciseError(
                f"{name} lets gradient flow into the reward {what}: the reward is a"
                " measured number, not something to optimise through; use"
                " reward.detach()"
            )
        if close(g_log_prob, advantage / n):
            raise ExerciseError(
                f"{name} has the wrong sign {what}: minimising the loss must raise"
                " log p for choices whose reward beats the baseline, so the term is"
                " -(r - b) log p"
            )
        if close(g_log_prob, -reward / n):
            raise ExerciseError(
                f"{name} does not subtract the baseline in the policy term {what}: "
                "use -(r - b) log p"
            )
        if n > 1 and close(g_log_prob, -advantage):
            raise ExerciseError(
                f"{name} sums over the entries {what}: take the mean"
            )
        expect_close(
            name, g_log_prob, -advantage / n, f"(its gradient in log_prob) {what}"
        )
        fit = 2 * (baseline - reward) / n
        if close(g_baseline, fit + log_prob / n) or close(g_baseline, log_prob / n):
            raise ExerciseError(
                f"in {name} the baseline receives gradient from the policy term"
                f" {what}: in -(r - b) log p the advantage is a constant, use"
                " (reward - baseline).detach(); only the squared error (r - b)^2"
                " may train the baseline"
            )
        if g_baseline.abs().max() < 1e-7:
            raise ExerciseError(
                f"{name} does not train the baseline {what}: add the squared error"
                " (r - b)^2, with the baseline attached"
            )
        if n > 1 and close(g_baseline, n * fit):
            raise ExerciseError(
                f"{name} sums the squared errors {what}: take the mean"
            )
        expect_close(name, g_baseline, fit, f"(its gradient in the baseline) {what}")
        value = expect_number(name, out)
        expected = reinforce_loss(log_prob, reward, baseline)
        expect_close(
            name, torch.tensor(value), expected, f"(its value) {what}", atol=1e-4
        )
    passed(name, len(cases))


# -----------------------------------------------------------------------------------
# Experiment: sampled REINFORCE estimates, whose variance depends on the baseline


def _reference_reinforce_samples(
    theta: torch.Tensor,
    rewards: torch.Tensor,
    baseline: float,
    n: int,
    generator: torch.Generator,
) -> torch.Tensor:
    probs = torch.softmax(theta.detach().double(), 0)
    choices = torch.multinomial(probs, n, replacement=True, generator=generator)
    score = torch.eye(len(probs), dtype=probs.dtype)[choices] - probs
    return (rewards.double()[choices] - baseline)[:, None] * score


def _sampled_rows(
    answer: Callable,
    name: str,
    problem: tuple[torch.Tensor, torch.Tensor, float],
    n: int,
    seed: int,
) -> torch.Tensor:
    """The answer's ``n`` estimates ``(n, S)`` for ``problem`` (theta, rewards,
    baseline), drawn from a generator seeded with ``seed``."""
    theta, rewards, baseline = problem
    generator = torch.Generator().manual_seed(seed)
    out = call(answer, name, theta, rewards, baseline, n, generator)
    return expect_tensor(name, out, (n, len(theta)), torch.float64)


def _per_choice(
    probs: torch.Tensor, rewards: torch.Tensor, baseline: float
) -> dict[str, torch.Tensor]:
    """The estimate of every single draw ``(S, S)`` (row ``j``: ``j`` drawn), and the
    typical mistakes."""
    eye = torch.eye(len(probs), dtype=probs.dtype)
    advantage = (rewards - baseline)[:, None]
    return {
        "right": advantage * (eye - probs),
        "sign": -advantage * (eye - probs),
        "no baseline": rewards[:, None] * (eye - probs),
        "one-hot": advantage * eye,
        "gradient of alpha": advantage * probs[:, None] * (eye - probs),
    }


def _nearest(
    rows: torch.Tensor, candidates: torch.Tensor
) -> tuple[torch.Tensor, bool]:
    """The index of the candidate each row equals, and whether every row equals
    one."""
    distance = (rows[:, None, :] - candidates[None]).abs().amax(-1)  # (n, S)
    best, index = distance.min(-1)
    scale = 1e-4 * (1 + candidates.abs().max())
    return index, bool((best <= scale).all())


@exercise_check()
def check_reinforce_samples(
    reinforce_samples: Callable, seed: int | None = 0
) -> None:
    """Check ``reinforce_samples(theta (S,), rewards (S,), baseline, n, generator) ->
    (n, S)``.

    Row ``i`` is the estimate ``(r_j - b) grad_theta log alpha_j`` of the gradient of
    ``E[r]`` for one choice ``j`` drawn from ``alpha = softmax(theta)`` with
    ``generator``. The check re-measures from the rows: each must be the estimate of
    a single draw, the draws must follow ``alpha`` and the same generator state must
    give the same rows.
    """
    name = "reinforce_samples"
    gen = generator(seed)
    n = 4000
    problems = [
        (
            torch.tensor([0.5, -0.3, 1.2, 0.0, -1.0]),
            [9.0, 10.5, 10.0, 8.5, 11.0],
            0.0,
        ),
        (
            torch.tensor([0.5, -0.3, 1.2, 0.0, -1.0]),
            [9.0, 10.5, 10.0, 8.5, 11.0],
            9.9,
        ),
        (torch.randn(3, generator=gen), [-1.0, 2.0, 0.5], 0.3),
    ]
    for case, (theta, reward_list, baseline) in enumerate(problems):
        theta = theta + 0.2 * torch.randn(len(theta), generator=gen)
        rewards = torch.tensor(reward_list) + 0.1 * torch.randn(
            len(theta), generator=gen
        )
        probs = torch.softmax(theta.double(), 0)
        size = len(theta)
        what = f"for {size} choices with baseline b = {baseline}"
        draw_seed = int(torch.randint(2**31 - 1, (1,), generator=gen))

        problem = (theta, rewards, baseline)
        rows = _sampled_rows(reinforce_samples, name, problem, n, draw_seed)
        # a generator in the same state must give the same rows
        again = _sampled_rows(reinforce_samples, name, problem, n, draw_seed)
        candidates = _per_choice(probs, rewards.double(), baseline)
        gradient = (probs[:, None] * candidates["right"]).sum(0)
        if close(rows, gradient.expand(n, size), 1e-5):
            raise ExerciseError(
                f"{name} returns the expected gradient in every row {what}: each row"
                " is the estimate of one draw, (r_j - b) times the gradient of log"
                " alpha_j for the j drawn"
            )
        if not torch.allclose(rows, again, atol=1e-6, rtol=1e-5):
            raise ExerciseError(
                f"{name} gives different rows for two generators in the same state"
                f" {what}: draw the choices with the `generator` argument (e.g."
                " torch.multinomial(..., generator=generator)), not with the global"
                " random state"
            )
        choices, exact = _nearest(rows, candidates["right"])
        if not exact:
            for mistake, head, hint in [
                (
                    "sign",
                    "has the wrong sign",
                    "the estimate of the gradient of E[r] is +(r_j - b) grad log"
                    " alpha_j (the gradient of the loss is its negative)",
                ),
                (
                    "no baseline",
                    "does not subtract the baseline",
                    "the estimate is (r_j - b) grad log alpha_j",
                ),
                (
                    "one-hot",
                    "uses the one-hot vector e_j as the gradient of log alpha_j",
                    "the softmax ties all logits together, grad_theta log alpha_j ="
                    " e_j - alpha",
                ),
                (
                    "gradient of alpha",
                    "multiplies by the gradient of alpha_j, not of log alpha_j",
                    "drawing j already weights each choice by alpha_j",
                ),
            ]:
                if (mistake != "no baseline" or baseline != 0) and _nearest(
                    rows, candidates[mistake]
                )[1]:
                    raise ExerciseError(f"{name} {head} {what}: {hint}")
            raise ExerciseError(
                f"the rows of {name} are not the estimates of single draws {what}:"
                " row i must be (r_j - b) (e_j - alpha) for the choice j of draw i"
            )
        counts = torch.bincount(choices, minlength=size).double()
        expected = n * probs
        deviation = (counts - expected).abs() / (expected * (1 - probs)).sqrt()
        if counts.max() == n:
            raise ExerciseError(
                f"{name} makes the same choice in every draw {what}: draw j at"
                " random from softmax(theta), not its most likely value"
            )
        if deviation.max() > 5:
            uniform = (counts - n / size).abs().max() < 5 * (n / size) ** 0.5
            raise ExerciseError(
                f"the draws of {name} do not follow softmax(theta) {what}"
                + (
                    ": they are spread evenly over the choices; draw with the"
                    " probabilities alpha (torch.multinomial(alpha, n, replacement="
                    "True, generator=generator))"
                    if uniform
                    else ": draw each choice j with probability alpha_j"
                )
            )
        spread = rows.std(0) / n**0.5
        if ((rows.mean(0) - gradient).abs() > 5 * spread + 1e-6).any():
            raise ExerciseError(
                f"the mean of the estimates of {name} is not the gradient of E[r]"
                f" {what}: look at how the draws and the rows are paired"
            )
        if case == len(problems) - 1 and torch.equal(
            rows, _sampled_rows(reinforce_samples, name, problem, n, draw_seed + 1)
        ):
            raise ExerciseError(
                f"{name} returns the same rows whatever the generator {what}: draw"
                " the choices from `generator`"
            )
    passed(name, len(problems))


# -----------------------------------------------------------------------------------
# The straight-through Gumbel-softmax (debugging exercise)


def _gumbel(shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
    u = torch.rand(*shape, generator=gen).clamp(1e-6, 1 - 1e-6)
    return -torch.log(-torch.log(u))


def _relaxed_gradient(
    scores: torch.Tensor, noise: torch.Tensor, tau: float, upstream: torch.Tensor
) -> torch.Tensor:
    leaf = scores.detach().clone().requires_grad_()
    (torch.softmax((leaf + noise) / tau, dim=-1) * upstream).sum().backward()
    return leaf.grad


@exercise_check(straight_through_gumbel)
def check_straight_through(straight_through: Callable, seed: int | None = 0) -> None:
    """Check ``straight_through(scores (B, S), noise (B, S), tau) -> (B, S)``.

    Forward: the one-hot vector of ``argmax(scores + noise)``. Backward: the gradient
    of ``softmax((scores + noise) / tau)``.
    """
    name = "straight_through"
    gen = generator(seed)
    batch, size = 6, 5
    cases = [0.5, 2.0]
    for tau in cases:
        scores = torch.randn(batch, size, generator=gen)
        noise = _gumbel((batch, size), gen)
        # the last row: noise that moves the sample away from the largest score, so
        # the two argmaxes differ
        noise[-1] = 0.0
        noise[-1, (scores[-1].argmax() + 1) % size] = (
            scores[-1].max() - scores[-1].min() + 1.0
        )
        upstream = torch.randn(batch, size, generator=gen)
        leaf = scores.clone().requires_grad_()
        what = f"for tau = {tau}"
        out = call(straight_through, name, leaf, noise, tau)
        if not isinstance(out, torch.Tensor):
            raise ExerciseError(
                f"{name} must return a torch tensor that carries the gradient of the"
                f" scores, got {type(out).__name__}"
            )
        value = expect_tensor(name, out, (batch, size))
        one_hot = value.round()
        if not (
            close(value, one_hot, 1e-5)
            and one_hot.sum(-1).eq(1).all()
            and one_hot.ge(0).all()
        ):
            soft = torch.softmax((scores + noise) / tau, -1)
            if close(value, soft, 1e-4):
                raise ExerciseError(
                    f"{name} returns the softmax itself {what}: the forward value"
                    " must be the one-hot sample, with the softmax's gradient"
                    " attached (hard + soft - soft.detach())"
                )
            raise ExerciseError(
                f"the rows returned by {name} are not one-hot vectors {what}: the"
                " forward value is the one-hot sample; whatever carries the"
                " softmax's gradient must add zero to it (soft - soft.detach())"
            )
        chosen = one_hot.argmax(-1)
        if (
            chosen.eq(scores.argmax(-1)).all()
            and not chosen.eq((scores + noise).argmax(-1)).all()
        ):
            raise ExerciseError(
                f"{name} picks the largest score without the noise {what}: that is"
                " always the same position, not a sample; take the argmax of scores"
                " + noise"
            )
        if not chosen.eq((scores + noise).argmax(-1)).all():
            raise ExerciseError(
                f"{name} does not pick the position with the largest scores + noise"
                f" {what}"
            )
        if not out.requires_grad:
            raise ExerciseError(
                f"no gradient reaches the scores through {name} {what}: the backward"
                " pass must be that of softmax((scores + noise) / tau); do not"
                " detach it or use torch.no_grad()"
            )
        (grad,) = torch.autograd.grad(
            (out * upstream).sum(), leaf, allow_unused=True
        )
        grad = torch.zeros_like(scores) if grad is None else grad
        expected = _relaxed_gradient(scores, noise, tau, upstream)
        if close(grad, expected, 1e-5):
            continue
        if close(grad, -expected, 1e-5):
            raise ExerciseError(
                f"the gradient of {name} has the wrong sign {what}: the"
                " straight-through sum is hard + soft - soft.detach(), so that the"
                " backward pass follows +soft"
            )
        if grad.abs().max() < 1e-8:
            raise ExerciseError(
                f"no gradient reaches the scores through {name} {what}: attach the"
                " softmax's gradient with hard + soft - soft.detach()"
            )
        if tau != 1 and close(
            grad, _relaxed_gradient(scores, noise, 1.0, upstream), 1e-5
        ):
            raise ExerciseError(
                f"the gradient of {name} ignores the temperature {what}: the"
                " relaxation is softmax((scores + noise) / tau)"
            )
        if close(
            grad,
            _relaxed_gradient(scores, torch.zeros_like(noise), tau, upstream),
            1e-5,
        ):
            raise ExerciseError(
                f"the gradient of {name} is that of softmax(scores / tau) {what}:"
                " add the same noise inside the softmax as in the argmax"
            )
        expect_close(f"{name} (its gradient in the scores)", grad, expected, what)
    passed(name, len(cases))
