"""Grading submissions several at a time: the worker processes of
``python -m attnlab.grading ... --workers N``.

Each worker is a process of its own with its own nbgrader folder (a copy of the
course's configuration and gradebook, with the release linked), so that no two
processes write one sqlite file. A worker grades one submission at a time with
:func:`attnlab.teaching.grading.grade_submission`, copies nbgrader's autograded
notebook and feedback page into the course, and sends back the row of the CSV and the
submission's grades. The parent merges those into the course's ``gradebook.db``
through nbgrader's Gradebook API, and kills a worker whose submission runs past
the time limit or starts a new one where a worker died; the other submissions go
on.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import sqlite3
import tempfile
import time
import warnings
from contextlib import closing
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path

import nbformat

from attnlab.teaching.grading import (
    UNGRADABLE,
    Result,
    _replace,
    grade_submission,
    nbgrader_api,
)
from attnlab.teaching.sandbox import DEFAULT_LIMITS, Limits

Task = tuple[str, str]  # (assignment, student)


def _work_folder(course: Path, work: Path, template: Path) -> None:
    """Make ``work`` an nbgrader folder of its own: the course's configuration, its
    release and source linked, and a copy of the gradebook ``template``."""
    work.mkdir(parents=True)
    shutil.copy(course / "nbgrader_config.py", work / "nbgrader_config.py")
    for name in ("source", "release"):
        if (course / name).exists():
            (work / name).symlink_to(course / name, target_is_directory=True)
    if template.exists():
        shutil.copy(template, work / "gradebook.db")


def _record(work: Path, assignment: str, student: str) -> dict:
    """What nbgrader's gradebook in ``work`` holds of one submission: its timestamp
    and, per notebook, the flag, the late penalty, the grades and the comments."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{work / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission(assignment, student)
        return {
            "timestamp": submission.timestamp,
            "notebooks": {
                notebook.name: {
                    "flagged": notebook.flagged,
                    "late_submission_penalty": notebook.late_submission_penalty,
                    "grades": {
                        grade.name: (
                            grade.auto_score,
                            grade.manual_score,
                            grade.extra_credit,
                            grade.needs_manual_grade,
                        )
                        for grade in notebook.grades
                    },
                    "comments": {
                        comment.name: (comment.auto_comment, comment.manual_comment)
                        for comment in notebook.comments
                    },
                }
                for notebook in submission.notebooks
            },
        }


