"""Grading a class with nbgrader, every submission accounted for.

    python -m attnlab.grading COURSE ASSIGNMENT [ASSIGNMENT ...] [--csv FILE]
        [--workers N] [--timeout SECONDS] [--roster CSV] [--summary FILE]
        [--no-sandbox]
    python -m attnlab.grading collect COURSE ASSIGNMENT SOURCE [--map CSV]

For every student and assignment of the nbgrader course folder ``COURSE`` (written
by ``python -m attnlab.homework course``, released with ``nbgrader
generate_assignment``), the submission is first taken in: a missing notebook is *not
submitted*; an empty file or one that is not a notebook *could not be graded*, with
the reason; a notebook saved under another name (``Copy of <assignment>.ipynb``) is
found; a check cell that was deleted or moved is put back where the release has it,
a graded cell turned into markdown is a code cell again, a renamed grade id is given
back, and graded cells' nbgrader metadata are restored from the release (all noted).
The notebook as handed in is kept in ``COURSE/handed-in/`` before any repair.
Then ``nbgrader autograde`` and ``nbgrader generate_feedback`` run for that one
submission, so that one that crashes or never finishes cannot stop the others. The
CSV has one row per student and assignment: the status, the reason or notes, the
points of every exercise and the total.

``--workers N`` grades N submissions at a time, each worker a process with its own
copy of nbgrader's gradebook and files; the grades are merged into the course's
``gradebook.db``, the feedback pages land where a serial run puts them, and the CSV
is the same, row for row. ``--timeout SECONDS`` is the time limit of one cell (the
course's own otherwise): a cell that runs longer is stopped and costs its exercise's
points, serially and with workers alike. A cell that stops Python (``os._exit``, a
crash) costs only its own exercise: a new kernel runs the cells before it again and
the notebook goes on. Every notebook runs in a sandbox
(:mod:`attnlab.teaching.sandbox`; ``--no-sandbox`` to grade without one). The
checks of a submission are judged by a grader process of its own
(:mod:`attnlab.teaching.verdicts`), which calls the notebook's functions through a
channel of plain data: a check cell's points are the grader's verdict, not what the
notebook shows.
``--roster CSV`` gives every student of the class a row, *not submitted* where
nothing was handed in. Beside the CSV goes the class summary (``<csv
stem>-summary.md``, or ``--summary FILE``): per assignment, the submissions by
status, the points per exercise (mean, median, how many got full points, how many
zero) and the exercises missed most often.

``collect`` places the notebooks downloaded from Canvas or Moodle (a folder or a
``.zip``) at ``COURSE/submitted/<student>/<ASSIGNMENT>/<ASSIGNMENT>.ipynb``: see
:mod:`attnlab.teaching.collect` for the names it reads. (A course folder named
``collect`` is given as ``./collect``.)

The nbgrader preprocessors of this module are named in the course's
``nbgrader_config.py``: :func:`add_hidden_tests` before execution (the hidden tests
live only here, never in a notebook that students or their feedback see) and
:func:`explain_errors` after it.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import copy
import csv
import json
import math
import os
import re
import secrets
import shutil
import stat
import statistics
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from attnlab.exercises._integrity import TAMPERED
from attnlab.teaching.collect import plain_file
from attnlab.teaching.delegation import findings
from attnlab.teaching.release import (
    BEGIN_HIDDEN,
    CHECK_SUFFIX,
    cell_grade_id,
    hidden_tests,
    is_check_cell,
    without_hidden_tests,
)
from attnlab.teaching.sandbox import DEFAULT_LIMITS, Limits, unavailable, use_sandbox
from attnlab.teaching.verdicts import NOT_RUN, grader, plan

GRADED, NOT_SUBMITTED, UNGRADABLE = "graded", "not submitted", "could not be graded"
KERNEL_STOPPED = "KernelStopped"  # the error of a cell that stopped Python
NOT_ON_ROSTER = "not on the roster"
# COURSE/handed-in/<student>/<assignment>/: a notebook as the student handed it in,
# kept before the intake repairs or renames it
HANDED_IN = "handed-in"
CELL_SECONDS = 30  # per cell, in quick mode: a cell that takes longer is looping


def timeout_message(seconds: float) -> str:
    """What the feedback says of a cell stopped after ``seconds``."""
    return (
        f"this cell ran for more than {seconds:g} s and was stopped: your code"
        " probably loops forever (look for a loop whose condition never becomes"
        " false)"
    )


TIMEOUT_MESSAGE = timeout_message(CELL_SECONDS)
SYNTAX_ERRORS = ("SyntaxError", "IndentationError", "TabError")
TIMEOUT_ERRORS = ("TimeoutError", "CellTimeoutError")
RAISED_INTERRUPT = "raised by the code of this cell, not a time-out"
NO_SANDBOX = (
    "Graded without a sandbox (--no-sandbox): each notebook ran as the grading"
    " user, able to read and change the course folder, the gradebook and other"
    " students' files."
)


# --- nbgrader preprocessors ---


def add_hidden_tests(
    nb: nbformat.NotebookNode, resources: dict
) -> tuple[nbformat.NotebookNode, dict]:
    """An nbgrader preprocessor, run before execution: put every check cell's
    hidden tests (:func:`attnlab.teaching.release.hidden_tests`) before its own
    code, so that the grader's verdict never waits on the checks run in the
    student's process."""
    for cell in nb.cells:
        if is_check_cell(cell) and BEGIN_HIDDEN not in cell.source:
            hidden = hidden_tests(cell.source, cell_grade_id(cell) or "")
            cell.source = f"{hidden}\n{cell.source}"
    return nb, resources


