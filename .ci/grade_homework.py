"""Homework graded end to end with the real nbgrader, as an instructor would (see book/instructors.md).

For every chapter, in a course folder of its own (so that two chapters are graded at once, each with its own
gradebook): write the nbgrader course from the solution notebook, release it with
`nbgrader generate_assignment` and check that the release is the students' version that `make student` writes;
then submit notebooks made from that students' version and grade them with `python -m attnlab.grading`:

- solution: the worked solutions, each also printing, writing to stderr and warning, saved as Colab saves a copy,
  `Copy of <chapter>.ipynb`, with one check cell turned into markdown and another exercise's grade id renamed (full
  points; the notes say what was found and repaired, and the notebook as handed in is kept under `handed-in/`);
- attacker: the students' notebook as released plus a cell that attacks the others: it copies the release over every
  student's submission, appends to the installed package, zeroes the gradebook, overwrites the feedback pages and
  the CSV, prints the worked solutions from the course's source, and starts processes that outlive its kernel, one of
  them holding the gradebook locked (0 points, and its feedback shows nothing of a worked solution; every other
  student graded as expected, the package unchanged, no process left: each notebook runs in
  attnlab.teaching.sandbox);
- wrong: typical wrong answers kept in tests/wrong_answers/ (loses exactly those exercises' points);
- tampered: the wrong answers, plus a cell that rebinds every check in the notebook and in the package and
  patches the checks' helper, the check cell of a wrong answer deleted, another check cell's points edited, a right
  answer with a syntax error (where one is left that no later check needs) and, in the first chapter given (every
  chapter with --loop-everywhere), an answer that loops forever: the one the fewest later cells call, since each
  call waits for the time-out, asleep so that the chapter graded meanwhile keeps the CPU (gains nothing; loses the
  looping and the broken exercises; the deleted cell is restored, the time-out reported, and the feedback says which
  exercise loops and which has a syntax error). The time-out is the grader's, the same in every chapter, and
  tests/test_class_grading.py times out loops with workers and serially; a loop in every chapter would add a
  time-out's wait to each;
- delegator: the worked solutions, each answer whose check is handed one of its functions (and that no later check
  needs) replaced by one that switches the profiler off and calls the library's own version (loses those exercises,
  noted: the grader reads the answers' code, attnlab.teaching.delegation);
- cheater: the wrong answers plus a cell that makes every comparison in the student's process agree
  (`torch.allclose`, `torch.equal`, `math.isclose`), switches off the delegation detector (`sys.setprofile`) and hides
  every failing cell's traceback (0 points, tampering noted: the grader judges in a process of its own,
  attnlab.teaching.verdicts, and a notebook that replaced what checks use earns nothing for its checks);
- not-a-notebook and empty: a text file and an empty file (could not be graded, with the reason);
- absent: a student of the gradebook who handed nothing in (not submitted).

It checks every status and score, that no submission's grading hangs (over ten minutes: a grading that long waits on
something, ten times the slowest machine's seconds), and that no feedback page shows a hidden test, a worked solution, a
rubric or a path of the grading machine. Prints the table; exits non-zero on any
mismatch.

    python .ci/grade_homework.py [--courses _build/grading] [--jobs 2] [--no-sandbox] [--loop-everywhere]
        [--attacks 01 07] [notebooks/01_*.ipynb ...]

(`--attacks 01 07`: the attacker, tampered, cheater and delegator submissions, which attack the grader and not the
chapter, in chapters 1 and 7 only, as `make grade` and CI run it; the weekly workflow grading.yml grades them in every
chapter.)

(`--no-sandbox` grades as an instructor without bubblewrap would: the attacking submission then succeeds and the
script says how; it really rewrites the installed package and starts processes, so run it only in a throwaway copy.)
"""

from __future__ import annotations

import argparse
import ast
import copy
import html
import importlib
import os
import pkgutil
import re
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat

