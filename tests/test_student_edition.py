"""The students' edition (attnlab.edition, scripts/student_edition.py): no solution of any exercise anywhere in it.

The first tests make each chapter's students' page from the solution notebook with an output on every code cell
(its own code, as a print of it would show, and the library source that a `show_source` cell shows) and look for
the solutions in it, nothing excluded: a solution line shown anywhere else is a leak. The
others read the built edition (`make book EDITION=student`): every file of it (pages, search index, the notebooks
and sources it offers for download) is searched for every solution text of every chapter, taken from the full
build's executed notebooks; they are skipped without a built edition, unless ATTNLAB_REQUIRE_BOOK=1.
"""

import copy
import html
import inspect
import os
import re
from pathlib import Path

import nbformat
import pytest
import yaml

from attnlab.edition import (
    MIN_LINE,
    SHINGLE,
    code_lines,
    shingles,
    solution_texts,
    student_page,
)
from attnlab.teaching.release import (
    STUB,
    exercises,
    notebook_imports,
    revealing_cells,
    shown_sources,
    student_version,
)
from tests.notebook_files import CHAPTERS, NOTEBOOKS, ROOT, read

EDITION = ROOT / "_build" / "student-edition" / "html"
FULL = ROOT / "_build" / "html"
CACHE = ROOT / "_build" / ".jupyter_cache"
REQUIRED = os.environ.get("ATTNLAB_REQUIRE_BOOK") == "1"


