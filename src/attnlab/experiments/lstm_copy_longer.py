"""``python -m attnlab.experiments lstm-copy-longer``: is the LSTM baseline's failure
on chapter 10's copy task a matter of its budget?

Seed ``s`` trains the chapter's LSTM baseline (one layer of 128 units) as the
chapter does under ``ATTNLAB_SEED_OFFSET = s``
(:func:`attnlab.experiments.ntm_copy.train_model`, the weights of the lowest
validation loss kept), for :data:`SETTINGS` ``steps``, more than three times the
chapter's 3,000, and tests it on the chapter's 1,024 sequences of each length from 10
to 60: wrong bits and cost per sequence, and the share of the sequences copied
without a wrong bit. :func:`conclusions` lists what the chapter
states over seeds.
"""

from __future__ import annotations

import sys
from typing import Any

from attnlab.experiments import over_seeds
from attnlab.experiments.neural_turing_machines import (
    TRAINING_LENGTHS,
    copy_table,
    measure,
)
from attnlab.experiments.ntm_copy import LENGTHS
from attnlab.runmode import seed_offset
from attnlab.seedband import band

SETTINGS: dict[str, Any] = {
    "steps": 10_000,
    "test_sequences": 1024,
    "lengths": LENGTHS,
}


def run_seed(seed: int) -> dict[str, Any]:
    """The LSTM trained for ``steps`` under ``ATTNLAB_SEED_OFFSET = seed`` (set by
    the command): its test measures by length and its validation curve."""
    assert seed_offset() == seed, (seed_offset(), seed)
    lstm = measure("lstm", "LSTM", SETTINGS["steps"], SETTINGS["test_sequences"])
    return {"models": {"LSTM": lstm}}


def conclusions(results: dict[str, Any]) -> dict[str, bool]:
    """What chapter 10 states of the longer run over seeds (the NTM at the chapter's
    budget makes under 1 wrong bit per sequence at lengths 10 and 20 on every seed:
    the record ``neural-turing-machines``)."""
    runs = results["runs"]
    bits = {n: band(runs, "models", "LSTM", "bits", n) for n in TRAINING_LENGTHS}
    return {
        "the LSTM still above 1 wrong bit per sequence at the training lengths 10"
        " and 20, on every seed": min(b.low for b in bits.values()) > 1,
        "the LSTM above 10 wrong bits per sequence at length 20, on every seed": (
            bits["20"].low > 10
        ),
    }


def markdown(data: dict[str, Any]) -> str:
    """The reproducing page's table: the LSTM's measures by length, mean and range
    over the seeds."""
    lines = copy_table(data["results"]["runs"], ["LSTM"], SETTINGS["test_sequences"])
    budget = f"{SETTINGS['steps']:,} steps"
    return over_seeds.page(data, conclusions, budget, lines)


def main(argv: list[str]) -> None:
    over_seeds.command(sys.modules[__name__], argv)