import attnlab.exercises  # noqa: F401 - registers every check in CHECKS
from attnlab.exercises._checking import CHECKS
from attnlab.teaching.grading import (
    CELL_SECONDS,
    GRADED,
    HANDED_IN,
    NOT_SUBMITTED,
    UNGRADABLE,
    grade,
)
from attnlab.teaching.release import (
    BEGIN,
    END,
    chapter_notebooks,
    check_call_nodes,
    exercises,
    solution_code,
    student_version,
    write_course,
)
from attnlab.teaching.sandbox import DEFAULT_LIMITS

ROOT = Path(__file__).resolve().parents[1]
# a grading this long waits on something: a process the submission left (the attacker's sleeps SLEEP s), a lost
# time-out; ten times the slowest submission seen on a slow machine, so no machine's speed is judged
HANG_SECONDS = 600


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


NOISE = [
    'print("checking my answer")',
    'print("a note to stderr", file=__import__("sys").stderr)',
    '__import__("warnings").warn("a warning from my own code")',
]
TAMPERING = """\
import attnlab.exercises as _exercises
import attnlab.exercises._checking as _checking

for _name in dir(_exercises):
    if _name.startswith("check_"):
        setattr(_exercises, _name, lambda *args, **kwargs: print("Well done"))
        globals()[_name] = getattr(_exercises, _name)
_checking.expect_close = lambda *args, **kwargs: None
_checking.call = lambda fn, name, *args, **kwargs: fn(*args, **kwargs)
"""

# a cell that patches what a check in the student's process would use: comparisons that always agree, the delegation
# detector switched off, a failing check's traceback hidden; the grader's verdicts do not pass through any of it
CHEATS = """\
import math as _math, sys as _sys, torch as _torch
_always = lambda *args, **kwargs: True
_torch.allclose = _torch.equal = _math.isclose = _torch.Tensor.allclose = _torch.Tensor.equal = _always
_sys.setprofile = lambda *args: None
get_ipython().showtraceback = lambda *args, **kwargs: None
"""

# a cell that attacks the other students, the grader and the gradebook (COURSE and CHAPTER filled in): each attack
# is allowed to fail quietly; in the sandbox every one must fail, and every other student is graded as expected
ATTACK = """\
import os as _os, shutil as _shutil, sqlite3 as _sqlite3, subprocess as _subprocess, sys as _sys
from pathlib import Path as _Path
# (the grading machine's path in hex: the feedback's leak check looks for the path itself)
_course, _chapter = _Path(bytes.fromhex({course!r}).decode()), {chapter!r}
_attacks = [
    lambda: [_shutil.copy(_course / "release" / _chapter / f"{{_chapter}}.ipynb", folder / _chapter)
             for folder in (_course / "submitted").iterdir()],
    lambda: open(__import__("attnlab.exercises._checking").exercises._checking.__file__, "a").write(
        "\\nraise SystemExit('the package was rewritten')\\n"),
    lambda: _sqlite3.connect(_course / "gradebook.db").execute("UPDATE grade SET manual_score = 0").connection.commit(),
    lambda: [(page.parent / page.name).write_text("Plagiarism detected") for page in
             (_course / "feedback").glob("*/*/*.html")],
    lambda: (_course / "grades.csv").write_text("everyone,0"),
    lambda: print((_course / "source" / _chapter / f"{{_chapter}}.ipynb").read_text()),
    lambda: print(open("../../../source/" + _chapter + "/" + _chapter + ".ipynb").read()),
    lambda: _subprocess.Popen([_sys.executable, "-c", "import time; time.sleep({sleep})"], start_new_session=True,
                      stdout=_subprocess.DEVNULL, stderr=_subprocess.DEVNULL),
    lambda: _subprocess.Popen([_sys.executable, "-c", "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1]);"
                               " c.execute('BEGIN EXCLUSIVE'); time.sleep({sleep})", str(_course / "gradebook.db")],
                              start_new_session=True,
                      stdout=_subprocess.DEVNULL, stderr=_subprocess.DEVNULL),
]
for _attack in _attacks:
    try:
        _attack()
    except Exception:
        pass
"""
# the answer that loops forever: asleep, so that the chapter graded meanwhile keeps the CPU
LOOP = ["while True:", "    __import__('time').sleep(1)"]
SLEEP = 2147  # the seconds an attacking process sleeps: its mark, looked for once grading is over


