"""Every number on the "Reproducing the results" page is glued by the notebook it names."""

import re

from tests.notebook_files import ROOT, code_cells, read

PAGE = (ROOT / "book" / "reproducing.md").read_text()
REFERENCES = re.findall(r"\{glue:text\}`\.\./(notebooks/[\w.]+\.ipynb)::(\w+):[^`]+`", PAGE)


def glued_keys(source: str) -> set[str]:
    """Keys passed to glue(...), with f-string loops over known names expanded by pattern."""
    return set(re.findall(r'glue\(f?"([\w{}]+)"', source))


def test_the_page_pastes_numbers():
    assert len(REFERENCES) >= 10


def test_every_pasted_key_is_glued_by_its_notebook():
    for notebook, key in REFERENCES:
        source = "\n".join(cell.source for cell in code_cells(read(ROOT / notebook)))
        patterns = [re.sub(r"\\\{\w+\\\}", r"\\w+", re.escape(k)) for k in glued_keys(source)]
        assert any(re.fullmatch(p, key) for p in patterns), f"{notebook} never glues {key!r}"
