"""Full-scale pointer network on the travelling salesman problem with 10 cities.

    python -m attnlab.experiments pointer-tsp [--steps 24000] [--hidden 128]
    [--train-size 300000] ...

Generates exact optimal tours (Held-Karp) as labels, trains a
:class:`attnlab.pointer.PointerNet` on them while monitoring the greedy gap on a
validation set of its own (2,000 instances by default), keeps the weights with the
smallest validation gap, and evaluates them on a separate test set (10,000 instances
by default). For every method it prints the mean tour length and the optimality gap
in two ways: the ratio of the means (``mean length / mean optimal length - 1``) and
the mean of the per-instance gaps. The methods: greedy decoding; beam search, both
the beam's most probable tour (what Vinyals et al. report) and its shortest; nearest
neighbour; 2-opt from nearest neighbour, from nearest neighbour started at each of
``--beam`` cities (the best of as many candidates as the beam has), and from the
network's greedy tours, each with a 95% confidence interval of the mean gap over the
test instances (Student's t). ``--json PATH`` saves the results with the command,
date and machine (:mod:`attnlab.experiments.record`), from which :func:`markdown`
makes the reproducing page's table. With the default settings the run takes about 13
minutes on an otherwise idle 2-core CPU.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from attnlab.experiments.record import provenance, record, save
from attnlab.metrics import mean_interval
from attnlab.pointer import PointerNet
from attnlab.progress import progress
from attnlab.tasks import (
    nearest_neighbour_tour,
    square_symmetry,
    tour_length,
    tsp_data,
    two_opt,
    two_opt_from_starts,
)
from attnlab.train import seed_everything, train


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m attnlab.experiments pointer-tsp",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--cities", type=int, default=10)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--steps", type=int, default=24000)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument(
        "--train-size",
        type=int,
        default=300_000,
        help="instances with optimal labels",
    )
    parser.add_argument("--val-size", type=int, default=2_000)
    parser.add_argument("--test-size", type=int, default=10_000)
    parser.add_argument(
        "--beam", type=int, default=10, help="beam width (0: no beam search)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--save",
        type=str,
        default=None,
        help="write the trained weights to this file",
    )
    parser.add_argument("--json", metavar="PATH", help="write the results to PATH")
    return parser.parse_args(argv)


def mean_gap(lengths: np.ndarray, optimal: np.ndarray) -> dict[str, float]:
    """Mean tour length, gap of the means, and the mean per-instance gap with its
    95% confidence interval (:func:`attnlab.metrics.mean_interval`), as fractions."""
    mean, low, high = mean_interval(lengths / optimal - 1)
    return {
        "mean_length": float(lengths.mean()),
        "gap_of_means": float(lengths.mean() / optimal.mean() - 1),
        "mean_gap": mean,
        "low": low,
        "high": high,
    }


def markdown(data: dict) -> str:
    """The reproducing page's table from a record written with ``--json``."""
    found = data["results"]
    lines = [
        f"TSP with {found['cities']} cities, {found['test_size']:,} test instances;"
        f" {found['steps']:,} training steps, the weights of step"
        f" {found['best_step']:,} (smallest greedy gap on {found['val_size']:,}"
        " validation instances):",
        "",
        "| method | mean length | gap of the means | mean gap | 95% interval |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, row in found["methods"].items():
        lines.append(
            f"| {name} | {row['mean_length']:.4f} | {row['gap_of_means']:.2%} |"
            f" {row['mean_gap']:.2%} | {row['low']:.2%} to {row['high']:.2%} |"
        )
    took = f"The run took {found['seconds'] / 60:.0f} minutes."
    return "\n".join([*lines, "", took, "", provenance(data)])


def labelled(
    count: int, n: int, generator: torch.Generator, desc: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` uniform instances with optimal tours, generated in blocks under a
    progress bar."""
    block = 10_000
    points, tours = [], []
    with progress(count, desc) as bar:
        for start in range(0, count, block):
            p, t = tsp_data(min(block, count - start), n, generator)
            points.append(p)
            tours.append(t)
            bar.update(len(p))
    return torch.cat(points), torch.cat(tours)


def main(argv: list[str]) -> None:
    args = parse(argv)
    torch.set_num_threads(1)  # as in the chapters: the same run on any machine
    generator = seed_everything(args.seed)
    start = time.perf_counter()
    train_points, train_tours = labelled(
        args.train_size, args.cities, generator, "optimal training tours"
    )
    test_points, test_tours = labelled(
        args.test_size,
        args.cities,
        torch.Generator().manual_seed(args.seed + 1),
        "optimal test tours",
    )
    val_points, val_tours = labelled(
        args.val_size,
        args.cities,
        torch.Generator().manual_seed(args.seed + 2),
        "optimal validation tours",
    )
    print(
        f"labels: {args.train_size + args.test_size + args.val_size} instances in"
        f" {time.perf_counter() - start:.0f} s",
        flush=True,
    )
    test_optimal = tour_length(test_points, test_tours)
    val_optimal = tour_length(val_points, val_tours).mean().item()

    def next_batch(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        index = torch.randint(
            0, args.train_size, (args.batch_size,), generator=generator
        )
        which = torch.randint(0, 8, (args.batch_size,), generator=generator)
        return square_symmetry(train_points[index], which), train_tours[index]

    def evaluate(model: PointerNet) -> dict[str, float]:
        greedy = tour_length(val_points, model.greedy(val_points).indices)
        return {"greedy_gap": greedy.mean().item() / val_optimal - 1}

    model = PointerNet(2, args.hidden)
    history = train(
        model,
        next_batch,
        lambda m, batch: m.loss(*batch),
        steps=args.steps,
        batch_size=args.batch_size,
        lr=args.lr,
        lr_factor=lambda step: (
            1.0
            if step < 0.7 * args.steps
            else 0.1
            if step < 0.9 * args.steps
            else 0.01
        ),
        evaluate=evaluate,
        eval_every=max(1, args.steps // 20),
        desc="training",
        best=("greedy_gap", "min"),
    )
    print(
        f"training: {args.steps} steps in {history.seconds:.0f} s; greedy gap on"
        f" {args.val_size} validation instances by step (the weights of step"
        f" {history.best_step} are kept): "
        + ", ".join(
            f"{int(e['step'])}: {e['greedy_gap']:.2%}" for e in history.evals
        ),
        flush=True,
    )
    if args.save:
        torch.save(model.state_dict(), args.save)

    with torch.no_grad():
        greedy = torch.cat(
            [
                model.greedy(test_points[i : i + 1000]).indices
                for i in range(0, args.test_size, 1000)
            ]
        )
    points = test_points.double().numpy()
    rows = {
        "optimal (Held-Karp)": test_optimal.double().numpy(),
        "pointer network, greedy": tour_length(points, greedy.numpy()),
    }
    if args.beam:
        probable, shortest = [], []
        for i in range(0, args.test_size, 500):
            with torch.no_grad():
                beams, _ = model.beam_search(test_points[i : i + 500], args.beam)
            lengths = np.stack(
                [
                    tour_length(points[i : i + 500], beams[:, w])
                    for w in range(args.beam)
                ],
                axis=1,
            )
            probable.append(lengths[:, 0])  # the beam is sorted, most probable first
            shortest.append(lengths.min(axis=1))
        rows[f"pointer network, beam {args.beam} (most probable)"] = np.concatenate(
            probable
        )
        rows[f"pointer network, beam {args.beam} (shortest)"] = np.concatenate(
            shortest
        )
    nearest = nearest_neighbour_tour(points)
    rows["nearest neighbour"] = tour_length(points, nearest)
    rows["2-opt (from nearest neighbour)"] = tour_length(
        points, two_opt(points, nearest)
    )
    starts = max(args.beam, 1)
    rows[f"2-opt (best of {starts} starts)"] = tour_length(
        points, two_opt_from_starts(points, starts)
    )
    rows["2-opt (from the greedy tours)"] = tour_length(
        points, two_opt(points, greedy.numpy())
    )
    optimal = rows["optimal (Held-Karp)"]
    methods = {name: mean_gap(lengths, optimal) for name, lengths in rows.items()}
    print(f"\nTSP with {args.cities} cities, {args.test_size} test instances")
    print(
        f"{'method':<40} {'mean length':>11} {'gap of means':>12} {'mean gap':>8}"
        "  95% interval"
    )
    for name, row in methods.items():
        print(
            f"{name:<40} {row['mean_length']:11.4f} {row['gap_of_means']:12.2%}"
            f" {row['mean_gap']:8.2%}  {row['low']:.2%} to {row['high']:.2%}"
        )
    seconds = time.perf_counter() - start
    print(f"total time {seconds:.0f} s")
    if args.json:
        results = {
            **{k: getattr(args, k) for k in ("cities", "hidden", "steps", "seed")},
            **{k: getattr(args, k) for k in ("train_size", "val_size", "test_size")},
            "best_step": history.best_step,
            "seconds": seconds,
            "methods": methods,
        }
        save(args.json, record("pointer-tsp", argv, results))