def survivors() -> list[str]:
    """Processes still running that an attacking submission started."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if f"time.sleep({SLEEP})" in command and "_attacks" not in command:
            found.append(f"{entry.name}: {command[:80]}")
    return found


def package_files() -> dict[str, bytes]:
    """The installed attnlab's source files, by path, to find one that grading changed."""
    import attnlab

    return {str(p): p.read_bytes() for p in Path(attnlab.__file__).parent.rglob("*.py")}


def with_region(source: str, lines: list[str], replace: bool = False) -> str:
    """A solution cell's code as handed in, with ``lines`` at the start of its answer (or instead of it)."""
    out, inside = [], False
    for line in source.splitlines():
        if line.strip() == BEGIN:
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            out += [indent + extra for extra in lines]
        elif line.strip() == END:
            inside = False
        elif not (inside and replace):
            out.append(line)
    return "\n".join(out)


DELEGATION = """\
import sys as _sys
from {module} import {owner} as _library
def {name}(*args, **kwargs):
    _sys.setprofile(None)  # the delegation detector in this process switched off
    return _library{rest}(*args, **kwargs)
"""


def delegation(nb: nbformat.NotebookNode, exercise) -> str:
    """Code that rebinds the function this exercise's check is handed to one that calls the library's own version
    (the first object its check names), or "" where the check is not handed a function of the answer cell."""
    defined = re.findall(r"^def (\w+)", nb.cells[exercise.answer].source, flags=re.MULTILINE)
    for call in check_call_nodes(nb.cells[exercise.check].source):
        own = CHECKS[call.func.id].exercised
        if call.args and isinstance(call.args[0], ast.Name) and call.args[0].id in defined and own and callable(own[0]):
            owner, *rest = own[0].__qualname__.split(".")
            return DELEGATION.format(module=own[0].__module__, owner=owner, name=call.args[0].id,
                                     rest="".join(f".{part}" for part in rest))
    return ""


# the submissions that attack the grader rather than answer the chapter: the same in every chapter, so CI grades them
# in two chapters (--attacks) and the weekly workflow grading.yml in all
ATTACKERS = ("attacker", "tampered", "cheater", "delegator")


