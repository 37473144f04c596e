"""``python -m attnlab.experiments pointer-tsp-half-steps``: does chapter 12's
pointer network reach its validation gap in half the steps with a larger learning
rate?

Seed ``s`` (0 to 2, shifted by ``ATTNLAB_SEED_OFFSET = s``, set by the command)
labels the chapter's instances (:func:`pointer_networks_tsp.tsp_sets`) and trains
the chapter's model on them with each recipe of :data:`SETTINGS`: the chapter's
(2,400 steps at a rate of 0.001) and half the steps at two and three times the
rate, each dropping the rate tenfold after 60% of its steps and measuring the
greedy gap on the validation instances eight times. Only validation instances are
used: the record keeps each run's validation curve, its smallest gap (the weights
a run keeps) and the seconds it trained. :func:`conclusions` states what the
reproducing page says of the shorter recipes.
"""

from __future__ import annotations

import sys
from typing import Any

from attnlab.experiments import over_seeds
from attnlab.experiments.pointer_networks_tsp import train_tsp, tsp_sets
from attnlab.runmode import seed_offset
from attnlab.seedband import Band, band

# seeds 0-2, declared with the recipes before any run
SEED_COUNT = 3
CHAPTER = "2,400 steps, rate 0.001 (the chapter's)"
SETTINGS: dict[str, Any] = {
    "recipes": {
        CHAPTER: {"steps": 2400, "lr": 1e-3},
        "1,200 steps, rate 0.002": {"steps": 1200, "lr": 2e-3},
        "1,200 steps, rate 0.003": {"steps": 1200, "lr": 3e-3},
    },
    "evaluations": 8,
}


def run_seed(seed: int) -> dict[str, Any]:
    """Every recipe's validation curve, smallest validation gap and training
    seconds under ``ATTNLAB_SEED_OFFSET = seed``."""
    assert seed_offset() == seed, (seed_offset(), seed)
    training, _, validation = tsp_sets()
    recipes = {}
    for name, recipe in SETTINGS["recipes"].items():
        every = recipe["steps"] // SETTINGS["evaluations"]
        _, history = train_tsp(training, validation, eval_every=every, **recipe)
        steps, curve = history.metric("greedy_gap")
        recipes[name] = {
            "val_steps": steps,
            "val_gap": curve,
            "best_gap": min(curve),
            "seconds": history.seconds,
        }
    return {"recipes": recipes}


def gaps(runs: list[dict[str, Any]], name: str) -> Band:
    """A recipe's smallest validation gap over the seeds."""
    return band(runs, "recipes", name, "best_gap")


def conclusions(results: dict[str, Any]) -> dict[str, bool]:
    """What the reproducing page states: neither shorter recipe reaches the
    chapter's validation gap, on any seed."""
    runs = results["runs"]
    return {
        f"{name}: a larger smallest validation gap than the chapter's recipe,"
        " on every seed": (gaps(runs, name) - gaps(runs, CHAPTER)).low > 0
        for name in SETTINGS["recipes"]
        if name != CHAPTER
    }


def markdown(data: dict[str, Any]) -> str:
    """The reproducing page's table: each recipe's smallest validation gap and its
    training seconds, mean and range over the seeds."""
    runs = data["results"]["runs"]
    lines = [
        "| recipe | smallest validation gap | training seconds |",
        "|---|---|---|",
        *(
            f"| {name} | {gaps(runs, name).text(4)} |"
            f" {band(runs, 'recipes', name, 'seconds').text(0)} |"
            for name in SETTINGS["recipes"]
        ),
    ]
    return "\n".join(lines) + over_seeds.footer(data, conclusions)


def main(argv: list[str]) -> None:
    over_seeds.command(sys.modules[__name__], argv)
