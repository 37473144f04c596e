"""Execute the chapters that train, in full, under conditions that change their runs,
and tabulate which pass: `make robust` (`make robust CHAPTERS="09 10"` for a subset).

A condition is a set of environment variables for the kernel: another seed offset
(``ATTNLAB_SEED_OFFSET``), torch's non-vectorised CPU kernels
(``ATEN_CPU_CAPABILITY=default``, which round differently: a stand-in for another
CPU), or no thread setting at all (a student's "Run all" on a 2-core runtime). Every
check is strict (``ATTNLAB_STRICT=1``). Two notebooks run at a time; each is run to
its end with errors allowed, so that the table names the first failing cell and
counts the others.

    python scripts/robust.py --out _build/robust --table book/robustness_table.md \\
        notebooks/03_encoder_decoder.ipynb notebooks/10_neural_turing_machines.ipynb

Each run is recorded in ``--out``/runs/; ``results.json`` and ``table.md`` there hold
every recorded run, so that conditions run one at a time add up (``--fresh`` forgets
the earlier ones), and the same table goes to ``--table`` (the reproducing page
includes it), naming the conditions not run yet.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient

TIMEOUT = 900  # seconds per cell, as in _config.yml
ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted(
    (ROOT / "notebooks").glob("[01]*_*.ipynb")
)  # the numbered chapters

# name -> environment changes (None removes the variable)
CONDITIONS: dict[str, dict[str, str | None]] = {
    "offset 1, one thread": {"ATTNLAB_SEED_OFFSET": "1", "OMP_NUM_THREADS": "1"},
    "offset 2, one thread": {"ATTNLAB_SEED_OFFSET": "2", "OMP_NUM_THREADS": "1"},
    "default kernels, one thread": {
        "ATTNLAB_SEED_OFFSET": "0",
        "OMP_NUM_THREADS": "1",
        "ATEN_CPU_CAPABILITY": "default",
    },
    "no thread setting": {
        "ATTNLAB_SEED_OFFSET": "0",
        "OMP_NUM_THREADS": None,
        "MKL_NUM_THREADS": None,
    },
}


@dataclass
class Outcome:
    notebook: str
    condition: str
    passed: bool
    seconds: float
    failure: str  # the first failing cell's error, "" when it passed
    failing_cells: int
    # the commit the run executed ("+changes" when the tree differed), and its date
    commit: str = ""
    date: str = ""


def condition_env(changes: dict[str, str | None]) -> dict[str, str]:
    """This process's environment with ``changes`` applied, every check strict."""
    env = {**os.environ, "ATTNLAB_STRICT": "1", "ATTNLAB_PROGRESS": "lines"}
    env.pop("ATTNLAB_QUICK", None)
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def first_error(notebook: nbformat.NotebookNode) -> tuple[str, int]:
    """The first error output of an executed notebook (cell index, error name and the
    failing line), and how many cells failed."""
    failures = []
    for index, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                value = output.get("evalue", "").strip().splitlines()
                text = f"cell {index}: {output.get('ename')}: {value[0] if value else ''}"
                failures.append(text[:300])
                break
    return (failures[0] if failures else ""), len(failures)


def run_one(path: Path, condition: str) -> Outcome:
    """Execute one notebook under one condition (called in a child process, whose
    environment is the condition's)."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=TIMEOUT,
        allow_errors=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    try:
        client.execute()
        failure, count = first_error(notebook)
    except Exception as error:  # noqa: BLE001 -- a dead kernel or a time-out
        failure, count = f"{type(error).__name__}: {str(error)[:300]}", 1
    return Outcome(
        path.name,
        condition,
        count == 0,
        time.perf_counter() - start,
        failure,
        count,
        commit(),
        time.strftime("%Y-%m-%d"),
    )


def run_in_child(path: Path, condition: str, out: Path) -> Outcome:
    """Run :func:`run_one` in a fresh Python process with the condition's
    environment, so that torch reads it at import."""
    result = out / "runs" / f"{path.stem}--{condition.replace(' ', '_')}.json"
    result.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, __file__, "--one", str(path), condition, str(result)]
    start = time.perf_counter()
    process = subprocess.run(
        command,
        cwd=ROOT,
        env=condition_env(CONDITIONS[condition]),
        capture_output=True,
        text=True,
    )
    if process.returncode != 0 or not result.exists():
        tail = (process.stderr or process.stdout).strip().splitlines()[-3:]
        return Outcome(
            path.name,
            condition,
            False,
            time.perf_counter() - start,
            "the runner failed: " + " | ".join(tail),
            1,
            commit(),
            time.strftime("%Y-%m-%d"),
        )
    outcome = Outcome(**json.loads(result.read_text()))
    mark = "passed" if outcome.passed else f"FAILED ({outcome.failure})"
    print(f"{path.name} [{condition}]: {mark}, {outcome.seconds:.0f} s", flush=True)
    return outcome


def commit() -> str:
    """The checked-out commit, with '+changes' when the tree differs from it."""

    def git(*args: str) -> str:
        run = subprocess.run(
            ["git", *args], capture_output=True, text=True, check=True
        )
        return run.stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def provenance(outcomes: list[Outcome], conditions: list[str]) -> str:
    """Which commit and date each condition's runs executed; the chapters are named
    where a condition's runs come from more than one commit."""
    parts = []
    for condition in conditions:
        runs = [o for o in outcomes if o.condition == condition]
        keys = sorted({(o.commit or "unknown", o.date or "undated") for o in runs})
        if len(keys) == 1:
            parts.append(f"{condition}: {keys[0][0]} ({keys[0][1]})")
            continue
        named = []
        for key in keys:
            chapters = sorted(
                o.notebook[:2] for o in runs if (o.commit, o.date) == key
            )
            named.append(f"{key[0]} ({key[1]}; chapters {', '.join(chapters)})")
        parts.append(f"{condition}: {', '.join(named)}")
    return "; ".join(parts)


