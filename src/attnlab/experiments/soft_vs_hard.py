"""``python -m attnlab.experiments soft-vs-hard``: chapter 6's soft and hard
attention over five seeds.

With chapter 5's budget (:data:`attnlab.experiments.luong_attention.SETTINGS`),
seed ``s`` trains the encoder-decoder without attention, the global dot decoder
with soft attention, the same decoder with hard attention and Xu et al.'s
running-average baseline, and hard attention without a baseline, with gradient
clipping at norm 1 and without; the attention models are evaluated every 25 steps
on held-out sentences of 21 to 30 words (the chapter's learning curves).
:func:`conclusions` lists what the chapter states over seeds.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from attnlab.experiments import luong_attention, over_seeds
from attnlab.experiments.luong_attention import (
    LONG,
    build,
    comparison,
    measures,
    test_set,
)
from attnlab.hard_attention import HardAttentionDecoder, hard_attention_loss
from attnlab.luong import LuongDecoder
from attnlab.runmode import seed_offset
from attnlab.seedband import Band, band, curves
from attnlab.tasks.translation import attention_maps, translation_loss

CURVE_EVERY = 25
SETTINGS: dict[str, Any] = {**luong_attention.SETTINGS, "curve_every": CURVE_EVERY}
SOFT = {"decoder_class": LuongDecoder, "score": "dot", "input_feeding": False}
HARD = {"decoder_class": HardAttentionDecoder, "score": "dot"}
# name: (decoder, loss, gradient clip)
RUNS: dict[str, tuple[dict[str, Any], Any, float | None]] = {
    "no attention": ({}, translation_loss, 1.0),
    "soft": (SOFT, translation_loss, 1.0),
    "hard": ({**HARD, "baseline": "average"}, hard_attention_loss, 1.0),
    "hard, no baseline": ({**HARD, "baseline": "none"}, hard_attention_loss, 1.0),
    "hard, no baseline, no clipping": (
        {**HARD, "baseline": "none"},
        hard_attention_loss,
        None,
    ),
}


def run_seed(seed: int) -> dict[str, Any]:
    """Train the five runs as the chapter does under ``ATTNLAB_SEED_OFFSET = seed``
    (set by the command): accuracy by bucket and validation curve of each, and how
    often the attention models' peak is on the aligned word."""
    assert seed_offset() == seed, (seed_offset(), seed)
    examples = test_set()
    runs = comparison(examples)
    models = {}
    for name, (spec, loss_fn, clip) in RUNS.items():
        result = runs.run(
            name,
            build(spec),
            loss_fn=loss_fn,
            clip=clip,
            eval_every=CURVE_EVERY if spec else None,
            report=False,
        )
        models[name] = measures(result)
        if spec:
            models[name]["aligned"] = attention_maps(result.model, examples)[1]
    return {"models": models}


def curve_mean(runs: list[dict[str, Any]], name: str) -> Band:
    """The mean of each seed's validation curve, as a band over the seeds."""
    values = [
        float(np.mean(c)) for c in curves(runs, "models", name, "val_accuracy")
    ]
    return Band(tuple(values), tuple(int(r["seed"]) for r in runs))


def spread(runs: list[dict[str, Any]], name: str) -> float:
    """The standard deviation across seeds at each evaluation, averaged over the
    curve."""
    values = np.array(curves(runs, "models", name, "val_accuracy"))
    return float(values.std(axis=0).mean())


def conclusions(results: dict[str, Any]) -> dict[str, bool]:
    """What chapter 6 states over seeds, each gap beyond the band's own spread."""
    runs = results["runs"]

    long = {n: band(runs, "models", n, "accuracy", LONG) for n in RUNS}
    curve = {n: curve_mean(runs, n) for n in RUNS if n != "no attention"}
    return {
        f"hard attention above no attention at {LONG} words on every seed": (
            long["hard"] - long["no attention"]
        ).ranks(),
        "hard attention's validation curve below soft attention's": (
            curve["soft"] - curve["hard"]
        ).ranks(),
        "both runs without a baseline below the runs with one": all(
            (curve["hard"] - curve[n]).ranks()
            for n in ("hard, no baseline", "hard, no baseline, no clipping")
        ),
    }


def markdown(data: dict[str, Any]) -> str:
    """The reproducing page's table: the mean of each validation curve and the
    word accuracy at 31-40 words, mean and range over the seeds."""
    runs = data["results"]["runs"]
    lines = [
        "| run | validation curve, mean | word accuracy at 31-40 |"
        " spread across seeds (std, mean over the curve) |",
        "|---|---|---|---|",
    ]
    for name in RUNS:
        curve = "" if name == "no attention" else curve_mean(runs, name).text()
        std = "" if name == "no attention" else f"{spread(runs, name):.4f}"
        long = band(runs, "models", name, "accuracy", LONG).text()
        lines.append(f"| {name} | {curve} | {long} | {std} |")
    budget = f"budget of chapter 5 ({SETTINGS['steps']} steps)"
    return over_seeds.page(data, conclusions, budget, lines)


def main(argv: list[str]) -> None:
    over_seeds.command(sys.modules[__name__], argv)
