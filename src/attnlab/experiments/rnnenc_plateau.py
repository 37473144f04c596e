"""``python -m attnlab.experiments rnnenc-plateau``: does the gap between RNNsearch
and RNNenc close when RNNenc trains thirty times as long?

Seed ``s`` trains chapter 4's two models as the chapter does under
``ATTNLAB_SEED_OFFSET = s`` (:func:`attnlab.tasks.translation.train_translation`,
batch 64, learning rate 0.002 falling over the second half of each run): RNNenc
(no attention) for :data:`SETTINGS` ``factor`` times the chapter's 1,000 steps,
RNNsearch for the chapter's 1,000. Both keep the weights of their best validation
accuracy and translate the chapter's test sentences (16 of every length from 5 to
60) greedily: word accuracy and exact match by bucket of source lengths. The record
keeps RNNenc's teacher-forced validation accuracy along its run, to see whether it
has reached a plateau. :func:`conclusions` lists what the chapter states over seeds.
"""

from __future__ import annotations

import sys
from typing import Any

from attnlab.experiments import over_seeds
from attnlab.experiments.bahdanau_attention import (
    by_bucket,
    train_model,
    translation_table,
)
from attnlab.runmode import seed_offset
from attnlab.seedband import Band, band, curves
from attnlab.tasks.translation import evaluate_translation, examples_per_length

# seeds 0-2, declared before any was run (not five: RNNenc trains ~40 minutes)
SEED_COUNT = 3
SETTINGS: dict[str, Any] = {
    "steps": 1000,
    "factor": 30,
    "eval_every": 100,
    "test_per_length": 16,
}
MODELS = {"RNNenc": False, "RNNsearch": True}
LONG_BUCKETS = ("31-40", "41-50", "51-60")


def last_fifth_gain(accuracy: list[float]) -> float:
    """How much a validation curve rose over its last fifth: the best of the last
    fifth's evaluations minus the best of all before them."""
    if len(accuracy) < 2:
        raise ValueError(f"need at least 2 evaluations, got {len(accuracy)}")
    cut = len(accuracy) - max(1, len(accuracy) // 5)
    return max(accuracy[cut:]) - max(accuracy[:cut])


def at_budget() -> int:
    """The index of RNNenc's evaluation at the chapter's budget (one evaluation
    every ``eval_every`` steps)."""
    return SETTINGS["steps"] // SETTINGS["eval_every"] - 1


def rnnenc_curve(runs: list[dict[str, Any]], index: int) -> Band:
    """RNNenc's validation accuracy at its ``index``-th evaluation, over seeds."""
    values = [c[index] for c in curves(runs, "models", "RNNenc", "val_accuracy")]
    return Band(tuple(values), tuple(int(run["seed"]) for run in runs))


def run_seed(seed: int) -> dict[str, Any]:
    """RNNenc for ``factor`` times the chapter's steps and RNNsearch for the
    chapter's, as the chapter trains them under ``ATTNLAB_SEED_OFFSET = seed``
    (set by the command): word accuracy and exact match by bucket, and RNNenc's
    validation curve."""
    assert seed_offset() == seed, (seed_offset(), seed)
    examples = examples_per_length(SETTINGS["test_per_length"], 5, 60, seed=1)
    models = {}
    for name, attention in MODELS.items():
        steps = SETTINGS["steps"] * (1 if attention else SETTINGS["factor"])
        model, history = train_model(attention, steps, SETTINGS["eval_every"])
        rows = evaluate_translation(model, examples).by_bucket()
        models[name] = {
            "steps": steps,
            **by_bucket(rows, ("token_accuracy", "exact_match")),
        }
        if not attention:
            models[name]["val_accuracy"] = history.metric("val_accuracy")[1]
    return {"models": models}


def conclusions(results: dict[str, Any]) -> dict[str, bool]:
    """What chapter 4 states of the long run over seeds."""
    runs = results["runs"]

    def gap(key: str, bucket: str) -> Band:
        return band(runs, "models", "RNNsearch", key, bucket) - band(
            runs, "models", "RNNenc", key, bucket
        )

    rose = rnnenc_curve(runs, -1) - rnnenc_curve(runs, at_budget())
    return {
        "RNNenc's validation accuracy rises by more than 0.1 after the chapter's"
        " budget, on every seed": rose.low > 0.1,
        "RNNsearch at the chapter's budget above the long-trained RNNenc in word"
        " accuracy and exact match on 31-60 words, on every seed": all(
            gap(key, b).low > 0
            for key in ("token_accuracy", "exact_match")
            for b in LONG_BUCKETS
        ),
        "RNNsearch translates at least 0.3 more of the 31-40-word sentences"
        " exactly, on every seed": gap("exact_match", "31-40").low >= 0.3,
    }


def markdown(data: dict[str, Any]) -> str:
    """The reproducing page's tables: both models' word accuracy and exact match by
    bucket, and RNNenc's validation accuracy along its run, over the seeds."""
    runs = data["results"]["runs"]
    steps = {name: runs[0]["models"][name]["steps"] for name in MODELS}
    lines = translation_table(
        runs,
        f"RNNenc trained {steps['RNNenc']:,} steps,"
        f" RNNsearch {steps['RNNsearch']:,};"
        " greedy translations by source length (the chapter trains on 5 to 40"
        " words)",
        digits=3,
    )
    every = SETTINGS["eval_every"]
    curve = runs[0]["models"]["RNNenc"]["val_accuracy"]
    shown = [i for i in range(len(curve)) if (i + 1) % max(1, len(curve) // 10) == 0]
    shown = sorted({at_budget(), *shown})
    lines += [
        "",
        *over_seeds.band_table(
            "RNNenc's teacher-forced validation accuracy (31-40 words) at step",
            [f"{(i + 1) * every:,}" for i in shown],
            {"over seeds": [rnnenc_curve(runs, i) for i in shown]},
        ),
        "",
        "Gain over the last fifth of RNNenc's run (the best of its last fifth minus"
        " the best before): "
        + "; ".join(
            f"seed {run['seed']} {last_fifth_gain(curve):+.3f}"
            for run, curve in zip(
                runs, curves(runs, "models", "RNNenc", "val_accuracy"), strict=True
            )
        )
        + ".",
    ]
    budget = f"RNNenc {SETTINGS['factor']} times the chapter's budget"
    return over_seeds.page(data, conclusions, budget, lines)


def main(argv: list[str]) -> None:
    over_seeds.command(sys.modules[__name__], argv)
