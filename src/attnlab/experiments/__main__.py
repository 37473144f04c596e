"""Dispatch ``python -m attnlab.experiments NAME [options]`` to
``attnlab.experiments.<name>.main``."""

import importlib
import pkgutil
import sys

import attnlab.experiments as package
from attnlab.runmode import seed_offset


def available() -> list[str]:
    return sorted(
        m.name.replace("_", "-")
        for m in pkgutil.iter_modules(package.__path__)
        if m.name not in ("__main__", "record", "over_seeds")
    )


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help"):
        print(
            "usage: python -m attnlab.experiments NAME [options]\n\nexperiments: "
            + ", ".join(available())
        )
        return
    name = argv[0]
    if seed_offset() != 0:
        sys.exit(
            "ATTNLAB_SEED_OFFSET perturbs the chapters' runs; the experiments take"
            " their seeds from their own options (--seeds, --seed): unset it"
        )
    if name not in available():
        sys.exit(f"unknown experiment {name!r}; available: {', '.join(available())}")
    importlib.import_module(f"attnlab.experiments.{name.replace('-', '_')}").main(
        argv[1:]
    )


if __name__ == "__main__":
    main(sys.argv[1:])