def with_outputs(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` with outputs on every code cell: its own source, printed, and the source of each library object it
    shows with ``show_source`` (as the executed notebook has it)."""
    ran = copy.deepcopy(nb)
    namespace: dict = {}
    exec(notebook_imports(nb), namespace)
    for cell in ran.cells:
        if cell.cell_type == "code":
            shown = []
            for expression in shown_sources(cell.source):
                try:
                    shown.append(inspect.getsource(eval(expression, namespace)))
                except NameError:
                    pass
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)
                            for text in [cell.source, *shown]]
    return ran


def text_of(nb: nbformat.NotebookNode) -> str:
    """What a reader of the notebook sees: every cell's source, and every output's text (images aside)."""
    shown = [c.source for c in nb.cells]
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            shown.append("".join(output.get("text", "")))
            shown += ["".join(value) for kind, value in output.get("data", {}).items() if not kind.startswith("image/")]
    return "\n".join(shown)


def lines_of(text: str) -> set[str]:
    return {line.strip() for line in text.splitlines()}


def leaks(texts: dict[str, list[str]], text: str) -> dict[str, list[str]]:
    """The solution texts that ``text`` holds: code lines as lines, worked answers as runs of words."""
    lines, runs = lines_of(text), shingles(text)
    found = {label: [t for t in found if t in lines or t in runs] for label, found in texts.items()}
    return {label: hits for label, hits in found.items() if hits}


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_a_students_page_holds_no_solution(path):
    nb = with_outputs(read(path))
    texts = solution_texts(nb)
    assert all(texts[e.label] for e in exercises(nb)), "an exercise whose solution the test cannot recognise"
    # the test finds the solutions where they are
    assert leaks(texts, text_of(nb)).keys() == texts.keys()
    page = student_page(nb)
    assert not leaks(texts, text_of(page))
    assert not leaks(texts, text_of(nbformat.reads(nbformat.writes(page), as_version=4)))  # as a file holds it


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_a_students_page_keeps_the_rest_of_the_chapter(path):
    nb = with_outputs(read(path))
    page = student_page(nb)
    found = exercises(nb)
    written = {e.answer for e in found if e.kind == "written"}
    revealing = revealing_cells(nb)
    kept = [index for index in range(len(nb.cells)) if index not in written]
    assert len(page.cells) == len(kept)
    answers = {e.answer for e in found if e.kind == "code"}
    checks = {e.check for e in found if e.kind == "code"}
    for index, after in zip(kept, page.cells, strict=True):
        before = nb.cells[index]
        if index in answers | checks:
            assert after.outputs == [], f"cell {index} keeps the outputs of a worked solution"
            assert after.source == before.source or index in answers
            if index in answers:
                assert all(stub in after.source for stub in STUB), f"cell {index} has no stub"
                assert "hide-input" not in after.metadata.get("tags", []), f"cell {index}: the stub is folded"
        elif index in revealing:
            assert after.cell_type == "markdown" and after.source == revealing[index]
        elif "output-answers-exercise" in before.metadata.get("tags", []):
            assert after.source == before.source and after.outputs == [], f"cell {index} keeps an answering output"
        else:
            assert after == before, f"cell {index} changed"


def test_every_solution_line_counts_wherever_the_book_shows_it():
    """A solution line that another cell shows too is still searched for: it is a leak there."""
    nb = read(CHAPTERS[0])
    code = next(e for e in exercises(nb) if e.kind == "code")
    texts = solution_texts(nb)[code.label]
    assert texts and all(len(t) >= MIN_LINE for t in texts)
    nb.cells.append(nbformat.v4.new_code_cell(source="\n".join(texts)))  # another cell showing the same code
    assert solution_texts(nb)[code.label] == texts
    page = student_page(with_outputs(nb))
    assert leaks(solution_texts(nb), text_of(page)).keys() == {code.label}
    written = next(e for e in exercises(nb) if e.kind == "written")
    runs = solution_texts(nb)[written.label]
    assert runs and all(len(run.split()) == SHINGLE for run in runs)
    assert not set(runs) & shingles(nb.cells[written.question].source)  # an answer may quote its question


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_students_version_shows_library_code_an_exercise_asks_for(path):
    """Neither the students' notebook nor their edition calls show_source on what a check declares as the answer;
    the full edition keeps every such cell."""
    nb = read(path)
    revealing = revealing_cells(nb)
    for version in (student_version(nb), student_page(nb)):
        assert not revealing_cells(version)
        assert sum("answer-left-out" in c.metadata.get("tags", []) for c in version.cells) == len(revealing)
    assert all("show_source" in nb.cells[index].source or "answers-exercise" in nb.cells[index].metadata.get("tags", [])
               for index in revealing)


def test_the_cells_left_out_are_the_answers():
    """Chapter 10 shows the library's write, cosine similarity, shift and sharpening, each the answer to one of its
    exercises, and its NTM step, which no exercise asks for."""
    nb = read(next(p for p in CHAPTERS if p.stem.startswith("10")))
    notes = "\n".join(revealing_cells(nb).values())
    for name in ("ntm.write", "ntm.cosine_similarity", "ntm.shift", "ntm.sharpen"):
        assert f"`{name}`" in notes
    assert "`NTM.step`" not in notes


def test_the_edition_configuration():
    import importlib.util

    spec = importlib.util.spec_from_file_location("student_edition", ROOT / "scripts" / "student_edition.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    full = yaml.safe_load((ROOT / "_config.yml").read_text())
    edition = script.config(full)
    assert edition["execute"]["execute_notebooks"] == "off"  # nothing runs twice; stubs would fail
    assert edition["html"]["baseurl"] == full["html"]["baseurl"] + "student/"
    assert edition["repository"]["branch"] == "students"
    assert full["html"]["baseurl"] in edition["html"]["announcement"]
    assert full["execute"]["execute_notebooks"] == "cache"  # the full edition is unchanged


# ---- the built edition -----------------------------------------------------------------------------------------

def built_or_skip() -> None:
    if not (EDITION / "index.html").exists() or not (CACHE / "global.db").exists():
        if REQUIRED:
            raise RuntimeError(f"no students' edition at {EDITION} (make book EDITION=student)")
        pytest.skip("no students' edition: run `make book EDITION=student`")


def readable(path: Path) -> str:
    """What a reader of the file can see: a page's text without markup, a notebook's sources and outputs."""
    raw = path.read_text(errors="replace")
    if path.suffix == ".html":
        return html.unescape(re.sub(r"<[^>]+>", "", raw))
    if path.suffix == ".ipynb":
        return text_of(nbformat.reads(raw, as_version=4))
    return raw


@pytest.fixture(scope="module")
def texts() -> dict[str, dict[str, list[str]]]:
    """Every chapter's solution texts, from the notebooks as the full build executed them: less the code the
    other chapters give (sources only: the library code their cells show is searched) and, for a worked answer, the
    prose of the rest of the book."""
    built_or_skip()
    from jupyter_cache import get_cache

    cache = get_cache(str(CACHE))
    executed = {path.stem: cache.merge_match_into_notebook(read(path))[1] for path in NOTEBOOKS}
    pages = "\n".join(path.read_text() for path in sorted((ROOT / "book").glob("*.md")))
    return {path.stem: solution_texts(
        executed[path.stem],
        code_lines([cell for name, nb in executed.items() if name != path.stem for cell in nb.cells]),
        "\n".join([text_of(nb) for name, nb in executed.items() if name != path.stem] + [pages]),
    ) for path in CHAPTERS}


def files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()
                  and p.suffix in (".html", ".js", ".ipynb", ".md", ".txt", ".json", ".py")
                  and "_static" not in p.relative_to(root).parts[:1])


def test_the_built_edition_holds_no_solution(texts):
    every = {f"{chapter}:{label}": found for chapter, by_label in texts.items() for label, found in by_label.items()}
    searched = files(EDITION)
    assert any(p.suffix == ".ipynb" for p in searched), "no downloadable notebook in the edition"
    assert (EDITION / "searchindex.js").exists()
    found = {str(p.relative_to(EDITION)): hits for p in searched if (hits := leaks(every, readable(p)))}
    assert not found, f"solutions in the students' edition: {found}"


def test_the_search_finds_the_full_editions_solutions(texts):
    """The same search finds the solutions in the full edition: the test above can fail."""
    for path in CHAPTERS:
        page = FULL / "notebooks" / f"{path.stem}.html"
        hits = leaks(texts[path.stem], readable(page))
        assert hits.keys() == texts[path.stem].keys(), f"{page.name}: not found {set(texts[path.stem]) - set(hits)}"


def test_every_exercise_is_in_the_edition():
    built_or_skip()
    for path in CHAPTERS:
        page = (EDITION / "notebooks" / f"{path.stem}.html").read_text()
        for exercise in exercises(read(path)):
            assert f'id="{exercise.label}"' in page, f"{path.stem}: {exercise.label} is missing"


def test_the_instructors_page_states_the_measured_grading_speed():
    """The serial and parallel seconds on the instructors' page come from the committed record of
    scripts/grading_speed.py, whose two runs gave the same grades."""
    record = yaml.safe_load((ROOT / "results" / "timing" / "grading-speed.json").read_text())
    assert record["submissions"] >= 40 and record["workers"] == 2 and record["same_csv"] is True
    page = (ROOT / "book" / "instructors.md").read_text()
    assert "```{grading-speed} ../results/timing/grading-speed.json" in page
    assert "```{chapter-hours}" in page
