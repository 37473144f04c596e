"""Words of prose per chapter, as a reader meets them: the markdown cells outside folded answers.

Counted: the words of every markdown cell, split at white space (an inline equation counts as the words it holds),
outside code blocks, directive options, labels, comments and the layout commands of display equations
(``\\begin{...}``, ``\\end{...}``, a line break ``\\\\``). Not counted: worked solutions (cells tagged
``solution``) and anything folded (a directive with ``:class: dropdown``, such as a "How this was measured" note or
the answers to "Check your understanding"), which a reader opens only when they want to. Each chapter has a limit
(``LIMITS``); the script prints the table and exits with status 1 when a chapter is over it:

    python scripts/prose_words.py            # every notebook in notebooks/
    python scripts/prose_words.py notebooks/10_neural_turing_machines.ipynb
"""

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_LIMIT = 4000
# Chapter 10 teaches a whole machine (content and location addressing, reading, writing, a controller).
LIMITS = {"10_neural_turing_machines": 4700}

FENCE = re.compile(r"^(`{3,}|:{3,})(\{[\w-]+\})?([^\n]*)$(.*?)^\1\s*$", re.MULTILINE | re.DOTALL)
NOT_WORDS = re.compile(
    # directive options, labels, comments, and the layout of a display equation
    r"^\s*:[\w-]+:.*$|^\(\S+\)=\s*$|(?s:<!--.*?-->)|\\(?:begin|end)\{\w+\*?\}|(?<!\S)\\\\(?!\S)",
    re.MULTILINE,
)


def _prose(source: str) -> str:
    """The text of a markdown cell that a reader sees unfolded."""

    def keep(match: re.Match) -> str:
        directive, title, body = match.group(2, 3, 4)
        if directive is None or re.search(r"^\s*:class:.*\bdropdown\b", body, re.M):
            return " "  # a code block, or folded
        return f"{title}\n{body}"

    previous = None
    while previous != source:  # nested directives, from the outside in
        previous, source = source, FENCE.sub(keep, source)
    return NOT_WORDS.sub(" ", source)


def words(path: Path) -> int:
    """Words of unfolded prose in a notebook."""
    cells = json.loads(path.read_text())["cells"]
    return sum(
        len(_prose("".join(cell["source"])).split())
        for cell in cells
        if cell["cell_type"] == "markdown" and "solution" not in cell["metadata"].get("tags", [])
    )


def limit(path: Path) -> int:
    return LIMITS.get(path.stem, DEFAULT_LIMIT)


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
    over = []
    print(f"{'chapter':<40} {'words':>6} {'limit':>6}")
    for path in paths:
        count = words(path)
        flag = "  OVER" if count > limit(path) else ""
        print(f"{path.stem:<40} {count:>6} {limit(path):>6}{flag}")
        if flag:
            over.append(path.stem)
    if over:
        print(f"over the limit: {', '.join(over)}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
