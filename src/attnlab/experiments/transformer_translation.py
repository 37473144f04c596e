"""``python -m attnlab.experiments transformer-translation``: chapter 8's
comparison of RNNenc, RNNsearch and the Transformer, and chapter 9's three kinds
of positions and longer sentences, over five seeds at the chapters' budget.

Seed ``s`` trains the five models of the chapters as they do (:data:`SETTINGS`:
300 steps of 64 sentences of 5 to 40 words, each model with the recipe the
``transformer-vs-rnn`` study chose on validation data) and measures on the
chapter's test sentences (16 of every length from 5 to 60, seed 1; 4 of every
length from 61 to 80, seed 11), translated greedily: word accuracy by bucket of
source lengths, the share of words right by target position on the sentences of
41 to 60 words, and the alignment accuracy of RNNsearch's attention and of the
Transformer's cross-attention head chosen on validation sentences.
:func:`conclusions` lists what the chapters state over seeds. :func:`norm_experiment`
is chapter 8's smaller run of the two layer-norm orders, one seed.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import torch
from torch import nn

from attnlab.experiments import over_seeds, transformer_vs_rnn
from attnlab.experiments.record import published
from attnlab.runmode import seed_offset
from attnlab.seedband import Band, band, every_seed
from attnlab.tasks.translation import (
    LENGTH_BUCKETS,
    SOURCE_VOCAB,
    TARGET_VOCAB,
    Example,
    TranslationBatch,
    TranslationReport,
    attention_maps,
    evaluate_translation,
    examples_per_length,
    make_batch,
    sample_examples,
    teacher_forced_accuracy,
    train_translation,
)
from attnlab.train import History, seed_everything
from attnlab.transformer import Transformer

SETTINGS: dict[str, Any] = {
    "steps": 300,
    "eval_every": 50,
    "test_per_length": 16,
    "beyond_per_length": 4,
    "validation_per_length": 4,
}
MODELS = transformer_vs_rnn.MODELS  # RNNenc, RNNsearch, Transformer
POSITIONS = transformer_vs_rnn.POSITIONS  # sinusoidal, learned, alibi
ALL_BUCKETS = [f"{low}-{high}" for low, high in transformer_vs_rnn.BUCKETS]
TARGET_POSITIONS = ((0, 20), (20, 40), (40, 60))  # target positions, end excluded


def recipes() -> dict[str, transformer_vs_rnn.Recipe]:
    """The recipe of each model, as the ``transformer-vs-rnn`` record chose it on
    validation data."""
    chosen = published("transformer-vs-rnn")["results"]["chosen"]
    return {
        name: transformer_vs_rnn.Recipe(**recipe) for name, recipe in chosen.items()
    }


def build(
    name: str,
    positions: str = "sinusoidal",
    recipe: transformer_vs_rnn.Recipe | None = None,
) -> nn.Module:
    """A fresh model: ``"RNNenc"``, ``"RNNsearch"`` or ``"Transformer"`` (2 + 2
    layers of width 96, 2 heads, ``positions``, the layer-norm order of ``recipe``,
    by default the one :func:`recipes` gives the model)."""
    recipe = recipe or recipes()[name]
    return transformer_vs_rnn.build(
        transformer_vs_rnn.Run(name, recipe, 0, positions)
    )


def train_model(
    name: str,
    positions: str = "sinusoidal",
    *,
    steps: int | None = None,
    eval_every: int | None = None,
) -> tuple[nn.Module, History]:
    """One run of the chapter: seed 0 (shifted by ``ATTNLAB_SEED_OFFSET``), the
    model's recipe (rate, schedule, label smoothing), the best evaluation kept."""
    steps = steps or SETTINGS["steps"]
    recipe = recipes()[name]
    seed_everything(0)
    model = build(name, positions, recipe)
    history = recipe.train(
        model,
        steps,
        eval_every=eval_every or SETTINGS["eval_every"],
        desc=name if positions == "sinusoidal" else f"{name}, {positions}",
    )
    return model, history


# the held-out sentences of the norm-order experiment
NORM_HELD_OUT = {"n": 256, "min_len": 5, "max_len": 20, "seed": 2024}


def norm_held_out(seed: int = NORM_HELD_OUT["seed"]) -> TranslationBatch:
    """The held-out batch of :func:`norm_experiment`; another ``seed`` draws a fresh
    batch of the same kind."""
    spec = NORM_HELD_OUT
    return make_batch(
        sample_examples(spec["n"], spec["min_len"], spec["max_len"], seed=seed)
    )


