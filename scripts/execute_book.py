"""Execute the book's notebooks in full, several at a time, into the jupyter-cache that
`jupyter-book build` then reads (``execute_notebooks: cache`` in _config.yml).

`make book` empties the cache, runs this script, then builds: the build finds every
notebook executed and only renders it. Each kernel runs on one thread
(``OMP_NUM_THREADS=1``), so two notebooks at a time use the two cores of a small machine
without fighting over them. Notebooks given with ``--alone`` run afterwards, one at a
time, with the machine to themselves: those that time code.

    python scripts/execute_book.py --cache _build/.jupyter_cache --workers 2 \\
        --alone notebooks/appendix_attention_costs.ipynb notebooks/*.ipynb
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

import nbformat
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn
from jupyter_cache.executors.utils import single_nb_execution

TIMEOUT = 900  # seconds per cell, as in _config.yml


def execute(path: Path) -> tuple[Path, nbformat.NotebookNode, float, str | None]:
    """Run one notebook top to bottom in its own folder, as the book build does."""
    notebook = nbformat.read(path, as_version=4)
    result = single_nb_execution(
        notebook, cwd=str(path.parent), timeout=TIMEOUT, allow_errors=False
    )
    return path, result.nb, result.time, result.exc_string


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--cache", type=Path, default=Path("_build/.jupyter_cache"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--alone", type=Path, nargs="*", default=[])
    args = parser.parse_args()
    if args.workers < 1:
        parser.error(f"--workers must be at least 1, got {args.workers}")
    alone = [p.resolve() for p in args.alone]
    together = [p.resolve() for p in args.notebooks if p.resolve() not in alone]
    # the later chapters train the largest models: starting them first keeps both
    # workers busy until the end
    together.reverse()
    os.environ["OMP_NUM_THREADS"] = "1"  # inherited by every kernel
    os.environ["ATTNLAB_STRICT"] = "1"  # a result check that fails fails the build
    cache = get_cache(str(args.cache))
    start = time.perf_counter()

    def store(path: Path, notebook, seconds: float, error: str | None) -> bool:
        if error is not None:
            print(f"FAILED {path.name} after {seconds:.0f} s:\n{error}", flush=True)
            return False
        cache.cache_notebook_bundle(
            CacheBundleIn(notebook, str(path), data={"execution_seconds": seconds}),
            check_validity=False,
            overwrite=True,
        )
        print(
            f"{path.name}: {seconds:.0f} s"
            f" ({time.perf_counter() - start:.0f} s since start)",
            flush=True,
        )
        return True

    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        pending = {pool.submit(execute, path) for path in together}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            if not all(store(*future.result()) for future in done):
                for future in pending:
                    future.cancel()
                return 1
    for path in alone:
        if not store(*execute(path)):
            return 1
    print(f"all notebooks executed in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
