"""``python -m attnlab.experiments rnnenc-plateau``: does the gap between RNNsearch
and RNNenc close when RNNenc trains three times as long?

Trains the Bahdanau chapter's two models from seed 0 with the chapter's recipe
(:func:`attnlab.tasks.translation.train_translation`, batch 64, learning rate
0.002 decayed in the second half of the run): RNNenc (no attention) for
``--factor`` times the chapter's 1000 steps, RNNsearch for the chapter's 1000. It
prints RNNenc's teacher-forced validation accuracy along the run (to see whether it
has reached a plateau), then both models' greedy word accuracy and exact match by
source length on the chapter's test set (16 sentences of every length from 5 to 60,
seed 1), with the date, the torch version and the machine. ``--json PATH`` saves the
results with the command, date and machine (:mod:`attnlab.experiments.record`),
from which :func:`markdown` makes the reproducing page's table.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform

import torch

from attnlab.experiments.record import provenance, record, save
from attnlab.tasks.translation import (
    decay_in_second_half,
    evaluate_translation,
    examples_per_length,
    train_translation,
    translation_model,
)
from attnlab.train import History, seed_everything

CHAPTER_STEPS = 1000


def train_model(attention: bool, steps: int, eval_every: int) -> tuple:
    """The chapter's model with or without attention, trained from seed 0 for
    ``steps``: (model, history)."""
    seed_everything(0)
    model = translation_model(attention=attention)
    name = "RNNsearch" if attention else "RNNenc"
    history = train_translation(
        model,
        steps,
        eval_every=eval_every,
        desc=name,
        lr_factor=decay_in_second_half(steps),
    )
    return model, history


def curve_lines(history: History, every: int) -> list[str]:
    """The validation accuracy at every ``every``-th evaluation, one line each."""
    steps, accuracy = history.metric("val_accuracy")
    return [
        f"  step {int(s):5d}: {a:.3f}"
        for i, (s, a) in enumerate(zip(steps, accuracy, strict=True))
        if (i + 1) % every == 0 or i == len(steps) - 1
    ]


def last_fifth_gain(history: History) -> str:
    """How much the validation accuracy rose over the last fifth of the run: the
    best of the last fifth's evaluations minus the best of all before it."""
    _, accuracy = history.metric("val_accuracy")
    if len(accuracy) < 2:
        raise ValueError(f"need at least 2 evaluations, got {len(accuracy)}")
    cut = len(accuracy) - max(1, len(accuracy) // 5)
    gain = max(accuracy[cut:]) - max(accuracy[:cut])
    return f"gain over the last fifth of the run: {gain:+.3f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m attnlab.experiments rnnenc-plateau",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument(
        "--factor",
        type=int,
        default=3,
        help="RNNenc trains this many times the chapter's 1000 steps (default 3)",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=CHAPTER_STEPS,
        help="the chapter's budget, RNNsearch's steps (default 1000)",
    )
    parser.add_argument(
        "--sentences-per-length",
        type=int,
        default=16,
        help="test sentences of every length from 5 to 60 (default 16)",
    )
    parser.add_argument("--json", metavar="PATH", help="write the results to PATH")
    args = parser.parse_args(argv)
    if args.factor < 1 or args.steps < 1:
        parser.error("--factor and --steps must be >= 1")
    torch.set_num_threads(1)  # as in the chapter: the same run on any machine
    long_steps = args.factor * args.steps
    eval_every = max(1, args.steps // 10)
    rnnenc, rnnenc_history = train_model(False, long_steps, eval_every)
    rnnsearch, rnnsearch_history = train_model(True, args.steps, eval_every)
    test_set = examples_per_length(args.sentences_per_length, 5, 60, seed=1)
    rows = {
        "RNNenc": evaluate_translation(rnnenc, test_set).by_bucket(),
        "RNNsearch": evaluate_translation(rnnsearch, test_set).by_bucket(),
    }
    print(
        f"\nRNNenc trained {long_steps} steps ({rnnenc_history.seconds:.0f} s),"
        f" RNNsearch {args.steps} steps ({rnnsearch_history.seconds:.0f} s), seed 0,"
        f" {datetime.date.today().isoformat()}, torch {torch.__version__},"
        f" {platform.machine()} with {os.cpu_count()} cores,"
        f" {torch.get_num_threads()} torch threads\n"
    )
    print(
        "RNNenc, teacher-forced validation accuracy (31-40 words) during training:"
    )
    print("\n".join(curve_lines(rnnenc_history, every=max(1, args.factor))))
    print(last_fifth_gain(rnnenc_history))
    print("\nbucket | RNNenc: word  exact | RNNsearch: word  exact")
    for a, b in zip(rows["RNNenc"], rows["RNNsearch"], strict=True):
        print(
            f"{a['bucket']:>6} | {a['token_accuracy']:12.3f}"
            f" {a['exact_match']:6.3f} | {b['token_accuracy']:15.3f}"
            f" {b['exact_match']:6.3f}"
        )
    if args.json:
        steps, accuracy = rnnenc_history.metric("val_accuracy")
        results = {
            "steps": {"RNNenc": long_steps, "RNNsearch": args.steps},
            "seconds": {
                "RNNenc": rnnenc_history.seconds,
                "RNNsearch": rnnsearch_history.seconds,
            },
            "rnnenc_validation_curve": [
                [int(step), float(value)]
                for step, value in zip(steps, accuracy, strict=True)
            ],
            "rnnenc_best_step": rnnenc_history.best_step,
            "last_fifth_gain": last_fifth_gain(rnnenc_history),
            "buckets": rows,
        }
        save(args.json, record("rnnenc-plateau", argv or [], results))


def markdown(data: dict) -> str:
    """The reproducing page's table from a record written with ``--json``: both
    models' word accuracy and exact match by source length, and RNNenc's validation
    accuracy along its longer run."""
    found = data["results"]
    steps = found["steps"]
    curve = found["rnnenc_validation_curve"]
    every = max(1, len(curve) // 10)
    shown = [c for i, c in enumerate(curve) if (i + 1) % every == 0 or i == 0]
    lines = [
        f"RNNenc trained {steps['RNNenc']:,} steps,"
        f" RNNsearch {steps['RNNsearch']:,};"
        " greedy decoding of the same test sentences, by source length (the chapter"
        " trains on 5 to 40 words):",
        "",
        "| source words | RNNenc: word accuracy | exact match |"
        " RNNsearch: word accuracy | exact match |",
        "|---|---:|---:|---:|---:|",
    ]
    for a, b in zip(*found["buckets"].values(), strict=True):
        lines.append(
            f"| {a['bucket']} | {a['token_accuracy']:.3f} | {a['exact_match']:.3f} |"
            f" {b['token_accuracy']:.3f} | {b['exact_match']:.3f} |"
        )
    lines += [
        "",
        "RNNenc's teacher-forced validation accuracy on 31-40 words along its run"
        " (step: accuracy): "
        + ", ".join(f"{s:,}: {a:.3f}" for s, a in shown)
        + f"; {found['last_fifth_gain']}. Training took"
        f" {found['seconds']['RNNenc'] / 60:.0f} minutes (RNNenc) and"
        f" {found['seconds']['RNNsearch'] / 60:.0f} (RNNsearch).",
        "",
        provenance(data),
    ]
    return "\n".join(lines)
