"""The shared command of a chapter's experiment over seeds: train the chapter's
runs once per seed, write the record, and say whether it bears out the chapter.

An experiment module defines ``SETTINGS`` (the chapter's budget, stored in the
record), ``run_seed(seed) -> dict`` (every measure of one seed's runs: the
chapter's own runs, with the chapter's own seeds, which this command shifts by
``seed`` through ``ATTNLAB_SEED_OFFSET``, exactly as the robustness runs shift the
chapter; seed 0 is the chapter's run, and every random draw, the test sentences
included, changes with the seed) and
``conclusions(results) -> dict[str, bool]`` (each statement the chapter makes over
seeds, and whether the record supports it); its ``main`` calls :func:`main` here.
The command is resumable: a record left by an interrupted run with the same
settings keeps its seeds, and only the missing ones are trained. It exits with an
error when the record contradicts a conclusion, so that a re-made record cannot
silently disagree with the chapter.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from attnlab.experiments.record import load, provenance, record, save
from attnlab.seedband import SEEDS, Band, band


def _timed(run_seed: Callable[[int], dict[str, Any]], seed: int) -> dict[str, Any]:
    """Run one seed as the chapter runs under ``ATTNLAB_SEED_OFFSET = seed``."""
    start = time.perf_counter()
    before = os.environ.get("ATTNLAB_SEED_OFFSET")
    os.environ["ATTNLAB_SEED_OFFSET"] = str(seed)
    try:
        measures = run_seed(seed)
    finally:
        if before is None:
            del os.environ["ATTNLAB_SEED_OFFSET"]
        else:
            os.environ["ATTNLAB_SEED_OFFSET"] = before
    return {
        "seed": seed,
        "seconds": round(time.perf_counter() - start, 1),
        **measures,
    }


def _kept_runs(path: Path, experiment: str, settings: Mapping) -> list[dict]:
    """The runs of an earlier record at ``path`` made with the same settings."""
    if not path.is_file():
        return []
    try:
        data = load(path)
    except ValueError:
        return []
    results = data["results"]
    if data["experiment"] != experiment or results.get("settings") != settings:
        return []
    return list(results["runs"])


def main(
    experiment: str,
    argv: list[str],
    *,
    description: str,
    settings: dict[str, Any],
    run_seed: Callable[[int], dict[str, Any]],
    conclusions: Callable[[dict[str, Any]], dict[str, bool]],
    markdown: Callable[[dict[str, Any]], str],
    seeds: int = len(SEEDS),
) -> dict[str, Any]:
    """Parse ``--seeds`` (default ``seeds``), ``--jobs`` and ``--json``, train the
    missing seeds, save the record after each one, print its tables and check its
    conclusions."""
    parser = argparse.ArgumentParser(
        prog=f"python -m attnlab.experiments {experiment}", description=description
    )
    parser.add_argument(
        "--seeds",
        type=int,
        default=seeds,
        help="train seeds 0 .. N-1 (default %(default)s)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="seeds trained at a time, each in its own process on one thread (1)",
    )
    parser.add_argument(
        "--json",
        default=f"results/{experiment}.json",
        help="the record to write, and to resume from (%(default)s)",
    )
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.jobs < 1:
        parser.error("--seeds and --jobs must be >= 1")
    path = Path(args.json)
    settings = {
        k: list(v) if isinstance(v, tuple) else v for k, v in settings.items()
    }
    kept = _kept_runs(path, experiment, settings)
    runs = {run["seed"]: run for run in kept if run["seed"] < args.seeds}
    missing = [seed for seed in range(args.seeds) if seed not in runs]
    if runs:
        print(f"kept from {path}: seeds {sorted(runs)}", file=sys.stderr)
    torch.set_num_threads(1)

    def current() -> dict[str, Any]:
        ordered = [runs[seed] for seed in sorted(runs)]
        return record(experiment, argv, {"settings": settings, "runs": ordered})

    def saved(run: dict[str, Any]) -> dict[str, Any]:
        runs[run["seed"]] = run
        data = current()
        save(path, data)
        return data

    data = None
    if args.jobs == 1:
        for seed in missing:
            data = saved(_timed(run_seed, seed))
    else:
        with ProcessPoolExecutor(
            args.jobs, initializer=torch.set_num_threads, initargs=(1,)
        ) as pool:
            futures = [pool.submit(partial(_timed, run_seed), s) for s in missing]
            for future in as_completed(futures):
                data = saved(future.result())
    if data is None:  # every seed was kept: the record stays as it was written
        data = load(path) if len(runs) == len(kept) else current()
    print(markdown(data))
    failed = [
        claim for claim, holds in conclusions(data["results"]).items() if not holds
    ]
    if failed:
        sys.exit(
            "the record contradicts what the chapter states over seeds:\n- "
            + "\n- ".join(failed)
        )
    return data


def command(module: ModuleType, argv: list[str]) -> dict[str, Any]:
    """:func:`main` for an experiment module: its name, the first paragraph of its
    docstring, its ``SETTINGS``, ``run_seed``, ``conclusions`` and ``markdown``, and
    its ``SEED_COUNT`` where it declares fewer seeds than five."""
    return main(
        module.__name__.rsplit(".", 1)[-1].replace("_", "-"),
        argv,
        description=(module.__doc__ or "").split("\n\n")[0],
        settings=module.SETTINGS,
        run_seed=module.run_seed,
        conclusions=module.conclusions,
        markdown=module.markdown,
        seeds=getattr(module, "SEED_COUNT", len(SEEDS)),
    )


def bucket_table(
    runs: list[dict[str, Any]],
    title: str,
    rows: dict[str, tuple[str, ...]],
    buckets: list[str],
    digits: int = 2,
) -> list[str]:
    """A markdown table of measures by bucket of source lengths: one row per
    ``{label: keys}`` (the keys of a run before the bucket), each cell the mean and
    range over the seeds."""
    seeds = ", ".join(str(run["seed"]) for run in runs)
    lines = [
        f"{title}, mean (lowest to highest) over seeds {seeds}.\n",
        "| | " + " | ".join(buckets) + " |",
        "|---" * (len(buckets) + 1) + "|",
    ]
    for label, keys in rows.items():
        cells = [band(runs, *keys, b).text(digits) for b in buckets]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def band_table(
    corner: str,
    columns: Sequence[str],
    rows: Mapping[Any, Sequence[Band]],
    digits: int = 3,
) -> list[str]:
    """A markdown table of bands: one row per ``{label: bands}``, one cell per
    column, each the mean and range over the seeds."""
    lines = [
        f"| {corner} | " + " | ".join(columns) + " |",
        "|---" * (len(columns) + 1) + "|",
    ]
    for label, bands in rows.items():
        lines.append(
            f"| {label} | " + " | ".join(b.text(digits) for b in bands) + " |"
        )
    return lines


def page(
    data: dict[str, Any],
    conclusions: Callable[[dict[str, Any]], dict[str, bool]],
    budget: str,
    lines: Sequence[str],
) -> str:
    """A record's tables for the reproducing page: the seeds and ``budget`` (the
    chapter's training, in words), the table ``lines``, then the :func:`footer`."""
    seeds = ", ".join(str(run["seed"]) for run in data["results"]["runs"])
    return (
        f"Seeds {seeds}; {budget}.\n\n"
        + "\n".join(lines)
        + footer(data, conclusions)
    )


def footer(
    data: dict[str, Any], conclusions: Callable[[dict[str, Any]], dict[str, bool]]
) -> str:
    """The end of a record's tables: whether each conclusion holds, how long each
    seed took, and where."""
    verdicts = [
        f"- {'holds' if ok else 'does not hold'}: {claim}"
        for claim, ok in conclusions(data["results"]).items()
    ]
    return "\n\n" + "\n".join(verdicts) + "\n\n" + seconds_line(data)


def seconds_line(data: dict[str, Any]) -> str:
    """How long each seed took, and where: the last lines of a record's tables."""
    seconds = ", ".join(
        f"seed {run['seed']} {run['seconds']:.0f} s"
        for run in data["results"]["runs"]
    )
    return f"Training time per seed (one thread each): {seconds}.\n\n" + provenance(
        data
    )
