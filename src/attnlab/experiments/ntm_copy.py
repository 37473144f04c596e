"""``python -m attnlab.experiments ntm-copy --seeds 5``: the NTM copy task of the
chapter, over several seeds.

Trains the chapter's NTM (LSTM controller with 100 units, memory 128 x 20, one read
and one write head) with the chapter's recipe (:func:`attnlab.tasks.copy.train_copy`)
once per seed and evaluates it on 1,024 test sequences of each length from 10 to 60.
It prints a markdown table of the wrong bits per sequence, with every seed, the mean
and the standard deviation; a second table with the percentage of the sequences that
came out with at least one wrong bit; how many seeds met the chapter's target (under
0.1 wrong bits per sequence at the training lengths 10 and 20, and under 1 at length
40, twice the longest training sequence); the date, the torch version and the
machine. The errors of a trained NTM are rare, badly copied sequences, so the test
set must be large: with 64 sequences, a single one with 7 wrong bits decides
whether a seed meets the target.

Options change one part of the recipe (``--lr``, ``--lr-drop``, ``--zero-vectors``,
``--curriculum``)
and, with ``--validation``, print the tables of 1,024 validation sequences per length
drawn apart from the test sequences, so that a change to the recipe can be judged
without looking at the test set. Every seed is evaluated on both sets;
``--jobs N`` trains N seeds at a time, each in its own process on one thread;
``--json PATH`` writes both, with the command, date and machine
(:mod:`attnlab.experiments.record`), and :func:`markdown` makes the reproducing
page's tables from that file.
"""

from __future__ import annotations

import argparse
import datetime
import inspect
import os
import platform
import statistics
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from typing import Any

import torch

from attnlab.experiments.record import provenance, record, save
from attnlab.ntm import NTM, LSTMBaseline
from attnlab.tasks.copy import BITS, TEST_SEED, evaluate_copy, train_copy
from attnlab.train import History, seed_everything

LENGTHS = (10, 20, 30, 40, 50, 60)
SOLVED_BITS = 0.1  # at the training lengths 10 and 20
LONG_BITS = 1.0  # at length 40
VALIDATION_SEED = 777  # evaluate_copy's sequences apart from the TEST_SEED ones
# the options' defaults are train_copy's own: the command's default is the recipe
RECIPE = {
    name: parameter.default
    for name, parameter in inspect.signature(train_copy).parameters.items()
    if name in ("lr", "lr_drop", "zero_vectors", "curriculum")
}


def met_target(bits: dict[int, float]) -> bool:
    """Whether one seed's bits per sequence meet the target: < 0.1 at lengths 10 and
    20, < 1 at length 40."""
    return bits[10] < SOLVED_BITS and bits[20] < SOLVED_BITS and bits[40] < LONG_BITS


def build(kind: str = "ntm") -> NTM | LSTMBaseline:
    """The chapter's NTM (LSTM controller of 100 units, memory 128 x 20, one read
    and one write head) or, with ``kind="lstm"``, its LSTM baseline (one layer of
    128 units)."""
    if kind == "ntm":
        return NTM(BITS + 1, BITS, hidden_size=100, memory_rows=128, memory_width=20)
    if kind == "lstm":
        return LSTMBaseline(BITS + 1, BITS, hidden_size=128, layers=1)
    raise ValueError(f"kind must be 'ntm' or 'lstm', got {kind!r}")


def train_model(
    kind: str, steps: int, seed: int = 0, *, desc: str | None = None, **recipe: Any
) -> tuple[NTM | LSTMBaseline, History]:
    """Build a model with :func:`seed_everything` ``(seed)`` and train it with the
    chapter's recipe (:func:`~attnlab.tasks.copy.train_copy`, changed by
    ``recipe``), the weights of the lowest validation loss kept."""
    seed_everything(seed)
    model = build(kind)
    history = train_copy(model, steps=steps, seed=seed, desc=desc or kind, **recipe)
    return model, history


