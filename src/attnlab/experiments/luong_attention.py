"""``python -m attnlab.experiments luong-attention``: chapter 5's ten models over
five seeds.

Every model of the chapter, with the chapter's budget (:data:`SETTINGS`: 400 steps
of 32 sentences of 5 to 30 words, Adam at 0.004, the greedy word accuracy of 16 test
sentences of every length from 5 to 40, seed 1): the encoder-decoder without
attention, Luong's global decoder with each of the four scores, local-m with
windows D = 1, 3 and 5, local-p with D = 8, and the global dot decoder with input
feeding. Seed ``s`` is the chapter run under ``ATTNLAB_SEED_OFFSET = s``: every
model's weights, batches and samples and the test sentences change with it, and
seed 0 is the chapter's own run. The record also keeps
the share of the global dot model's attention inside the local-m window for D = 0
to 8. :func:`conclusions` lists what the chapter states over seeds.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import torch

from attnlab.experiments import over_seeds
from attnlab.luong import LocalAttentionDecoder, LuongDecoder
from attnlab.runmode import seed_offset
from attnlab.seedband import band
from attnlab.seq2seq import Seq2Seq
from attnlab.tasks.translation import (
    TrainedModel,
    TranslationComparison,
    attention_maps,
    build_model,
    examples_per_length,
)

SETTINGS: dict[str, Any] = {
    "steps": 400,
    "batch_size": 32,
    "lr": 4e-3,
    "train_lengths": (5, 30),
    "buckets": ((5, 10), (11, 20), (21, 30), (31, 40)),
    "eval_every": 100,
    "test_per_length": 16,
    "embed_size": 32,
    "hidden_size": 64,
}
LONG = "31-40"
GLOBAL = {
    "decoder_class": LuongDecoder,
    "input_feeding": False,
    "max_source_len": 40,
}
LOCAL = {
    "decoder_class": LocalAttentionDecoder,
    "score": "general",
    "input_feeding": False,
}
MODELS: dict[str, dict[str, Any]] = {
    "no attention": {},
    **{
        f"global {score}": {**GLOBAL, "score": score}
        for score in ("dot", "general", "concat", "location")
    },
    "local-m, D = 5": {**LOCAL, "half_width": 5, "centre": "monotonic"},
    "local-p, D = 8": {**LOCAL, "half_width": 8, "centre": "predictive"},
    "local-m, D = 1": {**LOCAL, "half_width": 1, "centre": "monotonic"},
    "local-m, D = 3": {**LOCAL, "half_width": 3, "centre": "monotonic"},
    "global dot, input feeding": {**GLOBAL, "score": "dot", "input_feeding": True},
}
WINDOWS = range(9)


def test_set() -> list:
    """The chapter's test sentences: 16 of every length from 5 to 40 (seed 1)."""
    return examples_per_length(SETTINGS["test_per_length"], 5, 40, seed=1)


def window_mass(model: torch.nn.Module, examples: list, half_width: int) -> float:
    """Share of the teacher-forced attention inside ``|s - t| <= half_width``,
    averaged over target words (the chapter's exercise ex-luong-window-mass)."""
    maps, _ = attention_maps(model, examples)
    inside = 0.0
    for w in maps:
        offset = torch.arange(w.shape[1])[None] - torch.arange(w.shape[0])[:, None]
        inside += w[offset.abs() <= half_width].sum().item()
    return inside / sum(w.shape[0] for w in maps)


def comparison(examples: list) -> TranslationComparison:
    """The chapter's budget (chapters 5 and 6 share it) on ``examples``."""
    keys = ("steps", "batch_size", "lr", "train_lengths", "buckets", "eval_every")
    return TranslationComparison(examples, **{k: SETTINGS[k] for k in keys})


def build(spec: dict[str, Any]) -> Seq2Seq:
    """The chapter's encoder with the decoder of ``spec`` (:data:`MODELS`), drawn
    as the chapter draws it (seed 0, shifted by ``ATTNLAB_SEED_OFFSET``)."""
    sizes = {k: SETTINGS[k] for k in ("embed_size", "hidden_size")}
    return build_model(**spec, **sizes)