def _errors(cell: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]


# a file of the grading machine: the kernel's file for a cell, or any absolute path
CELL_FILE = re.compile(r"(?:/[^\s/:'\"]+)*/ipykernel_\d+/\d+\.py")
ABSOLUTE_PATH = re.compile(r"(?<![\w.~:/])(?:/[\w.+\-]+){2,}")


def without_paths(text: str) -> str:
    """``text`` with the grading machine's paths left out: a cell's file becomes
    ``<your cell>``, any other absolute path its last part (``/usr/lib/x/y.py`` ->
    ``y.py``)."""
    text = CELL_FILE.sub("<your cell>", text)
    return ABSOLUTE_PATH.sub(lambda m: m.group(0).rsplit("/", 1)[-1], text)


def _first_line(text: str) -> str:
    lines = [line for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else ""


def explain_errors(
    nb: nbformat.NotebookNode, resources: dict
) -> tuple[nbformat.NotebookNode, dict]:
    """An nbgrader preprocessor, run after execution: make what the student's
    feedback shows useful and free of the grader's internals.

    The hidden tests are removed from the check cells' source; an interrupted cell
    says that it ran out of time; a check that failed because its exercise's cell
    has a syntax error says so; every traceback is cut to its last line, and no
    output shows a path of the grading machine (:func:`without_paths`: a warning
    printed by the student's code names the kernel's file of the cell).
    """
    syntax_errors: dict[str, str] = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if is_check_cell(cell):
            cell.source = without_hidden_tests(cell.source)
        # a time-out interrupts the cell (KeyboardInterrupt) and adds a TimeoutError;
        # a KeyboardInterrupt alone was raised by the student's code
        limits = [
            str(o.get("evalue", ""))
            for o in _errors(cell)
            if o.get("ename") in TIMEOUT_ERRORS
        ]
        timed_out = bool(limits)
        message = next(
            (m for m in limits if m.startswith("this cell ran")), TIMEOUT_MESSAGE
        )
        for output in _errors(cell):
            if output.get("ename") in SYNTAX_ERRORS:
                grade_id = cell_grade_id(cell)
                if grade_id:
                    syntax_errors[grade_id] = (
                        f"{output['ename']}: {_first_line(output.get('evalue', ''))}"
                    )
            interrupted = output.get("ename") == "KeyboardInterrupt"
            if output.get("ename") in TIMEOUT_ERRORS or (interrupted and timed_out):
                output["ename"], output["evalue"] = "TimeoutError", message
            elif interrupted:
                output["evalue"] = RAISED_INTERRUPT
            if is_check_cell(cell) and output.get("ename") == "NameError":
                exercise = cell_grade_id(cell)[: -len(CHECK_SUFFIX)]
                if exercise in syntax_errors:
                    output["ename"] = "SyntaxError"
                    output["evalue"] = (
                        "the cell of your answer has a syntax error, so your"
                        f" function was never defined: {syntax_errors[exercise]}"
                    )
            output["evalue"] = without_paths(str(output.get("evalue", "")))
            output["traceback"] = [f"{output.get('ename')}: {output.get('evalue')}"]
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                text = output.get("text", "")
                output["text"] = without_paths(
                    "".join(text) if isinstance(text, list) else text
                )
        shown: set[str] = set()  # an interrupted cell reports its time-out twice
        kept = []
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                if output["traceback"][0] in shown:
                    continue
                shown.add(output["traceback"][0])
            kept.append(output)
        cell["outputs"] = kept
    return nb, resources


# --- taking submissions in ---


@dataclass
class Intake:
    """What taking one submission in found."""

    status: str
    reason: str = ""
    notes: list[str] = field(default_factory=list)


def _without_checksum(cell: nbformat.NotebookNode) -> dict:
    """A cell's nbgrader metadata less the checksum, which a notebook from
    ``make student`` does not carry."""
    return {k: v for k, v in cell.metadata["nbgrader"].items() if k != "checksum"}


def _restore_graded_cells(
    submitted: nbformat.NotebookNode, release: nbformat.NotebookNode
) -> list[str]:
    """Put back, in place, the release's graded and locked cells that the submission
    lacks or moved, and the release's nbgrader metadata of every graded cell; returns
    notes saying what was restored."""
    notes = _drop_copies(submitted)
    released = {cell_grade_id(c): c for c in release.cells if cell_grade_id(c)}
    notes += _restore_renamed(submitted, released)
    notes += _restore_cell_types(submitted, released)
    by_id = {
        cell_grade_id(c): c for c in submitted.cells if cell_grade_id(c) in released
    }
    edited = [
        grade_id
        for grade_id, cell in by_id.items()
        if _without_checksum(cell) != _without_checksum(released[grade_id])
        or cell.cell_type != released[grade_id].cell_type
    ]
    for grade_id in edited:
        by_id[grade_id].metadata["nbgrader"] = copy.deepcopy(
            released[grade_id].metadata["nbgrader"]
        )
    if edited:
        notes.append(f"nbgrader metadata restored in {', '.join(sorted(edited))}")
    missing = [g for g in released if g not in by_id]
    moved = []
    for cell in submitted.cells:  # a check cell must follow its answer, as released
        if is_check_cell(cell):
            answer = cell_grade_id(cell)[: -len(CHECK_SUFFIX)]
            order = [cell_grade_id(c) for c in submitted.cells]
            if answer in order and order.index(cell_grade_id(cell)) < order.index(
                answer
            ):
                moved.append(cell_grade_id(cell))
    if moved:
        submitted.cells = [
            c for c in submitted.cells if cell_grade_id(c) not in moved
        ]
    for grade_id in [*missing, *moved]:
        cell = by_id.get(grade_id) or copy.deepcopy(released[grade_id])
        previous = [cell_grade_id(c) for c in release.cells]
        index = previous.index(grade_id)
        anchors = [g for g in previous[:index] if g]
        position = 0
        ids = [cell_grade_id(c) for c in submitted.cells]
        for anchor in reversed(anchors):
            if anchor in ids:
                position = ids.index(anchor) + 1
                break
        submitted.cells.insert(position, cell)
    if missing:
        notes.append(f"deleted cells restored: {', '.join(missing)}")
    if moved:
        notes.append(f"moved check cells put back: {', '.join(moved)}")
    return notes


def _drop_copies(submitted: nbformat.NotebookNode) -> list[str]:
    """A cell copied and pasted in Jupyter keeps its grade id, which nbgrader then
    refuses for the whole notebook: the copies after the first become ordinary cells
    (their nbgrader metadata removed, their code kept); returns notes."""
    seen, copied = set(), []
    for cell in submitted.cells:
        grade_id = cell_grade_id(cell)
        if grade_id in seen:
            del cell.metadata["nbgrader"]
            copied.append(grade_id)
        elif grade_id:
            seen.add(grade_id)
    if not copied:
        return []
    names = ", ".join(dict.fromkeys(copied))
    return [f"copies of graded cells made ordinary cells: {names}"]


def _restore_renamed(
    submitted: nbformat.NotebookNode, released: dict[str, nbformat.NotebookNode]
) -> list[str]:
    """Give the release's grade ids back to cells whose id was renamed.

    The cells with an id the release lacks are matched, in order, with the release's
    ids the submission lacks (of the same cell type, else any); those left over lose
    their nbgrader metadata, so that nbgrader does not reject the notebook. Returns
    notes.
    """
    present = {cell_grade_id(c) for c in submitted.cells}
    missing = [g for g in released if g not in present]
    unknown = [
        c
        for c in submitted.cells
        if cell_grade_id(c) and cell_grade_id(c) not in released
    ]
    notes = []
    for cell in unknown:
        same_type = [g for g in missing if released[g].cell_type == cell.cell_type]
        if not (same_type or missing):
            notes.append(f"unknown grade id {cell_grade_id(cell)} removed")
            del cell.metadata["nbgrader"]
            continue
        grade_id = (same_type or missing)[0]
        missing.remove(grade_id)
        notes.append(f"grade id {cell_grade_id(cell)} renamed back to {grade_id}")
        cell.metadata["nbgrader"] = copy.deepcopy(
            released[grade_id].metadata["nbgrader"]
        )
    return notes


def _restore_cell_types(
    submitted: nbformat.NotebookNode, released: dict[str, nbformat.NotebookNode]
) -> list[str]:
    """Turn every graded or locked cell back into the release's cell type (a check
    cell made markdown with one keystroke runs again); returns notes."""
    changed = []
    for index, cell in enumerate(submitted.cells):
        grade_id = cell_grade_id(cell)
        if grade_id in released and cell.cell_type != released[grade_id].cell_type:
            kind = released[grade_id].cell_type
            fields = {
                "cell_type": kind,
                "metadata": cell.metadata,
                "source": cell.source,
            }
            if kind == "code":
                fields |= {"outputs": [], "execution_count": None}
            if "id" in cell:
                fields["id"] = cell["id"]
            submitted.cells[index] = nbformat.from_dict(fields)
            changed.append(grade_id)
    return [f"cell type restored in {', '.join(changed)}"] if changed else []


def links(course: Path, student: str, assignment: str) -> list[str]:
    """What of a student's submission is not a plain file or folder: the submission
    folders themselves, or anything in them, that is a symbolic link, a file with
    another hard link, or a special file (by name, relative to ``submitted/``).
    Such a submission is refused, and nothing is read through it."""
    submitted = course / "submitted"
    found = [
        str(path.relative_to(submitted))
        for path in (submitted / student, submitted / student / assignment)
        if path.is_symlink()
    ]
    folder = submitted / student / assignment
    if found or not folder.is_dir():
        return found
    for top, folders, files in os.walk(folder, followlinks=False):
        for name in [*folders, *files]:
            path = Path(top) / name
            info = path.lstat()
            if not (stat.S_ISDIR(info.st_mode) or plain_file(info)):
                found.append(str(path.relative_to(submitted)))
    return sorted(found)


def handed_in(folder: Path, assignment: str) -> Path:
    """The notebook a student handed in, in ``folder``: ``<assignment>.ipynb``, else
    the only notebook there (saved under another name: ``Copy of <assignment>.ipynb``
    from Colab, ``<assignment> (1).ipynb`` from a browser), else the ones whose name
    holds the assignment's, if that is one. Returns the assignment's path when none
    is found."""
    expected = folder / f"{assignment}.ipynb"
    if expected.exists() or not folder.is_dir():
        return expected
    notebooks = sorted(p for p in folder.glob("*.ipynb") if p.is_file())
    named = [p for p in notebooks if assignment in p.name]
    for candidates in (notebooks, named):
        if len(candidates) == 1:
            return candidates[0]
    return expected


def take_in(
    path: Path, release: nbformat.NotebookNode, keep: Path | None = None
) -> Intake:
    """Read one submission, repair what can be repaired, and say whether it can be
    graded.

    The repaired notebook is written to ``path``; with ``keep``, the notebook as
    handed in is first copied there, so that the original is never lost.
    """
    if not path.exists():
        return Intake(NOT_SUBMITTED)
    text = path.read_bytes().decode("utf-8", errors="replace")
    if not text.strip():
        return Intake(UNGRADABLE, "empty file")
    try:
        submitted = nbformat.reads(text, as_version=4)
    except (json.JSONDecodeError, nbformat.reader.NotJSONError) as error:
        return Intake(UNGRADABLE, f"not a notebook ({type(error).__name__})")
    except (nbformat.ValidationError, KeyError, TypeError, AttributeError) as error:
        return Intake(UNGRADABLE, f"not a valid notebook ({type(error).__name__})")
    if not isinstance(submitted.get("cells"), list):
        return Intake(UNGRADABLE, "not a notebook (no cells)")
    if not any(cell_grade_id(c) for c in submitted.cells):
        return Intake(
            UNGRADABLE,
            "none of the course's graded cells: a new notebook, not the released"
            " one",
        )
    notes = _restore_graded_cells(submitted, release)
    if notes:
        if keep is not None:
            keep.parent.mkdir(parents=True, exist_ok=True)
            keep.write_bytes(path.read_bytes())
        nbformat.write(submitted, path)
    return Intake(GRADED, notes=notes)


# --- grading ---


def nbgrader_api(
    course: Path,
    sandbox: Limits | None = None,
    hide: Sequence[Path] = (),
    cell_seconds: float | None = None,
):  # -> nbgrader.apps.NbGraderAPI
    """nbgrader's Python API for the course folder, configured by its
    ``nbgrader_config.py``: one process grades every submission, without starting
    nbgrader anew for each. Notebooks run with
    :class:`attnlab.teaching.execute.ExecuteEachCell`, so that a cell that stops
    Python costs only that cell; ``cell_seconds`` (default: the course's) is the
    time limit of a cell. With ``sandbox``, every notebook runs in
    :mod:`attnlab.teaching.sandbox` under those limits, ``hide`` (the course)
    emptied."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.converters import Autograde
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.preprocessors import Execute
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    config.CourseDirectory.root = str(course)
    steps = config.Autograde.get(
        "autograde_preprocessors", list(Autograde.autograde_preprocessors.default())
    )
    config.Autograde.autograde_preprocessors = [
        "attnlab.teaching.execute.ExecuteEachCell"
        if step in (Execute, "nbgrader.preprocessors.Execute")
        else step
        for step in steps
    ]
    if cell_seconds is not None:
        config.Execute.timeout = math.ceil(cell_seconds)
        message = timeout_message(math.ceil(cell_seconds))
        config.Execute.error_on_timeout = {
            "ename": "TimeoutError",
            "evalue": message,
            "traceback": [f"TimeoutError: {message}"],
        }
    if sandbox is not None:
        scratch = Path(tempfile.mkdtemp(prefix="attnlab-sandbox-"))
        atexit.register(shutil.rmtree, scratch, ignore_errors=True)
        use_sandbox(config, scratch, sandbox, [course, *hide])
    return NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)


KERNEL_DIED = (
    "the notebook stopped its Python process (os._exit, a crash or running out of"
    " memory in one of its cells), so nothing after that cell ran"
)
EXCEPTION_LINE = re.compile(r"^[\w.]+(Error|Exception|Exit|Interrupt)\b: ")


def _failure(result: dict) -> str | None:
    """What went wrong in an nbgrader API call, or None if it succeeded: the
    exception its log or error reports (nbgrader's own closing line only says to see
    the traceback above), without the grading machine's paths."""
    if result.get("success"):
        return None
    text = f"{result.get('log', '')}\n{result.get('error', '')}"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if any("DeadKernelError" in line for line in lines):
        return KERNEL_DIED
    raised = [
        line
        for line in lines
        if EXCEPTION_LINE.match(line) and "NbGraderException" not in line
    ]
    return without_paths((raised or lines or ["nbgrader failed"])[-1])[:300]


def read_roster(path: Path) -> list[str]:
    """The student ids of a roster: a CSV with a ``student`` column, or one id per
    line (the first column)."""
    with open(path, newline="") as file:
        rows = [row for row in csv.reader(file) if row and row[0].strip()]
    if not rows:
        raise ValueError(f"expected student ids in the roster {path}, got none")
    column = rows[0].index("student") if "student" in rows[0] else 0
    if "student" in rows[0]:
        rows = rows[1:]
    return [row[column].strip() for row in rows if row[column].strip()]


def _students(course: Path) -> list[str]:
    folder = course / "submitted"
    known = (
        {p.name for p in folder.iterdir() if p.is_dir()}
        if folder.exists()
        else set()
    )
    database = course / "gradebook.db"
    if database.exists():
        from nbgrader.api import Gradebook

        with Gradebook(f"sqlite:///{database}") as gradebook:
            known |= {s.id for s in gradebook.students}
    return sorted(known)


def _scores(course: Path, assignment: str, student: str) -> dict[str, float | None]:
    """Points per graded cell of one autograded submission (None: needs a manual
    grade)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        notebook = gradebook.find_submission_notebook(
            assignment, assignment, student
        )
        return {
            grade.name: (None if grade.needs_manual_grade else float(grade.score))
            for grade in notebook.grades
        }


def _flags(course: Path, assignment: str, student: str) -> list[str]:
    """Notes read from the autograded notebook: time-outs and tampering."""
    path = course / "autograded" / student / assignment / f"{assignment}.ipynb"
    if not path.exists():
        return []
    notes = []
    for cell in nbformat.read(path, as_version=4).cells:
        for output in _errors(cell):
            where = cell_grade_id(cell) or "a cell without points"
            if output.get("ename") == "TimeoutError":
                notes.append(f"time-out in {where}")
            elif output.get("ename") == KERNEL_STOPPED:
                notes.append(f"Python stopped in {where}")
            elif TAMPERED in str(output.get("evalue", "")):
                notes.append(f"tampering detected in {where}")
    return notes


@dataclass
class Result:
    """One row of the CSV."""

    student: str
    assignment: str
    status: str
    reason: str
    points: dict[str, float | None]
    seconds: float

    @property
    def total(self) -> float:
        return sum(p for p in self.points.values() if p is not None)


def grade_submission(
    api, course: Path, assignment: str, student: str, work: Path | None = None
) -> Result:
    """Take in, autograde and give feedback to one student's submission of
    ``course``; returns its row of the CSV.

    ``api`` is :func:`nbgrader_api` of ``work``, the folder where nbgrader writes
    (default: ``course`` itself). With another folder, the submission taken in is
    copied there first, and nbgrader's gradebook and files stay there.
    """
    start = time.perf_counter()
    work = course if work is None else work
    release = nbformat.read(
        course / "release" / assignment / f"{assignment}.ipynb", as_version=4
    )
    if linked := links(course, student, assignment):
        reason = (
            f"refused: {', '.join(linked)} is a link or a special file, not a plain"
            " file; nothing was read through it"
        )
        return Result(student, assignment, UNGRADABLE, reason, {}, 0.0)
    folder = course / "submitted" / student / assignment
    path, found = folder / f"{assignment}.ipynb", handed_in(folder, assignment)
    original = course / HANDED_IN / student / assignment / found.name
    renamed = []
    if found != path:  # graded as the release's name; the file handed in is kept
        original.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(found, original)
        shutil.copyfile(found, path)
        renamed = [f"handed in as {found.name}"]
    intake = take_in(path, release, keep=original)
    intake.notes[:0] = renamed
    if intake.status != GRADED:
        return Result(student, assignment, intake.status, intake.reason, {}, 0.0)
    if work != course:
        _replace(path.parent, work / "submitted" / student / assignment)
    cells = plan(release)
    stubs = {
        cell_grade_id(c): c.source
        for c in release.cells
        if c.get("metadata", {}).get("nbgrader", {}).get("solution")
    }
    with _own_sockets(api) as sockets, grader(sockets, cells, stubs) as verdicts:
        error = _failure(api.autograde(assignment, student, force=True, create=True))
    if error is not None:
        seconds = time.perf_counter() - start
        return Result(student, assignment, UNGRADABLE, error, {}, seconds)
    missing = apply_verdicts(work, assignment, student, cells, verdicts, release)
    notes = intake.notes + list(dict.fromkeys(_flags(work, assignment, student)))
    notes += missing
    notes += [
        f"{why} ({count} times)" if count > 1 else why
        for why, count in Counter(verdicts.refused).items()
    ]
    feedback = _failure(api.generate_feedback(assignment, student, force=True))
    if feedback is not None:
        notes.append(f"no feedback page: {feedback}")
    return Result(
        student,
        assignment,
        GRADED,
        "; ".join(notes),
        _scores(work, assignment, student),
        time.perf_counter() - start,
    )


@contextlib.contextmanager
def _own_sockets(api) -> Iterator[Path | None]:
    """A new, empty folder for the Unix sockets of one submission's kernels and
    grader, the only host folder its sandbox can write to; removed after it, so that
    nothing a notebook leaves there reaches the next one (None: grading without a
    sandbox)."""
    manager = api.config.get("KernelManager", {})
    if manager.get("transport") != "ipc":
        yield None
        return
    shared = Path(manager["ip"])
    folder = shared.parent / secrets.token_hex(8)
    folder.mkdir(mode=0o700)
    api.config.KernelManager.ip = str(folder / "kernel")
    try:
        yield folder
    finally:
        api.config.KernelManager.ip = str(shared)
        shutil.rmtree(folder, ignore_errors=True)


def _error_output(ename: str, message: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_output(
        "error", ename=ename, evalue=message, traceback=[f"{ename}: {message}"]
    )


def apply_verdicts(
    work: Path,
    assignment: str,
    student: str,
    cells: dict[str, list[str]],
    verdicts: dict[str, dict],
    release: nbformat.NotebookNode | None = None,
) -> list[str]:
    """Give the check cells ``cells`` (:func:`~attnlab.teaching.verdicts.plan`) of
    an autograded submission the grader's ``verdicts``: their points in the
    gradebook, and outputs that show the verdict (what the notebook showed of it is
    not trusted; its time-outs and crashes are kept where the grader has no
    verdict). A check cell whose answers reach the library's own version or code
    the grader cannot read (:func:`~attnlab.teaching.delegation.findings`, from the
    notebook's source; ``release``: the notebook as released) earns nothing,
    whatever its checks said. Returns the notes:
    the cells whose graded tests never reached a verdict with no error that says
    why, and what the reading found."""
    from nbgrader.api import Gradebook

    path = work / "autograded" / student / assignment / f"{assignment}.ipynb"
    nb = nbformat.read(path, as_version=4)
    passed, notes = {}, []
    try:
        found = findings(nb, release)
    except Exception as exc:  # noqa: BLE001 - a notebook the reader trips on
        found = {}  # is graded by its checks alone, and the instructor told
        notes.append(f"answers not read ({type(exc).__name__}: {exc})")
    for cell in nb.cells:
        grade_id = cell_grade_id(cell)
        if grade_id in found:
            passed[grade_id] = False
            cell.outputs = [o for o in cell.outputs if o.output_type != "error"]
            cell.outputs.append(
                _error_output("ExerciseError", found[grade_id].message)
            )
            notes.append(found[grade_id].note)
            continue
        if grade_id not in cells:
            continue
        verdict = verdicts.get(grade_id, {})
        passed[grade_id] = bool(verdict.get("complete") and verdict.get("passed"))
        if verdict.get("complete"):
            cell.outputs = [o for o in cell.outputs if o.output_type != "error"]
            if verdict.get("output"):
                text = without_paths(str(verdict["output"]))
                cell.outputs.append(
                    nbformat.v4.new_output("stream", name="stdout", text=text)
                )
            if not passed[grade_id]:
                message = without_paths(str(verdict.get("message")))
                cell.outputs.append(_error_output("ExerciseError", message))
        elif not _errors(cell):
            cell.outputs.append(_error_output("ExerciseError", NOT_RUN))
            notes.append(f"graded tests did not run in {grade_id}")
    _rewrite(path, nb)
    with Gradebook(f"sqlite:///{work / 'gradebook.db'}") as gradebook:
        for grade_id, ok in passed.items():
            grade = gradebook.find_grade(grade_id, assignment, assignment, student)
            grade.auto_score = grade.max_score if ok else 0.0
        gradebook.db.commit()
    return list(dict.fromkeys(notes))


def _rewrite(path: Path, nb: nbformat.NotebookNode) -> None:
    """Write ``nb`` over the notebook ``path`` that nbgrader made read-only (0444):
    a new file in its folder, with its mode, put in its place. An instructor who is
    not root cannot open it for writing, but can replace it."""
    mode = path.stat().st_mode & 0o777
    partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    nbformat.write(nb, partial)
    partial.chmod(mode)
    os.replace(partial, path)


def _replace(source: Path, target: Path) -> None:
    """Make the folder ``target`` a copy of the folder ``source``."""
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, target)


def write_csv(results: list[Result], path: Path) -> None:
    """One row per student and assignment: status, reason or notes, the points of
    each graded cell, and the total."""
    cells = sorted({name for r in results for name in r.points})
    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(
            ["student", "assignment", "status", "reason", *cells, "total"]
        )
        for r in results:
            points = [
                "" if r.points.get(c) is None else f"{r.points[c]:g}" for c in cells
            ]
            total = f"{r.total:g}" if r.status == GRADED else "0"
            writer.writerow(
                [r.student, r.assignment, r.status, r.reason, *points, total]
            )


def _max_points(course: Path, assignment: str) -> dict[str, float]:
    """The points of every graded cell of the released notebook, by grade id."""
    path = course / "release" / assignment / f"{assignment}.ipynb"
    if not path.exists():
        return {}
    return {
        cell_grade_id(cell): float(cell.metadata["nbgrader"].get("points", 0))
        for cell in nbformat.read(path, as_version=4).cells
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade")
    }


def _exercise(grade_id: str) -> str:
    """The exercise's label from its graded cell's id (a check cell ends in
    ``-check``)."""
    return grade_id.removesuffix(CHECK_SUFFIX)


def summary(results: list[Result], course: Path) -> str:
    """The class summary in markdown: per assignment, the submissions by status; per
    exercise, over the graded submissions, the mean and median points, how many got
    full points and how many zero; and the exercises missed most often."""
    lines = ["# Class summary", ""]
    for assignment in dict.fromkeys(r.assignment for r in results):
        rows = [r for r in results if r.assignment == assignment]
        graded = [r for r in rows if r.status == GRADED]
        counts = {
            status: sum(r.status == status for r in rows)
            for status in (GRADED, NOT_SUBMITTED, UNGRADABLE)
        }
        lines += [
            f"## {assignment}",
            "",
            f"{len(rows)} students: "
            + ", ".join(f"{n} {status}" for status, n in counts.items())
            + ".",
            "",
        ]
        if not graded:
            lines += ["No submission was graded.", ""]
            continue
        full = _max_points(course, assignment)
        for r in graded:
            for name, points in r.points.items():
                full.setdefault(name, points or 0.0)
        lines += [
            f"Points per exercise, over the {len(graded)} graded submissions:",
            "",
            "| exercise | points | mean | median | full points | zero"
            " | awaiting a manual grade |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        missed = []
        for name, most in full.items():
            scores = [r.points.get(name) for r in graded]
            known = [p for p in scores if p is not None]
            top = sum(p >= most for p in known)
            middle = f"{statistics.median(known):g}" if known else "-"
            mean = f"{statistics.mean(known):.2f}" if known else "-"
            lines.append(
                f"| {_exercise(name)} | {most:g} | {mean} | {middle}"
                f" | {top} | {sum(p == 0 for p in known)}"
                f" | {len(scores) - len(known)} |"
            )
            if len(known) > top:
                missed.append((len(known) - top, len(known), _exercise(name)))
        totals = [r.total for r in graded]
        waiting = sum(p is None for r in graded for p in r.points.values())
        lines += [
            f"| total | {sum(full.values()):g} | {statistics.mean(totals):.2f}"
            f" | {statistics.median(totals):g} | | | {waiting} |",
            "",
        ]
        if waiting:
            lines += ["The totals count an answer awaiting a manual grade as 0.", ""]
        missed.sort(key=lambda m: (-m[0], -m[0] / m[1], m[2]))
        if missed:
            lines += ["Missed most often (without full points):", ""] + [
                f"- {name}: {lost} of {known}" for lost, known, name in missed[:3]
            ]
        else:
            lines.append(
                "Every graded submission got full points in every exercise."
            )
        lines.append("")
    return "\n".join(lines)


def grade(
    course: Path,
    assignments: list[str],
    csv_path: Path,
    quiet: bool = False,
    workers: int = 1,
    timeout: float | None = None,
    summary_path: Path | None = None,
    sandbox: Limits | None = DEFAULT_LIMITS,
    roster: list[str] | None = None,
) -> list[Result]:
    """Grade every student's submission of each assignment; write the CSV, the class
    summary (default: ``<csv stem>-summary.md`` beside it) and, unless ``quiet``,
    print a table; returns the rows of the CSV.

    With ``workers`` above 1 the submissions are graded in worker processes
    (:mod:`attnlab.teaching.pool`); otherwise one at a time in this process.
    ``timeout`` is the time limit of a cell in seconds (default: the course's), so a
    loop costs only its exercise. Each notebook runs in
    :mod:`attnlab.teaching.sandbox` under the limits ``sandbox``; None grades
    without a sandbox, and the summary says so.
    Every student of ``roster`` gets a row, *not submitted* where nothing was handed
    in; a submission from a student not on it is graded and noted.
    """
    if sandbox is not None and (reason := unavailable()) is not None:
        raise SystemExit(
            f"cannot grade in a sandbox: {reason}. Install it, or grade without"
            " one (--no-sandbox), where submissions can harm each other"
        )
    students = _students(course)
    if roster is not None:
        students = sorted(set(students) | set(roster))
    tasks = [
        (assignment, student) for assignment in assignments for student in students
    ]
    # nbgrader's database layer warns about its own sessions on every submission
    warnings.filterwarnings("ignore", message=".*not in session.*")
    if workers > 1:
        from attnlab.teaching.pool import grade_in_workers

        results = grade_in_workers(course, tasks, workers, timeout, sandbox)
    else:
        api = nbgrader_api(course, sandbox, cell_seconds=timeout)
        results = [grade_submission(api, course, *task) for task in tasks]
    if roster is not None:
        for r in results:
            if r.student not in roster:
                r.reason = "; ".join(filter(None, [NOT_ON_ROSTER, r.reason]))
    write_csv(results, csv_path)
    summary_path = summary_path or csv_path.with_name(f"{csv_path.stem}-summary.md")
    text = summary(results, course)
    if sandbox is None:
        text = text.replace("\n", f"\n\n{NO_SANDBOX}\n", 1)
    summary_path.write_text(text)
    if quiet:
        return results
    print(
        f"{'student':20} {'assignment':30} {'status':20} {'points':>6}"
        f" {'s':>5}  notes"
    )
    for r in results:
        points = f"{r.total:g}" if r.status == GRADED else "-"
        print(
            f"{r.student:20} {r.assignment:30} {r.status:20} {points:>6}"
            f" {r.seconds:5.0f}  {r.reason}"
        )
    if sandbox is None:
        print(NO_SANDBOX)
    print(f"written to {csv_path} and {summary_path}")
    return results


def _positive(kind: type) -> Callable[[str], float]:
    """An argparse type: a number of ``kind`` above zero."""

    def parse(text: str) -> int | float:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(
                f"expected a number above 0, got {text}"
            )
        return value

    parse.__name__ = kind.__name__
    return parse


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["collect"]:  # a course folder named so: ./collect
        from attnlab.teaching.collect import main as collect

        collect(argv[1:], prog="python -m attnlab.grading collect")
        return
    parser = argparse.ArgumentParser(
        prog="python -m attnlab.grading", description=__doc__.splitlines()[0]
    )
    parser.add_argument("course", type=Path, help="the nbgrader course folder")
    parser.add_argument("assignments", nargs="+", help="assignments (chapters)")
    parser.add_argument(
        "--csv", type=Path, default=None, help="default: COURSE/grades.csv"
    )
    parser.add_argument(
        "--workers",
        type=_positive(int),
        default=1,
        help="submissions graded at once, each in a process of its own (default 1)",
    )
    parser.add_argument(
        "--timeout",
        type=_positive(float),
        default=None,
        help="seconds per cell, after which the cell is stopped and its exercise"
        f" gets no points (default: the course's, {CELL_SECONDS} s in quick mode)",
    )
    parser.add_argument(
        "--roster",
        type=Path,
        default=None,
        help="a CSV of the class (a 'student' column, or one id per line): every"
        " student on it gets a row, 'not submitted' if nothing was handed in",
    )
    parser.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run each notebook as the grading user, without the sandbox (where"
        " bubblewrap cannot run; a submission can then harm the others)",
    )
    parser.add_argument(
        "--summary",
        type=Path,
        default=None,
        help="the class summary in markdown (default: <csv stem>-summary.md beside"
        " the CSV)",
    )
    args = parser.parse_args(argv)
    course = args.course.resolve()
    for assignment in args.assignments:
        if not (course / "release" / assignment).exists():
            parser.error(
                f"{assignment} is not released in {course}: run nbgrader"
                f" generate_assignment {assignment} there first"
            )
    grade(
        course,
        args.assignments,
        args.csv or course / "grades.csv",
        workers=args.workers,
        timeout=args.timeout,
        summary_path=args.summary,
        sandbox=None if args.no_sandbox else DEFAULT_LIMITS,
        roster=None if args.roster is None else read_roster(args.roster),
    )


if __name__ == "__main__":
    main()
