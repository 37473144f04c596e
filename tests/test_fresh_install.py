"""The package installs on its own: pyproject.toml declares everything that attnlab imports.

A fresh virtual environment gets torch (the CPU build, installed first so that the package's dependencies never
pull a CUDA build) and then the package alone, from this repository, with its declared ranges and no lock. Every
module of attnlab is imported there, and its two command-line entry points run.

Slow (about five minutes on a 2-core machine, most of it pip fetching and installing the dependencies): runs
only with ATTNLAB_FRESH_INSTALL=1.
"""

import json
import os
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path
from urllib.parse import unquote

import pytest

import attnlab
from tests.notebook_files import ROOT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("ATTNLAB_FRESH_INSTALL") != "1",
                       reason="installs a fresh virtual environment (minutes): set ATTNLAB_FRESH_INSTALL=1"),
]

TORCH = "torch==2.13.0"  # as in requirements.lock: its CPU build is what pip finds here

IMPORT_EVERY_MODULE = """
import importlib, json, pkgutil, attnlab
names = ["attnlab"] + [m.name for m in pkgutil.walk_packages(attnlab.__path__, "attnlab.")]
for name in names:
    importlib.import_module(name)
from importlib.metadata import version
print(json.dumps({"modules": names, "file": attnlab.__file__, "version": attnlab.__version__,
                  "metadata": version("attnlab")}))
"""


def run(args: list, env: dict, timeout: int = 900) -> subprocess.CompletedProcess:
    result = subprocess.run([str(a) for a in args], env=env, capture_output=True, text=True, timeout=timeout,
                            cwd="/")
    assert result.returncode == 0, f"{' '.join(map(str, args))} failed:\n{(result.stdout + result.stderr)[-4000:]}"
    return result


def package_source(where: Path) -> Path:
    """What `pip install <repository>` builds from (pyproject.toml, README.md, src/), copied so that the build
    writes its build/ and egg-info into a temporary folder, not into the checkout."""
    source = where / "attnlab-source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc"))
    return source


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    where = tmp_path_factory.mktemp("fresh")
    start = time.perf_counter()
    venv.create(where / "venv", with_pip=True)
    python = where / "venv" / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "ATTNLAB_QUICK")}
    env.update(PATH=f"{where / 'venv' / 'bin'}:{env['PATH']}", PIP_DISABLE_PIP_VERSION_CHECK="1")

    # Never a multi-GB CUDA build: look at what pip would fetch before fetching it.
    report = where / "torch.json"
    run([python, "-m", "pip", "install", "--quiet", "--dry-run", "--no-deps", "--report", report, TORCH], env)
    chosen = unquote(json.loads(report.read_text())["install"][0]["download_info"]["url"])
    if "+cpu" not in chosen.rsplit("/", 1)[-1]:
        pytest.fail(f"{TORCH} resolves to {chosen}, not a CPU build: add the CPU index "
                    "(PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu) and run again")
    run([python, "-m", "pip", "install", "--quiet", TORCH], env)
    run([python, "-m", "pip", "install", "--quiet", package_source(where)], env)
    print(f"\nfresh environment with {TORCH} and attnlab: {time.perf_counter() - start:.0f} s")
    return python, env


def test_every_module_imports(fresh):
    python, env = fresh
    result = json.loads(run([python, "-c", IMPORT_EVERY_MODULE], env).stdout.strip().splitlines()[-1])
    assert str(ROOT) not in result["file"], "imported the checkout, not the installed package"
    assert result["version"] == result["metadata"] == attnlab.__version__
    expected = {"attnlab." + p.relative_to(ROOT / "src" / "attnlab").with_suffix("").as_posix().replace("/", ".")
                for p in (ROOT / "src" / "attnlab").rglob("*.py")}
    expected = {name.removesuffix(".__init__") for name in expected}
    assert expected - {"attnlab.experiments.__main__"} <= set(result["modules"]) | {"attnlab"}


def test_torch_is_the_cpu_build(fresh):
    python, env = fresh
    version = run([python, "-c", "import torch; print(torch.__version__)"], env).stdout.strip()
    assert version.endswith("+cpu"), version


@pytest.mark.parametrize("command", [["-m", "attnlab.homework"], ["-m", "attnlab.experiments", "--help"]],
                         ids=["homework", "experiments-help"])
def test_command_line_entry_points(fresh, command):
    python, env = fresh
    run([python, *command], env, timeout=300)


def test_nothing_was_installed_in_this_interpreter(fresh):
    python, _ = fresh
    assert Path(sys.prefix) not in Path(python).parents