def norm_experiment(steps: int) -> dict[str, tuple[Transformer, float]]:
    """A post-norm and a pre-norm Transformer (width 32, 4 heads, 2 + 2 layers),
    each trained from seed 0 for ``steps`` steps on the same batches (32 sentences
    of 5 to 20 words, Adam at a constant 5e-3, no warm-up), with each one's
    teacher-forced word accuracy on 256 held-out sentences of 5 to 20 words:
    ``{"post": (model, accuracy), "pre": (model, accuracy)}``."""
    held_out = norm_held_out()
    ids = {
        "pad_id": TARGET_VOCAB.pad,
        "bos_id": TARGET_VOCAB.bos,
        "eos_id": TARGET_VOCAB.eos,
    }
    results = {}
    for order, norm_first in [("post", False), ("pre", True)]:
        seed_everything(0)
        model = Transformer(
            len(SOURCE_VOCAB),
            len(TARGET_VOCAB),
            d_model=32,
            n_heads=4,
            n_layers=2,
            norm_first=norm_first,
            **ids,
        )
        train_translation(
            model,
            steps,
            batch_size=32,
            max_len=20,
            lr=5e-3,
            eval_every=steps,
            desc=f"{order}-norm",
        )
        model.eval()
        with torch.no_grad():
            results[order] = (model, teacher_forced_accuracy(model, held_out))
    return results


def test_sets(
    per_length: int | None = None, beyond_per_length: int | None = None
) -> tuple[list[Example], list[Example]]:
    """The test sentences of 5 to 60 words and those of 61 to 80."""
    test = examples_per_length(
        per_length or SETTINGS["test_per_length"], 5, 60, seed=1
    )
    beyond = examples_per_length(
        beyond_per_length or SETTINGS["beyond_per_length"], 61, 80, seed=11
    )
    return test, beyond


def word_accuracy(report: TranslationReport, buckets=LENGTH_BUCKETS) -> dict:
    """``{"5-10": accuracy, ...}``: the share of reference words right, by bucket."""
    return {
        str(row["bucket"]): float(row["token_accuracy"])
        for row in report.by_bucket(buckets)
    }


def by_target_position(
    report: TranslationReport, examples: list[Example], low: int = 41
) -> dict[str, float]:
    """On the sentences of ``low`` words or more: the share of reference words
    right at the target positions 0-19, 20-39 and 40-59."""
    hits = {span: [0, 0] for span in TARGET_POSITIONS}
    for prediction, example in zip(report.predictions, examples, strict=True):
        if len(example.source) < low:
            continue
        for j, word in enumerate(example.target):
            span = next((s for s in TARGET_POSITIONS if s[0] <= j < s[1]), None)
            if span is not None:
                hits[span][0] += j < len(prediction) and prediction[j] == word
                hits[span][1] += 1
    return {f"{a}-{b - 1}": h / max(n, 1) for (a, b), (h, n) in hits.items()}


def choose_head(
    model: Transformer, validation: list[Example]
) -> tuple[tuple[int, int], dict[tuple[int, int], float]]:
    """The cross-attention head (layer, head) with the highest alignment accuracy
    on ``validation``, which it is left showing, and every head's accuracy."""
    decoder = model.decoder
    scores = {}
    for layer in range(len(decoder.layers)):
        for head in range(decoder.n_heads):
            decoder.shown_head = (layer, head)
            scores[(layer, head)] = attention_maps(model, validation)[1]
    chosen = max(scores, key=scores.get)  # the first of ties
    decoder.shown_head = chosen
    return chosen, scores


def alignment_by_position(
    model: nn.Module, examples: list[Example], split: int = 40
) -> tuple[float, float]:
    """Teacher-forced alignment accuracy of the target positions before ``split``
    and from it on."""
    maps, _ = attention_maps(model, examples)
    hits, counts = [0, 0], [0, 0]
    for weights, example in zip(maps, examples, strict=True):
        peaks = weights.argmax(-1).tolist()
        for j, (peak, true) in enumerate(zip(peaks, example.alignment, strict=True)):
            if true >= 0:
                hits[j >= split] += peak == true
                counts[j >= split] += 1
    return hits[0] / max(counts[0], 1), hits[1] / max(counts[1], 1)


def run_seed(seed: int) -> dict[str, Any]:
    """The chapter's five models under ``ATTNLAB_SEED_OFFSET = seed`` (set by the
    command), and every measure the chapter takes of them."""
    assert seed_offset() == seed, (seed_offset(), seed)
    test, beyond = test_sets()
    validation = examples_per_length(
        SETTINGS["validation_per_length"], 5, 40, seed=3
    )
    trained = [e for e in test if len(e.source) <= 40]
    long = [e for e in test if len(e.source) > 40]
    models, trained_models = {}, {}
    for name in MODELS:
        model, history = train_model(name)
        report = evaluate_translation(model, test)
        trained_models[name] = model
        models[name] = {
            "val_accuracy": history.metric("val_accuracy")[1],
            "token_accuracy": word_accuracy(report),
            "by_position": by_target_position(report, test),
        }
    tf = trained_models["Transformer"]
    head, _ = choose_head(tf, validation)
    for name, model in (
        ("RNNsearch", trained_models["RNNsearch"]),
        ("Transformer", tf),
    ):
        before, after = alignment_by_position(model, long)
        models[name]["alignment"] = {
            "5-40": attention_maps(model, trained)[1],
            "long, before 40": before,
            "long, from 40": after,
        }
    models["Transformer"]["head"] = list(head)
    positions = {}
    for kind in POSITIONS:
        model = tf if kind == "sinusoidal" else train_model("Transformer", kind)[0]
        report = evaluate_translation(model, test + beyond)
        positions[kind] = word_accuracy(report, transformer_vs_rnn.BUCKETS)
    return {"models": models, "positions": positions}


