"""The instructors' tables, read from the notebooks.

``homework-table``: every chapter's graded exercises and points, made from the same marks that
``python -m attnlab.homework course`` turns into nbgrader cells, so the instructors' guide cannot drift from what
nbgrader grades. Rubrics are left out: they are for graders and live in the course folder only.

``grading-speed``: the seconds to grade a class serially and in parallel, from the JSON that
``scripts/grading_speed.py`` wrote.

``chapter-hours``: a student's hours per chapter, estimated from the chapter's words of prose, its exercises and
the seconds its full run took in the build (the execution cache of `make book`), at the rates below.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import yaml
from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from attnlab.teaching.release import exercises

KINDS = {"exercise-experiment": "experiment", "exercise-debug": "debug", "exercise-extend": "extend"}
# The rates of the estimate of a student's hours (the page states them beside the table): careful reading of
# technical prose with equations, minutes per code and per written exercise, and two full runs' worth of running
# (one full run, and the quick runs while working on the exercises).
WORDS_PER_MINUTE = 100
CODE_MINUTES, WRITTEN_MINUTES = 30, 15
FULL_RUNS = 2


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
    written_text = "; ".join(
        f"{e.title} ({''.join(f'{KINDS[t]}, ' for t in e.tags)}{e.points:g})" for e in written)
    return [f"{number} {_chapter_title(nb)}", code_text, written_text,
            f"{sum(e.points for e in code):g}", f"{sum(e.points for e in written):g}"]


def _repository(directive: SphinxDirective) -> Path:
    """The folder with the solution notebooks (notebooks/) and the build's execution cache: the book's own, or the
    one ``homework_source`` names (the students' edition is built from notebooks without solutions)."""
    return Path(directive.config.homework_source or directive.env.srcdir)


def _chapters(directive: SphinxDirective) -> list[Path]:
    """The chapter notebooks the table of contents lists, in its order."""
    toc = yaml.safe_load((Path(directive.env.srcdir) / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"] if c["file"].startswith("notebooks/")]
    paths = [_repository(directive) / f"{file}.ipynb" for file in files]
    for path in paths:
        directive.env.note_dependency(str(path))
    return [path for path in paths if path.name[:2].isdigit()]


def _table(directive: SphinxDirective, header: list[str], rows: list[list[str]]) -> list[nodes.Node]:
    """A table of ``rows`` under ``header``, parsed as the page's own Markdown."""
    lines = [f"| {' | '.join(cell.replace('|', '/') for cell in row)} |" for row in [header, *rows]]
    lines.insert(1, "|" + " --- |" * len(header))
    container = nodes.container()
    directive.state.nested_parse(StringList(lines), directive.content_offset, container)
    return container.children


class ChapterHours(SphinxDirective):
    """Render the estimated hours a student spends on each chapter."""

    def run(self) -> list[nodes.Node]:
        import importlib.util

        from jupyter_cache import get_cache

        root = _repository(self)
        spec = importlib.util.spec_from_file_location("prose_words", root / "scripts" / "prose_words.py")
        prose = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(prose)
        cache_path = root / "_build" / ".jupyter_cache"
        seconds = {}
        if (cache_path / "global.db").exists():
            seconds = {Path(r.uri).name: r.data.get("execution_seconds")
                       for r in get_cache(str(cache_path)).list_cache_records()}
        rows, totals = [], [0.0, 0.0, 0.0]
        for number, path in enumerate(_chapters(self), start=1):
            nb = nbformat.read(path, as_version=4)
            found = exercises(nb)
            code = sum(e.kind == "code" for e in found)
            words = prose.words(path)
            reading = words / WORDS_PER_MINUTE / 60
            work = (CODE_MINUTES * code + WRITTEN_MINUTES * (len(found) - code)) / 60
            run = seconds.get(path.name)
            running = FULL_RUNS * run / 3600 if run else 0.0
            for i, hours in enumerate((reading, work, running)):
                totals[i] += hours
            rows.append([f"{number} {_chapter_title(nb)}", f"{words:,}", f"{reading:.1f}",
                         f"{code} + {len(found) - code}", f"{work:.1f}",
                         f"{run / 60:.1f}" if run else "(not in this build)", f"{reading + work + running:.1f}"])
        rows.append(["all chapters", "", f"{totals[0]:.1f}", "", f"{totals[1]:.1f}", "", f"{sum(totals):.1f}"])
        return _table(self, ["chapter", "words of prose", "reading (h)", "exercises (code + written)", "exercises (h)",
                       "full run in the build (min)", "total (h)"], rows)


class GradingSpeed(SphinxDirective):
    """Render the measured seconds of grading a class, from the JSON given as argument."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        import json

        _, path = self.env.relfn2path(self.arguments[0], self.env.docname)
        self.env.note_dependency(path)
        data = json.loads(Path(path).read_text())
        speedup = data["serial_seconds"] / data["parallel_seconds"]
        return _table(self, ["chapter", "submissions", "one at a time (s)", f"{data['workers']} workers (s)", "speed-up",
                       "same CSV", "machine, date"],
                      [[data["chapter"], str(data["submissions"]), f"{data['serial_seconds']:.0f}",
                        f"{data['parallel_seconds']:.0f}", f"{speedup:.2f}x", "yes" if data["same_csv"] else "no",
                        f"{data['cpu_count']} CPUs, {data['date']}"]])


class HomeworkTable(SphinxDirective):
    """Render the table of graded exercises of the notebooks the table of contents lists."""

    def run(self) -> list[nodes.Node]:
        return _table(self, ["chapter", "code exercises, autograded (kind, points)",
                             "written exercises, graded by hand (points)", "auto", "by hand"],
                      [_row(number, nbformat.read(path, as_version=4))
                       for number, path in enumerate(_chapters(self), start=1)])


def setup(app: Sphinx) -> dict:
    app.add_config_value("homework_source", "", "env")
    app.add_directive("homework-table", HomeworkTable)
    app.add_directive("chapter-hours", ChapterHours)
    app.add_directive("grading-speed", GradingSpeed)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
