"""Execute the book's notebooks in parallel into the Jupyter Book execution cache, before the build.

`make book` clears ``_build/.jupyter_cache``, runs this script, then builds with ``execute_notebooks: cache``:
every notebook is executed afresh on every build (nothing is reused from an earlier one), but two at a time
on a 2-core machine instead of one after the other. The longest notebooks start first. Each kernel gets
``OMP_NUM_THREADS=1`` so that two kernels share the cores without oversubscribing them; the chapters that
train small models set one thread themselves anyway.

    python scripts/execute_notebooks.py [--jobs N] [--cache _build/.jupyter_cache] notebooks/*.ipynb
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

# Seconds each notebook took in a serial build on a 2-core CPU: only the order of the queue depends on them.
EXPECTED_SECONDS = {
    "07_neural_turing_machines": 375, "04_bahdanau_attention": 186, "05_luong_attention": 181,
    "07_transformer": 150, "09_pointer_networks_tsp": 103, "08_pointer_networks": 102,
    "03_encoder_decoder": 90, "06_parameterized_attention": 81, "02_scoring_functions": 30,
}


def execute(path: str, timeout: int) -> tuple[str, nbformat.NotebookNode | None, float, str | None]:
    """Run one notebook in its own folder; returns (path, executed notebook or None, seconds, traceback)."""
    nb = nbformat.read(path, as_version=4)
    result = single_nb_execution(nb, cwd=str(Path(path).parent), allow_errors=False, timeout=timeout,
                                 meta_override=True)
    if result.err is not None:
        return path, None, result.time, result.exc_string
    return path, result.nb, result.time, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--cache", type=Path, default=Path("_build/.jupyter_cache"))
    parser.add_argument("--timeout", type=int, default=900, help="seconds per cell (as in _config.yml)")
    args = parser.parse_args(argv)
    os.environ["OMP_NUM_THREADS"] = "1"  # inherited by every kernel
    cache = get_cache(str(args.cache))
    queue = sorted((str(p.resolve()) for p in args.notebooks),
                   key=lambda p: -EXPECTED_SECONDS.get(Path(p).stem, 60))
    start, failed = time.perf_counter(), []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        running = {pool.submit(execute, path, args.timeout) for path in queue}
        while running:
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                path, nb, seconds, error = future.result()
                name = Path(path).name
                if nb is None:
                    print(f"{name}: FAILED after {seconds:.1f} s\n{error}", flush=True)
                    failed.append(name)
                    continue
                record = cache.add_nb_to_project(path)
                cache.cache_notebook_bundle(CacheBundleIn(nb, record.uri, data={"execution_seconds": seconds}),
                                            check_validity=False, overwrite=True)
                print(f"{name}: executed in {seconds:.1f} s "
                      f"({time.perf_counter() - start:.0f} s since the start)", flush=True)
    print(f"{len(queue) - len(failed)} of {len(queue)} notebooks executed with {args.jobs} jobs "
          f"in {time.perf_counter() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