def table(outcomes: list[Outcome], conditions: list[str], header: dict) -> str:
    """A Markdown table: one row per notebook, one column per condition."""
    missing = [c for c in CONDITIONS if c not in conditions]
    lines = [
        f"Torch {header['torch']}, {header['machine']};"
        f" {header['workers']} notebooks at a time. Commit and date of the runs,"
        f" by condition: {provenance(outcomes, conditions)}."
        + (f" Not run yet: {'; '.join(missing)}." if missing else ""),
        "",
        "| chapter | " + " | ".join(conditions) + " |",
        "| --- | " + " | ".join("---" for _ in conditions) + " |",
    ]
    by_key = {(o.notebook, o.condition): o for o in outcomes}
    for notebook in sorted({o.notebook for o in outcomes}):
        cells = []
        for condition in conditions:
            outcome = by_key.get((notebook, condition))
            if outcome is None:
                cells.append("not run")
            elif outcome.passed:
                cells.append(f"passed, {outcome.seconds:.0f} s")
            else:
                failure = " ".join(outcome.failure.split())[:200].replace("|", "/")
                cells.append(f"**failed**, {outcome.seconds:.0f} s: `{failure}`")
        lines.append(f"| {Path(notebook).stem} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--one":
        path, condition, result = Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
        result.write_text(json.dumps(asdict(run_one(path, condition))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=Path("_build/robust"))
    parser.add_argument(
        "--table",
        type=Path,
        default=None,
        help="also write the table here",
    )
    parser.add_argument(
        "--fresh", action="store_true", help="forget the runs recorded in --out"
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--condition",
        action="append",
        dest="conditions",
        metavar="NAME",
        help="run only this condition (repeatable); one of: "
        + "; ".join(CONDITIONS),
    )
    args = parser.parse_args()
    args.conditions = args.conditions or list(CONDITIONS)
    unknown = [c for c in args.conditions if c not in CONDITIONS]
    if unknown:
        parser.error(f"unknown condition(s) {unknown}; known: {list(CONDITIONS)}")
    if args.workers < 1:
        parser.error(f"--workers must be at least 1, got {args.workers}")
    if args.fresh and (args.out / "runs").exists():
        shutil.rmtree(args.out / "runs")
    args.out.mkdir(parents=True, exist_ok=True)
    # the longest chapters first, so that both workers stay busy to the end
    jobs = [
        (p, c) for p in sorted(args.notebooks, reverse=True) for c in args.conditions
    ]
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        this_run = list(pool.map(lambda job: run_in_child(*job, args.out), jobs))
    # every run recorded in --out: conditions run one at a time add up to the matrix
    outcomes = [
        Outcome(**json.loads(path.read_text()))
        for path in sorted((args.out / "runs").glob("*.json"))
    ]
    import torch

    header = {
        "commit": commit(),
        "date": time.strftime("%Y-%m-%d"),
        "torch": torch.__version__,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "workers": args.workers,
    }
    (args.out / "results.json").write_text(
        json.dumps({**header, "outcomes": [asdict(o) for o in outcomes]}, indent=1)
    )
    conditions = [c for c in CONDITIONS if any(o.condition == c for o in outcomes)]
    text = table(outcomes, conditions, header)
    (args.out / "table.md").write_text(text)
    if args.table is not None:
        args.table.write_text(text)
    print(text)
    failed = [o for o in this_run if not o.passed]
    print(f"{len(this_run) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
