"""``python -m attnlab.experiments neural-turing-machines``: chapter 10's NTM and
its LSTM baseline on the copy task, over five seeds at the chapter's budget.

Seed ``s`` trains both models as the chapter does (:data:`SETTINGS`: 3,000 steps
of 32 sequences of 1 to 20 vectors, :func:`attnlab.experiments.ntm_copy.train_model`,
the weights of the lowest validation loss kept) and tests them on the chapter's
1,024 sequences of each length from 10 to 60: wrong bits and cost per sequence, and
the share of sequences copied without a wrong bit. It also keeps each run's
validation curve. :func:`conclusions` lists what the chapter states over seeds.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from attnlab.experiments import over_seeds
from attnlab.experiments.ntm_copy import LENGTHS, train_model
from attnlab.runmode import seed_offset
from attnlab.seedband import Band, band, every_seed
from attnlab.tasks.copy import EVAL_EVERY, evaluate_copy

SETTINGS: dict[str, Any] = {
    "steps": 3000,
    "test_sequences": 1024,
    "lengths": LENGTHS,
}
MODELS = {"NTM": "ntm", "LSTM": "lstm"}
MEASURES = {
    "bits": "wrong bits per sequence",
    "cost": "cost per sequence (bits)",
    "perfect": "copied without error",
}
TRAINING_LENGTHS = ("10", "20")
BEYOND = ("30", "40", "50", "60")


def measure(kind: str, name: str, steps: int, test_sequences: int) -> dict[str, Any]:
    """One model (``kind`` ``"ntm"`` or ``"lstm"``) trained as the chapter does for
    ``steps`` steps: :func:`~attnlab.tasks.copy.evaluate_copy`'s measures on
    ``test_sequences`` sequences of each length in :data:`LENGTHS` (``{measure:
    {length: value}}``) and its validation curve (``"val_bits"``)."""
    model, history = train_model(kind, steps, desc=name)
    measured = evaluate_copy(model, LENGTHS, n=test_sequences)
    return {
        **{
            key: {str(n): v for n, v in values.items()}
            for key, values in measured.items()
        },
        "val_bits": history.metric("val_bits")[1],
    }


def run_seed(seed: int) -> dict[str, Any]:
    """Both models as the chapter trains them under ``ATTNLAB_SEED_OFFSET = seed``
    (set by the command): the test measures by length and the validation curve."""
    assert seed_offset() == seed, (seed_offset(), seed)
    steps, test_sequences = SETTINGS["steps"], SETTINGS["test_sequences"]
    return {
        "models": {
            name: measure(kind, name, steps, test_sequences)
            for name, kind in MODELS.items()
        }
    }


def conclusions(results: dict[str, Any]) -> dict[str, bool]:
    """What chapter 10 states over seeds."""
    runs = results["runs"]

    def bits(name: str, length: str) -> Band:
        return band(runs, "models", name, "bits", length)

    return {
        "the NTM under 1 wrong bit per sequence at lengths 10 and 20,"
        " on every seed": (max(bits("NTM", n).high for n in TRAINING_LENGTHS) < 1),
        "the LSTM above 10 wrong bits per sequence at length 20, on every seed": (
            bits("LSTM", "20").low > 10
        ),
        "beyond length 20, the LSTM more than twice the NTM's errors (or 1 bit), on"
        " every seed": all(
            every_seed(
                lambda ntm, lstm: lstm > 2 * max(ntm, 1.0),
                bits("NTM", n),
                bits("LSTM", n),
            )
            for n in BEYOND
        ),
    }


def markdown(data: dict[str, Any]) -> str:
    """The reproducing page's table: each model's measures by length, mean and
    range over the seeds."""
    runs = data["results"]["runs"]
    lines = copy_table(runs, MODELS, SETTINGS["test_sequences"])
    firsts = []
    for run in runs:
        step = first_under(run["models"]["NTM"]["val_bits"])
        firsts.append(
            f"seed {run['seed']} " + ("never" if step is None else f"{step:,}")
        )
    lines += [
        "",
        "The step at which the NTM's validation error first fell under one wrong bit"
        f" per sequence (measured every {EVAL_EVERY} steps): "
        + "; ".join(firsts)
        + ".",
    ]
    budget = f"{SETTINGS['steps']:,} steps per model"
    return over_seeds.page(data, conclusions, budget, lines)


def first_under(
    val_bits: list[float], bits: float = 1.0, every: int = EVAL_EVERY
) -> int | None:
    """The first training step at which a validation curve measured every ``every``
    steps (the first measure at step ``every``) is under ``bits``; ``None`` if
    never."""
    return next(
        ((i + 1) * every for i, value in enumerate(val_bits) if value < bits), None
    )


def copy_table(
    runs: list[dict[str, Any]], names: Iterable[str], test_sequences: int
) -> list[str]:
    """The lines of a table of the models ``names``' measures by test length, mean
    and range over the seeds of ``runs``."""
    return over_seeds.bucket_table(
        runs,
        f"Test sequences ({test_sequences:,} of each length) by length",
        {
            f"{name}, {label}": ("models", name, key)
            for name in names
            for key, label in MEASURES.items()
        },
        [str(n) for n in LENGTHS],
        digits=3,
    )


def main(argv: list[str]) -> None:
    over_seeds.command(sys.modules[__name__], argv)
