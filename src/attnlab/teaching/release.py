"""Homework from the solution notebooks: the students' version, and an nbgrader
course to grade it.

The chapters mark their exercises as ``CONTRIBUTING.md`` describes: an ``{exercise}``
cell with a ``:label:``; for a code exercise, a solution cell (the answer between
``### BEGIN SOLUTION`` and ``### END SOLUTION``) and a check cell; for a written
exercise, a markdown cell tagged ``solution`` whose metadata gives its points and
rubric. From these marks this module writes

- an nbgrader *source* notebook (:func:`course_source`): solution cells, autograded
  check cells with points and hidden tests that draw fresh inputs, locked question
  cells, and manually graded answer cells whose text holds the worked answer and the
  rubric (instructors only);
- the students' notebook (:func:`student_version`): what ``nbgrader
  generate_assignment`` releases from that source, with the same cells and the same
  nbgrader metadata, so that a notebook done in Colab can be collected and
  autograded.

    python -m attnlab.homework student notebooks/ _build/student/ python -m
    attnlab.teaching.release course notebooks/ _build/course/
"""

from __future__ import annotations

import argparse
import ast
import copy
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")
TEXT_STUB = "YOUR ANSWER HERE"
CODE_POINTS, WRITTEN_POINTS = 2, 1
EXERCISE_TAGS = ("exercise-experiment", "exercise-debug", "exercise-extend")
QUICK_GRADING_NOTE = (
    "# Grading runs the chapter in quick mode (a few training steps), so the"
    " assertions of the\n# chapter's results are left out here; the full run in the"
    " book checks them.\n"
)


def strip_solution_code(source: str) -> str:
    """Replace every marked solution region of a code cell's ``source`` with the
    stub."""
    out: list[str] = []
    inside = False
    for number, line in enumerate(source.splitlines(), start=1):
        stripped = line.strip()
        if stripped == BEGIN:
            if inside:
                raise ValueError(
                    f"line {number}: '{BEGIN}' inside an open solution region"
                )
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            out.extend(indent + stub for stub in STUB)
        elif stripped == END:
            if not inside:
                raise ValueError(
                    f"line {number}: '{END}' without a matching '{BEGIN}'"
                )
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"'{BEGIN}' is never closed by '{END}'")
    return "\n".join(out)


def solution_code(source: str) -> str:
    """The cell's code as a student who wrote the worked answer would hand it in: the
    region markers removed."""
    strip_solution_code(source)  # validates the markers
    return "\n".join(
        line for line in source.splitlines() if line.strip() not in (BEGIN, END)
    )


def has_solution(source: str) -> bool:
    """True if the cell's source holds a marked solution region."""
    return (
        re.search(rf"^\s*{re.escape(BEGIN)}\s*$", source, flags=re.MULTILINE)
        is not None
    )


@dataclass
class Exercise:
    """One exercise of a notebook, located by cell index."""

    label: str
    title: str
    question: int
    kind: str = "written"  # "code" or "written"
    answer: int | None = (
        None  # the solution cell (code) or the worked answer (written)
    )
    check: int | None = None  # the check cell (code only)
    points: float = 0
    rubric: str = ""
    tags: list[str] = field(default_factory=list)


def _tags(cell: nbformat.NotebookNode) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _course_metadata(cell: nbformat.NotebookNode) -> dict:
    return dict(cell.get("metadata", {}).get("attnlab", {}))


