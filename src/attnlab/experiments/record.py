"""What an experiment command writes: its results as JSON, with the command, the
date, the versions and the machine.

Every command of ``python -m attnlab.experiments`` takes ``--json PATH`` and saves
one record there; its module's ``markdown(record)`` makes tables from it, and the
reproducing page of the book renders the committed records (``results/*.json``)
with that function, so that no result of a long run is copied by hand.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import torch

FORMAT = 1


def processor() -> str:
    """The CPU's model name where the system gives it (Linux), else the
    architecture."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def record(
    experiment: str, argv: list[str], results: dict[str, Any]
) -> dict[str, Any]:
    """The record of one run: ``results``, the command that made them and where it
    ran."""
    return {
        "format": FORMAT,
        "experiment": experiment,
        "command": shlex.join(
            ["python", "-m", "attnlab.experiments", experiment, *argv]
        ),
        "date": datetime.date.today().isoformat(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": {
            "system": platform.system(),
            "architecture": platform.machine(),
            "processor": processor(),
            "cores": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
        },
        "results": results,
    }


def save(path: str | Path, data: dict[str, Any]) -> Path:
    """Write ``data`` (a :func:`record`) as JSON, creating the folder; return the
    path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"results written to {path}", file=sys.stderr)
    return path


def load(path: str | Path | resources.abc.Traversable) -> dict[str, Any]:
    """Read a record written by :func:`save`; ``ValueError`` if it is not one."""
    data = json.loads(
        (path if hasattr(path, "read_text") else Path(path)).read_text()
    )
    missing = {"format", "experiment", "command", "date", "results"} - set(data)
    if missing or data["format"] != FORMAT:
        raise ValueError(
            f"{path} is not an experiment record of format {FORMAT}"
            f" (missing {sorted(missing)}, format {data.get('format')!r})"
        )
    return data


def published(name: str) -> dict[str, Any]:
    """The course's committed record ``results/NAME.json``, which the package
    carries as ``attnlab/results/NAME.json`` (so chapters read it in Colab and in
    grading too)."""
    bundled = resources.files("attnlab").joinpath("results", f"{name}.json")
    if not bundled.is_file():
        names = sorted(
            f.name.removesuffix(".json")
            for f in resources.files("attnlab").joinpath("results").iterdir()
        )
        raise ValueError(f"no committed record named {name!r}; there are {names}")
    with resources.as_file(bundled) as path:
        return load(path)


def provenance(data: dict[str, Any]) -> str:
    """One sentence: a record's command, date, versions and machine."""
    m = data["machine"]
    return (
        f"Written by `{data['command']}` on {data['date']}"
        f" with torch {data['torch']}"
        f" (Python {data['python']}) on {m['processor']} ({m['architecture']},"
        f" {m['cores']} cores, {m['torch_threads']} torch thread"
        f"{'s' if m['torch_threads'] != 1 else ''}), {m['system']}."
    )
