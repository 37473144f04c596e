"""Grading a class (attnlab.teaching.grading): taking submissions in, the hidden tests added at
grading, feedback without internals, and the CSV. The end-to-end run with the real
nbgrader is `make grade` (.ci/grade_homework.py)."""

import copy
import csv

import nbformat
import pytest

from attnlab.teaching.grading import (
    GRADED,
    KERNEL_DIED,
    NOT_SUBMITTED,
    RAISED_INTERRUPT,
    TIMEOUT_MESSAGE,
    UNGRADABLE,
    Result,
    _failure,
    add_hidden_tests,
    explain_errors,
    handed_in,
    links,
    read_roster,
    take_in,
    timeout_message,
    write_csv,
)
from attnlab.teaching.release import BEGIN_HIDDEN, release

v4 = nbformat.v4


def graded(cell, grade_id: str, *, grade: bool, solution: bool, locked: bool, points=None):
    cell.metadata["nbgrader"] = {"grade": grade, "grade_id": grade_id, "locked": locked, "solution": solution,
                                 "schema_version": 3, "task": False, "cell_type": cell.cell_type,
                                 "checksum": "abc"}
    if points is not None:
        cell.metadata["nbgrader"]["points"] = points
    return cell


def released() -> nbformat.NotebookNode:
    nb = v4.new_notebook()
    nb.nbformat_minor = 4
    nb.cells = [
        graded(v4.new_code_cell("from attnlab.exercises import check_sharpen"), "imports",
               grade=False, solution=False, locked=True),
        graded(v4.new_markdown_cell("Write f."), "ex-a-question", grade=False, solution=False, locked=True),
        graded(v4.new_code_cell("def f(x):\n    raise NotImplementedError()"), "ex-a",
               grade=False, solution=True, locked=False),
        graded(v4.new_code_cell("check_sharpen(f)"), "ex-a-check", grade=True, solution=False, locked=True,
               points=2.0),
        v4.new_markdown_cell("The end."),
    ]
    for cell in nb.cells:
        cell.pop("id", None)
    return nb


def write(path, nb) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def test_a_missing_notebook_is_not_submitted(tmp_path):
    assert take_in(tmp_path / "nothing.ipynb", released()).status == NOT_SUBMITTED


@pytest.mark.parametrize(
    ("content", "reason"),
    [("", "empty file"), ("   \n", "empty file"), ("These are my answers: 42.", "not a notebook"),
     ('{"a": 1}', "not a"), ('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}', "none of the")],
)
def test_what_is_not_a_submitted_notebook_could_not_be_graded(tmp_path, content, reason):
    path = tmp_path / "a.ipynb"
    path.write_text(content)
    intake = take_in(path, released())
    assert intake.status == UNGRADABLE and intake.reason.startswith(reason), intake


def test_an_intact_submission_is_taken_in_as_it_is(tmp_path):
    path = tmp_path / "a.ipynb"
    submitted = released()
    submitted.cells[2].source = "def f(x):\n    return x"
    write(path, submitted)
    before = path.read_text()
    intake = take_in(path, released())
    assert intake.status == GRADED and intake.notes == [] and path.read_text() == before


def test_a_deleted_check_cell_is_restored_after_its_answer(tmp_path):
    path = tmp_path / "a.ipynb"
    submitted = released()
    del submitted.cells[3]
    submitted.cells.insert(1, v4.new_code_cell("print('my own cell')"))
    submitted.cells[-1].pop("id", None)
    submitted.cells[1].pop("id", None)
    write(path, submitted)
    intake = take_in(path, released())
    assert intake.notes == ["deleted cells restored: ex-a-check"]
    cells = nbformat.read(path, as_version=4).cells
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in cells]
    assert ids == ["imports", None, "ex-a-question", "ex-a", "ex-a-check", None]


def test_a_check_cell_moved_above_its_answer_is_put_back(tmp_path):
    path = tmp_path / "a.ipynb"
    submitted = released()
    submitted.cells.insert(1, submitted.cells.pop(3))
    write(path, submitted)
    intake = take_in(path, released())
    assert intake.notes == ["moved check cells put back: ex-a-check"]
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nbformat.read(path, as_version=4).cells]
    assert ids == ["imports", "ex-a-question", "ex-a", "ex-a-check", None]