def run_seed(
    seed: int,
    steps: int,
    n_eval: int,
    kind: str = "ntm",
    *,
    eval_seeds: tuple[int, ...] = (TEST_SEED,),
    **recipe: float | int,
) -> tuple[list[dict[str, dict[int, float]]], float]:
    """Train one model (the chapter's NTM, or its LSTM baseline) from ``seed``;
    return :func:`~attnlab.tasks.copy.evaluate_copy`'s measures by length on the
    sequences of each of ``eval_seeds`` and the training seconds. ``recipe``
    (``lr``, ``lr_drop``, ``zero_vectors``, ``curriculum``) goes to
    :func:`~attnlab.tasks.copy.train_copy`."""
    model, history = train_model(kind, steps, seed, desc=f"seed {seed}", **recipe)
    measures = [evaluate_copy(model, LENGTHS, n=n_eval, seed=e) for e in eval_seeds]
    return measures, history.seconds


def table(results: dict[int, dict[int, float]], digits: int = 2) -> str:
    """A markdown table: one row per length, one column per seed, then mean and
    standard deviation, each with ``digits`` decimals."""
    seeds = list(results)
    lines = [
        "| length | " + " | ".join(f"seed {s}" for s in seeds) + " | mean | std |",
        "|---:|" + "---:|" * (len(seeds) + 2),
    ]
    for length in LENGTHS:
        values = [results[s][length] for s in seeds]
        spread = statistics.stdev(values) if len(values) > 1 else 0.0
        cells = " | ".join(f"{v:.{digits}f}" for v in values)
        lines.append(
            f"| {length} | {cells} | {statistics.mean(values):.{digits}f} |"
            f" {spread:.{digits}f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m attnlab.experiments ntm-copy",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument(
        "--seeds", type=int, default=5, help="number of seeds (default 5)"
    )
    parser.add_argument(
        "--first-seed",
        type=int,
        default=0,
        help="the seeds are first-seed, first-seed + 1, ...",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=3000,
        help="training steps of batch 32 per seed (default 3000)",
    )
    parser.add_argument(
        "--eval-sequences",
        type=int,
        default=1024,
        help="test sequences per length (default 1024)",
    )
    parser.add_argument(
        "--model",
        choices=["ntm", "lstm"],
        default="ntm",
        help=(
            "the NTM (default) or the chapter's LSTM baseline (one layer of 128"
            " units)"
        ),
    )
    parser.add_argument(
        "--lr",
        type=float,
        default=RECIPE["lr"],
        help="Adam's learning rate (default %(default)g)",
    )
    parser.add_argument(
        "--lr-drop",
        type=float,
        default=RECIPE["lr_drop"],
        help="factor of the learning rate once validation is below 1 bit"
        " (%(default)g; 1 keeps it constant)",
    )
    parser.add_argument(
        "--zero-vectors",
        type=float,
        default=RECIPE["zero_vectors"],
        help="probability of an all-zero training vector besides chance"
        " (%(default)g)",
    )
    parser.add_argument(
        "--curriculum",
        type=int,
        default=RECIPE["curriculum"],
        help="steps over which the longest training length grows to 20"
        " (%(default)d)",
    )
    parser.add_argument(
        "--validation",
        action="store_true",
        help="print the tables of the validation sequences, drawn apart from the"
        " test ones (both are evaluated and saved)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="seeds trained at a time, each in its own process on one thread (1)",
    )
    parser.add_argument(
        "--json", metavar="PATH", help="write the results of both sets to PATH"
    )
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.jobs < 1:
        parser.error("--seeds and --jobs must be >= 1")
    recipe = {"lr": args.lr, "lr_drop": args.lr_drop}
    if args.zero_vectors:
        recipe["zero_vectors"] = args.zero_vectors
    if args.curriculum:
        recipe["curriculum"] = args.curriculum
    sequences = "validation" if args.validation else "test"
    # as in the chapter: the same seed then gives the same run on any machine
    torch.set_num_threads(1)
    work = partial(
        run_seed,
        steps=args.steps,
        n_eval=args.eval_sequences,
        kind=args.model,
        eval_seeds=(TEST_SEED, VALIDATION_SEED),
        **recipe,
    )
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    if args.jobs == 1:
        outcomes = [work(seed) for seed in seeds]
    else:  # one process per seed, each on one thread: the same runs as one by one
        with ProcessPoolExecutor(
            args.jobs, initializer=torch.set_num_threads, initargs=(1,)
        ) as pool:
            outcomes = list(pool.map(work, seeds))
    both = {seed: outcome[0] for seed, outcome in zip(seeds, outcomes, strict=True)}
    seconds = {
        seed: outcome[1] for seed, outcome in zip(seeds, outcomes, strict=True)
    }
    measures = {seed: m[1 if args.validation else 0] for seed, m in both.items()}
    results = {seed: m["bits"] for seed, m in measures.items()}
    flawed = {
        seed: {n: 100 * (1 - share) for n, share in m["perfect"].items()}
        for seed, m in measures.items()
    }
    met = [s for s, r in results.items() if met_target(r)]
    print(
        f"\n{args.model.upper()} copy task, wrong bits per sequence"
        f" ({args.eval_sequences} {sequences} sequences per length), {args.steps}"
        f" steps of batch 32 per seed, learning rate {args.lr:g}"
        + (
            f" (times {args.lr_drop:g} once validation is below 1 bit)"
            if args.lr_drop != 1
            else " throughout"
        )
        + ", all-zero training vectors added with"
        f" probability {args.zero_vectors:g}, curriculum over"
        f" {args.curriculum} steps, {datetime.date.today().isoformat()},"
        f" torch {torch.__version__}, {platform.machine()} with {os.cpu_count()}"
        " cores, one thread:\n"
    )
    print(table(results))
    print(
        f"\npercentage of the {sequences} sequences with at least one wrong bit:\n"
    )
    print(table(flawed, digits=1))
    print(
        f"\nseeds meeting the target (< {SOLVED_BITS} bits at lengths 10 and 20, <"
        f" {LONG_BITS:g} at 40): {len(met)} of {args.seeds}"
        + (f" ({', '.join(map(str, met))})" if met else "")
    )
    print(
        "training seconds per seed: "
        + ", ".join(f"{s}: {t:.0f}" for s, t in seconds.items())
    )
    if args.json:
        results = {
            "model": args.model,
            "steps": args.steps,
            "eval_sequences": args.eval_sequences,
            "recipe": {
                "lr": args.lr,
                "lr_drop": args.lr_drop,
                "zero_vectors": args.zero_vectors,
                "curriculum": args.curriculum,
            },
            "seeds": {
                str(seed): {
                    "test": both[seed][0],
                    "validation": both[seed][1],
                    "seconds": seconds[seed],
                }
                for seed in both
            },
        }
        save(args.json, record("ntm-copy", argv or [], results))


def markdown(data: dict) -> str:
    """The reproducing page's tables from a record written with ``--json``: wrong
    bits per test sequence by seed and length, the share of flawed sequences, and the
    seeds that copy (under 0.1 wrong bits at lengths 10 and 20, under 1 at 40) on
    the test and on the validation sequences."""
    found = data["results"]
    seeds = {int(s): r for s, r in found["seeds"].items()}

    def by_length(values: dict) -> dict[int, float]:
        return {int(n): v for n, v in values.items()}

    bits = {s: by_length(r["test"]["bits"]) for s, r in seeds.items()}
    flawed = {
        s: {n: 100 * (1 - v) for n, v in by_length(r["test"]["perfect"]).items()}
        for s, r in seeds.items()
    }
    copied = {
        part: [s for s, r in seeds.items() if met_target(by_length(r[part]["bits"]))]
        for part in ("test", "validation")
    }
    n = found["eval_sequences"]
    lines = [
        f"Wrong bits per sequence, mean over {n:,} test sequences of each length"
        f" ({found['model'].upper()}, {found['steps']:,} training steps per seed):",
        "",
        table(bits),
        "",
        "Percentage of the test sequences with at least one wrong bit:",
        "",
        table(flawed, digits=1),
        "",
    ]
    for part in ("test", "validation"):
        which = copied[part]
        lines.append(
            f"- Seeds that copy on the {part} sequences (under {SOLVED_BITS} wrong"
            f" bits at lengths 10 and 20, under {LONG_BITS:g} at 40): {len(which)}"
            f" of {len(seeds)}"
            + (f" ({', '.join(map(str, which))})" if which else "")
        )
    times = [r["seconds"] / 60 for r in seeds.values()]
    lines += [
        f"- Training took {min(times):.0f} to {max(times):.0f} minutes per seed."
        if len(times) > 1
        else f"- Training took {times[0]:.0f} minutes.",
        "",
        provenance(data),
    ]
    return "\n".join(lines)
