"""The ``training-speed`` directive: the seconds a student waits for the models of each chapter, from the JSON that
``benchmarks/training_speed.py`` wrote.

    ```{training-speed} ../results/timing/training-speed.json
    ```

(the path is relative to the page, as for an image). The table gives every model a chapter trains, its runs and
steps, the estimated seconds of the baseline and of the current version and their ratio, then the chapter's total;
a line under it names the machine, the date, the rounds, the timed steps, the versions and the command. A missing
or malformed file fails the build.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


def _seconds(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def _version(commit: str) -> str:
    """A commit as its short sha, keeping a note such as "+ uncommitted changes"."""
    sha, _, note = commit.partition(" ")
    return f"`{sha[:7]}`" + (f" {note}" if note else "")


def markdown(record: dict[str, Any]) -> str:
    """The record's table (a row per model, a total per chapter) and the line that says how it was measured."""
    compared = record["baseline"] is not None
    header = ["chapter", "model", "runs", "steps (evaluations)"]
    header += ["baseline (s)", "current (s)", "baseline / current"] if compared else ["current (s)"]

    def times(row: dict[str, Any], baseline: float | None, current: float) -> list[str]:
        if not compared:
            return [_seconds(current)]
        return [_seconds(baseline), _seconds(current), f"{row['ratio']:.2f}x"]

    rows = []
    totals = {total["chapter"]: total for total in record["chapters"]}
    for i, entry in enumerate(record["entries"]):
        rows.append([str(int(entry["chapter"])), entry["model"], str(entry["runs"]),
                     f"{entry['steps']:,} ({entry['evals']})",
                     *times(entry, entry.get("baseline", {}).get("seconds"), entry["current"]["seconds"])])
        following = record["entries"][i + 1]["chapter"] if i + 1 < len(record["entries"]) else None
        if following != entry["chapter"]:
            total = totals[entry["chapter"]]
            rows.append([f"**{int(entry['chapter'])}**", "**the chapter's training**", f"**{total['runs']}**", "",
                         *(f"**{cell}**" for cell in times(total, total.get("baseline_s"), total["current_s"]))])
    lines = [f"| {' | '.join(cell.replace('|', '/') for cell in row)} |" for row in [header, *rows]]
    lines.insert(1, "|" + " --- |" * len(header))
    machine = record["machine"]
    versions = f"current {_version(record['current']['commit'])}"
    if compared:
        baseline = record["baseline"]
        versions = f"baseline {baseline['ref']} ({_version(baseline['commit'])}), {versions}"
    lines += ["", (
        f"Measured on {record['date']} on {machine['processor']} ({machine['cores']} cores, "
        f"{record['torch_threads']} torch thread), torch {record['torch']}, Python {record['python']}: "
        f"{versions}; the fastest of {record['rounds']} round{'s' if record['rounds'] != 1 else ''} of "
        f"{record['steps_timed']} timed steps "
        f"(after {record['warmup_steps']} warm-up steps) and {record['eval_calls']} evaluations per model, "
        f"by `{record['command']}`."
    )]
    return "\n".join(lines)


class TrainingSpeed(SphinxDirective):
    """Render the training-speed table of the JSON given as argument."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        _, path = self.env.relfn2path(self.arguments[0], self.env.docname)
        self.env.note_dependency(path)
        text = markdown(json.loads(Path(path).read_text()))
        container = nodes.container(classes=["training-speed"])
        self.state.nested_parse(StringList(text.splitlines()), self.content_offset, container)
        return container.children


def setup(app: Sphinx) -> dict:
    app.add_directive("training-speed", TrainingSpeed)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
