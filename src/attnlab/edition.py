"""The students' edition of the book: every chapter as the full edition shows it,
with the worked solutions and the solution code left out.

The full edition folds each worked solution under its exercise, so a course that
assigns the chapters cannot send its students to it. The students' edition is made
from the same executed notebooks (their outputs come from the book's execution
cache), so nothing runs twice and both editions show the same results. For every
exercise (:func:`attnlab.homework.exercises`):

- a code exercise's solution cell keeps only the stub of the students' notebook
  (``# YOUR CODE HERE``), shown open, without outputs, and its check cell loses its
  outputs (they report on the worked solution);
- a written exercise's worked answer is left out.

:func:`solution_texts` lists what must appear nowhere in that edition; the test of
the built edition searches every file of it for them.
"""

from __future__ import annotations

import copy
import re

import nbformat

from attnlab.homework import (
    BEGIN,
    END,
    exercises,
    strip_solution_code,
)

# A line of solution code shorter than this (``return out``) says nothing of the
# answer; a worked answer is compared as runs of this many words.
MIN_LINE, SHINGLE = 20, 8
# The tags with which the full edition folds a worked solution's code.
FOLDED = ("hide-input", "hide-cell", "hide-output")


def student_page(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The students' edition of the executed solution notebook ``nb``."""
    page = copy.deepcopy(nb)
    left_out = set()
    for exercise in exercises(nb):
        if exercise.kind == "code":
            for index in (exercise.answer, exercise.check):
                page.cells[index].outputs = []
                page.cells[index].execution_count = None
            answer = page.cells[exercise.answer]
            answer.source = strip_solution_code(answer.source)
            # the full edition folds the worked solution; the stub is shown open
            tags = answer.metadata.get("tags", [])
            answer.metadata["tags"] = [t for t in tags if t not in FOLDED]
        else:
            left_out.add(exercise.answer)
    page.cells = [c for i, c in enumerate(page.cells) if i not in left_out]
    return page


def words(text: str) -> list[str]:
    """The words of ``text``, lower case, without markup or punctuation."""
    return re.findall(r"[a-z0-9]+", text.lower())


def shingles(text: str) -> set[str]:
    """Every run of :data:`SHINGLE` consecutive words of ``text``."""
    found = words(text)
    return {
        " ".join(found[i : i + SHINGLE]) for i in range(len(found) - SHINGLE + 1)
    }


def _output_text(output: nbformat.NotebookNode) -> str:
    """The text an output shows (streams, plain text, HTML, Markdown; not images)."""
    if "text" in output:
        return "".join(output["text"])
    data = output.get("data", {})
    return "\n".join(
        "".join(data[kind])
        for kind in ("text/plain", "text/html", "text/markdown", "text/latex")
        if kind in data
    )


def shown_outside_solutions(nb: nbformat.NotebookNode) -> str:
    """The text the notebook shows outside its solutions: every other cell's source,
    and the outputs of the cells other than the solution and check cells."""
    found = exercises(nb)
    answers = {e.answer for e in found}
    checks = {e.check for e in found if e.check is not None}
    return "\n".join(
        [c.source for i, c in enumerate(nb.cells) if i not in answers]
        + [
            _output_text(output)
            for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and i not in answers | checks
            for output in c.get("outputs", [])
        ]
    )


def solution_texts(
    nb: nbformat.NotebookNode, also_shown: str = ""
) -> dict[str, list[str]]:
    """What of the solutions of the (executed or not) solution notebook ``nb`` the
    students' edition must not contain, by exercise label.

    For a code exercise: each line of its solution regions of at least
    :data:`MIN_LINE` characters (stripped). For a written exercise: each run of
    :data:`SHINGLE` words of the worked answer. Left out of both: what the book
    shows outside the solutions anyway, in this notebook
    (:func:`shown_outside_solutions`: another cell's source, an output such as the
    library's source that a later cell shows, the question the answer quotes) or in
    ``also_shown`` (the rest of the book).
    """
    found = exercises(nb)
    elsewhere = shown_outside_solutions(nb) + "\n" + also_shown
    elsewhere_shingles = shingles(elsewhere)
    texts: dict[str, list[str]] = {}
    for exercise in found:
        source = nb.cells[exercise.answer].source
        if exercise.kind == "code":
            lines, inside = [], False
            for line in source.splitlines():
                if line.strip() in (BEGIN, END):
                    inside = line.strip() == BEGIN
                elif inside and len(line.strip()) >= MIN_LINE:
                    lines.append(line.strip())
            texts[exercise.label] = [x for x in lines if x not in elsewhere]
        else:
            body = re.sub(r"^\s*(```|:::).*$", "", source, flags=re.MULTILINE)
            texts[exercise.label] = sorted(shingles(body) - elsewhere_shingles)
    return texts
