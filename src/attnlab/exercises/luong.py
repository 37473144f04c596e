"""Checks for chapter 5, "Luong attention: global and local".

Luong's global step (scores from the current state, the attentional state), the
local-p weights, the encoder states of a local window (a debugging exercise) and the
share of a global model's attention that falls inside a local window (an experiment
on a trained model).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from attnlab.attention import padding_mask
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
from attnlab.luong import (
    LocalAttentionDecoder,
    LuongDecoder,
    gather_positions,
    local_window,
    window_positions,
)
from attnlab.tasks.translation import attention_maps, make_batch


def _require_finite(name: str, out: Any, hint: str) -> None:
    """Name the usual cause when an answer returns NaN or infinity (before
    ``expect_tensor`` reports it plainly)."""
    values = out if isinstance(out, tuple | list) else (out,)
    for value in values:
        if isinstance(value, torch.Tensor | np.ndarray):
            tensor = torch.as_tensor(
                np.asarray(
                    value.detach() if isinstance(value, torch.Tensor) else value,
                    dtype=np.float64,
                )
            )
            if not torch.isfinite(tensor).all():
                raise ExerciseError(f"{name} returned NaN or infinite values {hint}")


# -----------------------------------------------------------------------------------
# Luong's global step: scores of the current state, context, attentional state


def _reference_luong_step(
    h: torch.Tensor, memory: torch.Tensor, mask: torch.Tensor, w_c: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    scores = torch.einsum("bd,bsd->bs", h, memory).masked_fill(~mask, -torch.inf)
    weights = torch.softmax(scores, dim=-1)
    context = torch.einsum("bs,bsd->bd", weights, memory)
    return torch.tanh(torch.cat([context, h], dim=-1) @ w_c.T), weights


def _split_pair(
    name: str, out: Any, batch: int, source_len: int, size: int
) -> tuple[Any, Any]:
    """``(attentional, weights)`` from the answer, with a useful message when it is
    not that pair."""
    if isinstance(out, torch.Tensor | np.ndarray):
        raise ExerciseError(
            f"{name} returned one tensor of shape {tuple(out.shape)}: return the"
            " pair (attentional state, weights), both are needed (the decoder"
            " predicts from the first, the plots show the second)"
        )
    if not isinstance(out, tuple | list) or len(out) != 2:
        size = f" of {len(out)}" if isinstance(out, tuple | list) else ""
        raise ExerciseError(
            f"{name} must return a pair (attentional state (B, d), weights (B, S)),"
            f" got {type(out).__name__}{size}"
        )
    first, second = out
    shapes = [
        tuple(x.shape) if isinstance(x, torch.Tensor | np.ndarray) else None
        for x in out
    ]
    if shapes == [(batch, source_len), (batch, size)]:
        raise ExerciseError(
            f"{name} returns (weights, attentional state): return them in the order "
            "(attentional state, weights)"
        )
    return first, second


@exercise_check(LuongDecoder.decode_step, LuongDecoder.readout)
def check_luong_step(luong_step: Callable, seed: int | None = 0) -> None:
    """Check ``luong_step(h (B, d), memory (B, S, d), mask (B, S), w_c (d, 2d)) ->
    (h~ (B, d), weights (B, S))``.

    Dot scores of the current state against every encoder state, a softmax over the
    real words, the context ``c_t``, and the attentional state ``tanh(W_c [c_t;
    h_t])`` (``w_c`` as stored by ``nn.Linear(2d, d)``).
    """
    name = "luong_step"
    gen = generator(seed)
    batch, source_len, size = 3, 7, 5
    lengths = torch.tensor([source_len, 4, 6])
    mask = padding_mask(lengths, source_len)
    weight = torch.randn(size, 2 * size, generator=gen) / (2 * size) ** 0.5
    cases = [
        ("for random states", 1.0),
        ("for large states (scores in the hundreds)", 10.0),
    ]
    for what, scale in cases:
        h = torch.randn(batch, size, generator=gen) * scale
        memory = torch.randn(batch, source_len, size, generator=gen) * scale
        what = f"{what}, sentence lengths {lengths.tolist()}"
        # Keeps tanh away from saturation, where mistakes in W_c [c_t; h_t] would not
        # show.
        w_c = weight / scale
        out = call(luong_step, name, h, memory, mask, w_c)
        first, second = _split_pair(name, out, batch, source_len, size)
        if scale > 1:
            _require_finite(
                name,
                out,
                f"{what}: exp of a large score overflows; subtract each row's"
                " largest score before exponentiating (torch.softmax does this for"
                " you)",
            )
        weights = expect_tensor(f"{name} (the weights)", second, (batch, source_len))
        attentional = expect_tensor(
            f"{name} (the attentional state)", first, (batch, size)
        )
        ref_attentional, ref_weights = _reference_luong_step(h, memory, mask, w_c)
        if weights[~mask].abs().max() > 1e-6:
            raise ExerciseError(
                f"{name} gives weight to padding {what}: positions s >= length are"
                " not words; set their scores to -inf before the softmax"
            )
        if not torch.allclose(weights.sum(-1), torch.ones(batch), atol=1e-4):
            raise ExerciseError(
                f"the weights of {name} do not sum to 1 over the source positions"
                f" {what}: take the softmax of each row of scores (B, S) over its"
                " last axis"
            )
        scaled = torch.softmax(
            (torch.einsum("bd,bsd->bs", h, memory) / size**0.5).masked_fill(
                ~mask, -torch.inf
            ),
            -1,
        )
        if close(weights, scaled, 1e-4) and not close(weights, ref_weights, 1e-4):
            raise ExerciseError(
                f"{name} divides the scores by sqrt(d) {what}: Luong's dot score is"
                " the plain product h_t^T h_s"
            )
        expect_close(f"{name} (the weights)", weights, ref_weights, what, atol=1e-4)
        context = torch.einsum("bs,bsd->bd", ref_weights, memory)
        if not close(attentional, ref_attentional, 1e-4):
            if close(
                attentional, torch.tanh(torch.cat([h, context], -1) @ w_c.T), 1e-4
            ):
                raise ExerciseError(
                    f"{name} concatenates [h_t; c_t] {what}: W_c multiplies [c_t;"
                    " h_t], the context first (the order fixes which columns of W_c"
                    " meet which vector)"
                )
            if close(attentional, torch.cat([context, h], -1) @ w_c.T, 1e-4):
                raise ExerciseError(
                    f"{name} leaves out the tanh of the attentional state {what}"
                )
            if close(attentional, context, 1e-4):
                raise ExerciseError(
                    f"{name} returns the context c_t {what}: return the attentional"
                    " state tanh(W_c [c_t; h_t])"
                )
        expect_close(
            f"{name} (the attentional state)",
            attentional,
            ref_attentional,
            what,
            atol=1e-4,
        )
    passed(name, len(cases))


# -----------------------------------------------------------------------------------
# Local-p weights


def _window_cases(
    gen: torch.Generator,
) -> list[tuple[torch.Tensor, torch.Tensor, int, torch.Tensor, float]]:
    """``(scores (B, S), centre (B,), D, lengths (B,), score scale)``: fractional
    centres, both edges, padding.

    The centres are whole numbers plus a fraction kept away from 0 and 1/2, so that
    rounding is never a tie and a window around ``p_t`` differs from one around
    ``round(p_t)``.
    """
    cases = []
    for whole, half_width, lengths, scale in [
        ([3, 0, 8], 2, [10, 10, 10], 2.0),
        ([5, 2], 3, [12, 6], 2.0),
        ([1, 6, 4], 4, [9, 7, 9], 2.0),
        ([4, 2], 2, [8, 8], 500.0),
    ]:
        fraction = 0.15 + 0.2 * torch.rand(len(whole), generator=gen)
        fraction = fraction + 0.5 * (torch.rand(len(whole), generator=gen) < 0.5)
        centre = torch.tensor(whole, dtype=torch.float32) + fraction
        scores = torch.randn(len(whole), max(lengths), generator=gen) * scale
        cases.append((scores, centre, half_width, torch.tensor(lengths), scale))
    return cases


@exercise_check(local_window)
def check_local_p_weights(local_p_weights: Callable, seed: int | None = 0) -> None:
    """Check ``local_p_weights(scores (B, S), centre (B,), half_width, lengths (B,))
    -> weights (B, S)``.

    Inside the window ``|s - round(p_t)| <= D`` (real words only) the weight is the
    softmax of the scores over the window times ``exp(-(s - p_t)^2 / (2 sigma^2))``
    with ``sigma = D / 2``; outside it is 0.
    """
    name = "local_p_weights"
    gen = generator(seed)
    cases = _window_cases(gen)
    for scores, centre, half_width, lengths, scale in cases:
        mask = padding_mask(lengths, scores.shape[1])
        out = call(local_p_weights, name, scores, centre, half_width, lengths)
        what = (
            f"for centres {[round(c, 2) for c in centre.tolist()]}, D = {half_width}"
            f" and lengths {lengths.tolist()}"
        )
        if scale > 10:
            what += " with scores of several hundred"
            _require_finite(
                name,
                out,
                f"{what}: exp of a large score overflows; subtract the largest score"
                " inside the window before exponentiating (torch.softmax does this"
                " for you)",
            )
        out = expect_tensor(name, out, tuple(scores.shape))
        expected = local_window(scores, centre, half_width, mask=mask)
        if close(out, expected):
            continue
        inside = local_window(scores, centre, half_width, mask=mask, gaussian=False)
        if close(out, inside):
            raise ExerciseError(
                f"{name} has no Gaussian {what}: multiply the window's softmax by "
                "exp(-(s - p_t)^2 / (2 sigma^2)) so that words near p_t count more"
            )
        positions = torch.arange(scores.shape[1]).float()
        gaussian = torch.exp(
            -((positions - centre[:, None]) ** 2) / (2 * (half_width / 2) ** 2)
        )
        window = (
            (positions - torch.floor(centre[:, None] + 0.5)).abs() <= half_width
        ) & mask
        if close(
            out,
            torch.softmax(scores.masked_fill(~mask, -torch.inf), -1)
            * gaussian
            * window,
        ):
            raise ExerciseError(
                f"{name} takes the softmax over the whole sentence {what}: normalise"
                " over the positions inside the window only (the others are never"
                " scored)"
            )
        if close(
            out,
            local_window(scores, centre, half_width, mask=mask, sigma=half_width),
        ):
            raise ExerciseError(
                f"{name} uses sigma = D {what}: Luong et al. set sigma = D / 2"
            )
        if close(out, local_window(scores, centre, half_width, mask=None)):
            raise ExerciseError(
                f"{name} gives weight to padding {what}: positions s >= lengths[b]"
                " are not words"
            )
        if close(
            out,
            inside
            * torch.exp(
                -((positions - torch.floor(centre[:, None] + 0.5)) ** 2)
                / (2 * (half_width / 2) ** 2)
            ),
        ):
            raise ExerciseError(
                f"{name} centres the Gaussian on round(p_t) {what}: use the"
                " real-valued p_t, that is what makes the weights differentiable"
                " in p_t"
            )
        real_window = ((positions - centre[:, None]).abs() <= half_width) & mask
        if close(
            out,
            torch.softmax(
                scores.masked_fill(~real_window, -torch.inf), -1
            ).nan_to_num()
            * gaussian,
        ):
            raise ExerciseError(
                f"{name} uses the window |s - p_t| <= D {what}: with a fractional"
                " p_t that has only 2D positions; centre the window on round(p_t)"
                " to get 2D + 1"
            )
        narrow = local_window(
            scores, centre, half_width - 1, mask=mask, sigma=half_width / 2
        )
        if close(out, narrow):
            raise ExerciseError(
                f"{name} uses the window |s - round(p_t)| < D {what}: the window has"
                " 2D + 1 positions, both ends included"
            )
        renormalised = expected / expected.sum(-1, keepdim=True)
        if close(out, renormalised):
            raise ExerciseError(
                f"{name} renormalises after the Gaussian {what}: Luong et al. keep"
                " the product as it is, so the weights of a row need not sum to 1"
            )
        expect_close(name, out, expected, what)
    passed(name, len(cases))


# -----------------------------------------------------------------------------------
# The encoder states of a local window (debugging exercise)


def _reference_window_states(
    memory: torch.Tensor,
    centre: torch.Tensor,
    half_width: int,
    lengths: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    positions = torch.floor(centre.double() + 0.5).long()[:, None] + torch.arange(
        -half_width, half_width + 1
    )
    inside = (positions >= 0) & (positions < lengths[:, None])
    index = positions.clamp(0, memory.shape[1] - 1)
    return memory[torch.arange(memory.shape[0])[:, None], index], inside


def _gather_cases(
    gen: torch.Generator,
) -> list[tuple[torch.Tensor, torch.Tensor, int, torch.Tensor]]:
    """``(memory (B, S, d), centre (B,), D, lengths (B,))``: windows over both ends
    of full and of padded sentences.

    Every other centre has a fraction above 1/2 (so that cutting off the fraction
    moves the window), the others one below; no fraction is near 1/2.
    """
    cases = []
    for whole, half_width, lengths in [
        ([0, 4, 8], 2, [10, 10, 10]),
        ([1, 5, 3], 3, [12, 7, 12]),
        ([6, 0], 1, [7, 5]),
    ]:
        fraction = 0.15 + 0.2 * torch.rand(len(whole), generator=gen)
        fraction[::2] += 0.5
        centre = torch.tensor(whole, dtype=torch.float32) + fraction
        memory = torch.randn(len(whole), max(lengths), 3, generator=gen)
        cases.append((memory, centre, half_width, torch.tensor(lengths)))
    return cases


@exercise_check(
    window_positions, gather_positions, LocalAttentionDecoder.window_attention
)
def check_window_states(window_states: Callable, seed: int | None = 0) -> None:
    """Check ``window_states(memory (B, S, d), centre (B,), half_width,
    lengths (B,)) -> (states (B, 2D + 1, d), inside (B, 2D + 1))``.

    The window is ``round(p_t) - D .. round(p_t) + D`` with ``round(p) = floor(p +
    1/2)``; ``inside`` is true exactly at the window's positions ``0 <= s <
    lengths[b]``, and there ``states`` holds ``memory[b, s]`` (elsewhere anything).
    """
    name = "window_states"
    gen = generator(seed)
    cases = _gather_cases(gen)
    for memory, centre, half_width, lengths in cases:
        batch, width = memory.shape[0], 2 * half_width + 1
        what = (
            f"for centres {[round(c, 2) for c in centre.tolist()]},"
            f" D = {half_width}, lengths {lengths.tolist()}"
            f" and S = {memory.shape[1]}"
        )
        out = call(window_states, name, memory, centre, half_width, lengths)
        if not isinstance(out, tuple | list) or len(out) != 2:
            raise ExerciseError(
                f"{name} must return a pair (states (B, 2D + 1, d), inside (B, 2D +"
                f" 1)), got {type(out).__name__}"
            )
        states = expect_tensor(
            f"{name} (the states)", out[0], (batch, width, memory.shape[2])
        )
        inside = expect_tensor(f"{name} (the mask inside)", out[1], (batch, width))
        inside = inside > 0.5
        ref_states, ref_inside = _reference_window_states(
            memory, centre, half_width, lengths
        )
        truncated_states, truncated_inside = _reference_window_states(
            memory, centre - 0.5, half_width, lengths
        )
        offsets = torch.arange(-half_width, half_width + 1)
        rounded = torch.floor(centre.double() + 0.5).long()[:, None] + offsets
        in_source = (rounded >= 0) & (rounded < memory.shape[1])
        if not torch.equal(inside, ref_inside):
            clamped = rounded.clamp(0, memory.shape[1] - 1)
            if torch.equal(inside, clamped < lengths[:, None]):
                raise ExerciseError(
                    f"{name} marks positions outside the sentence as inside {what}:"
                    " a window that hangs over an end reads the edge word (clamped)"
                    " but must not count it again; compute the mask from the"
                    " positions before clamping them, 0 <= s < lengths[b]"
                )
            if torch.equal(inside, in_source):
                raise ExerciseError(
                    f"{name} treats padding as words {what}: a position is inside"
                    " only if s < lengths[b], not just s < S"
                )
            truncated = torch.trunc(centre.double()).long()[:, None] + offsets
            if torch.equal(inside, truncated_inside) or torch.equal(
                inside,
                truncated.clamp(0, memory.shape[1] - 1) < lengths[:, None],
            ):
                raise ExerciseError(
                    f"{name} centres the window on the centre with its fraction cut"
                    f" off {what} (`.long()` turns 6.7 into 6): centre it on"
                    " round(p_t) = floor(p_t + 1/2)"
                )
            if (inside & ~ref_inside).any():
                raise ExerciseError(
                    f"{name} marks positions as inside that are not words of the"
                    f" window {what}: inside means round(p_t) - D <= s <= round(p_t)"
                    " + D and 0 <= s < lengths[b]"
                )
            raise ExerciseError(
                f"{name} leaves words of the window out of the mask inside {what}:"
                " every position round(p_t) - D .. round(p_t) + D with 0 <= s <"
                " lengths[b] is inside"
            )
        if close(states[ref_inside], ref_states[ref_inside]):
            continue
        if close(states[ref_inside], truncated_states[ref_inside]):
            raise ExerciseError(
                f"{name} reads the states of the window around the centre with its"
                f" fraction cut off {what}: read them at round(p_t) - D ..."
                " round(p_t) + D, the positions of the mask"
            )
        raise ExerciseError(
            f"{name} reads the wrong encoder states {what}: at a position s inside"
            " the window, row b of the states must be memory[b, s]"
        )
    passed(name, len(cases))


# -----------------------------------------------------------------------------------
# Experiment: how much of a global model's attention falls inside a local window


def _reference_window_mass(maps: Sequence[torch.Tensor], half_width: int) -> float:
    """The share of the attention mass inside ``|s - t| <= D``, averaged over all
    target words."""
    inside = words = 0.0
    for weights in maps:
        distance = (
            torch.arange(weights.shape[1])[None]
            - torch.arange(weights.shape[0])[:, None]
        ).abs()
        inside += float(weights[distance <= half_width].sum())
        words += weights.shape[0]
    return inside / words


def _per_sentence_mass(maps: Sequence[torch.Tensor], half_width: int) -> float:
    return float(np.mean([_reference_window_mass([w], half_width) for w in maps]))


def _with_eos_mass(
    maps: Sequence[torch.Tensor], eos_rows: Sequence[torch.Tensor], half_width: int
) -> float:
    return _reference_window_mass(
        [torch.cat([w, row[None]]) for w, row in zip(maps, eos_rows, strict=True)],
        half_width,
    )


@exercise_check()
def check_window_mass(
    window_mass: Callable, model: Any, examples: Sequence[Any], seed: int | None = 0
) -> None:
    """Check ``window_mass(model, examples, half_width) -> float`` on a trained
    global-attention ``model``.

    The share of the teacher-forced attention mass that falls inside ``|s - t| <= D``
    (source position ``s``, target position ``t``), averaged over all target words of
    ``examples`` (the ``<eos>`` step left out). The check measures the same model on
    the same examples and compares, for several ``D``.
    """
    name = "window_mass"
    examples = list(examples)
    if not examples:
        raise ExerciseError(
            "pass the test examples to the check (a non-empty list), e.g. the"
            " chapter's test_set"
        )
    gen = generator(seed)
    if getattr(getattr(model, "decoder", None), "attention", None) is None:
        raise ExerciseError(
            "pass a trained model with attention to the check, e.g. results['global"
            " dot'].model"
        )
    with torch.no_grad():
        maps, _ = attention_maps(model, examples)
        batch = make_batch(examples)
        weights = model(batch.src, batch.src_mask, batch.tgt).weights
    eos_rows = [
        weights[b, len(e.target), : len(e.source)] for b, e in enumerate(examples)
    ]
    longest = max(len(e.source) for e in examples)
    widths = [1, 3, 0, int(torch.randint(2, 9, (1,), generator=gen)), longest]
    values = {}
    for half_width in widths:
        what = f"for D = {half_width}"
        value = expect_number(
            name, call(window_mass, name, model, examples, half_width)
        )
        expected = _reference_window_mass(maps, half_width)
        if value > 1 + 1e-4:
            raise ExerciseError(
                f"{name} returned {value:.4g} {what}, more than the whole mass:"
                " divide the mass inside the window by the number of target words"
                " (a share is at most 1)"
            )
        if half_width == longest and abs(value - expected) > 1e-4:
            raise ExerciseError(
                f"{name} is wrong for D = {half_width}, a window wider than every"
                " sentence, which holds each target word's whole attention: count"
                " every target word once, and all the weight of its row"
            )
        if abs(value - expected) > 1e-4:
            if (
                half_width > 0
                and abs(value - _reference_window_mass(maps, half_width - 1)) < 1e-5
            ):
                raise ExerciseError(
                    f"{name} uses the window |s - t| < D {what}: the window has 2D +"
                    " 1 positions, both ends included"
                )
            if abs(value - _per_sentence_mass(maps, half_width)) < 1e-5:
                raise ExerciseError(
                    f"{name} averages over sentences {what}: average over target"
                    " words, so that a long sentence counts as many times as it has"
                    " words"
                )
            if abs(value - _with_eos_mass(maps, eos_rows, half_width)) < 1e-5:
                raise ExerciseError(
                    f"{name} counts the <eos> step {what}: leave it out (it has no"
                    " source word)"
                )
            raise ExerciseError(
                f"{name} is wrong {what}: it differs by {abs(value - expected):.3g}"
                " from the share measured on the same model and examples"
            )
        values[half_width] = value
    ordered = [values[d] for d in sorted(values)]
    if any(b < a - 1e-6 for a, b in zip(ordered, ordered[1:], strict=False)):
        raise ExerciseError(
            f"{name} decreases as the window widens: a wider window holds at least"
            " as much"
        )
    passed(name, len(widths))
