"""``python -m attnlab.experiments scoring-retrieval``: chapter 2's retrieval task,
every score on every relation between queries and keys, over five seeds.

Seed ``s`` is the chapter's run under ``ATTNLAB_SEED_OFFSET = s``
(:func:`attnlab.tasks.retrieval.compare_scores`: a new map ``A``, new data and new
initial weights): the test accuracy of the three scores without parameters and of
the location-based, general and additive scores, each trained with the chapter's
budget and kept at its best validation accuracy, and the cosine similarity between
the general score's learned ``W`` and ``A`` on the linear map.
:func:`conclusions` lists what the chapter states over seeds.
"""

from __future__ import annotations

import sys
from typing import Any

from attnlab.experiments import over_seeds
from attnlab.runmode import seed_offset
from attnlab.seedband import FLOOR, Band, band
from attnlab.tasks.retrieval import (
    BATCH,
    EVAL_EVERY,
    FIXED_SCORES,
    HIDDEN,
    LR,
    N_KEYS,
    NOISE,
    RELATIONS,
    STEPS,
    TEST_SIZE,
    TRAINABLE_SCORES,
    VALIDATION_SIZE,
    D,
    compare_scores,
    map_alignment,
    retrieval_map,
)

SETTINGS: dict[str, Any] = {
    "d": D,
    "keys": N_KEYS,
    "noise": NOISE,
    "hidden": HIDDEN,
    "steps": STEPS,
    "batch": BATCH,
    "lr": LR,
    "eval_every": EVAL_EVERY,
    "validation": VALIDATION_SIZE,
    "test": TEST_SIZE,
}
SCORES = (*FIXED_SCORES, *TRAINABLE_SCORES)
CHANCE = 1 / N_KEYS


def run_seed(seed: int) -> dict[str, Any]:
    """The chapter's comparison under ``ATTNLAB_SEED_OFFSET = seed``: the test
    accuracy of every score on every relation, and the learned ``W``'s alignment
    with ``A``."""
    assert seed_offset() == seed, (seed_offset(), seed)
    rotation = retrieval_map()
    accuracy, models = compare_scores(rotation)
    general = models["general", "linear map"]
    return {
        "accuracy": accuracy,
        "alignment": map_alignment(general.weight, rotation),
    }


def accuracy_band(runs: list[dict[str, Any]], score: str, relation: str) -> Band:
    """The test accuracy of ``score`` on ``relation`` over the recorded seeds."""
    return band(runs, "accuracy", score, relation)


def above(recorded: Band, threshold: float) -> bool:
    """Every seed above ``threshold``, with the band widened by its spread too."""
    return recorded.widened(FLOOR)[0] > threshold


def below(recorded: Band, threshold: float) -> bool:
    """Every seed below ``threshold``, with the band widened by its spread too."""
    return recorded.widened(FLOOR)[1] < threshold


def conclusions(results: dict[str, Any]) -> dict[str, bool]:
    """What chapter 2 states over seeds, each with the band widened by its own
    spread (at least 0.02) on the right side of the line."""
    runs = results["runs"]

    def acc(score: str, relation: str) -> Band:
        return accuracy_band(runs, score, relation)

    location = [acc("location", r) for r in RELATIONS]
    return {
        "the location-based score within 0.03 of chance on every relation": all(
            above(b, CHANCE - 0.03) and below(b, CHANCE + 0.03) for b in location
        ),
        "the general and the additive score above 0.95 in the same space": all(
            above(acc(name, "same space"), 0.95) for name in ("general", "additive")
        ),
        "the general score above 0.95 on the linear map": above(
            acc("general", "linear map"), 0.95
        ),
        "the additive score above 0.9 on the linear map": above(
            acc("additive", "linear map"), 0.9
        ),
        "the general score below 0.15 on the non-linear relation": below(
            acc("general", "non-linear"), 0.15
        ),
        "the additive score above 0.9 on the non-linear relation": above(
            acc("additive", "non-linear"), 0.9
        ),
        "the additive score ahead of the general one on the non-linear relation": (
            acc("additive", "non-linear") - acc("general", "non-linear")
        ).ranks(),
        "the learned W's cosine similarity with A above 0.9": above(
            band(runs, "alignment"), 0.9
        ),
    }


def markdown(data: dict[str, Any]) -> str:
    """The reproducing page's table: each score's test accuracy on each relation,
    mean and range over the seeds, and the learned ``W``'s alignment with ``A``."""
    runs = data["results"]["runs"]
    lines = over_seeds.band_table(
        "score",
        list(RELATIONS),
        {name: [accuracy_band(runs, name, r) for r in RELATIONS] for name in SCORES},
    )
    lines += [
        "",
        f"Test accuracy on {TEST_SIZE} examples (chance: 1/{N_KEYS} ="
        f" {CHANCE:.3f}). Cosine similarity between the general score's learned W"
        f" and the map A (linear map): {band(runs, 'alignment').text()}.",
    ]
    budget = (
        f"{STEPS} steps of {BATCH} examples, the best of {VALIDATION_SIZE}"
        f" validation examples every {EVAL_EVERY} steps kept; the additive score"
        f" with {HIDDEN} hidden units"
    )
    return over_seeds.page(data, conclusions, budget, lines)


def main(argv: list[str]) -> None:
    over_seeds.command(sys.modules[__name__], argv)
