"""How a notebook runs: the full course run or a quick smoke run, the seeds it
draws, and what happens when a result check fails.

``make test`` executes every notebook with ``ATTNLAB_QUICK=1``: training then runs a
handful of steps so that the test checks that every cell *runs*; the cells that
check final results are tagged ``nbval-skip`` and are checked by the full execution
in the book build.

``ATTNLAB_SEED_OFFSET`` (a non-negative integer, default 0) is added to every seed
the course fixes, so that every run of a chapter can be perturbed at once; with the
default every chapter is exactly the run the book shows.

``ATTNLAB_STRICT=1`` (set by the book build, the tests, grading and the robustness
run) makes a failed :func:`expect` an error; in a reader's own session it prints a
note and the notebook goes on.
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


def seed_offset() -> int:
    """The integer in ``ATTNLAB_SEED_OFFSET`` (0 when it is unset or empty)."""
    raw = os.environ.get("ATTNLAB_SEED_OFFSET", "").strip()
    if not raw:
        return 0
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(
            f"ATTNLAB_SEED_OFFSET must be a non-negative integer, got {raw!r}"
        ) from None
    if value < 0:
        raise ValueError(
            f"ATTNLAB_SEED_OFFSET must be a non-negative integer, got {value}"
        )
    return value


def offset_seed(seed: int | str) -> int | str:
    """``seed`` plus ``ATTNLAB_SEED_OFFSET``: every seed the course fixes goes
    through here (the library does it for the seeds given to it; a notebook that
    seeds a generator of its own writes ``manual_seed(offset_seed(1))``).

    A string seed (``random.Random("tag-3")``) gets ``+offset`` appended, and stays
    as it is with offset 0.
    """
    offset = seed_offset()
    if isinstance(seed, str):
        return f"{seed}+{offset}" if offset else seed
    return seed + offset


def strict() -> bool:
    """True in the book build, the tests, grading and the robustness run
    (``ATTNLAB_STRICT=1``): a result check that fails is an error there."""
    return os.environ.get("ATTNLAB_STRICT", "") == "1"


def expect(condition: object, claim: str, got: object, see: str = "") -> None:
    """Check a claim about a trained result.

    ``claim`` says what the chapter expects ("the NTM copies length-20 sequences with
    under 1 wrong bit"), ``got`` what this run measured, ``see`` where the results
    over several seeds are. Under ``ATTNLAB_STRICT=1`` a failed claim raises
    ``AssertionError``; in a reader's own session it prints a note, so that "Run
    all" goes on. It returns nothing, so that a cell ending with it shows no value.
    """
    if condition:
        return
    message = f"Expected: {claim}. This run got: {got}."
    if see:
        message += f" {see}"
    if strict():
        raise AssertionError(message)
    print(
        "Note: this run differs from what the chapter describes. "
        + message
        + " Training depends on the machine and the seed; the rest of the notebook"
        " still runs."
    )
