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
from collections.abc import Callable
from typing import Any

from attnlab.experiments import over_seeds, pointer_networks
from attnlab.experiments.record import published
from attnlab.runmode import seed_offset
from attnlab.seedband import band, every_seed

SETTINGS: dict[str, Any] = {
    "hull_steps": 5 * pointer_networks.SETTINGS["hull_steps"],
    "hull_test_sizes": pointer_networks.SETTINGS["hull_test_sizes"],
}
PAPER_ACCURACY_10 = 0.87  # Vinyals et al., Table 1: about 87% of exact hulls at 10
MEASURES = ("accuracy", "coverage", "invalid")


def hull_run(**options: Any) -> dict[str, Any]:
    """The chapter's hull model trained with ``options`` of
    :func:`~attnlab.experiments.pointer_networks.train_hull` changed: its test
    measures and validation curve."""
    validation, test = pointer_networks.hull_sets()
    model, history = pointer_networks.train_hull(validation, **options)
    steps, curve = history.metric("accuracy")
    return {
        "hull": {
            "sizes": pointer_networks.hull_report(model, test),
            "val_steps": steps,
            "val_accuracy": curve,
        }
    }


def run_seed(seed: int) -> dict[str, Any]:
    """The hull model of the chapter, five times as long, under
    ``ATTNLAB_SEED_OFFSET = seed``."""
    assert seed_offset() == seed, (seed_offset(), seed)
    return hull_run(steps=SETTINGS["hull_steps"])


def chapter_runs(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs of the committed record ``pointer-networks`` (the chapter's budget)
    with the seeds of ``runs``."""
    seeds = [run["seed"] for run in runs]
    chapter = published("pointer-networks")["results"]["runs"]
    return sorted(
        (run for run in chapter if run["seed"] in seeds), key=lambda r: r["seed"]
    )


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


def hull_table(
    data: dict[str, Any],
    conclusions: Callable[[dict[str, Any]], dict[str, bool]],
    budget: str,
) -> str:
    """A record of the changed hull model for the reproducing page: the hull
    measures by number of points, mean and range over the seeds, the chapter's
    exact accuracy (same seeds) beside them."""
    runs = data["results"]["runs"]
    chapter = chapter_runs(runs)
    columns = ["accuracy, the chapter's run", *MEASURES]
    rows = {
        n: [pointer_networks.hull_band(chapter, n, "accuracy")]
        + [band(runs, "hull", "sizes", str(n), m) for m in MEASURES]
        for n in pointer_networks.SETTINGS["hull_test_sizes"]
    }
    lines = over_seeds.band_table("points", columns, rows)
    return over_seeds.page(data, conclusions, budget, lines)


def markdown(data: dict[str, Any]) -> str:
    """The reproducing page's table: the longer run beside the chapter's budget."""
    budget = (
        f"the hull model {SETTINGS['hull_steps']} steps, five times the chapter's"
        f" {pointer_networks.SETTINGS['hull_steps']}"
    )
    return hull_table(data, conclusions, budget)


def main(argv: list[str]) -> None:
    over_seeds.command(sys.modules[__name__], argv)