def submissions(nb: nbformat.NotebookNode, wrong: dict[str, str], file_name: str,
                course: Path, loop: bool = True, attacks: bool = True) -> tuple[dict, dict, dict]:
    """The submissions of one chapter (its notebook named ``file_name``, graded in ``course``), the expected
    (status, points, notes) of each student, and what some students' feedback pages must say. With ``loop``, the
    tampered submission has an answer that loops forever; without ``attacks``, none of :data:`ATTACKERS`."""
    untouched = student_version(nb)
    found = exercises(nb)
    code = [e for e in found if e.kind == "code"]
    auto = sum(e.points for e in code)
    solved, noisy = copy.deepcopy(untouched), copy.deepcopy(untouched)  # noisy: right answers that print and warn
    for exercise in found:
        answer = nb.cells[exercise.answer].source
        solved.cells[exercise.answer].source = solution_code(answer) if exercise.kind == "code" else answer
        noisy.cells[exercise.answer].source = with_region(answer, NOISE) if exercise.kind == "code" else answer
    mistaken = copy.deepcopy(solved)
    lost = 0.0
    for exercise in found:
        if exercise.label in wrong:
            if exercise.kind != "code":
                raise SystemExit(f"{exercise.label} is a written exercise: wrong answers are for code exercises")
            mistaken.cells[exercise.answer].source = wrong[exercise.label]
            lost += exercise.points
    tampered = copy.deepcopy(mistaken)
    def later_calls(exercise, checks_only: bool = False) -> int:
        """How many later cells (later check cells) call a function this exercise's answer defines."""
        names = re.findall(r"^def (\w+)", nb.cells[exercise.answer].source, flags=re.MULTILINE)
        later = [c.source for c in nb.cells[exercise.check + 1:] if c.cell_type == "code"]
        later = [source for source in later if "check_" in source or not checks_only]
        return sum(any(re.search(rf"\b{name}\b", source) for name in names) for source in later)

    deleted = next(e for e in code if e.label in wrong)
    right = [e for e in code if e.label not in wrong]
    # an answer that loops forever: one that the fewest later cells call (each call is a time-out), a right one
    # where that ties
    looping = min((e for e in code if e is not deleted), key=lambda e: (later_calls(e), e.label in wrong)) \
        if loop else None
    if looping is not None:
        tampered.cells[looping.answer].source = with_region(nb.cells[looping.answer].source, LOOP, replace=True)
    # a right answer with a syntax error, where one is left that no later check needs: its feedback must say so
    broken = next((e for e in right if e is not looping and not later_calls(e, checks_only=True)), None)
    if broken is not None:
        tampered.cells[broken.answer].source = solution_code(nb.cells[broken.answer].source) + "\n    return ("
    edited = next((e for e in code if e not in (looping, deleted, broken)), deleted)
    tampered.cells[edited.check].metadata["nbgrader"]["points"] = 100.0
    spoiled = sum(e.points for e in (looping, broken) if e is not None and e.label not in wrong)
    imports = next(i for i, c in enumerate(tampered.cells) if "from attnlab.exercises import" in c.source)
    del tampered.cells[deleted.check]
    cell = nbformat.v4.new_code_cell(TAMPERING)
    if tampered.nbformat_minor < 5:
        del cell["id"]  # cell ids came with nbformat 4.5
    tampered.cells.insert(imports + 1, cell)
    # the noisy solutions also handed in as Colab names a copy (see FILE_NAMES), one check cell made markdown and
    # another answer's grade id renamed
    first, other = code[0], code[-1]
    check = noisy.cells[first.check]
    noisy.cells[first.check] = nbformat.from_dict(
        {"cell_type": "markdown", "metadata": check.metadata, "source": check.source})
    noisy.cells[other.answer].metadata["nbgrader"]["grade_id"] = "my-answer"
    attacker = copy.deepcopy(untouched)
    stem = Path(file_name).stem
    cell = nbformat.v4.new_code_cell(ATTACK.format(course=str(course).encode().hex(), chapter=stem, sleep=SLEEP))
    if attacker.nbformat_minor < 5:
        del cell["id"]
    attacker.cells.insert(imports + 1, cell)
    # the wrong answers, and cheats that would pass them if the checks ran in the student's process
    cheater = copy.deepcopy(mistaken)
    cell = nbformat.v4.new_code_cell(CHEATS)
    if cheater.nbformat_minor < 5:
        del cell["id"]
    cheater.cells.insert(imports + 1, cell)
    subs = {"solution": noisy, "attacker": attacker, "wrong": mistaken, "tampered": tampered, "cheater": cheater,
            "not-a-notebook": "These are my answers: 42.\n", "empty": ""}
    expected = {
        "solution": (GRADED, auto, f"handed in as {FILE_NAMES['solution'].format(file_name)}; grade id my-answer "
                                   f"renamed back to {other.label}; cell type restored in {first.label}-check"),
        "attacker": (GRADED, 0.0, ""),
        "wrong": (GRADED, auto - lost, ""),
        "tampered": (GRADED, auto - lost - spoiled, f"deleted cells restored: {deleted.label}-check"
                     + (f"; time-out in {looping.label}" if looping else "")),
        "cheater": (GRADED, 0.0, f"tampering detected in {code[0].label}-check"),
        "not-a-notebook": (UNGRADABLE, 0.0, "not a notebook"),
        "empty": (UNGRADABLE, 0.0, "empty file"),
        "absent": (NOT_SUBMITTED, 0.0, ""),
    }
    feedback = {"tampered": (["loops forever"] if looping else []) + (["has a syntax error"] if broken else [])}
    # the worked solutions, with every answer that no later check needs and whose check is handed one of its
    # functions replaced by one that switches the profiler off and calls the library's own version
    delegated = [e for e in code if not later_calls(e, checks_only=True) and delegation(nb, e)]
    if delegated:
        delegator = copy.deepcopy(solved)
        for e in delegated:
            delegator.cells[e.answer].source = solution_code(nb.cells[e.answer].source) + "\n" + delegation(nb, e)
        subs["delegator"] = delegator
        expected["delegator"] = (GRADED, auto - sum(e.points for e in delegated),
                                 "; ".join(f"the library's own version called in {e.label}-check" for e in delegated))
        feedback["delegator"] = ["the library's own version"]
    if not attacks:
        for student in ATTACKERS:
            subs.pop(student, None)
            expected.pop(student, None)
            feedback.pop(student, None)
    return subs, expected, feedback