def measures(result: TrainedModel) -> dict[str, Any]:
    """What a record keeps of a run: accuracy by bucket, validation curve."""
    return {
        "accuracy": result.accuracy,
        "val_accuracy": result.history.metric("val_accuracy")[1],
    }


def run_seed(seed: int) -> dict[str, Any]:
    """Train every model as the chapter does under ``ATTNLAB_SEED_OFFSET = seed``
    (set by the command); their accuracy by bucket and validation curve, the global
    dot model's attention inside each window, and the test set's coverage."""
    assert seed_offset() == seed, (seed_offset(), seed)
    examples = test_set()
    runs = comparison(examples)
    models = {
        name: measures(runs.run(name, build(spec), report=False))
        for name, spec in MODELS.items()
    }
    dot = runs.results["global dot"].model
    return {
        "models": models,
        "window_mass": {str(d): window_mass(dot, examples, d) for d in WINDOWS},
        "coverage": {str(d): c for d, c in coverage(examples).items()},
    }


def coverage(examples: list) -> dict[int, float]:
    """Share of the target words of ``examples`` whose source word lies within D of
    their own position: a property of the data."""
    distances = np.array(
        [abs(s - t) for e in examples for t, s in enumerate(e.alignment)]
    )
    return {d: float(np.mean(distances <= d)) for d in WINDOWS}


def conclusions(results: dict[str, Any]) -> dict[str, bool]:
    """What chapter 5 states over seeds, and whether every seed of the record
    bears it out (gaps beyond the band's own spread, as
    :func:`attnlab.seedband.expect_ahead` requires)."""
    runs = results["runs"]

    def acc(name: str, bucket: str = LONG):
        return band(runs, "models", name, "accuracy", bucket)

    attention = [n for n in MODELS if n != "no attention"]
    feeding = [
        acc("global dot, input feeding", b) - acc("global dot", b)
        for b in ("21-30", LONG)
    ]
    return {
        f"every attention model above no attention at {LONG} words": all(
            (acc(n) - acc("no attention")).ranks() for n in attention
        ),
        f"local-m (D = 5) above local-p (D = 8) at {LONG} words": (
            acc("local-m, D = 5") - acc("local-p, D = 8")
        ).ranks(),
        "local-m with D = 3 above D = 1 at 11-20 and 21-30 words": all(
            (acc("local-m, D = 3", b) - acc("local-m, D = 1", b)).ranks()
            for b in ("11-20", "21-30")
        ),
        f"global dot and general above concat and location at {LONG} words, on"
        " every seed": all(
            (acc(a) - acc(b)).low > 0
            for a in ("global dot", "global general")
            for b in ("global concat", "global location")
        ),
        f"global dot against general at {LONG} words: the seeds disagree": (
            acc("global dot") - acc("global general")
        ).disagrees,
        f"D = 5 against D = 3 at {LONG} words: the seeds disagree": (
            acc("local-m, D = 5") - acc("local-m, D = 3")
        ).disagrees,
        "input feeding at 21-40 words: the seeds disagree": all(
            gap.disagrees for gap in feeding
        ),
        "local-m (D = 1) above the share of words within its window, at 11-40": all(
            run["models"]["local-m, D = 1"]["accuracy"][b]
            > run["coverage"]["1"] + 0.05
            for run in runs
            for b in ("11-20", "21-30", LONG)
        ),
        "most of the global dot model's attention (over 0.8) inside D = 5": (
            band(runs, "window_mass", "5").low > 0.8
        ),
    }


def markdown(data: dict[str, Any]) -> str:
    """The reproducing page's table: word accuracy by bucket, mean and range over
    the seeds, one row per model."""
    runs = data["results"]["runs"]
    buckets = [f"{lo}-{hi}" for lo, hi in data["results"]["settings"]["buckets"]]
    lines = over_seeds.bucket_table(
        runs,
        "Greedy word accuracy by source length",
        {name: ("models", name, "accuracy") for name in MODELS},
        buckets,
        digits=3,
    )
    return "\n".join(lines) + over_seeds.footer(data, conclusions)


def main(argv: list[str]) -> None:
    over_seeds.command(sys.modules[__name__], argv)
