"""A reader's notebook runs against the release its install cell installs (scripts/release_check.py).

The notebooks of the checkout are read against that release as the repository's history holds it; the check itself
is shown to find each kind of miss, and to have found the ones that the notebooks of 0.7.0's successor had.
"""

import importlib.util
import json
import subprocess
import sys

import pytest

from tests.notebook_files import NOTEBOOKS, ROOT


def script():
    spec = importlib.util.spec_from_file_location("release_check", ROOT / "scripts" / "release_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


release_check = script()


def has_commit(rev: str) -> bool:
    return subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{rev}^{{commit}}"],
                          capture_output=True).returncode == 0


def notebook(*cells: str) -> dict:
    return {"cells": [{"cell_type": "code", "source": source, "metadata": {}} for source in cells]}


def install_cell(tag: str) -> str:
    return ('import importlib.util\nimport os\n\nif importlib.util.find_spec("attnlab") is None:\n'
            '    source = os.environ.get(\n'
            f'        "ATTNLAB_SOURCE", "git+https://github.com/attnlab/attention-course@{tag}"\n    )\n'
            '    %pip install --quiet {source}\n')


def test_every_notebook_runs_against_the_release_it_installs():
    report = release_check.check(ROOT, {p.name: json.loads(p.read_text()) for p in NOTEBOOKS})
    failed = {name: problems for name, (_, _, problems) in report.items() if problems}
    assert not failed, (
        "a notebook needs what the release its install cell installs does not have; cut a release "
        f"(README.md, 'A release'): {failed}")


def test_every_students_notebook_runs_against_the_release_it_installs():
    """The students' notebooks (make student, the branch students) install the same release."""
    import nbformat

    from attnlab.teaching.release import student_version

    notebooks = {p.name: json.loads(nbformat.writes(student_version(nbformat.read(p, as_version=4))))
                 for p in NOTEBOOKS}
    report = release_check.check(ROOT, notebooks)
    failed = {name: problems for name, (_, _, problems) in report.items() if problems}
    assert not failed, failed


def test_the_release_is_read_from_history_not_from_the_checkout():
    """The release of the checkout's version is the commit that set that version, or this tree if none did yet."""
    version = release_check.VERSION_LINE.format(__import__("attnlab").__version__)
    tree = release_check.release_tree(ROOT, "v" + __import__("attnlab").__version__)
    assert version in tree.read("src/attnlab/__init__.py")
    if tree.commit is not None:
        introduced = subprocess.run(
            ["git", "-C", str(ROOT), "log", "--format=%H", "--reverse", "-S", version, "--",
             "src/attnlab/__init__.py"], capture_output=True, text=True, check=True).stdout.split()
        tagged = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet",
                                 f"v{__import__('attnlab').__version__}^{{commit}}"],
                                capture_output=True, text=True).stdout.strip()
        assert tree.commit in (tagged, introduced[0])


@pytest.mark.parametrize(("cell", "expected"), [
    ("from attnlab.attention import attend, no_such_function", "attnlab.attention has no no_such_function"),
    ("from attnlab.no_such_module import x", "from attnlab.no_such_module import ...: no such module"),
    ("import attnlab.no_such_module", "import attnlab.no_such_module: no such module"),
    ("from attnlab import explorable\nexplorable.no_such_chart()", "explorable.no_such_chart"),
    ("import attnlab.attention as att\natt.no_such_score", "att.no_such_score"),
    ("from attnlab.experiments.record import published\npublished('no-such-record')",
     "no results/no-such-record.json"),
])
def test_the_check_finds_what_a_release_lacks(cell, expected):
    tag = "v" + __import__("attnlab").__version__
    release = release_check.Release(release_check.Tree(ROOT, None))
    problems = release_check.missing(notebook(install_cell(tag), cell), release)
    assert any(expected in problem for problem in problems), problems


@pytest.mark.parametrize("cell", [
    "from attnlab.attention import attend, masked_softmax",
    "from attnlab import explorable\nexplorable.score_menu",
    "import attnlab.tasks.copy\nfrom attnlab.tasks import copy",
    "from attnlab.experiments.record import published\npublished('pointer-networks')",
])
def test_the_check_accepts_what_a_release_has(cell):
    release = release_check.Release(release_check.Tree(ROOT, None))
    assert release_check.missing(notebook(install_cell("v0"), cell), release) == []


def test_a_notebook_without_a_release_tag_is_reported():
    report = release_check.check(ROOT, {"x.ipynb": notebook("%pip install attnlab", "import attnlab")})
    assert "installs no release tag" in report["x.ipynb"][2][0]


@pytest.mark.skipif(not has_commit("dc74f8e"), reason="the history before release 0.8.0 is not in this clone")
def test_the_check_fails_on_the_notebooks_that_outran_their_release():
    """dc74f8e's notebooks installed v0.7.0 (64215df) but imported what only came after it."""
    report = release_check.check(ROOT, release_check.notebooks_at(ROOT, "dc74f8e", []))
    failed = {name for name, (tag, _, problems) in report.items() if problems}
    assert report["notebooks/01_context_sensitive_memory.ipynb"][2] == []
    assert len(failed) == 12
    assert any("check_shepard_score" in p for p in report["notebooks/02_scoring_functions.ipynb"][2])
