"""``python -m attnlab.experiments pointer-hull-wider``: chapter 11's convex-hull
model with four times the units, over seeds.

Seed ``s`` (every seed of the chapter shifted by ``ATTNLAB_SEED_OFFSET = s``, set by
the command) trains the chapter's hull model,
:func:`attnlab.experiments.pointer_networks.train_hull`, with 256 units in its
LSTMs and its attention instead of 64 (256 is the smaller of the paper's two
sizes), and measures it on the chapter's test sets. Steps, data and learning-rate
schedule are the chapter's: the run separates the model's size from the other
differences to the paper. :func:`conclusions` sets it beside the paper (two
statements declared before any seed was run) and beside the chapter's model, the
record ``pointer-networks``, seed by seed (stated after the runs).
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
    "d_hidden": 256,
    "hull_steps": pointer_networks.SETTINGS["hull_steps"],
    "hull_test_sizes": pointer_networks.SETTINGS["hull_test_sizes"],
}


def run_seed(seed: int) -> dict[str, Any]:
    """The hull model of the chapter with 256 units, under
    ``ATTNLAB_SEED_OFFSET = seed``."""
    assert seed_offset() == seed, (seed_offset(), seed)
    return hull_run(steps=SETTINGS["hull_steps"], d_hidden=SETTINGS["d_hidden"])


def conclusions(results: dict[str, Any]) -> dict[str, bool]:
    """What chapter 11 states of the wider model over its seeds: beside the paper
    (declared before the runs) and beside the chapter's model."""
    runs = results["runs"]
    chapter_10 = pointer_networks.hull_band(chapter_runs(runs), 10, "accuracy")
    wider = {
        n: pointer_networks.hull_band(runs, n, "accuracy")
        for n in SETTINGS["hull_test_sizes"]
    }
    return {
        "256 units: still below the paper's about 87% at 10 points": (
            wider[10].high < PAPER_ACCURACY_10
        ),
        "256 units: exact accuracy falls from 10 to 20 to 50 points": all(
            every_seed(lambda a, b: a > b, wider[small], wider[large])
            for small, large in [(10, 20), (20, 50)]
        ),
        # stated after the runs, read from the table: chapter 11 says it
        "256 units: more exact hulls at 10 points than 64 units, every seed": (
            every_seed(lambda a, b: a > b, wider[10], chapter_10)
        ),
    }


def markdown(data: dict[str, Any]) -> str:
    """The reproducing page's table: the wider model beside the chapter's."""
    budget = (
        f"the hull model with {SETTINGS['d_hidden']} units, the chapter's"
        f" {pointer_networks.SETTINGS['d_hidden']} times four, and its"
        f" {SETTINGS['hull_steps']} steps"
    )
    return hull_table(data, conclusions, budget)


def main(argv: list[str]) -> None:
    over_seeds.command(sys.modules[__name__], argv)