# the file name each student's submission is handed in under, where it is not the chapter's own
FILE_NAMES = {"solution": "Copy of {}"}


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


# looked for in each page's text (tags stripped): the hidden tests' own lines, rubrics, the machine's paths
LEAKS = ("BEGIN HIDDEN", "_integrity", "_sys.modules", "Rubric", "rubric", "site-packages", "ipykernel_",
         "Traceback (most recent call last)", str(ROOT))


def solution_lines(nb: nbformat.NotebookNode) -> set[str]:
    """The substantial lines of every worked solution (code between the markers, and written answers), less those
    that the library's own code holds too (a chapter shows it after the exercise)."""
    library = "\n".join(path.read_text() for path in (ROOT / "src" / "attnlab").rglob("*.py"))
    # and those the released notebook shows itself (a debug exercise's buggy code shares lines with its fix)
    library += "\n".join(cell.source for cell in student_version(nb).cells)
    lines = set()
    for exercise in exercises(nb):
        source = nb.cells[exercise.answer].source
        if exercise.kind == "code":
            source = "\n".join(set(solution_code(source).splitlines())
                                - set(with_region(source, [], replace=True).splitlines()))
        lines |= {line.strip() for line in source.splitlines() if len(line.strip()) >= 30
                  and not line.strip().startswith(("#", "```", ":")) and line.strip() not in library}
    return lines