def exercises(nb: nbformat.NotebookNode) -> list[Exercise]:
    """Every exercise of the solution notebook ``nb``; ``ValueError`` names the cell
    that breaks the conventions."""
    found: list[Exercise] = []
    by_label: dict[str, Exercise] = {}
    for index, cell in enumerate(nb.cells):
        source = cell.source
        if cell.cell_type == "markdown" and "solution" in _tags(cell):
            match = re.search(r"```\{solution\}\s*(\S+)", source)
            if not match or match.group(1) not in by_label:
                raise ValueError(
                    f"cell {index}: a `solution` cell must hold ```{{solution}}"
                    " <label>``` naming an exercise above it"
                )
            exercise = by_label[match.group(1)]
            if exercise.kind == "code" or exercise.answer is not None:
                raise ValueError(
                    f"cell {index}: exercise {exercise.label} already has an answer"
                )
            meta = _course_metadata(cell)
            if not str(meta.get("rubric", "")).strip():
                raise ValueError(
                    f"cell {index}: the answer to {exercise.label} needs a rubric in"
                    ' its metadata {"attnlab": {"points": N, "rubric": "..."}}'
                )
            exercise.answer, exercise.rubric = index, str(meta["rubric"]).strip()
            exercise.points = float(meta.get("points", WRITTEN_POINTS))
        elif cell.cell_type == "markdown" and re.search(
            r"(```|:::)\{exercise\}", source
        ):
            label = re.search(r"^:label:\s*(\S+)", source, flags=re.MULTILINE)
            if label is None:
                raise ValueError(f"cell {index}: every {{exercise}} needs a :label:")
            if label.group(1) in by_label:
                raise ValueError(
                    f"cell {index}: the label {label.group(1)} is used twice"
                )
            title = re.search(r"\{exercise\}[ \t]*(.*)", source).group(1).strip()
            exercise = Exercise(label.group(1), title, index)
            # a written exercise on an experiment (predict, then run) is tagged here
            exercise.tags = [t for t in _tags(cell) if t in EXERCISE_TAGS]
            by_label[exercise.label] = exercise
            found.append(exercise)
        elif cell.cell_type == "code" and has_solution(source):
            open_questions = [e for e in found if e.answer is None]
            if not open_questions:
                raise ValueError(
                    f"cell {index}: a solution cell needs an {{exercise}} cell"
                    " above it"
                )
            exercise = open_questions[-1]
            check = index + 1
            if (
                check >= len(nb.cells)
                or nb.cells[check].cell_type != "code"
                or "check_" not in nb.cells[check].source
            ):
                raise ValueError(
                    f"cell {index}: the solution of {exercise.label} must be"
                    " followed by its check cell"
                )
            exercise.kind, exercise.answer, exercise.check = "code", index, check
            exercise.points = float(
                _course_metadata(nb.cells[check]).get("points", CODE_POINTS)
            )
            exercise.tags = [t for t in _tags(cell) if t in EXERCISE_TAGS]
    for exercise in found:
        if exercise.answer is None:
            raise ValueError(
                f"exercise {exercise.label} has neither a solution cell nor a worked"
                " answer"
            )
    return found


HIDDEN_PROLOGUE = """\
# The checks and the channel to the grader are imported afresh from disk, and the
# library is verified before and after: nothing a notebook rebinds or patches can
# stand in for them.
import importlib as _importlib
import sys as _sys

_kept = {
    n: _sys.modules.pop(n)
    for n in list(_sys.modules)
    if n.startswith(("attnlab.exercises", "attnlab.teaching"))
}
try:"""
HIDDEN_EPILOGUE = """\
finally:
    _sys.modules.update(_kept)
    if "attnlab.exercises" in _kept:
        _sys.modules["attnlab"].exercises = _kept["attnlab.exercises"]"""


CHECK_SUFFIX = "-check"


def cell_grade_id(cell: nbformat.NotebookNode) -> str | None:
    """The nbgrader grade id of ``cell``, or None."""
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def is_check_cell(cell: nbformat.NotebookNode) -> bool:
    """Whether ``cell`` is the code cell that checks an exercise."""
    grade_id = cell_grade_id(cell) or ""
    return grade_id.endswith(CHECK_SUFFIX) and cell.cell_type == "code"


def check_call_nodes(source: str) -> list[ast.Call]:
    """The ``check_*(...)`` calls that make up the statements of a check cell's
    ``source``, in order."""
    calls = []
    for node in ast.parse(source).body:
        call = node.value if isinstance(node, ast.Expr) else None
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id.startswith("check_")
        ):
            calls.append(call)
    return calls