def test_edited_grading_metadata_is_restored(tmp_path):
    path = tmp_path / "a.ipynb"
    submitted = released()
    submitted.cells[3].metadata["nbgrader"]["points"] = 100.0
    submitted.cells[3].metadata["nbgrader"]["solution"] = True
    for cell in submitted.cells:
        cell.metadata.get("nbgrader", {}).pop("checksum", None)  # as `make student` writes it
    write(path, submitted)
    intake = take_in(path, released())
    assert intake.notes == ["nbgrader metadata restored in ex-a-check"]
    assert nbformat.read(path, as_version=4).cells[3].metadata["nbgrader"] == released().cells[3].metadata["nbgrader"]


def test_a_check_cell_made_markdown_is_a_code_cell_again(tmp_path):
    path = tmp_path / "a.ipynb"
    submitted = released()
    cell = submitted.cells[3]
    submitted.cells[3] = v4.new_markdown_cell(cell.source, metadata=cell.metadata)
    submitted.cells[3].pop("id", None)
    write(path, submitted)
    intake = take_in(path, released())
    assert intake.status == GRADED and intake.notes[0] == "cell type restored in ex-a-check"
    check = nbformat.read(path, as_version=4).cells[3]
    assert check.cell_type == "code" and check.source == "check_sharpen(f)" and check.outputs == []


def test_a_renamed_grade_id_is_given_back_and_the_answer_kept(tmp_path):
    path = tmp_path / "a.ipynb"
    submitted = released()
    submitted.cells[2].source = "def f(x):\n    return x"
    submitted.cells[2].metadata["nbgrader"]["grade_id"] = "my-answer"
    write(path, submitted)
    intake = take_in(path, released())
    assert intake.notes[0] == "grade id my-answer renamed back to ex-a"
    cells = nbformat.read(path, as_version=4).cells
    assert [c.metadata.get("nbgrader", {}).get("grade_id") for c in cells] == [
        "imports", "ex-a-question", "ex-a", "ex-a-check", None]
    assert cells[2].source == "def f(x):\n    return x"


def test_a_pasted_copy_of_a_graded_cell_becomes_an_ordinary_cell(tmp_path):
    """Copy and paste in Jupyter keeps the grade id; nbgrader refuses a notebook with two."""
    path = tmp_path / "a.ipynb"
    submitted = released()
    submitted.cells[2].source = "def f(x):\n    return x"
    submitted.cells.insert(4, copy.deepcopy(submitted.cells[3]))  # the check cell pasted
    submitted.cells.insert(3, copy.deepcopy(submitted.cells[2]))  # the answer pasted
    submitted.cells[3].source = "def f(x):\n    return 2 * x"
    write(path, submitted)
    intake = take_in(path, released())
    assert intake.status == GRADED
    assert intake.notes == ["copies of graded cells made ordinary cells: ex-a, ex-a-check"]
    cells = nbformat.read(path, as_version=4).cells
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in cells]
    assert ids == ["imports", "ex-a-question", "ex-a", None, "ex-a-check", None, None]
    assert cells[3].source == "def f(x):\n    return 2 * x"  # the copy's code is kept


def test_links_and_special_files_in_a_submission_are_found(tmp_path):
    course = tmp_path / "course"
    folder = course / "submitted" / "ana" / "ch"
    write(folder / "ch.ipynb", released())
    assert links(course, "ana", "ch") == []
    secret = tmp_path / "source.ipynb"
    write(secret, released())
    (folder / "data").mkdir()
    (folder / "data" / "gradebook.db").symlink_to(tmp_path / "gradebook.db")
    (folder / "hard.ipynb").hardlink_to(secret)
    assert links(course, "ana", "ch") == ["ana/ch/data/gradebook.db", "ana/ch/hard.ipynb"]
    linked = course / "submitted" / "bo"
    linked.mkdir(parents=True)
    (linked / "ch").symlink_to(folder)  # a chapter folder that is a link
    assert links(course, "bo", "ch") == ["bo/ch"]
    (course / "submitted" / "cy").symlink_to(course / "submitted" / "ana")
    assert links(course, "cy", "ch") == ["cy"]


