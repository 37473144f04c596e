"""The students' edition of the book: every chapter as the full edition shows it,
with the worked solutions and the solution code left out.

The full edition folds each worked solution under its exercise, so a course that
assigns the chapters cannot send its students to it. The students' edition is made
from the same executed notebooks (their outputs come from the book's execution
cache), so nothing runs twice and both editions show the same results. For every
exercise (:func:`attnlab.teaching.release.exercises`):

- a code exercise's solution cell keeps only the stub of the students' notebook
  (``# YOUR CODE HERE``), shown open, without outputs, and its check cell loses its
  outputs (they report on the worked solution);
- a written exercise's worked answer is left out;
- a cell that shows the library code an exercise asks for (``show_source``), in
  every chapter, or that is tagged ``answers-exercise`` becomes a note
  (:func:`attnlab.teaching.release.hide_revealing`), and a cell tagged
  ``output-answers-exercise`` (an experiment whose outcome a student is asked to
  predict) loses its outputs.

:func:`solution_texts` lists what must appear nowhere in that edition; the test of
the built edition searches every file of it for them.
"""

from __future__ import annotations

import re
from collections.abc import Collection

import nbformat

from attnlab.teaching.release import (
    ANSWER_OUTPUT_TAG,
    BEGIN,
    END,
    exercises,
    hide_revealing,
    strip_solution_code,
)

# A line of solution code shorter than this (``return out``) says nothing of the
# answer; a worked answer is compared as runs of this many words.
MIN_LINE, SHINGLE = 20, 8
# A line of code that ends in one of these continues on the next: a fragment.
OPEN = ("(", "[", "{", ",", ":")
# The tags with which the full edition folds a worked solution's code.
FOLDED = ("hide-input", "hide-cell", "hide-output")


def student_page(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The students' edition of the executed solution notebook ``nb``."""
    page = hide_revealing(nb)
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
    for cell in page.cells:
        if ANSWER_OUTPUT_TAG in cell.metadata.get("tags", []):
            cell.outputs, cell.execution_count = [], None
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


def code_lines(cells: list[nbformat.NotebookNode]) -> set[str]:
    """The stripped lines of the sources of the code cells among ``cells``."""
    return {
        line.strip()
        for cell in cells
        if cell.cell_type == "code"
        for line in cell.source.splitlines()
    }


def solution_texts(
    nb: nbformat.NotebookNode,
    other_code: Collection[str] = (),
    elsewhere: str = "",
) -> dict[str, list[str]]:
    """What of the solutions of the solution notebook ``nb`` the students' edition
    must not contain, by exercise label.

    For a code exercise: each complete line of its solution regions of at least
    :data:`MIN_LINE` characters (stripped; a line that ends in one of :data:`OPEN`
    is a fragment), less the code the book gives outside the solutions: this
    chapter's code cells before the exercise (a debugging exercise fixes given code)
    and ``other_code``, the code cells of the other chapters (:func:`code_lines`).
    Nothing else is left out: a solution line in the library source a cell shows, in
    an output, or in a later code cell is a leak.

    For a written exercise: each run of :data:`SHINGLE` words of the worked answer,
    less the runs of what the chapter says up to and including the question (an
    answer may quote the question and the equations it builds on) and of
    ``elsewhere`` (the rest of the book, whose prose a later chapter may repeat).
    """
    elsewhere_runs = shingles(elsewhere)
    texts: dict[str, list[str]] = {}
    for exercise in exercises(nb):
        source = nb.cells[exercise.answer].source
        if exercise.kind == "code":
            given = code_lines(nb.cells[: exercise.question]) | set(other_code)
            lines, inside = [], False
            for line in source.splitlines():
                line = line.strip()
                if line in (BEGIN, END):
                    inside = line == BEGIN
                elif inside and len(line) >= MIN_LINE and not line.endswith(OPEN):
                    lines.append(line)
            texts[exercise.label] = [x for x in lines if x not in given]
        else:
            body = re.sub(r"^\s*(```|:::).*$", "", source, flags=re.MULTILINE)
            before = "\n".join(c.source for c in nb.cells[: exercise.question + 1])
            known = shingles(before) | elsewhere_runs
            texts[exercise.label] = sorted(shingles(body) - known)
    return texts
