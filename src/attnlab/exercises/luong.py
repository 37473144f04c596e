"""Checks for the chapter "Luong attention: global vs local, and soft vs hard"."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from attnlab.attention import local_window, padding_mask
from attnlab.exercises._checking import ExerciseError, call, expect_close, expect_tensor, passed
from attnlab.hard_attention import reinforce_loss


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and torch.allclose(a.to(b.dtype), b, atol=1e-5, rtol=1e-4)


def _window_cases() -> list[tuple[torch.Tensor, torch.Tensor, int, torch.Tensor]]:
    """``(scores (B, S), centre (B,), D, lengths (B,))``: fractional centres, both edges, padding."""
    gen = torch.Generator().manual_seed(5)
    cases = []
    for centre, half_width, lengths in [([3.3, 0.2, 8.9], 2, [10, 10, 10]), ([5.6, 2.0], 3, [12, 6]),
                                        ([1.7, 6.4, 4.5], 4, [9, 7, 9])]:
        scores = torch.randn(len(centre), max(lengths), generator=gen) * 2
        cases.append((scores, torch.tensor(centre), half_width, torch.tensor(lengths)))
    return cases


def check_local_p_weights(local_p_weights: Callable) -> None:
    """Check ``local_p_weights(scores (B, S), centre (B,), half_width, lengths (B,)) -> weights (B, S)``.

    Inside the window ``|s - round(p_t)| <= D`` (real words only) the weight is the softmax of the scores over
    the window times ``exp(-(s - p_t)^2 / (2 sigma^2))`` with ``sigma = D / 2``; outside it is 0.
    """
    name = "local_p_weights"
    cases = _window_cases()
    for scores, centre, half_width, lengths in cases:
        mask = padding_mask(lengths, scores.shape[1])
        out = call(local_p_weights, name, scores.clone(), centre.clone(), half_width, lengths.clone())
        what = f"for centres {centre.tolist()}, D = {half_width} and lengths {lengths.tolist()}"
        expect_tensor(name, out, tuple(scores.shape))
        expected = local_window(scores, centre, half_width, mask=mask)
        if _close(out, expected):
            continue
        inside = local_window(scores, centre, half_width, mask=mask, gaussian=False)
        if _close(out, inside):
            raise ExerciseError(f"{name} has no Gaussian {what}: multiply the window's softmax by "
                                "exp(-(s - p_t)^2 / (2 sigma^2)) so that words near p_t count more")
        positions = torch.arange(scores.shape[1]).float()
        gaussian = torch.exp(-(positions - centre[:, None]) ** 2 / (2 * (half_width / 2) ** 2))
        window = ((positions - torch.floor(centre[:, None] + 0.5)).abs() <= half_width) & mask
        if _close(out, torch.softmax(scores.masked_fill(~mask, -torch.inf), -1) * gaussian * window):
            raise ExerciseError(f"{name} takes the softmax over the whole sentence {what}: normalise over the "
                                "positions inside the window only (the others are never scored)")
        if _close(out, local_window(scores, centre, half_width, mask=mask, sigma=half_width)):
            raise ExerciseError(f"{name} uses sigma = D {what}: Luong et al. set sigma = D / 2")
        if _close(out, local_window(scores, centre, half_width, mask=None)):
            raise ExerciseError(f"{name} gives weight to padding {what}: positions s >= lengths[b] are not words")
        if _close(out, inside * torch.exp(-(positions - torch.floor(centre[:, None] + 0.5)) ** 2
                                          / (2 * (half_width / 2) ** 2))):
            raise ExerciseError(f"{name} centres the Gaussian on round(p_t) {what}: use the real-valued p_t, "
                                "that is what makes the weights differentiable in p_t")
        real_window = ((positions - centre[:, None]).abs() <= half_width) & mask
        if _close(out, torch.softmax(scores.masked_fill(~real_window, -torch.inf), -1).nan_to_num() * gaussian):
            raise ExerciseError(f"{name} uses the window |s - p_t| <= D {what}: with a fractional p_t that has "
                                "only 2D positions; centre the window on round(p_t) to get 2D + 1")
        expect_close(name, out, expected, what)
    passed(name, len(cases))


def check_reinforce_loss(reinforce_loss_fn: Callable) -> None:
    """Check ``reinforce_loss(log_prob (N,), reward (N,), baseline (N,)) -> scalar``.

    The mean over the entries of ``-(r - b) log p + (r - b)^2``, where the advantage ``r - b`` is a constant
    in the first term and the reward is always a constant.
    """
    name = "reinforce_loss"
    gen = torch.Generator().manual_seed(3)
    cases = [4, 1, 9]
    for n in cases:
        log_prob = -torch.rand(n, generator=gen) * 3
        reward = torch.randn(n, generator=gen) * 2
        baseline = torch.randn(n, generator=gen)
        inputs = [x.clone().requires_grad_() for x in (log_prob, reward, baseline)]
        out = call(reinforce_loss_fn, name, *inputs)
        what = f"for {n} sampled choice{'s' if n > 1 else ''}"
        expect_tensor(name, out, ())
        grads = torch.autograd.grad(out, inputs, allow_unused=True)
        g_log_prob, g_reward, g_baseline = (torch.zeros(n) if g is None else g for g in grads)
        advantage = reward - baseline
        if g_reward.abs().max() > 1e-6:
            raise ExerciseError(f"{name} lets gradient flow into the reward {what}: the reward is a measured "
                                "number, not something to optimise through; use reward.detach()")
        if _close(g_log_prob, advantage / n):
            raise ExerciseError(f"{name} has the wrong sign {what}: minimising the loss must raise log p for "
                                "choices whose reward beats the baseline, so the term is -(r - b) log p")
        if _close(g_log_prob, -reward / n):
            raise ExerciseError(f"{name} does not subtract the baseline in the policy term {what}: "
                                "use -(r - b) log p")
        if n > 1 and _close(g_log_prob, -advantage):
            raise ExerciseError(f"{name} sums over the entries {what}: take the mean")
        expect_close(name, g_log_prob, -advantage / n, f"(its gradient in log_prob) {what}")
        if g_baseline.abs().max() < 1e-7:
            raise ExerciseError(f"{name} does not train the baseline {what}: add the squared error (r - b)^2")
        if _close(g_baseline, 2 * (baseline - reward) / n + log_prob / n):
            raise ExerciseError(f"{name} lets the policy term train the baseline {what}: in -(r - b) log p the "
                                "advantage is a constant, use (reward - baseline).detach()")
        expect_close(name, g_baseline, 2 * (baseline - reward) / n, f"(its gradient in the baseline) {what}")
        expected = reinforce_loss(log_prob, reward, baseline)
        if not math.isclose(float(out.detach()), float(expected), rel_tol=1e-4, abs_tol=1e-5):
            raise ExerciseError(f"{name} returns {float(out.detach()):.4g} {what}, expected {float(expected):.4g}")
    passed(name, len(cases))
