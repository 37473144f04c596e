"""One version, written once: ``attnlab.__version__``. Everything else that names it must agree.

The copies: pyproject.toml reads it (setuptools' dynamic version), CHANGELOG.md's newest entry is that release,
the notebooks' install cell installs its tag, and the book shows it (the footer and the substitution
``{{ attnlab_version }}`` in _config.yml). scripts/sync_install_cell.py writes the copies.
"""

import importlib.util
import re
import sys

import pytest
import yaml

import attnlab
from tests.notebook_files import NOTEBOOKS, ROOT, code_cells, read

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
VERSION = attnlab.__version__
URL = CONFIG["repository"]["url"].rstrip("/")


def sync_script():
    spec = importlib.util.spec_from_file_location("sync_install_cell", ROOT / "scripts" / "sync_install_cell.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_version_is_a_release_number():
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION), VERSION


def test_pyproject_reads_the_version_from_the_package():
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11+ reads TOML")
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"], "the version lives in src/attnlab/__init__.py only"
    assert "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "attnlab.__version__"}


def test_the_sync_script_reads_the_same_version():
    assert sync_script().package_version(ROOT) == VERSION


def test_changelog_newest_entry_is_this_version():
    headings = re.findall(r"^## (\d+\.\d+\.\d+) \((\d{4}-\d{2}-\d{2})\)$", (ROOT / "CHANGELOG.md").read_text(),
                          flags=re.MULTILINE)
    assert headings, "CHANGELOG.md has no release heading '## X.Y.Z (YYYY-MM-DD)'"
    assert headings[0][0] == VERSION, f"CHANGELOG.md's newest entry is {headings[0][0]}, the package is {VERSION}"
    versions = [tuple(int(n) for n in v.split(".")) for v, _ in headings]
    assert versions == sorted(versions, reverse=True), "CHANGELOG.md lists the newest release first"
    dates = [d for _, d in headings]
    assert dates == sorted(dates, reverse=True)


def without_spaces(text: str) -> str:
    """The text with every space and line break removed: the formatter may wrap the call."""
    return re.sub(r"\s+", "", text)


def test_every_install_cell_installs_the_release_of_this_version():
    expected = f'os.environ.get("ATTNLAB_SOURCE","git+{URL}@v{VERSION}")'
    wrong = [path.name for path in NOTEBOOKS
             if expected not in without_spaces(code_cells(read(path))[0].source)]
    assert not wrong, (f"the install cell of {wrong} does not install git+{URL}@v{VERSION}: "
                       f"run {sys.executable} scripts/sync_install_cell.py")


def test_the_setup_page_and_contributing_show_the_same_install_cell():
    expected = f'os.environ.get("ATTNLAB_SOURCE","git+{URL}@v{VERSION}")'
    for name in ("book/setup.md", "CONTRIBUTING.md"):
        assert expected in without_spaces((ROOT / name).read_text()), f"{name}: run scripts/sync_install_cell.py"


def test_the_book_shows_this_version():
    assert CONFIG["parse"]["myst_substitutions"]["attnlab_version"] == VERSION
    assert f"attnlab {VERSION} " in CONFIG["html"]["extra_footer"]
    assert "{{ attnlab_version }}" in (ROOT / "book" / "setup.md").read_text()


def test_nothing_is_out_of_date():
    """Everything scripts/sync_install_cell.py writes is as it would write it."""
    stale = [str(path.relative_to(ROOT)) for path, text in sync_script().synced_files(ROOT).items()
             if path.read_text() != text]
    assert not stale, f"out of date: {stale}; run scripts/sync_install_cell.py"


def test_the_book_opens_the_notebooks_of_its_release():
    """The launch buttons open repository.branch: the release tag, whose install cell installs that same tag."""
    assert CONFIG["repository"]["branch"] == f"v{VERSION}"
    assert f"/blob/v{VERSION}/CHANGELOG.md" in CONFIG["html"]["extra_footer"]
