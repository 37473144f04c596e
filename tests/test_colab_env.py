"""The notebooks run where attnlab is not installed, as in Colab: their first cell installs it.

A fresh virtual environment gets only what Colab preinstalls and the notebooks need (torch, numpy,
matplotlib and a Jupyter kernel), not attnlab. Every notebook is executed there in quick mode (skipping the
cells tagged nbval-skip, as `make test` does) with the install source pointed at this checkout instead of the
repository URL.
"""

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.notebook_files import NOTEBOOKS, ROOT

RUNNER = """
import sys
import nbformat
from nbclient import NotebookClient
path = sys.argv[1]
nb = nbformat.read(path, as_version=4)
# As under nbval in quick mode: the cells that check final results need the full training.
nb.cells = [c for c in nb.cells if "nbval-skip" not in c.get("metadata", {}).get("tags", [])]
NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": sys.argv[2]}}).execute()
print("executed", path)
"""


def run(args: list[str], env: dict[str, str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=env, capture_output=True, text=True, **kwargs)


@pytest.fixture(scope="module")
def colab_like(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A virtual environment with torch, numpy, matplotlib and a kernel, but without attnlab."""
    where = tmp_path_factory.mktemp("colab") / "venv"
    venv.create(where, with_pip=True)
    python = where / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PATH=f"{where / 'bin'}:{env['PATH']}", ATTNLAB_QUICK="1", ATTNLAB_SOURCE=str(ROOT))
    pins = [line.strip() for line in (ROOT / "requirements.lock").read_text().splitlines()
            if line.split("==")[0].lower() in ("torch", "numpy", "matplotlib", "ipykernel", "nbclient", "nbformat")]
    result = run([str(python), "-m", "pip", "install", "--quiet", *pins], env)
    assert result.returncode == 0, result.stderr[-3000:]
    return python, env


def test_attnlab_is_missing_before_the_first_notebook(colab_like):
    python, env = colab_like
    result = run([str(python), "-c", "import attnlab"], env, cwd=ROOT / "notebooks")
    assert result.returncode != 0 and "No module named 'attnlab'" in result.stderr


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_in_a_colab_like_environment(colab_like, path):
    python, env = colab_like
    result = run([str(python), "-c", RUNNER, str(path), str(path.parent)], env, cwd=path.parent, timeout=900)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    installed = run([str(python), "-c", "import attnlab, sys; print(attnlab.__file__)"], env, cwd="/")
    assert installed.returncode == 0 and str(ROOT / "src") not in installed.stdout, installed.stdout
    assert sys.prefix not in installed.stdout