def conclusions(results: dict[str, Any]) -> dict[str, bool]:
    """What chapters 8 and 9 state over seeds; a gap must hold beyond the seeds'
    spread where a chapter checks a reader's run against it."""
    runs = results["runs"]

    def acc(name: str, bucket: str) -> Band:
        return band(runs, "models", name, "token_accuracy", bucket)

    def pos(kind: str, bucket: str) -> Band:
        return band(runs, "positions", kind, bucket)

    def late(name: str) -> Band:
        return band(runs, "models", name, "by_position", "40-59")

    def early(name: str) -> Band:
        return band(runs, "models", name, "by_position", "0-19")

    aligned = band(runs, "models", "Transformer", "alignment", "long, from 40")
    return {
        "the Transformer above RNNenc on 31-40 words, on every seed": (
            acc("Transformer", "31-40") - acc("RNNenc", "31-40")
        ).ranks(),
        "the Transformer against RNNsearch on 31-40 words: the seeds disagree": (
            acc("Transformer", "31-40") - acc("RNNsearch", "31-40")
        ).disagrees,
        "both attention models lower on 51-60 words than on 31-40,"
        " on every seed": all(
            (acc(name, "31-40") - acc(name, "51-60")).ranks()
            for name in ("RNNsearch", "Transformer")
        ),
        "the Transformer: under half as many words right from target position 40"
        " on as in its first 20 positions, on every seed": every_seed(
            lambda a, b: a < 0.5 * b, late("Transformer"), early("Transformer")
        ),
        "ALiBi below sinusoidal positions on 31-40 words, on every seed": (
            pos("sinusoidal", "31-40") - pos("alibi", "31-40")
        ).ranks(),
        "sinusoidal above learned positions on 31-40 and on 71-80 words, on every"
        " seed": all(
            (pos("sinusoidal", b) - pos("learned", b)).ranks()
            for b in ("31-40", "71-80")
        ),
        "the Transformer's chosen head finds fewer alignments from target position"
        " 40 on than before it, on every seed": (
            band(runs, "models", "Transformer", "alignment", "long, before 40")
            - aligned
        ).ranks(),
        "from target position 40 on, RNNsearch's attention finds more alignments"
        " than the Transformer's chosen head, on every seed": (
            band(runs, "models", "RNNsearch", "alignment", "long, from 40") - aligned
        ).ranks(),
    }


def markdown(data: dict[str, Any]) -> str:
    """The reproducing page's tables: word accuracy by bucket of the three models
    and of the three kinds of positions; words right by target position and
    alignment accuracy."""
    runs = data["results"]["runs"]
    buckets = [f"{low}-{high}" for low, high in LENGTH_BUCKETS]
    lines = over_seeds.bucket_table(
        runs,
        "Word accuracy by source length, greedy",
        {name: ("models", name, "token_accuracy") for name in MODELS},
        buckets,
    )
    lines += [""] + over_seeds.bucket_table(
        runs,
        "The Transformer's word accuracy with each kind of positions",
        {kind: ("positions", kind) for kind in POSITIONS},
        ALL_BUCKETS[2:],
    )
    spans = [f"{a}-{b - 1}" for a, b in TARGET_POSITIONS]
    lines += ["", "Sentences of 41-60 words, by target position:", ""]
    lines += over_seeds.band_table(
        "share of words right",
        spans,
        {
            name: [band(runs, "models", name, "by_position", s) for s in spans]
            for name in ("RNNsearch", "Transformer")
        },
    )
    measures = ("5-40", "long, before 40", "long, from 40")
    lines += ["", "Alignment accuracy (the Transformer: its chosen head):", ""]
    lines += over_seeds.band_table(
        "alignment accuracy",
        ["test, 5-40 words", "41-60 words, positions 0-39", "41-60 words, from 40"],
        {
            name: [band(runs, "models", name, "alignment", m) for m in measures]
            for name in ("RNNsearch", "Transformer")
        },
    )
    budget = f"{SETTINGS['steps']} steps per model"
    return over_seeds.page(data, conclusions, budget, lines)


def main(argv: list[str]) -> None:
    """:func:`~attnlab.experiments.over_seeds.main` with :data:`SETTINGS` and the
    recipes the runs use, so that a record made with other recipes is not kept."""
    chosen = {name: asdict(recipe) for name, recipe in recipes().items()}
    over_seeds.main(
        "transformer-translation",
        argv,
        description=(__doc__ or "").split("\n\n")[0],
        settings={**SETTINGS, "recipes": chosen},
        run_seed=run_seed,
        conclusions=conclusions,
        markdown=markdown,
    )
