"""``python -m attnlab.experiments encoder-decoder``: chapter 3's experiments over
five seeds.

With the chapter's budget (:data:`SETTINGS`: 600 steps of 64 sentences of 5 to 40
words, the learning rate falling over the second half), seed ``s`` trains the
encoder-decoder without attention with a one-directional and with a bidirectional
encoder, and translates the chapter's test sentences (16 of every length from 5 to
60, seed 1): greedy word accuracy, exact match and BLEU by bucket of source
lengths, teacher-forced word accuracy by bucket, the share of correct words at each
target position of the 31-40-word sentences, and, for the bidirectional model on the
sentences of up to 30 words, beam search of widths 1, 3 and 5. It also runs the
chapter's reversal experiment: a small one-directional model trained for 150 steps
on sentences of 5 to 15 words, reading the source as given and backwards.
:func:`conclusions` lists what the chapter states over seeds.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from attnlab.experiments import over_seeds
from attnlab.metrics import token_accuracy
from attnlab.runmode import seed_offset
from attnlab.seedband import Band, band
from attnlab.seq2seq import beam_search
from attnlab.tasks.translation import (
    TARGET_VOCAB,
    TranslationBatch,
    decay_in_second_half,
    evaluate_translation,
    examples_per_length,
    make_batch,
    teacher_forced_by_bucket,
    train_translation,
    translation_loss,
    translation_model,
)
from attnlab.train import seed_everything

SETTINGS: dict[str, Any] = {
    "steps": 600,
    "eval_every": 50,
    "test_per_length": 16,
    "beam_widths": (1, 3, 5),
    "reversal_steps": 150,
    "reversal_test_per_length": 4,
}
MODELS = {"one direction": False, "bidirectional": True}
TRAINING_BUCKETS = ("5-10", "11-20", "21-30", "31-40")


def backwards(batch: TranslationBatch) -> TranslationBatch:
    """The batch with every source read backwards (padding kept at the end)."""
    lengths = batch.src_mask.sum(-1, keepdim=True)
    index = (lengths - 1 - torch.arange(batch.src.shape[1])).clamp(min=0)
    flipped = batch.src.gather(1, index)
    return replace(batch, src=torch.where(batch.src_mask, flipped, batch.src))


def reversal_loss(reverse: bool) -> float:
    """The chapter's reversal run (seed 0, shifted by ``ATTNLAB_SEED_OFFSET``): its
    test loss per word."""
    seed_everything(0)
    model = translation_model(
        attention=False, bidirectional=False, hidden_size=64, embed_size=32
    )
    steps = SETTINGS["reversal_steps"]

    def prepare(batch: TranslationBatch) -> TranslationBatch:
        return backwards(batch) if reverse else batch

    train_translation(
        model,
        steps,
        max_len=15,
        eval_every=steps,
        desc="backwards" if reverse else "as given",
        loss_fn=lambda m, b: translation_loss(m, prepare(b)),
    )
    test = make_batch(
        examples_per_length(SETTINGS["reversal_test_per_length"], 5, 15, seed=3)
    )
    with torch.no_grad():
        return translation_loss(model, prepare(test)).item()


def beam_measures(model: torch.nn.Module, examples: list) -> dict[str, Any]:
    """Beam search of each width on ``examples``: how many translations are more
    likely than greedy's, and the word accuracy."""
    batch = make_batch(examples)
    max_len = batch.src.shape[1] + 10
    references = [list(e.target) for e in examples]
    model.eval()
    with torch.no_grad():
        encoded = model.encode(batch.src, batch.src_mask)
        greedy = model.decoder.decode(encoded, max_len=max_len).tokens
        greedy_logp = model.log_prob(batch.src, batch.src_mask, greedy)
        tolerance = 1e-5 * (1 + greedy_logp.abs())  # rounding of a long sum
        more_likely, accuracy = {}, {}
        for k in SETTINGS["beam_widths"]:
            tokens, logp = beam_search(model.decoder, encoded, k, max_len)
            more_likely[str(k)] = int((logp > greedy_logp + tolerance).sum())
            accuracy[str(k)] = token_accuracy(
                [TARGET_VOCAB.decode(row) for row in tokens], references
            )
    return {"more_likely": more_likely, "accuracy": accuracy}


def run_seed(seed: int) -> dict[str, Any]:
    """Train both models and the two reversal runs as the chapter does under
    ``ATTNLAB_SEED_OFFSET = seed`` (set by the command); measure them."""
    assert seed_offset() == seed, (seed_offset(), seed)
    examples = examples_per_length(SETTINGS["test_per_length"], 5, 60, seed=1)
    steps = SETTINGS["steps"]
    models, trained = {}, {}
    for name, bidirectional in MODELS.items():
        seed_everything(0)
        model = translation_model(attention=False, bidirectional=bidirectional)
        history = train_translation(
            model,
            steps,
            eval_every=SETTINGS["eval_every"],
            desc=name,
            lr_factor=decay_in_second_half(steps),
        )
        report = evaluate_translation(model, examples)
        rows = report.by_bucket()
        models[name] = {
            "val_accuracy": history.metric("val_accuracy")[1],
            **{
                key: {str(r["bucket"]): float(r[key]) for r in rows}
                for key in ("token_accuracy", "exact_match", "bleu")
            },
            "forced": teacher_forced_by_bucket(model, examples),
            "by_position": report.by_position(31, 40),
        }
        trained[name] = model
    short = [e for e in examples if len(e.source) <= 30]
    return {
        "models": models,
        "beam": beam_measures(trained["bidirectional"], short),
        "reversal": {
            "as given": reversal_loss(False),
            "backwards": reversal_loss(True),
        },
    }


