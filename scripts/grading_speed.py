"""Seconds to grade a class one submission at a time and with several workers.

Writes an nbgrader course for one chapter, releases it, hands in N generated
submissions (the worked solutions, the untouched notebook and the typical wrong answers
of tests/wrong_answers/, in turn), and grades them with ``python -m attnlab.grading``
twice, each in its own copy of the course: serially (``--workers 1``) and with
``--workers W``. Prints the wall seconds of each and writes them to a JSON file with
the number of submissions, the chapter, the machine's CPU count and the date.

    python scripts/grading_speed.py [--chapter notebooks/01_context_sensitive_memory.ipynb]
        [--submissions 40] [--workers 2] [--out _build/grading_speed.json]
"""

from __future__ import annotations

import argparse
import copy
import datetime
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from attnlab.teaching.release import (
    exercises,
    solution_code,
    student_version,
    write_course,
)

ROOT = Path(__file__).resolve().parents[1]


def wrong_answers() -> dict[str, str]:
    """The typical wrong answers of tests/wrong_answers/, by exercise label."""
    sys.path.insert(0, str(ROOT))
    import importlib
    import pkgutil

    import tests.wrong_answers as package

    answers: dict[str, str] = {}
    for module in pkgutil.iter_modules(package.__path__):
        answers |= importlib.import_module(
            f"tests.wrong_answers.{module.name}"
        ).WRONG
    return answers


def submissions(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """Solved, untouched and wrong: the kinds of submission handed in, in turn."""
    untouched = student_version(nb)
    solved = copy.deepcopy(untouched)
    for e in exercises(nb):
        if e.kind == "code":
            solved.cells[e.answer].source = solution_code(nb.cells[e.answer].source)
    wrong, answers = copy.deepcopy(solved), wrong_answers()
    for e in exercises(nb):
        if e.label in answers:
            wrong.cells[e.answer].source = answers[e.label]
    return [solved, untouched, wrong]


def run(*args: str, cwd: Path) -> float:
    """Run a command with this environment's tools on the PATH; returns its wall
    seconds."""
    tools = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"}
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--chapter",
        type=Path,
        default=ROOT / "notebooks" / "01_context_sensitive_memory.ipynb",
    )
    parser.add_argument("--submissions", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--out", type=Path, default=ROOT / "_build" / "grading_speed.json"
    )
    args = parser.parse_args(argv)
    chapter = args.chapter.stem
    with tempfile.TemporaryDirectory(prefix="grading-speed-") as folder:
        course = Path(folder) / "course"
        write_course([args.chapter], course)
        run(
            str(Path(sys.executable).parent / "nbgrader"),
            "generate_assignment",
            chapter,
            "--force",
            cwd=course,
        )
        kinds = submissions(nbformat.read(args.chapter, as_version=4))
        for number in range(args.submissions):
            path = (
                course
                / "submitted"
                / f"s{number:03d}"
                / chapter
                / f"{chapter}.ipynb"
            )
            path.parent.mkdir(parents=True)
            nbformat.write(kinds[number % len(kinds)], path)
        seconds = {}
        for workers in (1, args.workers):
            copied = Path(folder) / f"workers-{workers}"
            shutil.copytree(course, copied)
            seconds[workers] = run(
                sys.executable,
                "-m",
                "attnlab.teaching.grading",
                str(copied),
                chapter,
                "--workers",
                str(workers),
                cwd=ROOT,
            )
            print(f"{workers} worker(s): {seconds[workers]:.1f} s")
        same = filecmp.cmp(
            Path(folder) / "workers-1" / "grades.csv",
            Path(folder) / f"workers-{args.workers}" / "grades.csv",
            shallow=False,
        )
    result = {
        "chapter": chapter,
        "submissions": args.submissions,
        "serial_seconds": round(seconds[1], 1),
        "workers": args.workers,
        "parallel_seconds": round(seconds[args.workers], 1),
        "same_csv": same,
        "cpu_count": os.cpu_count(),
        "date": datetime.date.today().isoformat(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result), f"written to {args.out}")


if __name__ == "__main__":
    main()
