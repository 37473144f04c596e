"""The conventions every chapter notebook follows (see CONTRIBUTING.md)."""

import re

import pytest
import yaml

from tests.notebook_files import CHAPTERS, NOTEBOOKS, ROOT, code_cells, read

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


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_structure_goals_exercises_summary(path):
    nb = read(path)
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    titles = re.findall(r"^# .+", markdown, flags=re.MULTILINE)
    assert len(titles) == 1, f"{path.name} must have exactly one '# ' title, found {titles}"
    assert "**Learning goals.**" in markdown
    headings = re.findall(r"^## (.+)", markdown, flags=re.MULTILINE)
    assert "Exercises" in headings and headings[-1] == "Summary"
    assert len(re.findall(r"```\{exercise\}", markdown)) >= 3


APPENDICES = [path for path in NOTEBOOKS if path not in CHAPTERS]


@pytest.mark.parametrize("path", APPENDICES, ids=[p.stem for p in APPENDICES])
def test_appendix_pages_have_a_title_and_a_summary_but_no_homework(path):
    markdown = "\n".join(c.source for c in read(path).cells if c.cell_type == "markdown")
    assert len(re.findall(r"^# .+", markdown, flags=re.MULTILINE)) == 1
    assert re.findall(r"^## (.+)", markdown, flags=re.MULTILINE)[-1] == "Summary"
    assert "{exercise}" not in markdown, f"{path.name}: exercises belong in a numbered chapter"


def figure_cells(path):
    """Code cells that draw a figure: they call plt.subplots/plt.figure, or carry a figure caption."""
    return [cell for cell in code_cells(read(path))
            if re.search(r"plt\.subplots\(|plt\.figure\(", cell.source) or "figure" in cell.metadata.get("mystnb", {})]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_every_figure_cell_has_a_caption_and_alt_text(path):
    for cell in figure_cells(path):
        mystnb = cell.metadata.get("mystnb", {})
        caption = mystnb.get("figure", {}).get("caption", "")
        assert caption.strip(), f"{path.name}: figure cell without a caption: {cell.source[:80]!r}"
        if "explorable.show(" in cell.source:  # its text alternative is the description it is shown with
            assert re.search(r"description=", cell.source), f"{path.name}: an explorable without a description"
            continue
        alt = mystnb.get("image", {}).get("alt", "")
        assert len(alt.split()) >= 8, (
            f"{path.name}: figure {mystnb['figure'].get('name')!r} has no alt text that says what it shows "
            "(metadata mystnb.image.alt, a sentence or more)")


# Rainbow maps are not colour-blind safe and not perceptually uniform; these are, or are diverging maps
# that stay readable with the common colour-vision deficiencies.
COLOUR_MAPS_ALLOWED = {"viridis", "cividis", "magma", "inferno", "plasma", "Greys", "Blues", "Purples",
                       "Oranges", "Greens", "RdBu", "RdBu_r", "PuOr", "PuOr_r", "BrBG", "coolwarm"}
COLOUR_MAP_NAMED = re.compile(r"""cmap\s*=\s*["'](\w+)["']|get_cmap\(\s*["'](\w+)["']|colormaps\[\s*["'](\w+)["']"""
                              r"|plt\.cm\.(\w+)|matplotlib\.cm\.(\w+)")


def colour_maps(text: str) -> set[str]:
    return {name for match in COLOUR_MAP_NAMED.findall(text) for name in match if name}


def test_colour_maps_are_colour_blind_safe():
    sources = {path.name: "\n".join(cell.source for cell in code_cells(read(path))) for path in NOTEBOOKS}
    sources |= {str(path.relative_to(ROOT)): path.read_text() for path in (ROOT / "src").rglob("*.py")}
    used = {name: colour_maps(text) for name, text in sources.items()}
    assert set().union(*used.values()) >= {"viridis"}, "no colour map found: the search is broken"
    wrong = {name: sorted(maps - COLOUR_MAPS_ALLOWED) for name, maps in used.items() if maps - COLOUR_MAPS_ALLOWED}
    assert not wrong, f"colour maps that are not colour-blind safe (use viridis or cividis): {wrong}"


def test_the_colour_map_search_finds_each_way_of_naming_one():
    text = "imshow(a, cmap='jet'); plt.get_cmap(\"hsv\"); matplotlib.colormaps['rainbow']; plt.cm.turbo"
    assert colour_maps(text) == {"jet", "hsv", "rainbow", "turbo"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_the_opening_links_to_the_notation_page(path):
    opening = read(path).cells[0].source
    assert re.search(r"\{doc\}`[^`]*\.\./book/notation>?`", opening), (
        f"{path.name}: the chapter's first cell must link to the notation page ({{doc}}`../book/notation`)")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_seeded(path):
    source = "\n".join(c.source for c in code_cells(read(path)))
    assert "seed_everything(" in source


def outside_solutions(source: str) -> str:
    """A cell's source without its solution region, which the student writes."""
    return re.sub(r"### BEGIN SOLUTION.*?### END SOLUTION", "", source, flags=re.DOTALL)


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_seed_of_the_notebook_takes_the_offset(path):
    """ATTNLAB_SEED_OFFSET reaches every seed: the library adds it to the seeds given to
    it, and a generator the notebook seeds itself takes offset_seed(...). A worked example
    whose caption describes its numbers may draw from a fixed generator, marked on its line
    with the comment `# fixed draw`."""
    for cell in code_cells(read(path)):
        source = outside_solutions(cell.source)
        source = "\n".join(line for line in source.splitlines() if "# fixed draw" not in line)
        for match in re.finditer(r"(manual_seed|random\.Random)\(([^()]*(\([^()]*\))?[^()]*)\)", source):
            assert "offset_seed(" in match.group(2), f"{path.name}: {match.group(0)} bypasses the seed offset"


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_a_chapter_sets_its_own_thread_count(path):
    imports = next(c.source for c in code_cells(read(path))[1:] if "import" in c.source)
    assert "torch.set_num_threads(1)" in imports, f"{path.name}: its imports cell must set one thread"


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_a_chapter_checks_no_timing(path):
    """Timings depend on the machine and its load: a chapter shows them, never asserts them."""
    for cell in code_cells(read(path)):
        for line in cell.source.splitlines():
            if re.match(r"\s*(assert|expect\()", line):
                assert not re.search(r"second|timing|speed|fastest|ratio", line), f"{path.name}: {line.strip()}"
