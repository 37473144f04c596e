"""``python -m attnlab.experiments pointer-hull-sizes``: chapter 11's convex-hull
model trained on 5 to 50 points, as the paper's was, over seeds.

Seed ``s`` (every seed of the chapter shifted by ``ATTNLAB_SEED_OFFSET = s``, set by
the command) trains the chapter's hull model,
:func:`attnlab.experiments.pointer_networks.train_hull`, on batches cycling through
every size from 5 to 50 points instead of 5 to 10, and measures it on the chapter's
test sets. Model, steps, learning-rate schedule and the validation sets of 10
points that choose the checkpoint are the chapter's: the run separates the range
of training sizes from the other differences to the paper.
:func:`conclusions` sets it beside the paper and beside the chapter's model, the
record ``pointer-networks``, seed by seed (two statements declared before any seed
was run, the third read from the table after the runs).
"""

from __future__ import annotations

import sys
from typing import Any

from attnlab.experiments import over_seeds, pointer_networks
from attnlab.experiments.pointer_networks import (
    PAPER_ACCURACY_10,
    chapter_runs,
    hull_band,
    hull_run,
    hull_table,
)
from attnlab.runmode import seed_offset
from attnlab.seedband import every_seed

SETTINGS: dict[str, Any] = {
    "hull_sizes": list(range(5, 51)),
    "hull_steps": pointer_networks.SETTINGS["hull_steps"],
    "hull_test_sizes": pointer_networks.SETTINGS["hull_test_sizes"],
}


def run_seed(seed: int) -> dict[str, Any]:
    """The hull model of the chapter trained on 5 to 50 points, under
    ``ATTNLAB_SEED_OFFSET = seed``."""
    assert seed_offset() == seed, (seed_offset(), seed)
    return hull_run(steps=SETTINGS["hull_steps"], sizes=SETTINGS["hull_sizes"])


def conclusions(results: dict[str, Any]) -> dict[str, bool]:
    """What chapter 11 states of the model trained on 5 to 50 points over its
    seeds: beside the paper and beside the chapter's model."""
    runs = results["runs"]
    chapter = chapter_runs(runs)
    sizes = {n: hull_band(runs, n, "accuracy") for n in SETTINGS["hull_test_sizes"]}
    return {
        "5 to 50 points: still below the paper's about 87% at 10 points": (
            sizes[10].high < PAPER_ACCURACY_10
        ),
        "5 to 50 points: more exact hulls at 50 points than the chapter's model,"
        " every seed": every_seed(
            lambda a, b: a > b, sizes[50], hull_band(chapter, 50, "accuracy")
        ),
        # stated after the runs, read from the table: chapter 11 says it
        "5 to 50 points: fewer exact hulls at 10 points than the chapter's model,"
        " every seed": every_seed(
            lambda a, b: a < b, sizes[10], hull_band(chapter, 10, "accuracy")
        ),
    }


def markdown(data: dict[str, Any]) -> str:
    """The reproducing page's table: the model trained on 5 to 50 points beside
    the chapter's."""
    sizes = SETTINGS["hull_sizes"]
    budget = (
        f"the hull model trained on {sizes[0]} to {sizes[-1]} points, the chapter's"
        f" {SETTINGS['hull_steps']} steps"
    )
    return hull_table(data, conclusions, budget)


def main(argv: list[str]) -> None:
    over_seeds.command(sys.modules[__name__], argv)
