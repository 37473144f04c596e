"""The conventions every chapter notebook follows (see CONTRIBUTING.md)."""

import re

import pytest
import yaml

from tests.notebook_files import NOTEBOOKS, ROOT, code_cells, read

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
IDS = [p.stem for p in NOTEBOOKS]


def toc_files() -> list[str]:
    files = [TOC["root"]]
    for part in TOC["parts"]:
        files += [chapter["file"] for chapter in part["chapters"]]
    return files


def test_toc_lists_exactly_the_pages_that_exist():
    for file in toc_files():
        assert any((ROOT / f"{file}{ext}").exists() for ext in (".md", ".ipynb")), f"_toc.yml lists missing {file}"
    listed = {f for f in toc_files() if f.startswith("notebooks/")}
    assert listed == {f"notebooks/{p.stem}" for p in NOTEBOOKS}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_stored_without_outputs(path):
    for cell in code_cells(read(path)):
        assert not cell.outputs and cell.execution_count is None, f"{path.name} carries outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_first_code_cell_installs_from_the_configured_repository(path):
    first = code_cells(read(path))[0].source
    assert 'importlib.util.find_spec("attnlab") is None' in first
    assert "%pip install" in first
    urls = re.findall(r"git\+(https://[^\"'@\s]+)(?:@[^\"'\s]+)?[\"']", first)
    assert urls == [CONFIG["repository"]["url"]], "the install cell must name the repository of _config.yml"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_structure_goals_exercises_summary(path):
    nb = read(path)
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    titles = re.findall(r"^# .+", markdown, flags=re.MULTILINE)
    assert len(titles) == 1, f"{path.name} must have exactly one '# ' title, found {titles}"
    assert "**Learning goals.**" in markdown
    headings = re.findall(r"^## (.+)", markdown, flags=re.MULTILINE)
    assert "Exercises" in headings and headings[-1] == "Summary"
    assert len(re.findall(r"```\{exercise\}", markdown)) >= 3


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_every_figure_cell_has_a_caption(path):
    for cell in code_cells(read(path)):
        if re.search(r"plt\.subplots\(|plt\.figure\(", cell.source):
            caption = cell.metadata.get("mystnb", {}).get("figure", {}).get("caption", "")
            assert caption.strip(), f"{path.name}: figure cell without a caption: {cell.source[:80]!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_seeded(path):
    source = "\n".join(c.source for c in code_cells(read(path)))
    assert "seed_everything(" in source
