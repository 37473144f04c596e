"""No line of prose becomes a list by accident: in MyST (CommonMark), a line that starts with a list marker starts a
list even inside a paragraph, so a wrapped equation whose next line begins with "+ \\boldsymbol{\\beta}" renders as a
bullet, and a sentence wrapped before "1." as a numbered list. Every chapter's markdown and every page of the book is
read for a list marker inside math (inline or display), and for a "1." or a "+"/"*" bullet that interrupts a
paragraph that does not end with a colon."""

import re

import pytest

from tests.notebook_files import NOTEBOOKS, ROOT, read

MARKER = re.compile(r"^\s*([-+*]|\d+[.)])\s")


def accidental_lists(text: str) -> list[tuple[int, str, str]]:
    """(line number, why, line) for each line of ``text`` that would start a list it does not mean to."""
    found = []
    fenced = in_display = False
    inline = 0  # dollar signs seen in the current paragraph, outside display math
    previous = ""
    for number, line in enumerate(text.split("\n")):
        stripped = line.strip()
        if stripped.startswith("```"):  # code fences only: a directive's body ({exercise}, {note}) is markdown
            code = not stripped.lstrip("`").startswith("{") or stripped.startswith(("```{code", "```{eval"))
            if fenced or code:
                fenced = not fenced
            previous = ""
            continue
        if fenced:
            previous = line
            continue
        if not stripped:
            inline = 0
        marker = MARKER.match(line)
        opens_paragraph = (previous.strip() and not MARKER.match(previous)
                           and not previous.rstrip().endswith(":") and not previous.strip().startswith(("#", ":")))
        if marker and (in_display or inline % 2):
            found.append((number, "a list marker inside math", line))
        elif marker and opens_paragraph and re.match(r"^\s*1[.)]\s", line):
            found.append((number, "a numbered list inside a paragraph", line))
        elif marker and opens_paragraph and marker.group(1) in "+*":
            found.append((number, "a bullet inside a paragraph", line))
        for token in re.findall(r"\$\$|\$", line.replace("\\$", "")):
            if token == "$$":
                in_display = not in_display
            elif not in_display:
                inline += 1
        previous = line
    return found


@pytest.mark.parametrize("text", [
    "The layer normalises, then scales and shifts: $\\mathbf{y} = \\boldsymbol{\\gamma} \\odot \\hat{\\mathbf{x}}\n"
    "+ \\boldsymbol{\\beta}$ with learned vectors.",
    "$$\n\\mathbf{y} = \\mathbf{a}\n- \\mathbf{b}\n$$",
    "Scale the scores by a temperature instead of\n1. Then see what happens.",
    "```{exercise} Scaling\n:label: ex-x\n\nUse variance $\\sigma^2$ instead of\n1. What then?\n```",
    "The sum of the weights\n+ the bias is the output.",
])
def test_the_reader_finds_an_accidental_list(text):
    assert accidental_lists(text)


@pytest.mark.parametrize("text", [
    "**Learning goals.** After this chapter you can\n- write the dot score;\n- explain the scaling.",
    "In three steps:\n1. score;\n2. normalise;\n3. sum.",
    "$$\n\\mathbf{y} = \\mathbf{a} - \\mathbf{b}\n$$\n\n- a list after the equation",
    "```python\n+ not markdown\n1. nor this\n```",
])
def test_the_reader_leaves_a_meant_list_alone(text):
    assert accidental_lists(text) == []


def test_no_chapter_or_page_makes_a_list_of_math_or_of_a_wrapped_sentence():
    found = []
    for path in NOTEBOOKS:
        for index, cell in enumerate(read(path).cells):
            if cell.cell_type == "markdown":
                found += [f"{path.name} cell {index} line {n}: {why}: {line!r}"
                          for n, why, line in accidental_lists(cell.source)]
    for path in sorted((ROOT / "book").glob("*.md")):
        found += [f"{path.name} line {n}: {why}: {line!r}" for n, why, line in accidental_lists(path.read_text())]
    assert not found, "\n".join(found)
