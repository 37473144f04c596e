"""``python -m attnlab.experiments pointer-tsp``: chapter 12's pointer network on
the travelling salesman problem with 10 cities, trained ten times as long, over
seeds.

Seed ``s`` (every seed below shifted by ``ATTNLAB_SEED_OFFSET = s``, set by the
command) labels :data:`SETTINGS` ``train_size`` instances with their optimal tours
(Held-Karp), trains a :class:`attnlab.pointer.PointerNet` on them while measuring
its greedy gap on a validation set of its own, keeps the weights with the smallest
validation gap, and measures them on a test set of new instances. For every method
it records the mean tour length and the optimality gap in two ways: the ratio of the
means (``mean length / mean optimal length - 1``) and the mean of the per-instance
gaps, with a 95% confidence interval of that mean over the test instances
(Student's t). The methods: greedy decoding; beam search, both the beam's most
probable tour (what Vinyals et al. report) and its shortest; nearest neighbour;
2-opt from nearest neighbour, from nearest neighbour started at as many cities as
the beam is wide (the best of as many candidates as the beam has), and from the
network's greedy tours. :func:`conclusions` lists what the chapter states over
seeds.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import torch

from attnlab.experiments import over_seeds
from attnlab.metrics import mean_interval
from attnlab.pointer import PointerNet
from attnlab.progress import progress
from attnlab.runmode import offset_seed, seed_offset
from attnlab.seedband import band
from attnlab.tasks import (
    nearest_neighbour_tour,
    square_symmetry,
    tour_length,
    tsp_data,
    two_opt,
    two_opt_from_starts,
)
from attnlab.train import seed_everything, train

SETTINGS: dict[str, Any] = {
    "cities": 10,
    "hidden": 128,
    "steps": 24_000,
    "batch_size": 128,
    "lr": 1e-3,
    "train_size": 300_000,
    "val_size": 2_000,
    "test_size": 10_000,
    "beam": 10,
}
GREEDY = "pointer network, greedy"


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


def run_seed(seed: int) -> dict[str, Any]:
    """One seed's labels, training and test (every seed shifted by
    ``ATTNLAB_SEED_OFFSET = seed``, set by the command): the step whose weights are
    kept, and every method's gaps on the test instances."""
    assert seed_offset() == seed, (seed_offset(), seed)
    n, size, beam = SETTINGS["cities"], SETTINGS["batch_size"], SETTINGS["beam"]
    steps, train_size = SETTINGS["steps"], SETTINGS["train_size"]
    generator = seed_everything(0)
    train_points, train_tours = labelled(
        train_size, n, generator, "optimal training tours"
    )
    test_points, test_tours = labelled(
        SETTINGS["test_size"],
        n,
        torch.Generator().manual_seed(offset_seed(1)),
        "optimal test tours",
    )
    val_points, val_tours = labelled(
        SETTINGS["val_size"],
        n,
        torch.Generator().manual_seed(offset_seed(2)),
        "optimal validation tours",
    )
    val_optimal = tour_length(val_points, val_tours).mean().item()

    def next_batch(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        index = torch.randint(0, train_size, (size,), generator=generator)
        which = torch.randint(0, 8, (size,), generator=generator)
        return square_symmetry(train_points[index], which), train_tours[index]

    def evaluate(model: PointerNet) -> dict[str, float]:
        greedy = tour_length(val_points, model.greedy(val_points).indices)
        return {"greedy_gap": greedy.mean().item() / val_optimal - 1}

    model = PointerNet(2, SETTINGS["hidden"])
    history = train(
        model,
        next_batch,
        lambda m, batch: m.loss(*batch),
        steps=steps,
        batch_size=size,
        lr=SETTINGS["lr"],
        lr_factor=lambda step: (
            1.0 if step < 0.7 * steps else 0.1 if step < 0.9 * steps else 0.01
        ),
        evaluate=evaluate,
        eval_every=max(1, steps // 20),
        desc="training",
        best=("greedy_gap", "min"),
    )
    rows = test_lengths(model, test_points, test_tours, beam)
    optimal = rows["optimal (Held-Karp)"]
    return {
        "best_step": history.best_step,
        "methods": {
            name: mean_gap(lengths, optimal) for name, lengths in rows.items()
        },
    }


def test_lengths(
    model: PointerNet, points: torch.Tensor, tours: torch.Tensor, beam: int
) -> dict[str, np.ndarray]:
    """Every method's tour lengths on the test instances ``points`` (count, n, 2),
    whose optimal tours are ``tours``; no beam search with ``beam = 0``."""
    count = len(points)
    with torch.no_grad():
        greedy = torch.cat(
            [
                model.greedy(points[i : i + 1000]).indices
                for i in range(0, count, 1000)
            ]
        )
    xy = points.double().numpy()
    rows = {
        "optimal (Held-Karp)": tour_length(points, tours).double().numpy(),
        GREEDY: tour_length(xy, greedy.numpy()),
    }
    if beam:
        probable, shortest = [], []
        for i in range(0, count, 500):
            with torch.no_grad():
                beams, _ = model.beam_search(points[i : i + 500], beam)
            lengths = np.stack(
                [tour_length(xy[i : i + 500], beams[:, w]) for w in range(beam)],
                axis=1,
            )
            probable.append(lengths[:, 0])  # the beam is sorted, most probable first
            shortest.append(lengths.min(axis=1))
        rows[f"pointer network, beam {beam} (most probable)"] = np.concatenate(
            probable
        )
        rows[f"pointer network, beam {beam} (shortest)"] = np.concatenate(shortest)
    nearest = nearest_neighbour_tour(xy)
    rows["nearest neighbour"] = tour_length(xy, nearest)
    rows["2-opt (from nearest neighbour)"] = tour_length(xy, two_opt(xy, nearest))
    starts = max(beam, 1)
    rows[f"2-opt (best of {starts} starts)"] = tour_length(
        xy, two_opt_from_starts(xy, starts)
    )
    rows["2-opt (from the greedy tours)"] = tour_length(
        xy, two_opt(xy, greedy.numpy())
    )
    return rows


def conclusions(results: dict[str, Any]) -> dict[str, bool]:
    """What chapter 12 states of the long run over seeds."""
    runs, beam = results["runs"], results["settings"]["beam"]

    def gap(method: str, end: str = "mean_gap") -> Any:
        return band(runs, "methods", method, end)

    shortest = f"pointer network, beam {beam} (shortest)"
    return {
        "greedy decoding within 1% of the optimum (the upper end of its 95%"
        " interval), on every seed": gap(GREEDY, "high").high < 0.01,
        f"the shortest tour of a beam of {beam} closer to the optimum than greedy"
        " decoding, the two intervals apart, on every seed": (
            gap(GREEDY, "low") - gap(shortest, "high")
        ).low
        > 0,
        f"2-opt from {beam} starts at least as close to the optimum as the beam's"
        " shortest tour (its mean gap under the upper end of the beam's interval),"
        " on every seed": (
            gap(shortest, "high") - gap(f"2-opt (best of {beam} starts)")
        ).low
        > 0,
    }


def markdown(data: dict[str, Any]) -> str:
    """The reproducing page's table: every method's mean gap, mean and range over
    the seeds, and each seed's mean gap with its 95% interval."""
    found = data["results"]
    runs, settings = found["runs"], found["settings"]
    seeds = [str(run["seed"]) for run in runs]
    kept = ", ".join(f"{run['best_step']:,}" for run in runs)
    lines = [
        f"TSP with {settings['cities']} cities, {settings['test_size']:,} test"
        f" instances per seed; the weights of the step with the smallest greedy gap"
        f" on {settings['val_size']:,} validation instances (step"
        f" {kept} for seeds"
        f" {', '.join(seeds)}). Mean gap over the test instances, in per cent:",
        "",
        "| method | over seeds | "
        + " | ".join(f"seed {s} (95% interval)" for s in seeds)
        + " |",
        "|---" * (len(seeds) + 2) + "|",
    ]
    for name in runs[0]["methods"]:
        cells = [
            f"{row['mean_gap']:.2%} ({row['low']:.2%} to {row['high']:.2%})"
            for row in (run["methods"][name] for run in runs)
        ]
        over = band(runs, "methods", name, "mean_gap")
        lines.append(
            f"| {name} | {over.mean:.2%} ({over.low:.2%} to {over.high:.2%}) | "
            + " | ".join(cells)
            + " |"
        )
    budget = (
        f"{settings['steps']:,} steps of {settings['batch_size']} instances from"
        f" {settings['train_size']:,} labelled ones"
    )
    return over_seeds.page(data, conclusions, budget, lines)


def main(argv: list[str]) -> None:
    over_seeds.command(sys.modules[__name__], argv)
