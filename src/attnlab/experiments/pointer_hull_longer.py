"""``python -m attnlab.experiments pointer-hull-longer``: chapter 11's convex-hull
model trained five times as long, over seeds.

Seed ``s`` (every seed of the chapter shifted by ``ATTNLAB_SEED_OFFSET = s``, set by
the command) trains the chapter's hull model, :func:`attnlab.experiments.
pointer_networks.train_hull`, for five times the chapter's steps, on as many more
fresh point sets (each batch is drawn anew), with the same learning-rate schedule
stretched to the longer run, and measures it on the chapter's test sets. Model size
and the sizes trained on are the chapter's: the run separates the training time (with
the data it brings) from the other differences to the paper. :func:`conclusions`
sets it beside the chapter's budget, the record ``pointer-networks``, seed by seed.
"""

from __future__ import annotations

import sys
from typing import Any

from attnlab.experiments import over_seeds, pointer_networks
from attnlab.experiments.pointer_networks import (
    PAPER_ACCURACY_10,
    chapter_runs,
    hull_run,
    hull_table,
)
from attnlab.runmode import seed_offset
from attnlab.seedband import every_seed

SETTINGS: dict[str, Any] = {
    "hull_steps": 5 * pointer_networks.SETTINGS["hull_steps"],
    "hull_test_sizes": pointer_networks.SETTINGS["hull_test_sizes"],
}


def run_seed(seed: int) -> dict[str, Any]:
    """The hull model of the chapter, five times as long, under
    ``ATTNLAB_SEED_OFFSET = seed``."""
    assert seed_offset() == seed, (seed_offset(), seed)
    return hull_run(steps=SETTINGS["hull_steps"])


def conclusions(results: dict[str, Any]) -> dict[str, bool]:
    """What chapter 11 states of the longer runs, seed by seed against the chapter's
    budget (the committed record ``pointer-networks``)."""
    runs = results["runs"]
    chapter = chapter_runs(runs)
    longer = {
        n: pointer_networks.hull_band(runs, n, "accuracy")
        for n in SETTINGS["hull_test_sizes"]
    }
    budget_10 = pointer_networks.hull_band(chapter, 10, "accuracy")
    return {
        "five times as long: more exact hulls at 10 points on every seed": (
            every_seed(lambda a, b: a > b, longer[10], budget_10)
        ),
        "five times as long: still below the paper's about 87% at 10 points": (
            longer[10].high < PAPER_ACCURACY_10
        ),
        "five times as long: exact accuracy falls from 10 to 20 to 50 points": all(
            every_seed(lambda a, b: a > b, longer[small], longer[large])
            for small, large in [(10, 20), (20, 50)]
        ),
    }


def markdown(data: dict[str, Any]) -> str:
    """The reproducing page's table: the longer run beside the chapter's budget."""
    budget = (
        f"the hull model {SETTINGS['hull_steps']} steps, five times the chapter's"
        f" {pointer_networks.SETTINGS['hull_steps']}"
    )
    return hull_table(data, conclusions, budget)


def main(argv: list[str]) -> None:
    over_seeds.command(sys.modules[__name__], argv)