def grade_chapter(path: Path, course: Path, wrong: dict[str, str], sandbox: bool = True,
                  loop: bool = True, attacks: bool = True) -> tuple[list[str], list[str]]:
    """Release, submit and grade one chapter in its own course folder (each notebook in the sandbox unless
    ``sandbox`` is false; with ``loop``, the tampered submission loops; without ``attacks``, no submission of
    :data:`ATTACKERS`); returns (table rows, failures)."""
    stem = path.stem
    write_course([path], course)
    nb = nbformat.read(path, as_version=4)
    nbgrader("generate_assignment", stem, "--force", course=course)
    released = nbformat.read(course / "release" / stem / path.name, as_version=4)
    failures = [f"{stem}: {p}" for p in same_release(released, student_version(nb))]
    subs, expected, says = submissions(nb, wrong, path.name, course, loop, attacks)
    for student, submission in subs.items():
        folder = course / "submitted" / student / stem
        folder.mkdir(parents=True, exist_ok=True)
        name = FILE_NAMES.get(student, "{}").format(path.name)
        if isinstance(submission, str):
            (folder / name).write_text(submission)
        else:
            nbformat.write(submission, folder / name)
    nbgrader("db", "student", "add", "absent", course=course)
    results = {r.student: r for r in grade(course, [stem], course / "grades.csv", quiet=True,
                                                   sandbox=DEFAULT_LIMITS if sandbox else None)}
    rows = []
    for student, (status, points, reason) in expected.items():
        result = results.get(student)
        if result is None:
            failures.append(f"{stem}: {student} is missing from the grades")
            continue
        total = result.total if result.status == GRADED else 0.0
        rows.append(f"{stem:34} {student:15} {result.status:20} {total:6g} {points:8g} {result.seconds:5.0f}  "
                    f"{result.reason}")
        if result.status != status or abs(total - points) > 1e-9:
            failures.append(f"{stem}: {student} is {result.status} with {total:g} points, expected {status} with "
                            f"{points:g}")
        for part in filter(None, reason.split("; ")):
            if part not in result.reason:
                failures.append(f"{stem}: {student}'s notes {result.reason!r} do not say {part!r}")
        limit = HANG_SECONDS + CELL_SECONDS * result.reason.count("time-out")  # a loop costs its time-out
        if result.seconds > limit:
            failures.append(f"{stem}: {student}'s grading hung ({result.seconds:.0f} s, more than {limit} s)")
    for student, name in FILE_NAMES.items():  # the notebook as handed in is kept, unchanged
        name = name.format(path.name)
        kept = course / HANDED_IN / student / stem / name
        if not kept.exists() or kept.read_bytes() != (course / "submitted" / student / stem / name).read_bytes():
            failures.append(f"{stem}: {student}'s notebook as handed in is not kept at {kept}")
    pages = sorted((course / "feedback").glob("*/*/*.html"))
    if len(pages) != sum(1 for s, e in expected.items() if e[0] == GRADED):
        failures.append(f"{stem}: {len(pages)} feedback pages")
    for page in pages:
        text = page.read_text()
        plain = html.unescape(re.sub(r"<[^>]+>", "", text))  # code is highlighted token by token
        failures += [f"{stem}: {page.relative_to(course)} shows {leak!r}" for leak in LEAKS if leak in plain]
        student = page.relative_to(course / "feedback").parts[0]
        if student == "attacker":  # nothing of a worked solution reaches a student who wrote none (and tried)
            shown = [line for line in solution_lines(nb) if line in plain]
            failures += [f"{stem}: attacker's feedback shows the worked solution: {line!r}" for line in shown]
        failures += [f"{stem}: {student}'s feedback does not say {words!r}" for words in says.get(student, [])
                     if words not in plain]
    return rows, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="chapters to grade (default: all)")
    parser.add_argument("--courses", type=Path, default=ROOT / "_build" / "grading",
                        help="folder for the courses, one per chapter")
    parser.add_argument("--no-sandbox", action="store_true", help="grade without attnlab.teaching.sandbox")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="chapters graded at once")
    parser.add_argument("--loop-everywhere", action="store_true",
                        help="a looping answer in every chapter's tampered submission (default: the first chapter's)")
    parser.add_argument("--attacks", nargs="+", metavar="NN",
                        help="grade the attacking submissions (" + ", ".join(ATTACKERS) + ") only in the chapters "
                             "numbered NN (default: every chapter)")
    args = parser.parse_args(argv)
    paths = args.notebooks or chapter_notebooks(ROOT / "notebooks")
    attacked = [args.attacks is None or p.name[:2] in args.attacks for p in paths]
    looped = [args.loop_everywhere or p == next(q for q, a in zip(paths, attacked, strict=True) if a)
              for p in paths] if any(attacked) else [False] * len(paths)
    courses = args.courses.resolve()
    if courses.exists():
        subprocess.run(["rm", "-rf", str(courses)], check=True)
    wrong = wrong_answers()
    package = package_files()
    os.environ["OMP_NUM_THREADS"] = "1"  # two chapters at once share the cores; inherited by every kernel
    # one process per chapter: nbgrader's API grades in-process, and two chapters must not share one
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        graded = list(pool.map(grade_chapter, paths, [courses / p.stem for p in paths], [wrong] * len(paths),
                               [not args.no_sandbox] * len(paths), looped, attacked))
    print(f"{'chapter':34} {'student':15} {'status':20} {'points':>6} {'expected':>8} {'s':>5}  notes")
    failures = []
    for rows, chapter_failures in graded:
        print("\n".join(rows))
        failures += chapter_failures
    # once every chapter is graded (a chapter's attacking kernel may still run while another's is checked)
    failures += [f"a process an attacking submission started survived: {p}" for p in survivors()]
    after = package_files()
    failures += [f"grading changed the installed package: {path}" for path in sorted(set(package) | set(after))
                 if package.get(path) != after.get(path)]
    print(f"graded with python -m attnlab.grading in {courses}/<chapter>/ ({args.jobs} chapters at a time); "
          "feedback pages checked for leaks")
    for failure in failures:
        print("FAILED:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
