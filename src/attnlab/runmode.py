"""How much work a notebook does: the full course run, or a quick smoke run under the
test suite.

``make test`` executes every notebook with ``ATTNLAB_QUICK=1``: training then runs a
handful of steps so that the test checks that every cell *runs*; the cells that
assert final results are tagged ``nbval-skip`` and are checked by the full execution
in the book build.
"""

from __future__ import annotations

import os


def quick() -> bool:
    """True when the notebooks run as a quick smoke test (``ATTNLAB_QUICK=1``)."""
    return os.environ.get("ATTNLAB_QUICK", "") == "1"


def scaled(full: int, quick_value: int = 2) -> int:
    """``full`` in a real run, ``quick_value`` in a quick smoke run (a number of
    steps, examples, seeds...)."""
    return quick_value if quick() else full
