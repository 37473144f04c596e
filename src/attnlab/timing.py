"""Timings that hold on a busy machine: the calls take turns, and each keeps its
fastest block of runs."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from torch.utils import benchmark


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
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(rounds):
        for name, call in calls.items():
            timer = benchmark.Timer("call()", globals={"call": call}, num_threads=1)
            blocks = timer.blocked_autorange(min_run_time=min_run_time).times
            best[name] = min(best[name], *blocks)
    return best
