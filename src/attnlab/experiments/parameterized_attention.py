"""``python -m attnlab.experiments parameterized-attention``: chapter 7's simple
and parameterized attention on the reversal task, over five seeds.

Seed ``s`` trains both decoders as the chapter does (the same encoder, decoder RNN,
output layer and steps; the best evaluation on held-out reversals kept) and
measures, on the test reversals, word accuracy, alignment accuracy (the peak of the
attention on the true source position) and the mean largest weight.
:func:`conclusions` lists what the chapter states over seeds.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from attnlab.experiments import over_seeds
from attnlab.runmode import seed_offset
from attnlab.seedband import band
from attnlab.seq2seq import Seq2Seq
from attnlab.simple_attention import SimpleAttentionDecoder, slide_attention_model
from attnlab.tasks.reversal import reversal_batches, sample_reversals
from attnlab.tasks.translation import (
    DICTIONARY,
    TranslationBatch,
    attention_maps,
    make_batch,
    teacher_forced_accuracy,
    translation_loss,
)
from attnlab.train import History, seed_everything, train

SETTINGS: dict[str, Any] = {
    "hidden": 16,
    "min_len": 5,
    "max_len": 20,
    "batch": 64,
    "steps": 600,
    "eval_every": 60,
    "lr": 5e-3,
    "held_out": 512,
    "test": 400,
}
WORDS = tuple(DICTIONARY)  # the whole dictionary: a word says nothing of its place
MODELS = {"simple": False, "parameterized": True}
MEASURES = {
    "accuracy": "word accuracy",
    "alignment": "alignment accuracy",
    "sharpness": "mean largest weight",
}


def held_out() -> TranslationBatch:
    """The held-out reversals each run keeps its best evaluation on."""
    s = SETTINGS
    return make_batch(
        sample_reversals(
            s["held_out"], s["min_len"], s["max_len"], seed=1_000, words=WORDS
        )
    )


def test_reversals() -> list:
    """The test reversals, drawn apart from the held-out ones."""
    s = SETTINGS
    return sample_reversals(
        s["test"], s["min_len"], s["max_len"], seed=2_000, words=WORDS
    )


def train_model(
    parameterized: bool,
    validation: TranslationBatch,
    *,
    steps: int | None = None,
    eval_every: int | None = None,
    desc: str | None = None,
    decoder: type[SimpleAttentionDecoder] = SimpleAttentionDecoder,
) -> tuple[Seq2Seq, History]:
    """One run of the chapter: the decoder with (``parameterized``) or without
    projections, seed 0 (shifted by ``ATTNLAB_SEED_OFFSET``), best weights kept;
    without projections, ``decoder`` (a subclass of the simple one) may replace the
    simple decoder."""
    s = SETTINGS
    seed_everything(0)
    model = slide_attention_model(
        parameterized,
        hidden_size=s["hidden"],
        embed_size=s["hidden"],
        simple_decoder=decoder,
    )
    history = train(
        model,
        reversal_batches(
            s["batch"], s["min_len"], s["max_len"], seed=0, words=WORDS
        ),
        translation_loss,
        steps=steps or s["steps"],
        batch_size=s["batch"],
        lr=s["lr"],
        evaluate=lambda m: {"accuracy": teacher_forced_accuracy(m, validation)},
        eval_every=eval_every or s["eval_every"],
        best=("accuracy", "max"),
        desc=desc,
    )
    return model, history


def measure(model: Seq2Seq, examples: list) -> dict[str, Any]:
    """Word accuracy, alignment accuracy, mean largest weight, and the maps."""
    maps, alignment = attention_maps(model, examples)
    return {
        "accuracy": teacher_forced_accuracy(model, make_batch(examples)),
        "alignment": alignment,
        "sharpness": float(np.mean([m.max(-1).values.mean().item() for m in maps])),
        "maps": maps,
    }


def run_seed(seed: int) -> dict[str, Any]:
    """Both decoders as the chapter trains them under ``ATTNLAB_SEED_OFFSET =
    seed``: the test measures and the held-out accuracy curve of each."""
    assert seed_offset() == seed, (seed_offset(), seed)
    validation, examples = held_out(), test_reversals()
    models = {}
    for name, parameterized in MODELS.items():
        model, history = train_model(parameterized, validation)
        measured = measure(model, examples)
        del measured["maps"]
        models[name] = {**measured, "val_accuracy": history.metric("accuracy")[1]}
    return {"models": models}


def conclusions(results: dict[str, Any]) -> dict[str, bool]:
    """What chapter 7 states over seeds, each gap beyond the band's own spread."""
    runs = results["runs"]

    def gap(key: str):
        return band(runs, "models", "parameterized", key) - band(
            runs, "models", "simple", key
        )

    return {
        "parameterized ahead of simple in word accuracy on every seed": gap(
            "accuracy"
        ).ranks(),
        "parameterized ahead of simple in alignment accuracy on every seed": gap(
            "alignment"
        ).ranks(),
        "parameterized attention more concentrated on every seed": gap(
            "sharpness"
        ).ranks(),
        "the simple decoder below 0.75 word accuracy on every seed": band(
            runs, "models", "simple", "accuracy"
        ).high
        < 0.75,
    }


def markdown(data: dict[str, Any]) -> str:
    """The reproducing page's table: each measure, mean and range over the seeds."""
    runs = data["results"]["runs"]
    lines = over_seeds.band_table(
        "decoder",
        list(MEASURES.values()),
        {n: [band(runs, "models", n, key) for key in MEASURES] for n in MODELS},
    )
    budget = f"{SETTINGS['steps']} steps, states of {SETTINGS['hidden']} features"
    return over_seeds.page(data, conclusions, budget, lines)


def main(argv: list[str]) -> None:
    over_seeds.command(sys.modules[__name__], argv)
