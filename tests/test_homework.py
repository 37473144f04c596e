"""The homework pipeline: solution notebooks -> nbgrader source and students' notebooks whose checks fail until solved.

The end-to-end run with the real nbgrader (release, autograde, export) is `make grade` (.ci/grade_homework.py).
"""

import ast
import inspect

import nbformat
import pytest
import torch

from attnlab.exercises import ExerciseError
from attnlab.exercises._checking import CHECKS, _code_objects
from attnlab.teaching.release import (
    BEGIN_HIDDEN,
    END_HIDDEN,
    TEXT_STUB,
    course_source,
    drop_result_asserts,
    exercises,
    hidden_tests,
    main,
    solution_code,
    strip_solution_code,
    student_version,
)
from attnlab.teaching.release import (
    notebook_imports as imports_of,
)
from tests.notebook_files import CHAPTERS, code_cells, read

IDS = [p.stem for p in CHAPTERS]
SOLVED = """def f(x):
    \"\"\"Doc.\"\"\"
    ### BEGIN SOLUTION
    y = x + 1
    return y
    ### END SOLUTION

z = 1
### BEGIN SOLUTION
z = 2
### END SOLUTION"""


def test_regions_become_stubs_at_their_indentation():
    assert strip_solution_code(SOLVED) == (
        'def f(x):\n    """Doc."""\n    # YOUR CODE HERE\n    raise NotImplementedError()\n\nz = 1\n'
        "# YOUR CODE HERE\nraise NotImplementedError()"
    )


def test_solution_code_keeps_the_answer_without_markers():
    assert solution_code(SOLVED) == 'def f(x):\n    """Doc."""\n    y = x + 1\n    return y\n\nz = 1\nz = 2'


def test_code_without_regions_is_unchanged():
    assert strip_solution_code("a = 1\nb = 2") == "a = 1\nb = 2"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("### BEGIN SOLUTION\nx = 1", "never closed"),
        ("x = 1\n### END SOLUTION", "without a matching"),
        ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION", "inside an open solution region"),
    ],
)
def test_broken_markers_are_reported(source, message):
    with pytest.raises(ValueError, match=message):
        strip_solution_code(source)


def small_notebook(points: int = 3) -> nbformat.NotebookNode:
    """A notebook with one code exercise and one written exercise, marked as CONTRIBUTING.md says."""
    v4 = nbformat.v4
    nb = v4.new_notebook()
    nb.cells = [
        v4.new_code_cell("import torch\nfrom attnlab.exercises import check_sharpen"),
        v4.new_markdown_cell("```{exercise} Sharpen\n:label: ex-demo-sharpen\n\nWrite it.\n```"),
        v4.new_code_cell(SOLVED, metadata={"tags": ["hide-input", "exercise-extend"]}),
        v4.new_code_cell("check_sharpen(f)", metadata={"attnlab": {"points": points}},
                         execution_count=3, outputs=[v4.new_output("stream", text="Well done")]),
        v4.new_markdown_cell("```{exercise} Why\n:label: ex-demo-why\n\nExplain.\n```"),
        v4.new_markdown_cell("```{solution} ex-demo-why\n:class: dropdown\n\nBecause.\n```",
                             metadata={"tags": ["solution"], "attnlab": {"points": 2, "rubric": "SECRET RUBRIC"}}),
    ]
    return nb


def test_exercises_are_found_with_their_cells_and_points():
    code, written = exercises(small_notebook())
    assert (code.label, code.kind, code.question, code.answer, code.check, code.points, code.tags) == (
        "ex-demo-sharpen", "code", 1, 2, 3, 3.0, ["exercise-extend"])
    assert (written.label, written.kind, written.answer, written.points, written.rubric) == (
        "ex-demo-why", "written", 5, 2.0, "SECRET RUBRIC")


