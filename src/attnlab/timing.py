"""Timings that hold on a busy machine: the calls take turns, and each keeps its
fastest block of runs. :func:`decoding_step_seconds` times a Transformer's decoder
step with and without its key/value cache (the appendix on what attention costs)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:  # only for the annotations: no shared module builds on a chapter's
    from attnlab.transformer import Transformer


def _benchmark():
    """``torch.utils.benchmark``, imported when code is first timed. Importing it
    imports ``torch.utils.cpp_extension``, which logs "No CUDA runtime is found" on a
    machine with ``nvcc`` and no GPU (as Colab's CPU runtime is): that one logger is
    kept quiet while it loads, so no chapter shows the line."""
    logger = logging.getLogger("torch.utils.cpp_extension")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        from torch.utils import benchmark
    finally:
        logger.setLevel(level)
    return benchmark


def fastest_seconds(
    calls: Mapping[str, Callable[[], object]],
    *,
    rounds: int = 3,
    min_run_time: float = 0.2,
) -> dict[str, float]:
    """Seconds per call of each of ``calls``, on one thread.

    Each round times every call in turn for about ``min_run_time`` seconds, in blocks
    of runs; a call's time is its fastest block over all rounds. Other programs only
    ever slow a block down, so the fastest block is the best estimate of the cost
    itself, and taking turns spreads a slow spell of the machine over all the calls
    instead of letting it land on the one that was being timed.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    if min_run_time <= 0:
        raise ValueError(f"min_run_time must be positive, got {min_run_time}")
    if not calls:
        raise ValueError("calls must name at least one call to time, got none")
    benchmark = _benchmark()
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(rounds):
        for name, call in calls.items():
            timer = benchmark.Timer("call()", globals={"call": call}, num_threads=1)
            blocks = timer.blocked_autorange(min_run_time=min_run_time).times
            best[name] = min(best[name], *blocks)
    return best


@dataclass(frozen=True)
class StepTimes:
    """Seconds of one decoder step by output length, with and without the cache.

    ``cached[i]`` and ``uncached[i]`` are the seconds of the step that writes word
    ``lengths[i]``; ``overhead`` is the cached step that writes the first word, whose
    cache is empty: the work that every step does whatever the length.
    """

    lengths: tuple[int, ...]
    cached: tuple[float, ...]
    uncached: tuple[float, ...]
    overhead: float

    @property
    def ratios(self) -> tuple[float, ...]:
        """Uncached over cached time at each length."""
        return tuple(u / c for u, c in zip(self.uncached, self.cached, strict=True))

    def length_where(self, factor: float = 2.0) -> float | None:
        """The output length at which the uncached step first costs ``factor`` times
        the cached one: the first measured length if it does there already, else
        the ratio interpolated linearly in the logarithm of the length between the
        two lengths around it; ``None`` if no measured length reaches it."""
        ratios = self.ratios
        if ratios[0] >= factor:
            return float(self.lengths[0])
        for i in range(1, len(ratios)):
            if ratios[i] >= factor:
                low, high = math.log(self.lengths[i - 1]), math.log(self.lengths[i])
                share = (factor - ratios[i - 1]) / (ratios[i] - ratios[i - 1])
                return math.exp(low + share * (high - low))
        return None


def decoding_step_seconds(
    model: Transformer,
    src: torch.Tensor,
    src_mask: torch.Tensor,
    lengths: Sequence[int],
    *,
    rounds: int = 3,
    min_run_time: float = 0.2,
) -> StepTimes:
    """Seconds of one greedy decoding step of ``model`` for the sentences ``src (B,
    S)`` (``src_mask (B, S)``), at each output length ``t`` of ``lengths``
    (increasing).

    The step that writes word ``t`` is timed twice, taking turns
    (:func:`fastest_seconds`): with the key/value cache
    (:meth:`~attnlab.transformer.TransformerDecoder.step`: it projects the one new
    position and attends over the ``t`` cached keys of every layer), and without it
    (:meth:`~attnlab.transformer.TransformerDecoder.step_uncached`: it reruns the
    decoder over ``<bos>`` and the ``t - 1`` words so far and keeps the last
    position). The words so far are arbitrary, since the work does not depend on
    them; the cache of the ``t - 1`` positions is built before the timing. The
    fixed cost of a step, ``overhead``, is the cached step that writes word 1: the
    same calls of every layer with nothing cached, measured rather than
    extrapolated. The model is timed in evaluation mode, without gradients.
    """
    lengths = tuple(int(t) for t in lengths)
    if not lengths or lengths[0] < 1 or list(lengths) != sorted(set(lengths)):
        raise ValueError(
            "lengths must be increasing output lengths of at least 1 word, got"
            f" {lengths}"
        )
    decoder, was_training = model.decoder, model.training
    model.eval()
    timed = sorted({1, *lengths})
    try:
        with torch.no_grad():
            encoded = model.encode(src, src_mask)
            batch, vocab = src.shape[0], decoder.out.out_features
            words = torch.arange(1, timed[-1]).remainder(vocab).expand(batch, -1)
            bos = torch.full((batch, 1), decoder.bos_id, dtype=torch.long)
            previous = torch.cat([bos, words], dim=1)  # (B, longest)
            calls, state = {}, decoder.decode_init(encoded)
            for t in range(1, timed[-1] + 1):  # the cache holds t - 1 positions
                x = previous[:, t - 1]
                if t in timed:
                    calls[f"cached, {t}"] = partial(decoder.step, state, x)
                if t in lengths:
                    calls[f"uncached, {t}"] = partial(
                        decoder.step_uncached, encoded, previous[:, :t]
                    )
                if t < timed[-1]:
                    state = decoder.step(state, x)[1]
            seconds = fastest_seconds(
                calls, rounds=rounds, min_run_time=min_run_time
            )
    finally:
        model.train(was_training)
    return StepTimes(
        lengths,
        tuple(seconds[f"cached, {t}"] for t in lengths),
        tuple(seconds[f"uncached, {t}"] for t in lengths),
        seconds["cached, 1"],
    )
