"""Where the chapter notebooks are, and how to read them, for the tests."""

from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# The numbered notebooks are chapters and homework; the others (appendix pages) have no exercises.
CHAPTERS = [path for path in NOTEBOOKS if path.name[:2].isdigit()]


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def code_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [cell for cell in nb.cells if cell.cell_type == "code"]
