"""The oldest versions that pyproject.toml allows, as pins: what .github/workflows/oldest.yml installs and tests.

    python scripts/lower_bounds.py                     # "torch==2.2", "numpy==1.24", ... one a line
    python scripts/lower_bounds.py --output FILE       # the same, into FILE (a pip requirements file)
    python scripts/lower_bounds.py --python            # the oldest Python that requires-python allows, e.g. 3.10

Every dependency must have a lower bound (``>=X``); a dependency without one is an error, since nothing would
say which version to test. Runs on Python 3.10 too (no tomllib there: it then reads the two keys it needs).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOUND = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(.*)$")


def project_table(text: str) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: the two keys, read as Python literals
        deps = re.search(r"^dependencies\s*=\s*(\[.*?\])", text, re.MULTILINE | re.DOTALL)
        python = re.search(r"^requires-python\s*=\s*(\"[^\"]*\")", text, re.MULTILINE)
        if not deps or not python:
            raise SystemExit("pyproject.toml: no dependencies or requires-python") from None
        lines = [line.split("#")[0] for line in deps.group(1).splitlines()]
        return {"dependencies": ast.literal_eval("\n".join(lines)),
                "requires-python": ast.literal_eval(python.group(1))}
    return tomllib.loads(text)["project"]


def lower_bound(spec: str) -> str:
    match = re.search(r">=\s*([0-9][^,;\s]*)", spec) or re.search(r"==\s*([0-9][^,;\s]*)", spec)
    if not match:
        raise SystemExit(f"pyproject.toml: {spec!r} has no lower bound (>=X)")
    return match.group(1)


def pins(project: dict) -> list[str]:
    result = []
    for requirement in project["dependencies"]:
        requirement = requirement.split(";")[0]  # no environment markers in this project
        name, spec = BOUND.match(requirement).groups()
        result.append(f"{name}=={lower_bound(spec)}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pyproject", type=Path, default=ROOT / "pyproject.toml")
    parser.add_argument("--output", type=Path, help="write the pins into this file instead of printing them")
    parser.add_argument("--python", action="store_true", help="print the oldest supported Python instead")
    args = parser.parse_args(argv)
    project = project_table(args.pyproject.read_text())
    if args.python:
        print(lower_bound(project["requires-python"]))
        return 0
    text = "".join(f"{pin}\n" for pin in pins(project))
    if args.output:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