@pytest.mark.parametrize(("edit", "message"), [
    (lambda nb: nb.cells[1].update(source="```{exercise} Sharpen\n\nWrite it.\n```"), "needs a :label:"),
    (lambda nb: nb.cells[4].update(source=nb.cells[1].source), "used twice"),
    (lambda nb: nb.cells[5].metadata["attnlab"].pop("rubric"), "needs a rubric"),
    (lambda nb: nb.cells.pop(3), "followed by its check cell"),
    (lambda nb: nb.cells.pop(5), "neither a solution cell nor a worked answer"),
    (lambda nb: nb.cells.pop(1), "needs an {exercise} cell above it"),
], ids=["no-label", "duplicate-label", "no-rubric", "no-check", "no-answer", "no-question"])
def test_broken_conventions_are_reported(edit, message):
    nb = small_notebook()
    edit(nb)
    with pytest.raises(ValueError, match=message):
        exercises(nb)


def test_course_source_marks_cells_for_nbgrader():
    nb = small_notebook()
    source = course_source(nb)
    grading = [cell.metadata.get("nbgrader") for cell in source.cells]
    assert [g and (g["grade_id"], g["grade"], g["solution"], g["locked"], g.get("points")) for g in grading] == [
        ("imports", False, False, True, None),
        ("ex-demo-sharpen-question", False, False, True, None),
        ("ex-demo-sharpen", False, True, False, None),
        ("ex-demo-sharpen-check", True, False, True, 3.0),
        ("ex-demo-why-question", False, False, True, None),
        ("ex-demo-why", True, True, False, 2.0),
    ]
    assert source.cells[3].source == "check_sharpen(f)"  # hidden tests are added at grading only
    assert "SECRET RUBRIC" in source.cells[5].source and "2 points" in source.cells[5].source
    assert all("attnlab" not in cell.metadata for cell in source.cells)
    assert source.cells[3].outputs == [] and source.cells[3].execution_count is None
    assert "attnlab" in nb.cells[3].metadata and BEGIN_HIDDEN not in nb.cells[3].source  # input untouched


def test_student_version_is_the_release_without_answers_rubrics_or_hidden_tests():
    nb = small_notebook()
    student = student_version(nb)
    assert len(student.cells) == len(nb.cells)
    text = nbformat.writes(student)
    for secret in ("y = x + 1", "z = 2", "Because.", "SECRET RUBRIC", BEGIN_HIDDEN, "seed=None", "Well done"):
        assert secret not in text, secret
    assert "raise NotImplementedError()" in student.cells[2].source
    assert student.cells[5].source == TEXT_STUB
    assert student.cells[3].metadata["nbgrader"]["points"] == 3.0
    assert student.cells[3].metadata["editable"] is False and student.cells[2].metadata["deletable"] is False
    assert "y = x + 1" in nb.cells[2].source  # the solution notebook is untouched


def right_lookup(query, keys, values):
    weights = torch.softmax(keys @ query, dim=-1)
    return weights @ values, weights


def uniform_lookup(query, keys, values):
    weights = torch.full((keys.shape[0],), 1 / keys.shape[0])
    return weights @ values, weights


def run_hidden(answer) -> None:
    """The hidden tests of a check cell; they raise the ExerciseError of a fresh import,
    an AssertionError."""
    exec(hidden_tests("check_soft_lookup(answer, seed=3)", "ex-check"), {"answer": answer})


def test_hidden_tests_grade_with_fresh_inputs(capsys):
    hidden = hidden_tests("x = 1\ncheck_model(model, accuracy, seed=3)\nprint(x)", "ex-check")
    assert hidden.splitlines()[0] == BEGIN_HIDDEN and hidden.splitlines()[-1] == END_HIDDEN
    assert "serve('ex-check', [('check_model', (model, accuracy), {})])" in hidden
    one = hidden_tests("check_x(f, steps=2)", "ex-check")
    assert "serve('ex-check', [('check_x', (f,), {'steps': 2})])" in one
    with pytest.raises(ValueError, match="no check_"):
        hidden_tests("print(1)")
    run_hidden(right_lookup)
    assert "passed" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="soft_lookup"):
        run_hidden(uniform_lookup)


