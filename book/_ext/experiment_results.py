"""The ``experiment-results`` directive: the tables of a long experiment, made from the JSON its command wrote.

    ```{experiment-results} ../results/ntm-copy.json
    ```

(the path is relative to the page, as for an image).

The record (``python -m attnlab.experiments NAME ... --json results/NAME.json``, committed) is rendered by the
experiment module's own ``markdown(record)``, which ends with the command, date, versions and machine that made
it; nothing of a long run's output is copied into the book by hand. A missing or malformed record fails the build.
"""

from __future__ import annotations

import importlib

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from attnlab.experiments import record


class ExperimentResults(SphinxDirective):
    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        _, path = self.env.relfn2path(self.arguments[0], self.env.docname)
        self.env.note_dependency(path)
        data = record.load(path)
        module = importlib.import_module(f"attnlab.experiments.{data['experiment'].replace('-', '_')}")
        container = nodes.container(classes=["experiment-results"])
        self.state.nested_parse(StringList(module.markdown(data).splitlines()), self.content_offset, container)
        return container.children


def setup(app: Sphinx) -> dict:
    app.add_directive("experiment-results", ExperimentResults)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