def hidden_tests(check_source: str, cell: str = "") -> str:
    """The hidden tests of the check cell ``cell`` (its grade id): every
    ``check_*`` call again, handed to :func:`attnlab.teaching.channel.serve`, which
    lets the grader (:mod:`attnlab.teaching.verdicts`) judge it with inputs drawn
    afresh, or runs it here through :func:`attnlab.exercises._integrity.graded`
    where no grader listens.

    The checks are imported anew from disk, so that a name rebound or a helper
    patched in the student's notebook cannot stand in for them here either.
    """
    calls = []
    for call in check_call_nodes(check_source):
        kept = [k for k in call.keywords if k.arg != "seed"]
        kwargs = ast.Dict(
            [ast.Constant(k.arg) for k in kept], [k.value for k in kept]
        )
        args = ast.Tuple(list(call.args), ast.Load())
        calls.append(
            ast.Tuple([ast.Constant(call.func.id), args, kwargs], ast.Load())
        )
    if not calls:
        raise ValueError(f"no check_* call in the check cell {check_source[:60]!r}")
    serve = ast.Call(
        ast.Attribute(
            ast.Call(
                ast.Name("_importlib.import_module"),
                [ast.Constant("attnlab.teaching.channel")],
                [],
            ),
            "serve",
        ),
        [ast.Constant(cell), ast.List(calls, ast.Load())],
        [],
    )
    return "\n".join(
        [BEGIN_HIDDEN, HIDDEN_PROLOGUE, "    " + ast.unparse(serve), HIDDEN_EPILOGUE]
        + [END_HIDDEN]
    )


def _nbgrader(
    cell: nbformat.NotebookNode,
    grade_id: str,
    *,
    grade: bool,
    solution: bool,
    locked: bool,
    points: float | None = None,
) -> dict:
    meta = {
        "cell_type": cell.cell_type,
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": 3,
        "solution": solution,
        "task": False,
    }
    if points is not None:
        meta["points"] = points
    return meta


def _python(source: str) -> str:
    """A code cell's source without its shell (``!``) and magic (``%``) lines."""
    return "\n".join(
        line
        for line in source.splitlines()
        if not line.lstrip().startswith(("%", "!"))
    )


def notebook_imports(nb: nbformat.NotebookNode) -> str:
    """Every top-level import statement of the notebook's code cells (shell and magic
    lines left out): enough to define the library objects its cells name."""
    statements = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        source = _python(cell.source)
        for node in ast.parse(source).body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                statements.append(ast.get_source_segment(source, node))
    return "\n".join(statements)


def shown_sources(source: str) -> list[str]:
    """The expressions a code cell shows with ``show_source(...)``, as written."""
    return [
        ast.unparse(node.args[0])
        for node in ast.walk(ast.parse(_python(source)))
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", "") == "show_source"
        and node.args
    ]


# A cell that states an exercise's answer (the discussion after a predict-and-explain
# experiment) is replaced by a note; one whose output does (the run of the experiment
# itself) keeps its code, and the students' edition leaves its output out.
ANSWER_TAG, ANSWER_OUTPUT_TAG = "answers-exercise", "output-answers-exercise"
SHOWN_NOTE = (
    "*The library's `{shown}` is left out of the students' version: it is the answer"
    " to one of the course's exercises. The full edition of the book shows it.*"
)
ANSWER_NOTE = (
    "*What this experiment shows is left out of the students' version: it answers"
    " the exercise above. The full edition of the book has it.*"
)


def revealing_cells(nb: nbformat.NotebookNode) -> dict[int, str]:
    """The cells of ``nb`` that give away the answer to an exercise, each with the
    note that takes its place in the students' versions: ``{cell index: note}``.

    They are the code cells that show, with ``show_source``, library code that an
    exercise of the course asks students to write (what its check declares with
    ``@exercise_check``), in any chapter, since a student could read the answer to
    one chapter's homework in another; and the cells tagged ``answers-exercise``,
    such as the discussion after a predict-and-explain experiment. The full edition
    shows them all.
    """
    import attnlab.exercises  # noqa: F401 -- registers every check
    from attnlab.exercises._checking import CHECKS, _code_objects

    asked = {
        code
        for info in CHECKS.values()
        for obj in info.exercised
        for code in _code_objects(obj)
    }
    namespace: dict = {}
    exec(notebook_imports(nb), namespace)  # noqa: S102 -- the notebook's own imports
    found = {}
    for index, cell in enumerate(nb.cells):
        if ANSWER_TAG in _tags(cell):
            found[index] = ANSWER_NOTE
        elif cell.cell_type == "code" and "show_source" in cell.source:
            for shown in shown_sources(cell.source):
                try:
                    obj = eval(shown, namespace)  # noqa: S307 -- an imported name
                except NameError:
                    continue  # the notebook's own code, not the library's
                if asked & set(_code_objects(obj)):
                    found[index] = SHOWN_NOTE.format(shown=shown)
    return found


