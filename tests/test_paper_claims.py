"""The list of claims the chapters attribute to papers, book/paper_claims.yml, against the chapters themselves.

Every entry must name a paper of book/references.bib that its chapter cites, and every number it lists must be
in the chapter's text. The other way round, every decimal number or percentage that a sentence (or a table row)
sets beside a citation, or beside "the paper" or "et al.", must be listed: a new number given to a paper makes
this test fail until the list says where in the paper a reader can check it.
"""

import re
from functools import cache

import pytest
import yaml

from tests.notebook_files import NOTEBOOKS, ROOT, read

CLAIMS = ROOT / "book" / "paper_claims.yml"
BIBLIOGRAPHY = ROOT / "book" / "references.bib"
PAGES = {path.stem: path for path in NOTEBOOKS} | {"reproducing": ROOT / "book" / "reproducing.md"}
FIELDS = {"chapter", "paper", "where", "claim", "numbers"}
WHERE = re.compile(r"not stated|Abstract|(Table|Figure|Section|Appendix) [A-Z]?[\d.]+")

CITE = re.compile(r"\{cite:[pt]\}`([^`]+)`")
GLUE = re.compile(r"\{glue(?::\w+)?\}`[^`]*`")
NOT_PROSE = re.compile(
    r"\$\$.*?\$\$|\$[^$\n]*\$"  # equations
    r"|```.*?```|`[^`\n]*`"  # code, directives and roles (glue and the citations' keys included)
    r"|\]\([^)]*\)|^\([\w-]+\)=$",  # link targets, section labels
    re.DOTALL | re.MULTILINE,
)
# A decimal number (26.75) or a percentage (87%, 1.15%), not a piece of a longer token (a version, a range of digits).
DECIMAL = re.compile(r"(?<![\w.,])(?:\d+(?:\.\d+)?%|\d+\.\d+(?![\w.]*\d))")
NAMES_A_PAPER = re.compile(r"\bthe paper\b|\bet al\.")
SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+(?=[A-Z*{(\[])")
LIST_ITEM = re.compile(r"\n(?=\s*(?:[-*]|\d+\.)\s)")

# Numbers beside a citation that are not a paper's: (chapter, number) -> why. None today.
NOT_CLAIMS: dict[tuple[str, str], str] = {}


@cache
def text(chapter: str) -> str:
    """The markdown of a chapter (its markdown cells, joined) or of a book page."""
    path = PAGES[chapter]
    if path.suffix == ".md":
        return path.read_text()
    return "\n\n".join(cell.source for cell in read(path).cells if cell.cell_type == "markdown")


@cache
def bibliography_keys() -> frozenset[str]:
    return frozenset(re.findall(r"^@\w+\{([^,\s]+),", BIBLIOGRAPHY.read_text(), re.MULTILINE))


def cited(passage: str) -> set[str]:
    """The bibliography keys that the {cite:p} and {cite:t} roles of a passage name."""
    return {key.strip() for keys in CITE.findall(passage) for key in keys.split(",")}


def contains_number(passage: str, number: str) -> bool:
    """Whether the number occurs as a whole number in the passage, not inside a longer one (2.8 in 2.88)."""
    return re.search(rf"(?<![\d.]){re.escape(number)}(?!\.?\d)", passage) is not None


def decimals(passage: str) -> list[str]:
    """The decimal numbers and percentages of a passage, outside equations, code and roles (glue included)."""
    return DECIMAL.findall(NOT_PROSE.sub(" ", passage))


def table_rows(lines: list[str]):
    """(keys cited, row) for every row of a markdown table. Only the column "the literature" counts where a
    table has one; a row whose first cell is empty continues the row above and shares its citations."""
    header = [cell.strip() for cell in lines[0].strip().strip("|").split("|")]
    column = header.index("the literature") if "the literature" in header else None
    keys: set[str] = set()
    for line in lines[1:]:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        row = cells[column] if column is not None and column < len(cells) else line
        keys = cited(row) or (keys if cells[0] == "" else set())
        yield keys, row


def passages(chapter: str):
    """(keys cited, passage) for every sentence, list item and table row of a chapter."""
    for block in re.split(r"\n\s*\n", text(chapter)):
        lines = [line for line in block.split("\n") if line.strip()]
        if lines and all(line.lstrip().startswith("|") for line in lines):
            yield from table_rows(lines)
            continue
        for item in LIST_ITEM.split(block):
            for sentence in SENTENCE_END.split(" ".join(item.split())):
                yield cited(sentence), sentence


def uncovered(chapter: str, claims: list[dict]) -> list[str]:
    """The numbers given to a paper in the chapter that no claim of the chapter lists for that paper."""
    missing = []
    for keys, passage in passages(chapter):
        if not keys and not NAMES_A_PAPER.search(passage):
            continue
        for number in decimals(passage):
            listed = any(
                claim["chapter"] == chapter and (not keys or claim["paper"] in keys) and number in claim["numbers"]
                for claim in claims
            )
            if not listed and (chapter, number) not in NOT_CLAIMS:
                missing.append(f"{number} in: {passage[:160]}")
    return missing


def problems(claim: dict) -> list[str]:
    """What is wrong with one entry of the list: its fields, its paper, its place in the paper, its numbers."""
    if set(claim) != FIELDS:
        return [f"fields {sorted(claim)}, expected {sorted(FIELDS)}"]
    chapter, paper = claim["chapter"], claim["paper"]
    if chapter not in PAGES:
        return [f"no chapter {chapter!r}"]
    found = []
    if paper not in bibliography_keys():
        found.append(f"{paper!r} is not a key of {BIBLIOGRAPHY.name}")
    elif paper not in cited(text(chapter)):
        found.append(f"{chapter} does not cite {paper}")
    if not isinstance(claim["where"], str) or not WHERE.fullmatch(claim["where"]):
        found.append(f"where {claim['where']!r}: a table, figure, section or appendix of the paper, or 'not stated'")
    if not isinstance(claim["claim"], str) or not claim["claim"].strip():
        found.append("no claim")
    if not isinstance(claim["numbers"], list) or not all(isinstance(n, str) for n in claim["numbers"]):
        return [*found, "numbers must be a list of strings"]
    prose = GLUE.sub(" ", text(chapter))
    found += [f"{number} is not in the text of {chapter}" for number in claim["numbers"]
              if not contains_number(prose, number)]
    return found


@cache
def claims() -> list[dict]:
    loaded = yaml.safe_load(CLAIMS.read_text())
    assert isinstance(loaded, list) and loaded, f"{CLAIMS.name} must hold a list of claims"
    return loaded


def test_every_claim_names_a_cited_paper_and_numbers_of_its_chapter():
    """Each entry: a bibliography key the chapter cites, a place in the paper, numbers the chapter writes."""
    wrong = {f"{c.get('chapter')} / {c.get('paper')}: {p}" for c in claims() for p in problems(c)}
    assert not wrong, "\n".join(sorted(wrong))


@pytest.mark.parametrize("chapter", sorted(PAGES))
def test_every_number_given_to_a_paper_is_listed(chapter):
    """Every decimal or percentage beside a citation (or "the paper", "et al.") is a number of some claim."""
    missing = uncovered(chapter, claims())
    assert not missing, f"add these to {CLAIMS.name}:\n" + "\n".join(missing)


def test_the_checks_report_a_wrong_entry():
    """The checks can fail: an unknown key, a key the chapter does not cite, a number the chapter does not have."""
    entry = {"chapter": "reproducing", "paper": "vinyals2015pointer", "where": "Table 2",
             "claim": "Mean tour length at 10 cities.", "numbers": ["2.88", "2.87"]}
    assert problems(entry) == []
    assert any("not a key" in p for p in problems(entry | {"paper": "nobody2099made-up"}))
    assert any("does not cite" in p for p in problems(entry | {"paper": "kool2019attention"}))
    assert any("2.89 is not in" in p for p in problems(entry | {"numbers": ["2.89"]}))
    assert any("not stated" in p for p in problems(entry | {"where": "somewhere"}))


def test_a_number_left_out_of_the_list_is_reported():
    """Without its entry, the paper's 2.88 of the reproducing page is missing; glue, equations and other
    columns of the table are not numbers of a paper."""
    others = [c for c in claims() if not (c["chapter"] == "reproducing" and "2.88" in c["numbers"])]
    assert any(m.startswith("2.88 in:") for m in uncovered("reproducing", others))
    passage = "as in {cite:p}`x`, {glue:text}`a:.2f` at $d = 0.5$, or `0.25`, against 26.75 and 1.15% (Table 1)"
    assert decimals(passage) == ["26.75", "1.15%"]
