"""The ``homework-table`` directive: every chapter's graded exercises and points, read from the notebooks.

The table is made from the same marks that ``python -m attnlab.homework course`` turns into nbgrader cells, so
the instructors' guide cannot drift from what nbgrader grades. Rubrics are left out: they are for graders and
live in the course folder only.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import yaml
from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from attnlab.homework import exercises

KINDS = {"exercise-experiment": "experiment", "exercise-debug": "debug", "exercise-extend": "extend"}


def _chapter_title(nb: nbformat.NotebookNode) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("# "):
            return cell.source.splitlines()[0][2:].strip()
    return "?"


def _row(number: int, nb: nbformat.NotebookNode) -> list[str]:
    found = exercises(nb)
    code = [e for e in found if e.kind == "code"]
    written = [e for e in found if e.kind == "written"]
    code_text = "; ".join(
        f"{e.title} ({', '.join(KINDS[t] for t in e.tags) or 'implement'}, {e.points:g})" for e in code)
    written_text = "; ".join(f"{e.title} ({e.points:g})" for e in written)
    return [f"{number} {_chapter_title(nb)}", code_text, written_text,
            f"{sum(e.points for e in code):g}", f"{sum(e.points for e in written):g}"]


class HomeworkTable(SphinxDirective):
    """Render the table of graded exercises of the notebooks the table of contents lists."""

    def run(self) -> list[nodes.Node]:
        root = Path(self.env.srcdir)
        toc = yaml.safe_load((root / "_toc.yml").read_text())
        order = [c["file"] for part in toc["parts"] for c in part["chapters"] if c["file"].startswith("notebooks/")]
        lines = [".. list-table::", "   :header-rows: 1", "   :widths: 20 40 28 6 6", "",
                 "   * - chapter", "     - code exercises, autograded (kind, points)",
                 "     - written exercises, graded by hand (points)", "     - auto", "     - by hand"]
        for number, doc in enumerate(order, start=1):
            path = root / f"{doc}.ipynb"
            self.env.note_dependency(str(path))
            row = _row(number, nbformat.read(path, as_version=4))
            lines += [f"   * - {row[0]}"] + [f"     - {cell}" for cell in row[1:]]
        container = nodes.container()
        self.state.nested_parse(StringList(lines), self.content_offset, container)
        return container.children


def setup(app: Sphinx) -> dict:
    app.add_directive("homework-table", HomeworkTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