def test_the_notebook_as_handed_in_is_kept_before_repairs(tmp_path):
    path, kept = tmp_path / "a.ipynb", tmp_path / "handed-in" / "a.ipynb"
    submitted = released()
    del submitted.cells[3]
    write(path, submitted)
    before = path.read_bytes()
    assert take_in(path, released(), keep=kept).notes == ["deleted cells restored: ex-a-check"]
    assert kept.read_bytes() == before and path.read_bytes() != before


@pytest.mark.parametrize("name", ["Copy of 05_luong_attention.ipynb", "05_luong_attention (1).ipynb"])
def test_a_notebook_saved_under_another_name_is_found(tmp_path, name):
    write(tmp_path / name, released())
    assert handed_in(tmp_path, "05_luong_attention") == tmp_path / name
    write(tmp_path / "scratch.ipynb", released())  # two notebooks: the one named as the chapter's
    assert handed_in(tmp_path, "05_luong_attention") == tmp_path / name
    write(tmp_path / "05_luong_attention.ipynb", released())
    assert handed_in(tmp_path, "05_luong_attention") == tmp_path / "05_luong_attention.ipynb"
    assert handed_in(tmp_path / "nobody", "05_luong_attention") == tmp_path / "nobody" / "05_luong_attention.ipynb"


def test_the_hidden_tests_are_added_at_grading_to_check_cells_only():
    nb = released()
    nb, _ = add_hidden_tests(nb, {})
    source = nb.cells[3].source
    grade_id = nb.cells[3].metadata["nbgrader"]["grade_id"]
    assert source.startswith(BEGIN_HIDDEN) and source.endswith("\ncheck_sharpen(f)")  # before the cell's own code
    assert f"serve({grade_id!r}, [('check_sharpen', (f,), {{}})])" in source
    assert all(BEGIN_HIDDEN not in c.source for i, c in enumerate(nb.cells) if i != 3)
    again, _ = add_hidden_tests(copy.deepcopy(nb), {})
    assert again.cells[3].source == nb.cells[3].source  # added once


def test_the_release_has_no_hidden_tests_so_honest_submissions_match_it():
    nb = released()
    assert release(nb).cells[3].source == "check_sharpen(f)"


def error(ename: str, evalue: str) -> nbformat.NotebookNode:
    return v4.new_output("error", ename=ename, evalue=evalue,
                         traceback=["\x1b[31mTraceback\x1b[0m", 'File "/work/main/src/attnlab/x.py", line 3', evalue])


def test_feedback_explains_time_outs_and_syntax_errors_and_shows_no_internals():
    nb = released()
    nb, _ = add_hidden_tests(nb, {})
    nb.cells[2].outputs = [error("SyntaxError", "invalid syntax (3581.py, line 2)")]
    nb.cells[3].outputs = [error("NameError", "name 'f' is not defined")]
    # what nbgrader's Execute leaves in a cell that ran out of time: the interrupt, then error_on_timeout's error
    loop = v4.new_code_cell("while True: pass", outputs=[error("KeyboardInterrupt", ""),
                                                          error("TimeoutError", TIMEOUT_MESSAGE)])
    raised = v4.new_code_cell("raise KeyboardInterrupt", outputs=[error("KeyboardInterrupt", "")])
    nb.cells += [loop, raised]
    nb, _ = explain_errors(nb, {})
    assert [(o.ename, o.evalue) for o in raised.outputs] == [("KeyboardInterrupt", RAISED_INTERRUPT)]
    assert nb.cells[3].source == "check_sharpen(f)"
    check = nb.cells[3].outputs[0]
    assert check.ename == "SyntaxError" and "syntax error" in check.evalue and "invalid syntax" in check.evalue
    assert [o.ename for o in loop.outputs] == ["TimeoutError"] and loop.outputs[0].evalue == TIMEOUT_MESSAGE
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            assert output.traceback == [f"{output.ename}: {output.evalue}"]
            assert "/work" not in str(output)


