"""Numbers typed into the chapters' prose, outside equations and code: none may be added by hand.

A result in the prose comes from the cell beside it, through `glue` ({glue:text}`...` is not counted here) or a
printed line. Every other number a chapter's text contains today (a year, a parameter of the setting, a
paper's value cited to its table) is listed in tests/prose_numbers.json; the test fails on any number that is
not, so that a new one is either produced by a cell or looked at and added to the list on purpose:

    python tests/test_prose_numbers.py   # rewrites tests/prose_numbers.json from the notebooks
"""

import json
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.notebook_files import NOTEBOOKS, ROOT, read  # noqa: E402

LISTED = ROOT / "tests" / "prose_numbers.json"
NOT_PROSE = re.compile(
    r"\$\$.*?\$\$|\$[^$\n]+\$"  # equations
    r"|```.*?```|`[^`\n]*`"  # code, directives and roles such as {glue:text}`...`
    r"|\{[a-z:]+\}|\(https?://[^)]*\)|:label: \S+",  # role names, links, labels
    re.DOTALL,
)
NUMBER = re.compile(r"(?<![\w.-])\d[\d,]*(?:\.\d+)?%?")


def prose_numbers(path: Path) -> list[str]:
    """Every number in the markdown cells of a notebook, outside equations, code and roles, in order."""
    found = []
    for cell in read(path).cells:
        if cell.cell_type == "markdown":
            found += NUMBER.findall(NOT_PROSE.sub(" ", cell.source))
    return found


def test_no_number_is_added_to_the_prose_by_hand():
    listed = json.loads(LISTED.read_text())
    for path in NOTEBOOKS:
        new = Counter(prose_numbers(path)) - Counter(listed.get(path.stem, []))
        assert not new, (
            f"{path.name}: numbers typed into the prose: {sorted(new)}. Print or glue them from a cell; if one is "
            "not a result (a year, a setting), add it with `python tests/test_prose_numbers.py` after checking.")


def test_the_extraction_skips_equations_code_and_glue():
    text = "In 2015 the model had $d = 512$ and `n = 3`; accuracy {glue:text}`x:.3f` vs 0.91 (Table 4)."
    assert NUMBER.findall(NOT_PROSE.sub(" ", text)) == ["2015", "0.91", "4"]


if __name__ == "__main__":
    LISTED.write_text(json.dumps({p.stem: sorted(prose_numbers(p)) for p in NOTEBOOKS}, indent=1) + "\n")
    print(f"wrote {LISTED}")
