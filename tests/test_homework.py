"""The homework pipeline: solution notebooks -> students' notebooks whose checks fail until solved."""

import ast

import nbformat
import pytest

from attnlab.exercises import ExerciseError
from attnlab.homework import main, strip_solution_code, student_version
from tests.notebook_files import NOTEBOOKS, code_cells, read

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


def test_student_version_drops_solutions_and_outputs():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("question"),
        nbformat.v4.new_markdown_cell("answer", metadata={"tags": ["solution"]}),
        nbformat.v4.new_code_cell(SOLVED, execution_count=3,
                                  outputs=[nbformat.v4.new_output("stream", text="hi")]),
    ]
    student = student_version(nb)
    assert [c.source for c in student.cells[:1]] == ["question"]
    assert len(student.cells) == 2
    code = student.cells[1]
    assert code.outputs == [] and code.execution_count is None
    assert "y = x + 1" not in code.source and "raise NotImplementedError()" in code.source
    assert len(nb.cells) == 3 and "y = x + 1" in nb.cells[2].source  # the solution notebook is untouched


def imports_of(nb: nbformat.NotebookNode) -> str:
    """Every top-level import statement of the notebook (enough to define what exercise cells use)."""
    statements = []
    for cell in code_cells(nb):
        source = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        for node in ast.parse(source).body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                statements.append(ast.get_source_segment(source, node))
    return "\n".join(statements)


def exercise_pairs(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    """(stub or solution cell, the check cell after it) for every code exercise."""
    cells = code_cells(nb)
    pairs = []
    for i, cell in enumerate(cells):
        if "### BEGIN SOLUTION" in cell.source or "raise NotImplementedError()" in cell.source:
            following = next((c.source for c in cells[i + 1:] if "check_" in c.source), None)
            assert following is not None, f"the exercise cell {cell.source[:60]!r} has no check cell after it"
            pairs.append((cell.source, following))
    return pairs


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_students_first_check_fails_with_the_stub_message(path):
    nb = read(path)
    pairs = exercise_pairs(student_version(nb))
    assert pairs, f"{path.name} has no code exercise with a check"
    namespace: dict = {}
    exec(imports_of(nb), namespace)
    stub, check = pairs[0]
    exec(stub, namespace)
    with pytest.raises(ExerciseError, match="not implemented yet"):
        exec(check, namespace)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_solutions_pass_their_checks(path, capsys):
    nb = read(path)
    namespace: dict = {}
    exec(imports_of(nb), namespace)
    for solution, check in exercise_pairs(nb):
        exec(solution, namespace)
        exec(check, namespace)
    assert "passed" in capsys.readouterr().out


def test_command_line_writes_every_students_notebook(tmp_path):
    main(["notebooks", str(tmp_path)])
    written = sorted(p.name for p in tmp_path.glob("*.ipynb"))
    assert written == [p.name for p in NOTEBOOKS]
    for path in tmp_path.glob("*.ipynb"):
        text = path.read_text()
        assert "### BEGIN SOLUTION" not in text
        assert all(not c.get("outputs") for c in code_cells(read(path)))
