"""Fail if any notebook under the given folders is stored with outputs or execution counts."""

import sys
from pathlib import Path

import nbformat

dirty = []
for folder in sys.argv[1:]:
    for path in sorted(Path(folder).rglob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        if any(c.get("outputs") or c.get("execution_count") for c in nb.cells if c.cell_type == "code"):
            dirty.append(str(path))
if dirty:
    sys.exit("notebooks stored with outputs (clear them before committing):\n  " + "\n  ".join(dirty))
print("all notebooks are stored without outputs")
