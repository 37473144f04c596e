"""Students' notebooks from the solution notebooks (nbgrader's markers, without needing nbgrader).

In a solution notebook, code between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` is replaced by
``# YOUR CODE HERE`` and ``raise NotImplementedError()`` at the same indentation; markdown cells tagged
``solution`` (the worked answers to the written exercises) are dropped; every output is cleared.

    python -m attnlab.homework notebooks/ _build/student/
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import nbformat

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")


def strip_solution_code(source: str) -> str:
    """Replace every marked solution region of a code cell's ``source`` with the stub."""
    out: list[str] = []
    inside = False
    for number, line in enumerate(source.splitlines(), start=1):
        stripped = line.strip()
        if stripped == BEGIN:
            if inside:
                raise ValueError(f"line {number}: '{BEGIN}' inside an open solution region")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            out.extend(indent + stub for stub in STUB)
        elif stripped == END:
            if not inside:
                raise ValueError(f"line {number}: '{END}' without a matching '{BEGIN}'")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"'{BEGIN}' is never closed by '{END}'")
    return "\n".join(out)


def has_solution(source: str) -> bool:
    """True if the cell's source holds a marked solution region."""
    return re.search(rf"^\s*{re.escape(BEGIN)}\s*$", source, flags=re.MULTILINE) is not None


def student_version(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of the solution notebook ``nb`` with solutions removed and outputs cleared."""
    student = nbformat.from_dict(nb)
    cells = []
    for cell in student.cells:
        if "solution" in cell.get("metadata", {}).get("tags", []):
            continue
        if cell.cell_type == "code":
            cell.source = strip_solution_code(cell.source)
            cell.outputs = []
            cell.execution_count = None
        cells.append(cell)
    student.cells = cells
    return student


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="folder of solution notebooks")
    parser.add_argument("target", type=Path, help="folder for the students' notebooks")
    args = parser.parse_args(argv)
    args.target.mkdir(parents=True, exist_ok=True)
    paths = sorted(args.source.glob("*.ipynb"))
    if not paths:
        raise SystemExit(f"no notebooks found in {args.source}")
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        nbformat.write(student_version(nb), args.target / path.name)
        print(f"{path} -> {args.target / path.name}")


if __name__ == "__main__":
    main()
