"""A progress bar that is live in Jupyter/Colab and one summary line in the built
book."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from typing import Any

from tqdm.std import tqdm as _std_tqdm


class _Summary:
    """What the built book shows of a loop: nothing while it runs, then one line with
    the steps done and the last values given to ``set_postfix`` (the final loss, for
    a training run). No time: the page would carry the build machine's, a record of
    how the book was made rather than part of the lesson."""

    def __init__(self, total: int, desc: str, silent: bool = False) -> None:
        self.total, self.desc, self.n, self.silent = total, desc, 0, silent
        self.postfix: dict[str, Any] = {}

    def update(self, n: int = 1) -> None:
        self.n += n

    def set_postfix(
        self, ordered_dict: dict[str, Any] | None = None, refresh: bool = True, **kw
    ) -> None:
        self.postfix = {**(ordered_dict or {}), **kw}

    def close(self) -> None:
        if self.silent:
            return
        values = ", ".join(f"{k} {v}" for k, v in self.postfix.items())
        done = f"{self.n}" if self.n == self.total else f"{self.n} of {self.total}"
        print(
            f"{self.desc}: {done} steps" + (f" ({values})" if values else ""),
            flush=True,
        )

    def __enter__(self) -> _Summary:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_quiet = False


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Within this block every :func:`progress` shows nothing (a cell that trains
    many small models shows its own summary instead)."""
    global _quiet
    before, _quiet = _quiet, True
    try:
        yield
    finally:
        _quiet = before


def progress(total: int, desc: str, **kwargs) -> _std_tqdm | _Summary:
    """A ``tqdm`` bar over ``total`` steps.

    When ``ATTNLAB_PROGRESS=lines`` (set by the book build) nothing is printed while
    the loop runs and one line at its end (the steps and the last
    postfix, e.g. the final loss), so the executed page carries no bar. Inside
    :func:`quiet`, nothing at all.
    """
    if _quiet:
        return _Summary(total, desc, silent=True)
    if os.environ.get("ATTNLAB_PROGRESS") == "lines":
        return _Summary(total, desc)
    # Jupyter and Colab: a live widget
    if importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.auto import tqdm as auto_tqdm

        return auto_tqdm(total=total, desc=desc, **kwargs)
    return _std_tqdm(total=total, desc=desc, file=sys.stdout, **kwargs)