def mean_over(runs: list[dict[str, Any]], *keys: str, part: slice) -> Band:
    """The mean of a part of a list-valued measure (``by_position``), as a band."""
    values = []
    for run in runs:
        value: Any = run
        for key in keys:
            value = value[key]
        values.append(float(np.mean(value[part])))
    return Band(tuple(values), tuple(int(r["seed"]) for r in runs))


def conclusions(results: dict[str, Any]) -> dict[str, bool]:
    """What chapter 3 states over seeds; a gap must hold beyond the seeds' spread."""
    runs = results["runs"]

    def measure(name: str, key: str, bucket: str) -> Band:
        return band(runs, "models", name, key, bucket)

    bi = "bidirectional"
    buckets = list(runs[0]["models"][bi]["token_accuracy"])
    first_words = {
        n: mean_over(runs, "models", n, "by_position", part=slice(0, 3))
        for n in MODELS
    }
    last_words = {
        n: mean_over(runs, "models", n, "by_position", part=slice(-10, None))
        for n in MODELS
    }
    widths = [str(k) for k in SETTINGS["beam_widths"]]
    return {
        "greedy inference below teacher forcing in every bucket, by 0.15 or more"
        " after the first": all(
            (measure(bi, "forced", b) - measure(bi, "token_accuracy", b)).ranks()
            for b in buckets
        )
        and all(
            (measure(bi, "forced", b) - measure(bi, "token_accuracy", b)).low > 0.15
            for b in buckets[1:]
        ),
        "teacher-forced accuracy falls from each training bucket to the next": all(
            (measure(bi, "forced", a) - measure(bi, "forced", b)).ranks()
            for a, b in zip(TRAINING_BUCKETS, TRAINING_BUCKETS[1:], strict=False)
        ),
        "greedy accuracy above 0.7 on 5-10 words and below 0.35 on 31-40, falling"
        " from each training bucket to the next, for both encoders": all(
            measure(n, "token_accuracy", "5-10").widened()[0] > 0.7
            and measure(n, "token_accuracy", "31-40").widened()[1] < 0.35
            and all(
                (
                    measure(n, "token_accuracy", a) - measure(n, "token_accuracy", b)
                ).ranks()
                for a, b in zip(TRAINING_BUCKETS, TRAINING_BUCKETS[1:], strict=False)
            )
            for n in MODELS
        ),
        "more than 0.7 of the first three words right, under 0.3 of the last ten"
        " (31-40 words)": all(
            first_words[n].widened()[0] > 0.7 and last_words[n].widened()[1] < 0.3
            for n in MODELS
        ),
        "wider beams find more likely translations than greedy for many sentences,"
        " and change the word accuracy by under 0.05": all(
            band(runs, "beam", "more_likely", k).low > 100 for k in widths[1:]
        )
        and all(
            abs(v) < 0.05
            for v in (
                band(runs, "beam", "accuracy", widths[-1])
                - band(runs, "beam", "accuracy", widths[0])
            ).values
        ),
        "the bidirectional encoder ahead of the one-directional one at 11-20 words"
        " on every seed, and within 0.05 of it at 21-40": (
            measure(bi, "token_accuracy", "11-20")
            - measure("one direction", "token_accuracy", "11-20")
        ).low
        > 0
        and all(
            abs(gap) < 0.05
            for b in ("21-30", "31-40")
            for gap in (
                measure(bi, "token_accuracy", b)
                - measure("one direction", "token_accuracy", b)
            ).values
        ),
        "reading the source backwards lowers the test loss, on every seed": (
            band(runs, "reversal", "as given") - band(runs, "reversal", "backwards")
        ).low
        > 0,
    }


def markdown(data: dict[str, Any]) -> str:
    """The reproducing page's tables: accuracy by bucket, teacher forced and
    greedy, for both encoders; beam search; the reversal runs."""
    runs = data["results"]["runs"]
    buckets = list(runs[0]["models"]["bidirectional"]["token_accuracy"])
    lines = over_seeds.bucket_table(
        runs,
        "Word accuracy by source length",
        {
            f"{name}, {label}": ("models", name, key)
            for name in MODELS
            for key, label in (
                ("forced", "teacher forced"),
                ("token_accuracy", "greedy"),
            )
        },
        buckets,
    )
    widths = [str(k) for k in SETTINGS["beam_widths"]]
    lines += [
        "",
        "| beam width | translations more likely than greedy | word accuracy |",
        "|---|---|---|",
        *(
            f"| {k} | {band(runs, 'beam', 'more_likely', k).text(0)} |"
            f" {band(runs, 'beam', 'accuracy', k).text()} |"
            for k in widths
        ),
        "",
        "| reversal run (5-15 words) | test loss per word |",
        "|---|---|",
        *(
            f"| source {order} | {band(runs, 'reversal', order).text()} |"
            for order in ("as given", "backwards")
        ),
    ]
    return "\n".join(lines) + over_seeds.footer(data, conclusions)


def main(argv: list[str]) -> None:
    over_seeds.command(sys.modules[__name__], argv)