def test_feedback_shows_no_path_of_the_grading_machine():
    nb = released()
    warned = ("/tmp/ipykernel_4746/3719.py:5: UserWarning: a warning from my own code\n"
              "/srv/course/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py:12: FutureWarning: x\n"
              "see https://docs.pytorch.org/docs/stable/a/b.html, 5/10 right\n")
    nb.cells[2].outputs = [v4.new_output("stream", name="stderr", text=warned),
                           error("OSError", "no file /srv/course/source/01/01.ipynb")]
    nb, _ = explain_errors(nb, {})
    stream, failed = nb.cells[2].outputs
    assert stream.text == ("<your cell>:5: UserWarning: a warning from my own code\n"
                           "module.py:12: FutureWarning: x\n"
                           "see https://docs.pytorch.org/docs/stable/a/b.html, 5/10 right\n")
    assert failed.evalue == "no file 01.ipynb" and failed.traceback == ["OSError: no file 01.ipynb"]


def test_nbgraders_failure_is_reported_by_its_cause():
    see_above = ("nbgrader.converters.base.NbGraderException: Please see the the above traceback for details on the"
                 " specific errors on the above failures.")
    died = {"success": False, "error": f"Traceback (most recent call last):\n{see_above}\n",
            "log": "    raise DeadKernelError('Kernel died') from None\n"
                   "    nbclient.exceptions.DeadKernelError: Kernel died\n[ERROR] There was an error processing"}
    assert _failure(died) == KERNEL_DIED
    failed = {"success": False, "error": see_above,
              "log": "    sqlite3.OperationalError: database is locked\n[ERROR] Please see the the above traceback"}
    assert _failure(failed) == "sqlite3.OperationalError: database is locked"
    assert _failure({"success": False, "error": "", "log": "ValueError: no /srv/course/x/y.ipynb"}) == (
        "ValueError: no y.ipynb")
    assert _failure({"success": True}) is None


def test_the_csv_has_a_row_per_submission_with_its_status(tmp_path):
    results = [
        Result("ana", "01", GRADED, "deleted cells restored: ex-a-check", {"ex-a-check": 2.0, "ex-b": None}, 3.0),
        Result("bo", "01", UNGRADABLE, "empty file", {}, 0.0),
        Result("cy", "01", NOT_SUBMITTED, "", {}, 0.0),
    ]
    write_csv(results, tmp_path / "grades.csv")
    rows = list(csv.DictReader(open(tmp_path / "grades.csv")))
    assert [(r["student"], r["status"], r["reason"], r["total"]) for r in rows] == [
        ("ana", GRADED, "deleted cells restored: ex-a-check", "2"),
        ("bo", UNGRADABLE, "empty file", "0"),
        ("cy", NOT_SUBMITTED, "", "0"),
    ]
    assert rows[0]["ex-a-check"] == "2" and rows[0]["ex-b"] == ""


def test_a_time_out_keeps_the_limit_it_was_given():
    nb = released()
    given = timeout_message(20)
    nb.cells[2].outputs = [error("KeyboardInterrupt", ""), error("TimeoutError", given)]
    nb, _ = explain_errors(nb, {})
    assert [(o.ename, o.evalue) for o in nb.cells[2].outputs] == [("TimeoutError", given)]
    assert "20 s" in given and given != TIMEOUT_MESSAGE


@pytest.mark.parametrize("text", ["student,name\nana,Ana\nbo,Bo\n", "ana\nbo\n\n", "ana,x\n bo ,y\n"])
def test_a_roster_is_read_with_or_without_a_header(tmp_path, text):
    path = tmp_path / "roster.csv"
    path.write_text(text)
    assert read_roster(path) == ["ana", "bo"]


def test_an_empty_roster_is_refused(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text("\n")
    with pytest.raises(ValueError, match="expected student ids"):
        read_roster(path)
