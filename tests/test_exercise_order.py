"""No chapter states a written exercise's answer above the exercise.

A lecturer assigns a chapter as it is, so what a reader meets before an exercise must not hold its worked answer.
For every written exercise, each run of ``attnlab.edition.SHINGLE`` words of the worked answer (lower case, without
punctuation, math or directive lines) is searched in what the chapter shows above the exercise: its markdown cells
and the captions and alt text of its figures. A run the exercise's own cell holds, or one made only of the question's
words, restates the question and does not count (as ``attnlab.edition.solution_texts`` leaves out the question).
"""

import re

import nbformat
import pytest

from attnlab.edition import SHINGLE
from attnlab.teaching.release import exercises
from tests.notebook_files import CHAPTERS, read

# Display and inline math, and the lines of markup that are no prose: directive fences and their options.
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]*\$", re.DOTALL)
MARKUP = re.compile(r"^\s*(```|:::).*$|^\s*:[\w-]+:.*$", re.MULTILINE)


def words(text: str) -> list[str]:
    """The words of ``text``, lower case, without math, markup or punctuation."""
    return re.findall(r"[a-z0-9]+", MATH.sub(" ", MARKUP.sub(" ", text)).lower())


def runs(text: str) -> set[str]:
    """Every run of ``SHINGLE`` consecutive words of ``text``."""
    found = words(text)
    return {" ".join(found[i : i + SHINGLE]) for i in range(len(found) - SHINGLE + 1)}


def shown(cell: nbformat.NotebookNode) -> str:
    """The prose a reader meets in ``cell``: a markdown cell's text, a figure's caption and alt text."""
    if cell.cell_type == "markdown":
        return cell.source
    mystnb = cell.get("metadata", {}).get("mystnb", {})
    return "\n".join([mystnb.get("figure", {}).get("caption", ""), mystnb.get("image", {}).get("alt", "")])


def answers_above(nb: nbformat.NotebookNode) -> list[tuple[str, int, list[str]]]:
    """(exercise label, cell index, runs of the worked answer that the cell shows) for every cell above a written
    exercise that holds part of its worked answer."""
    found = []
    for exercise in exercises(nb):
        if exercise.kind != "written":
            continue
        question = nb.cells[exercise.question].source
        own = set(words(question))
        answer = {run for run in runs(nb.cells[exercise.answer].source) - runs(question)
                  if not set(run.split()) <= own}
        for index, cell in enumerate(nb.cells[: exercise.question]):
            if hits := sorted(answer & runs(shown(cell))):
                found.append((exercise.label, index, hits))
    return found


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_worked_answer_is_stated_above_its_exercise(path):
    found = answers_above(read(path))
    assert not found, "\n".join(f"{path.name}: the answer to {label} is in cell {index} above it: {hits}"
                                for label, index, hits in found)


QUESTION = "Why do the weights of the softmax of the scores sum to one?"
# The answer opens by restating the question in its own words, then answers it.
ANSWER = "Why do the scores of the softmax weights sum to one? Because the softmax divides every exponential by their total."


def planted(before: str, caption: str = "") -> nbformat.NotebookNode:
    """A chapter whose written exercise's worked answer is ``ANSWER``, below ``before`` and a figure ``caption``."""
    v4 = nbformat.v4
    figure = v4.new_code_cell("fig = None", metadata={"mystnb": {"figure": {"caption": caption, "name": "fig-x"}}})
    return v4.new_notebook(cells=[
        v4.new_markdown_cell("# A chapter\n\nThe softmax turns scores into weights."),
        v4.new_markdown_cell(before),
        figure,
        v4.new_markdown_cell(f"```{{exercise}} Weights\n:label: ex-planted\n\n{QUESTION}\n```"),
        v4.new_markdown_cell(f"```{{solution}} ex-planted\n:class: dropdown\n\n{ANSWER}\n```",
                             metadata={"tags": ["solution"], "attnlab": {"points": 1, "rubric": "the total"}}),
    ])


def test_the_search_finds_an_answer_planted_above_its_exercise():
    said = "Note that $w_i$ sums to one: the softmax **divides** every exponential by their total, always."
    assert [(label, index) for label, index, _ in answers_above(planted(said))] == [("ex-planted", 1)]
    assert [(label, index) for label, index, _ in answers_above(planted("Look.", caption=said))] == [("ex-planted", 2)]
    assert not answers_above(planted("Scores become weights; a sum is taken over the keys."))


def test_restating_the_question_is_no_answer():
    # the chapter may announce the question before it asks it: the runs it shares with the answer are made of the
    # question's words only
    announced = "Soon we ask: why do the scores of the softmax weights sum to one?"
    assert runs(announced) & runs(ANSWER)
    assert not answers_above(planted(announced))