def test_library_modules_that_imported_from_the_checks_are_no_tampering(capsys):
    import attnlab.teaching.grading  # noqa: F401 -- it imports from attnlab.exercises, which the hidden tests re-import

    run_hidden(right_lookup)
    run_hidden(right_lookup)
    assert capsys.readouterr().out.count("passed") == 2


def test_rebinding_a_check_or_patching_its_helpers_gains_nothing(monkeypatch):
    import attnlab.exercises as public
    import attnlab.exercises._checking as helpers
    import attnlab.exercises.memory as memory

    monkeypatch.setattr(public, "check_soft_lookup", lambda *args, **kwargs: None)
    monkeypatch.setattr(memory, "check_soft_lookup", lambda *args, **kwargs: None)
    monkeypatch.setattr(helpers, "expect_close", lambda *args, **kwargs: None)
    monkeypatch.setattr(memory, "expect_close", lambda *args, **kwargs: None)
    with pytest.raises(AssertionError, match="soft_lookup.s weights is wrong"):
        run_hidden(uniform_lookup)
    run_hidden(right_lookup)  # a right answer beside the tampering still passes
    assert public.check_soft_lookup(uniform_lookup) is None  # the notebook's own binding is left as it was


def test_patching_the_library_is_reported(monkeypatch):
    import attnlab.attention as attention

    monkeypatch.setattr(attention, "masked_softmax", lambda scores, mask=None: scores)
    with pytest.raises(AssertionError, match="the course's code was changed in this notebook .*attention.masked_softmax"):
        run_hidden(right_lookup)


def test_an_answer_that_patches_the_checks_while_it_runs_is_reported():
    def sneaky(query, keys, values):
        import sys

        sys.modules["attnlab.exercises.memory"].expect_close = lambda *args, **kwargs: None
        return uniform_lookup(query, keys, values)

    with pytest.raises(AssertionError, match="the course's code was changed in this notebook"):
        run_hidden(sneaky)


def test_result_asserts_are_dropped_for_quick_grading_only_in_result_cells():
    v4 = nbformat.v4
    nb = v4.new_notebook()
    nb.cells = [v4.new_code_cell("assert 1 > 2\nfor i in range(2):\n    assert i > 5\nprint('kept')",
                                 metadata={"tags": ["nbval-skip"]}),
                v4.new_code_cell("assert 1 > 2")]
    nb, _ = drop_result_asserts(nb, {})
    namespace: dict = {}
    exec(nb.cells[0].source, namespace)  # runs: no assertion left
    assert "print('kept')" in nb.cells[0].source and "quick mode" in nb.cells[0].source
    assert nb.cells[1].source == "assert 1 > 2"


def test_result_checks_with_expect_are_dropped_for_quick_grading():
    v4 = nbformat.v4
    nb = v4.new_notebook()
    nb.cells = [v4.new_code_cell("x = 0.1\nexpect(x > 0.9, 'high', x)\nprint('kept')", metadata={"tags": ["nbval-skip"]}),
                v4.new_code_cell("expect(x > 0.9, 'high', x)")]
    nb, _ = drop_result_asserts(nb, {})
    assert "expect(" not in nb.cells[0].source and "print('kept')" in nb.cells[0].source
    exec(nb.cells[0].source, {})  # runs without the check, which is not even defined here
    assert nb.cells[1].source == "expect(x > 0.9, 'high', x)"


def test_command_line_writes_every_students_notebook(tmp_path):
    main(["notebooks", str(tmp_path)])
    written = sorted(p.name for p in tmp_path.glob("*.ipynb"))
    assert written == [p.name for p in CHAPTERS]
    for path in tmp_path.glob("*.ipynb"):
        text = path.read_text()
        assert "### BEGIN SOLUTION" not in text and BEGIN_HIDDEN not in text and "rubric" not in text.lower()
        assert all(not c.get("outputs") for c in code_cells(read(path)))


def test_command_line_writes_an_nbgrader_course(tmp_path):
    main(["course", "notebooks", str(tmp_path)])
    assert "ATTNLAB_QUICK" in (tmp_path / "nbgrader_config.py").read_text()
    for path in CHAPTERS:
        assert (tmp_path / "source" / path.stem / path.name).exists()