def merge(course: Path, assignment: str, student: str, record: dict) -> None:
    """Write one submission's ``record`` (from :func:`_record`) into the course's
    ``gradebook.db``, creating the student and the submission where needed."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        gradebook.update_or_create_student(student)
        stamp = record["timestamp"]
        kwargs = {} if stamp is None else {"timestamp": stamp.isoformat()}
        submission = gradebook.update_or_create_submission(
            assignment, student, **kwargs
        )
        for notebook in submission.notebooks:
            saved = record["notebooks"].get(notebook.name)
            if saved is None:
                continue
            notebook.flagged = saved["flagged"]
            notebook.late_submission_penalty = saved["late_submission_penalty"]
            for grade in notebook.grades:
                if grade.name in saved["grades"]:
                    (
                        grade.auto_score,
                        grade.manual_score,
                        grade.extra_credit,
                        grade.needs_manual_grade,
                    ) = saved["grades"][grade.name]
            for comment in notebook.comments:
                if comment.name in saved["comments"]:
                    comment.auto_comment, comment.manual_comment = saved["comments"][
                        comment.name
                    ]
        gradebook.db.commit()


def _work(
    connection: Connection,
    course: Path,
    work: Path,
    template: Path,
    sandbox: Limits | None,
    cell_seconds: float | None,
) -> None:
    """A worker process: grade each (assignment, student) received on
    ``connection`` in the folder ``work``, each notebook in a sandbox with the
    limits ``sandbox`` (None: none) and ``cell_seconds`` per cell (None: the
    course's); send back (Result, record or None)."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # the kernels share the cores
    warnings.filterwarnings("ignore", message=".*not in session.*")
    _work_folder(course, work, template)
    api = nbgrader_api(work, sandbox, hide=[course], cell_seconds=cell_seconds)
    while (task := connection.recv()) is not None:
        assignment, student = task
        start = time.perf_counter()
        try:
            result = grade_submission(api, course, assignment, student, work)
        except Exception as error:  # one submission must not stop the others
            reason = f"{type(error).__name__}: {error}"[:300]
            seconds = time.perf_counter() - start
            connection.send(
                (Result(student, assignment, UNGRADABLE, reason, {}, seconds), None)
            )
            continue
        record = None
        if (work / "autograded" / student / assignment).exists():
            record = _record(work, assignment, student)
            for folder in ("autograded", "feedback"):
                done = work / folder / student / assignment
                if done.exists():
                    _replace(done, course / folder / student / assignment)
                    shutil.rmtree(done)
        connection.send((result, record))


def _code_cells(course: Path, assignment: str) -> int:
    """How many code cells the released notebook of ``assignment`` has."""
    path = course / "release" / assignment / f"{assignment}.ipynb"
    return sum(
        c.cell_type == "code" for c in nbformat.read(path, as_version=4).cells
    )


@dataclass
class _Worker:
    process: multiprocessing.process.BaseProcess
    connection: Connection
    task: int | None = None  # index of the submission being graded
    started: float = 0.0


def grade_in_workers(
    course: Path,
    tasks: list[Task],
    workers: int,
    timeout: float | None,
    sandbox: Limits | None = DEFAULT_LIMITS,
) -> list[Result]:
    """Grade the (assignment, student) ``tasks`` of ``course``, ``workers`` at a
    time, each cell stopped after ``timeout`` seconds (None: the course's limit)
    and each notebook run in a sandbox with the limits ``sandbox`` (None: none);
    returns the results in the order of ``tasks``. With a ``timeout``, a worker
    still busy after that long for every code cell of the notebook, and two more,
    is killed."""
    context = multiprocessing.get_context("spawn")  # fresh interpreters
    results: list[Result | None] = [None] * len(tasks)
    pending = list(range(len(tasks)))
    scratch = Path(tempfile.mkdtemp(prefix="attnlab-grading-"))
    template = scratch / "gradebook.db"
    if (course / "gradebook.db").exists():  # a consistent snapshot, read once
        with (
            closing(sqlite3.connect(course / "gradebook.db")) as source,
            closing(sqlite3.connect(template)) as copy,
        ):
            source.backup(copy)
    started = 0
    slots: list[_Worker | None] = [None] * max(1, workers)
    cells = {assignment: _code_cells(course, assignment) for assignment, _ in tasks}

    def limit(worker: _Worker) -> float:
        """Seconds after which the worker's submission is stopped."""
        return timeout * (cells[tasks[worker.task][0]] + 2)

    def start() -> _Worker:
        nonlocal started
        started += 1
        parent, child = context.Pipe()
        process = context.Process(
            target=_work,
            args=(
                child,
                course,
                scratch / f"worker-{started}",
                template,
                sandbox,
                timeout,
            ),
            daemon=True,
        )
        process.start()
        child.close()
        return _Worker(process, parent)

    def finish(slot: int, result: Result, record: dict | None) -> None:
        worker = slots[slot]
        assignment, student = tasks[worker.task]
        if record is not None:
            merge(course, assignment, student, record)
        results[worker.task] = result
        worker.task = None

    def stop(slot: int, reason: str) -> None:
        worker = slots[slot]
        assignment, student = tasks[worker.task]
        worker.process.kill()
        worker.process.join()
        seconds = time.perf_counter() - worker.started
        results[worker.task] = Result(
            student, assignment, UNGRADABLE, reason, {}, seconds
        )
        slots[slot] = None

    try:
        while pending or any(w is not None and w.task is not None for w in slots):
            for slot, worker in enumerate(slots):
                if pending and (worker is None or worker.task is None):
                    worker = slots[slot] = worker or start()
                    worker.task, worker.started = pending.pop(0), time.perf_counter()
                    worker.connection.send(tasks[worker.task])
            busy = [(s, w) for s, w in enumerate(slots) if w and w.task is not None]
            deadline = None
            if timeout is not None:
                deadline = min(w.started + limit(w) for _, w in busy)
                deadline = max(0.0, deadline - time.perf_counter())
            wait(
                [w.connection for _, w in busy]
                + [w.process.sentinel for _, w in busy],
                timeout=deadline,
            )
            for slot, worker in busy:
                message = None
                if worker.connection.poll():
                    try:
                        message = worker.connection.recv()
                    except (EOFError, OSError):
                        message = None
                if message is not None:
                    finish(slot, *message)
                elif not worker.process.is_alive():
                    code = worker.process.exitcode
                    stop(
                        slot,
                        f"the grading process stopped (exit code {code}) while"
                        " running this notebook",
                    )
                elif (
                    timeout is not None
                    and time.perf_counter() - worker.started > limit(worker)
                ):
                    stop(
                        slot,
                        f"stopped after {limit(worker):g} s ({timeout:g} s for each"
                        " code cell, and two more): the notebook probably loops"
                        " or waits",
                    )
    finally:
        for worker in slots:
            if worker is None:
                continue
            if worker.task is None:
                worker.connection.send(None)
                worker.process.join(timeout=30)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
        shutil.rmtree(scratch, ignore_errors=True)
    return results
