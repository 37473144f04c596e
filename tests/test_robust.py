"""The robustness run (`make robust`, scripts/robust.py): its conditions, how it
reads an executed notebook, and the table it writes."""

import importlib.util
import re
import subprocess
import sys

import nbformat

from tests.notebook_files import ROOT

spec = importlib.util.spec_from_file_location("robust", ROOT / "scripts" / "robust.py")
robust = importlib.util.module_from_spec(spec)
sys.modules["robust"] = robust
spec.loader.exec_module(robust)


def test_the_conditions_are_those_the_reproducing_page_describes():
    assert set(robust.CONDITIONS) == {
        "offset 1, one thread",
        "offset 2, one thread",
        "default kernels, one thread",
        "no thread setting",
    }
    page = (ROOT / "book" / "reproducing.md").read_text()
    for name in robust.CONDITIONS:
        assert name in page, name


def test_a_condition_is_strict_full_and_changes_only_its_variables(monkeypatch):
    monkeypatch.setenv("ATTNLAB_QUICK", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    env = robust.condition_env(robust.CONDITIONS["no thread setting"])
    assert env["ATTNLAB_STRICT"] == "1" and "ATTNLAB_QUICK" not in env
    assert "OMP_NUM_THREADS" not in env and env["ATTNLAB_SEED_OFFSET"] == "0"
    env = robust.condition_env(robust.CONDITIONS["default kernels, one thread"])
    assert env["ATEN_CPU_CAPABILITY"] == "default" and env["OMP_NUM_THREADS"] == "1"


def test_the_first_error_of_an_executed_notebook_is_named():
    v4 = nbformat.v4
    nb = v4.new_notebook()
    nb.cells = [
        v4.new_code_cell("x = 1"),
        v4.new_code_cell("assert x > 2, x", outputs=[v4.new_output("error", ename="AssertionError", evalue="1\nmore", traceback=[])]),
        v4.new_code_cell("y", outputs=[v4.new_output("error", ename="NameError", evalue="name 'y' is not defined", traceback=[])]),
    ]
    assert robust.first_error(nb) == ("cell 1: AssertionError: 1", 2)
    assert robust.first_error(v4.new_notebook()) == ("", 0)


def test_the_table_has_a_row_per_chapter_and_a_column_per_condition():
    conditions = ["offset 1, one thread", "no thread setting"]
    outcomes = [
        robust.Outcome("09_ntm.ipynb", conditions[0], True, 301.4, "", 0, "abc1234", "2026-11-25"),
        robust.Outcome("09_ntm.ipynb", conditions[1], False, 12.0, "cell 3: AssertionError: a | b", 1, "abc1234", "2026-11-25"),
        robust.Outcome("03_encdec.ipynb", conditions[0], True, 99.0, "", 0, "def5678", "2026-11-24"),
    ]
    header = {"commit": "abc1234", "date": "2026-11-25", "torch": "2.13.0", "machine": "x86_64, 2 cores", "workers": 2}
    text = robust.table(outcomes, conditions, header)
    rows = [line for line in text.splitlines() if line.startswith("| 0")]
    assert rows == [
        "| 03_encdec | passed, 99 s | not run |",
        "| 09_ntm | passed, 301 s | **failed**, 12 s: `cell 3: AssertionError: a / b` |",
    ]
    assert "| chapter | offset 1, one thread | no thread setting |" in text
    # each condition names the commits its runs executed, and the chapters where they differ
    assert (
        "offset 1, one thread: abc1234 (2026-11-25; chapters 09), def5678 (2026-11-24; chapters 03);"
        " no thread setting: abc1234 (2026-11-25)."
    ) in text
    assert "Not run yet: offset 2, one thread; default kernels, one thread." in text


def test_a_notebook_runs_to_its_end_under_a_condition(tmp_path):
    v4 = nbformat.v4
    nb = v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        v4.new_code_cell("import os\nfrom attnlab.runmode import expect, seed_offset"),
        v4.new_code_cell("expect(seed_offset() == 0, 'offset 0', seed_offset())"),
        v4.new_code_cell("assert os.environ['ATTNLAB_STRICT'] == '1'"),
    ]
    path = tmp_path / "01_probe.ipynb"
    nbformat.write(nb, path)
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "robust.py"), "--out", str(tmp_path / "out"), "--workers", "2",
         "--condition", "offset 1, one thread", "--condition", "no thread setting", str(path)],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )
    assert run.returncode == 1, run.stdout + run.stderr  # the offset-1 run fails its check
    table = (tmp_path / "out" / "table.md").read_text()
    assert re.search(r"\| 01_probe \| \*\*failed\*\*, \d+ s: `cell 1: AssertionError: Expected: offset 0", table)
    assert re.search(r"\| 01_probe \| [^|]+ \| passed, \d+ s \|", table)
    assert "1 passed, 1 failed" in run.stdout