def hide_revealing(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` in which each of :func:`revealing_cells` is its note, a
    markdown cell (the cells keep their order and number)."""
    hidden = copy.deepcopy(nb)
    for index, note in revealing_cells(nb).items():
        cell = hidden.cells[index]
        # the cell's own id, where the format has ids: the versions stay comparable
        kept = {"id": cell["id"]} if "id" in cell else {}
        hidden.cells[index] = nbformat.from_dict(
            {
                **kept,
                "cell_type": "markdown",
                "metadata": {"tags": ["answer-left-out"]},
                "source": note,
            }
        )
    return hidden


def course_source(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The nbgrader source version of the solution notebook ``nb`` (no outputs), the
    library code that answers an exercise left out (:func:`hide_revealing`)."""
    found = exercises(nb)
    source = hide_revealing(nb)
    for cell in source.cells:
        # points and rubrics go into nbgrader's metadata and the answer text
        cell.metadata.pop("attnlab", None)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            if "from attnlab.exercises import" in cell.source:
                cell.metadata["nbgrader"] = _nbgrader(
                    cell, "imports", grade=False, solution=False, locked=True
                )
    for exercise in found:
        question = source.cells[exercise.question]
        question.metadata["nbgrader"] = _nbgrader(
            question,
            f"{exercise.label}-question",
            grade=False,
            solution=False,
            locked=True,
        )
        answer = source.cells[exercise.answer]
        if exercise.kind == "code":
            answer.metadata["nbgrader"] = _nbgrader(
                answer, exercise.label, grade=False, solution=True, locked=False
            )
            check = source.cells[exercise.check]
            hidden_tests(check.source)  # validates: the cell calls a check
            # the hidden tests are added at grading (attnlab.teaching.grading), so
            # that the released cell is the source's, and nothing hidden is in a
            # notebook
            check.metadata["nbgrader"] = _nbgrader(
                check,
                f"{exercise.label}-check",
                grade=True,
                solution=False,
                locked=True,
                points=exercise.points,
            )
        else:
            answer.source = (
                f"{answer.source.rstrip()}\n\n**Rubric ({exercise.points:g} points),"
                f" for the graders only:** {exercise.rubric}"
            )
            answer.metadata["nbgrader"] = _nbgrader(
                answer,
                exercise.label,
                grade=True,
                solution=True,
                locked=False,
                points=exercise.points,
            )
    return source


def without_hidden_tests(source: str) -> str:
    """A check cell's ``source`` without its hidden tests."""
    kept, inside = [], False
    for line in source.splitlines():
        if line.strip() == BEGIN_HIDDEN:
            inside = True
        elif line.strip() == END_HIDDEN:
            inside = False
        elif not inside:
            kept.append(line)
    return "\n".join(kept)


def release(source: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """What nbgrader releases from a source notebook: solutions and hidden tests
    removed, graded cells locked."""
    student = copy.deepcopy(source)
    for cell in student.cells:
        grading = cell.metadata.get("nbgrader")
        if grading is None:
            continue
        if grading["solution"]:
            if cell.cell_type == "code":
                cell.source = strip_solution_code(cell.source)
            else:
                cell.source = TEXT_STUB
            cell.metadata["deletable"] = False
        elif grading["grade"] or grading["locked"]:
            cell.source = without_hidden_tests(cell.source)
            cell.metadata["deletable"] = False
            cell.metadata["editable"] = False
    return student


def student_version(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The students' notebook made from the solution notebook ``nb``: the nbgrader
    release of its source."""
    return release(course_source(nb))


def drop_result_asserts(
    nb: nbformat.NotebookNode, resources: dict
) -> tuple[nbformat.NotebookNode, dict]:
    """An nbgrader preprocessor: remove the ``assert`` statements and the
    ``expect(...)`` checks of the result cells (tagged ``nbval-skip``).

    Grading runs a chapter in quick mode, where a few training steps cannot reach the
    chapter's results; their assertions would show up as errors in the student's
    feedback.
    """

    class DropAsserts(ast.NodeTransformer):
        def visit_Assert(self, node: ast.Assert) -> ast.AST:
            return ast.copy_location(ast.Pass(), node)

        def visit_Expr(self, node: ast.Expr) -> ast.AST:
            call = node.value
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Name)
                and call.func.id == "expect"
            ):
                return ast.copy_location(ast.Pass(), node)
            return node

    for cell in nb.cells:
        if cell.cell_type == "code" and "nbval-skip" in _tags(cell):
            tree = DropAsserts().visit(ast.parse(cell.source))
            cell.source = QUICK_GRADING_NOTE + ast.unparse(tree)
    return nb, resources


NBGRADER_CONFIG = '''"""nbgrader configuration of the course.

Written by `python -m attnlab.homework course`.
"""

import os

from nbgrader.converters import Autograde
from nbgrader.preprocessors import Execute

from attnlab.teaching.grading import CELL_SECONDS, TIMEOUT_MESSAGE

c = get_config()  # noqa: F821 -- provided by nbgrader when it reads this file
c.CourseDirectory.course_id = "{course_id}"
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))

# Grading runs every chapter in quick mode: a few training steps, so that one
# submission takes seconds, not the minutes of a full run. The assertions of the
# chapter's results cannot hold then, and are left out.
os.environ["ATTNLAB_QUICK"] = "1"
# Before execution: the result assertions dropped, the hidden tests added to the
# check cells. After it: the feedback made readable (time-outs, syntax errors, no
# hidden tests, no tracebacks with the grading machine's paths).
default = list(Autograde.autograde_preprocessors.default())
after = default.index(Execute) + 1
c.Autograde.autograde_preprocessors = [
    "attnlab.teaching.release.drop_result_asserts",
    "attnlab.teaching.grading.add_hidden_tests",
    *default[:after],
    "attnlab.teaching.grading.explain_errors",
    *default[after:],
]
# Seconds per cell: quick mode needs a few; a cell that takes longer is looping.
c.Execute.timeout = CELL_SECONDS
c.Execute.error_on_timeout = {{
    "ename": "TimeoutError",
    "evalue": TIMEOUT_MESSAGE,
    "traceback": ["TimeoutError: " + TIMEOUT_MESSAGE],
}}
'''


def write_course(
    notebooks: list[Path], target: Path, course_id: str = "attention-course"
) -> list[Path]:
    """Write an nbgrader course folder: ``nbgrader_config.py`` and
    ``source/<chapter>/<chapter>.ipynb``."""
    target.mkdir(parents=True, exist_ok=True)
    (target / "nbgrader_config.py").write_text(
        NBGRADER_CONFIG.format(course_id=course_id)
    )
    written = []
    for path in notebooks:
        folder = target / "source" / path.stem
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(
            course_source(nbformat.read(path, as_version=4)), folder / path.name
        )
        written.append(folder / path.name)
    return written


def is_chapter(path: Path) -> bool:
    """Whether a notebook is a chapter, and so a homework: chapters are numbered
    (``05_luong_attention.ipynb``); other pages (``appendix_*.ipynb``) have no
    exercises."""
    return path.name[:2].isdigit()


def chapter_notebooks(folder: Path) -> list[Path]:
    """The chapter notebooks of ``folder``, in the order of their numbers."""
    paths = sorted(p for p in folder.glob("*.ipynb") if is_chapter(p))
    if not paths:
        raise SystemExit(f"no chapter notebooks found in {folder}")
    return paths


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] not in ("student", "course", "-h", "--help"):
        # the older form: python -m attnlab.homework SOURCE TARGET
        argv = [
            "student",
            *argv,
        ]
    parser = argparse.ArgumentParser(
        prog="python -m attnlab.homework", description=__doc__.splitlines()[0]
    )
    commands = parser.add_subparsers(dest="command")
    student = commands.add_parser(
        "student", help="write the students' notebooks (solutions removed)"
    )
    course = commands.add_parser(
        "course", help="write an nbgrader course folder (config and source/)"
    )
    for sub in (student, course):
        sub.add_argument("source", type=Path, help="folder of solution notebooks")
        sub.add_argument("target", type=Path, help="folder to write")
    course.add_argument(
        "--course-id", default="attention-course", help="nbgrader's course id"
    )
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return
    if args.command == "course":
        for path in write_course(
            chapter_notebooks(args.source), args.target, args.course_id
        ):
            print(path)
        return
    args.target.mkdir(parents=True, exist_ok=True)
    for path in chapter_notebooks(args.source):
        nbformat.write(
            student_version(nbformat.read(path, as_version=4)),
            args.target / path.name,
        )
        print(f"{path} -> {args.target / path.name}")


if __name__ == "__main__":
    main()