def test_command_line_without_arguments_prints_its_help(capsys):
    main([])
    assert "student" in capsys.readouterr().out


# The chapters themselves.


def called_checks(source: str) -> list[str]:
    return [node.func.id for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.startswith("check_")]


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_each_chapter_has_graded_exercises_of_every_kind(path):
    found = exercises(read(path))
    code = [e for e in found if e.kind == "code"]
    assert len(code) >= 3, f"{path.name}: {len(code)} code exercises, at least 3 wanted"
    assert any("exercise-experiment" in e.tags for e in found), f"{path.name} has no experiment"
    assert any({"exercise-debug", "exercise-extend"} & set(e.tags) for e in code), f"{path.name}: no debug/extend"


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_solutions_fold_in_the_book_and_checks_draw_fresh_inputs_when_asked(path):
    nb = read(path)
    for exercise in exercises(nb):
        if exercise.kind != "code":
            continue
        assert "hide-input" in nb.cells[exercise.answer].metadata.get("tags", []), exercise.label
        for name in called_checks(nb.cells[exercise.check].source):
            assert name in CHECKS, f"{exercise.label}: {name} is not a registered check (@exercise_check)"
            assert "seed" in inspect.signature(CHECKS[name].function).parameters, name


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_no_answer_is_shown_before_its_exercise(path):
    nb = read(path)
    namespace: dict = {}
    exec(imports_of(nb), namespace)
    for exercise in exercises(nb):
        if exercise.kind != "code":
            continue
        exercised = {code for name in called_checks(nb.cells[exercise.check].source)
                     for obj in CHECKS[name].exercised for code in _code_objects(obj)}
        for cell in nb.cells[: exercise.question]:
            if cell.cell_type != "code":
                continue
            for node in ast.walk(ast.parse("\n".join(
                    line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!"))))):
                if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "show_source":
                    shown = eval(ast.unparse(node.args[0]), namespace)
                    assert not exercised & set(_code_objects(shown)), (
                        f"{path.name}: show_source({ast.unparse(node.args[0])}) comes before {exercise.label}")


def test_the_code_a_check_forbids_is_the_library_s_own_not_a_decorator_s():
    class Library:
        @torch.no_grad()
        def decode(self, x):
            return x

        @staticmethod
        def helper(x):
            return x

    @torch.no_grad()
    def students_own(x):  # decorated as the library's method is
        return x

    codes = set(_code_objects(Library))
    assert codes == {inspect.unwrap(Library.decode).__code__, Library.helper.__code__}
    assert students_own.__code__ not in codes  # the wrapper torch shares is not forbidden
    assert _code_objects(Library.decode) == [inspect.unwrap(Library.decode).__code__]


def isolated_pairs(nb: nbformat.NotebookNode, cells: list | None = None) -> list[tuple[str, str]]:
    """(solution cell, check cell) of every code exercise of ``nb`` that is not an experiment, read from ``cells``
    (the students' version's, which has the same cells in the same order) or from ``nb``'s own."""
    cells = nb.cells if cells is None else cells
    return [(cells[e.answer].source, cells[e.check].source) for e in exercises(nb)
            if e.kind == "code" and "exercise-experiment" not in e.tags]


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_students_checks_fail_with_the_stub_message(path):
    nb = read(path)
    student = student_version(nb)
    namespace: dict = {}
    exec(imports_of(nb), namespace)
    for stub, check in isolated_pairs(nb, student.cells):
        assert "raise NotImplementedError()" in stub
        exec(stub, namespace)
        with pytest.raises(ExerciseError, match="not implemented yet"):
            exec(check, namespace)


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_solutions_pass_their_checks(path, capsys):
    nb = read(path)
    namespace: dict = {}
    exec(imports_of(nb), namespace)
    pairs = isolated_pairs(nb)
    for solution, check in pairs:
        exec(solution, namespace)
        exec(check, namespace)
    assert capsys.readouterr().out.count("Well done") >= len(pairs)
