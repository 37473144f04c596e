"""Homework graded end to end with the real nbgrader, as an instructor would (see book/instructors.md).

For every chapter, in a course folder of its own (so that two chapters are graded at once, each with its own
gradebook): write the nbgrader course from the solution notebook, release it with
`nbgrader generate_assignment` and check that the release is the students' version that `make student` writes;
then submit three notebooks made from that students' version (the worked solutions, the untouched notebook, and
typical wrong answers kept in tests/wrong_answers/), autograde them, export the scores to CSV and check each
submission's score. Prints the score table; exits non-zero on any mismatch.

    python .ci/grade_homework.py [--courses _build/grading] [--jobs 2] [notebooks/01_*.ipynb ...]
"""

from __future__ import annotations

import argparse
import copy
import csv
import importlib
import os
import pkgutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

from attnlab.homework import (
    chapter_notebooks,
    exercises,
    solution_code,
    student_version,
    write_course,
)

ROOT = Path(__file__).resolve().parents[1]
SECONDS_PER_SUBMISSION = 60


def wrong_answers() -> dict[str, str]:
    """Every typical wrong answer kept in tests/wrong_answers/, by exercise label."""
    sys.path.insert(0, str(ROOT))
    import tests.wrong_answers as package

    answers: dict[str, str] = {}
    for module in pkgutil.iter_modules(package.__path__):
        for label, source in importlib.import_module(f"tests.wrong_answers.{module.name}").WRONG.items():
            if label in answers:
                raise SystemExit(f"wrong answer for {label} given twice")
            answers[label] = source
    return answers


def submissions(nb: nbformat.NotebookNode, wrong: dict[str, str]) -> tuple[dict, float, float]:
    """The three submissions of one chapter, its autograded points, and the points the wrong answers lose."""
    untouched = student_version(nb)
    solved = copy.deepcopy(untouched)
    found = exercises(nb)
    for exercise in found:
        solved.cells[exercise.answer].source = (solution_code(nb.cells[exercise.answer].source)
                                                if exercise.kind == "code" else nb.cells[exercise.answer].source)
    mistaken = copy.deepcopy(solved)
    lost = 0.0
    for exercise in found:
        if exercise.label in wrong:
            if exercise.kind != "code":
                raise SystemExit(f"{exercise.label} is a written exercise: wrong answers are for code exercises")
            mistaken.cells[exercise.answer].source = wrong[exercise.label]
            lost += exercise.points
    auto = sum(e.points for e in found if e.kind == "code")
    return {"solution": solved, "untouched": untouched, "wrong": mistaken}, auto, lost


def same_release(released: nbformat.NotebookNode, ours: nbformat.NotebookNode) -> list[str]:
    """Differences between nbgrader's release and the students' version (nbgrader's checksums aside)."""
    problems = []
    if len(released.cells) != len(ours.cells):
        return [f"{len(released.cells)} cells released, {len(ours.cells)} in the students' version"]
    for index, (a, b) in enumerate(zip(released.cells, ours.cells, strict=True)):
        meta_a, meta_b = copy.deepcopy(a.metadata), copy.deepcopy(b.metadata)
        meta_a.get("nbgrader", {}).pop("checksum", None)
        if (a.cell_type, a.source, meta_a) != (b.cell_type, b.source, meta_b):
            problems.append(f"cell {index} differs: {a.source[:50]!r} / {b.source[:50]!r}, {meta_a} / {meta_b}")
    return problems


def nbgrader(*args: str, course: Path) -> None:
    """Run an nbgrader command in the course folder, with this environment's tools on the PATH."""
    tools = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"}
    result = subprocess.run([os.path.join(tools, "nbgrader"), *args], cwd=course, env=env,
                            capture_output=True, text=True)
    if result.returncode != 0:
        print(result.stdout[-4000:], result.stderr[-8000:])
        raise SystemExit(f"nbgrader {' '.join(args)} failed with exit code {result.returncode}")


def grade_chapter(path: Path, course: Path, wrong: dict[str, str]) -> tuple[tuple, dict, list[str]]:
    """Release, submit and autograde one chapter in its own course folder; returns (row, scores, failures)."""
    stem = path.stem
    write_course([path], course)
    nb = nbformat.read(path, as_version=4)
    nbgrader("generate_assignment", stem, "--force", course=course)
    released = nbformat.read(course / "release" / stem / path.name, as_version=4)
    failures = [f"{stem}: {p}" for p in same_release(released, student_version(nb))]
    subs, auto, lost = submissions(nb, wrong)
    if lost == 0:
        failures.append(f"{stem}: tests/wrong_answers/ has no wrong answer for any of its code exercises")
    for student, submission in subs.items():
        folder = course / "submitted" / student / stem
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(submission, folder / path.name)
    start = time.perf_counter()
    nbgrader("autograde", stem, "--force", course=course)
    seconds = (time.perf_counter() - start) / len(subs)
    if seconds > SECONDS_PER_SUBMISSION:
        failures.append(f"{stem}: {seconds:.0f} s per submission, more than {SECONDS_PER_SUBMISSION} s")
    nbgrader("export", "--to", str(course / "grades.csv"), course=course)
    with open(course / "grades.csv") as file:
        scores = {r["student_id"]: float(r["raw_score"]) for r in csv.DictReader(file)}
    return (stem, auto, lost, seconds), scores, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="chapters to grade (default: all)")
    parser.add_argument("--courses", type=Path, default=ROOT / "_build" / "grading",
                        help="folder for the courses, one per chapter")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="chapters graded at once")
    args = parser.parse_args(argv)
    paths = args.notebooks or chapter_notebooks(ROOT / "notebooks")
    courses = args.courses.resolve()
    if courses.exists():
        subprocess.run(["rm", "-rf", str(courses)], check=True)
    wrong = wrong_answers()
    os.environ["OMP_NUM_THREADS"] = "1"  # two chapters at once share the cores; inherited by every kernel
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        graded = list(pool.map(lambda path: grade_chapter(path, courses / path.stem, wrong), paths))
    print(f"{'chapter':34} {'points':>6} {'solution':>8} {'untouched':>9} {'wrong':>5} {'(expected)':>10} "
          f"{'s/submission':>12}")
    failures = []
    for (stem, auto, lost, seconds), scores, chapter_failures in graded:
        failures += chapter_failures
        print(f"{stem:34} {auto:6g} {scores['solution']:8g} {scores['untouched']:9g} {scores['wrong']:5g} "
              f"{auto - lost:10g} {seconds:12.1f}")
        expected = {"solution": auto, "untouched": 0.0, "wrong": auto - lost}
        failures += [f"{stem}: {student} scored {scores[student]:g}, expected {expected[student]:g}"
                     for student in expected if abs(scores[student] - expected[student]) > 1e-9]
    print(f"scores exported by nbgrader to {courses}/<chapter>/grades.csv ({args.jobs} chapters at a time)")
    for failure in failures:
        print("FAILED:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
