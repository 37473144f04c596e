"""A progress bar that is live in Jupyter/Colab and stays a few readable lines in the
built book."""

from __future__ import annotations

import importlib.util
import os
import sys

from tqdm.std import tqdm as _std_tqdm


class _Lines:
    """A file-like stream that prints each progress update on its own line (no
    carriage returns)."""

    def write(self, text: str) -> None:
        text = text.replace("\r", "").strip()
        if text:
            print(text, file=sys.stdout, flush=True)

    def flush(self) -> None:
        sys.stdout.flush()


def progress(total: int, desc: str, **kwargs) -> _std_tqdm:
    """A ``tqdm`` bar over ``total`` steps.

    When ``ATTNLAB_PROGRESS=lines`` (set by the book build) it prints about five
    plain lines (0 %, 25 %, ..., 100 %), so the executed page shows the run's speed
    without a wall of carriage returns.
    """
    if os.environ.get("ATTNLAB_PROGRESS") == "lines":
        return _std_tqdm(
            total=total,
            desc=desc,
            file=_Lines(),
            ascii=True,
            ncols=90,
            mininterval=0,
            miniters=max(1, total // 4),
            maxinterval=float("inf"),
            **kwargs,
        )  # else tqdm's monitor prints every step of slow loops
    if (
        importlib.util.find_spec("ipywidgets") is not None
    ):  # Jupyter and Colab: a live widget
        from tqdm.auto import tqdm as auto_tqdm

        return auto_tqdm(total=total, desc=desc, **kwargs)
    return _std_tqdm(total=total, desc=desc, file=sys.stdout, **kwargs)
