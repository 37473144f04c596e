"""The run mode: quick runs, the seed offset every chapter's seeds go through, and
result checks that are strict in the build and a note in a reader's session."""

import random
import subprocess
import sys

import numpy as np
import pytest
import torch

from attnlab.runmode import expect, offset_seed, scaled, seed_offset, strict
from attnlab.tasks.copy import copy_sampler, evaluate_copy
from attnlab.tasks.reversal import reversal_batches, sample_reversals
from attnlab.tasks.translation import (
    examples_per_length,
    sample_examples,
    training_batches,
)
from attnlab.train import seed_everything


@pytest.fixture
def offset(monkeypatch):
    """Set ATTNLAB_SEED_OFFSET for one test."""

    def set_offset(value: str | None) -> None:
        if value is None:
            monkeypatch.delenv("ATTNLAB_SEED_OFFSET", raising=False)
        else:
            monkeypatch.setenv("ATTNLAB_SEED_OFFSET", value)

    return set_offset


def test_scaled_is_the_full_value_unless_quick(monkeypatch):
    monkeypatch.setenv("ATTNLAB_QUICK", "1")
    assert scaled(100, 3) == 3
    monkeypatch.setenv("ATTNLAB_QUICK", "0")
    assert scaled(100, 3) == 100


@pytest.mark.parametrize(("raw", "value"), [(None, 0), ("", 0), ("0", 0), (" 2 ", 2), ("17", 17)])
def test_the_offset_is_read_from_the_environment(offset, raw, value):
    offset(raw)
    assert seed_offset() == value
    assert offset_seed(5) == 5 + value


def test_a_string_seed_takes_the_offset_as_a_suffix(offset):
    offset(None)
    assert offset_seed("tag-3") == "tag-3"
    offset("2")
    assert offset_seed("tag-3") == "tag-3+2"


@pytest.mark.parametrize("raw", ["one", "1.5", "2e3", "-1"])
def test_a_bad_offset_is_a_clear_error(offset, raw):
    offset(raw)
    with pytest.raises(ValueError, match=r"ATTNLAB_SEED_OFFSET must be a non-negative integer, got"):
        seed_offset()


def draws() -> tuple:
    """One draw of each random source that seed_everything seeds."""
    return random.random(), float(np.random.rand()), float(torch.rand(1))


def test_seed_everything_adds_the_offset(offset):
    offset(None)
    generator = seed_everything(3)
    plain, plain_generator = draws(), float(torch.rand(1, generator=generator))
    offset("2")
    generator = seed_everything(1)  # 1 + 2: the same seed as above
    assert draws() == plain and float(torch.rand(1, generator=generator)) == plain_generator
    seed_everything(3)  # 3 + 2: another seed
    assert draws() != plain


def test_the_default_offset_changes_nothing(offset):
    offset(None)
    unset = (sample_examples(4, seed=7), training_batches(2, seed=7)(0).src.tolist())
    offset("0")
    assert unset == (sample_examples(4, seed=7), training_batches(2, seed=7)(0).src.tolist())


def task_draws(seed: int) -> dict:
    """What each task function draws from ``seed``."""
    return {
        "sample": sample_examples(4, seed=seed),
        "per length": examples_per_length(2, seed=seed),
        "batches": training_batches(4, seed=seed)(5).src,
        "reversals": sample_reversals(4, seed=seed),
        "reversal batches": reversal_batches(4, seed=seed)(5).src,
        "copy": copy_sampler(4, seed=seed)(5)[0],
    }


def test_the_tasks_add_the_offset_to_their_seeds(offset):
    offset(None)
    base = task_draws(3)
    offset("1")
    shifted = task_draws(2)
    for name, value in base.items():  # seed 2 + offset 1 draws what seed 3 drew
        if isinstance(value, torch.Tensor):
            assert torch.equal(value, shifted[name]), name
        else:
            assert value == shifted[name], name
    unshifted = sample_examples(4, seed=3)
    assert unshifted != base["sample"]


def test_the_copy_test_sequences_move_with_the_offset(offset):
    class Zeros(torch.nn.Module):
        def forward(self, inputs):
            return torch.zeros(*inputs.shape[:2], inputs.shape[-1] - 1)

    model = Zeros()
    offset(None)
    base = evaluate_copy(model, [5], n=64)["bits"][5]
    offset("3")
    moved = evaluate_copy(model, [5], n=64)["bits"][5]
    assert base != moved  # other test sequences, other bits set to 1


def test_expect_passes_silently(capsys, monkeypatch):
    monkeypatch.delenv("ATTNLAB_STRICT", raising=False)
    assert expect(True, "a claim", 1.0) is None  # a cell ending with it shows no value
    assert capsys.readouterr().out == ""


def test_expect_is_an_error_when_strict(monkeypatch):
    monkeypatch.setenv("ATTNLAB_STRICT", "1")
    assert strict()
    with pytest.raises(AssertionError, match=r"Expected: accuracy above 0.9\. This run got: 0\.412\. See the table\."):
        expect(0.412 > 0.9, "accuracy above 0.9", "0.412", "See the table.")


def test_expect_is_a_note_in_a_readers_session(capsys, monkeypatch):
    monkeypatch.delenv("ATTNLAB_STRICT", raising=False)
    assert not strict()
    assert expect(False, "accuracy above 0.9", 0.412, "See the table.") is None
    out = capsys.readouterr().out
    assert out.startswith("Note: this run differs from what the chapter describes.")
    assert "accuracy above 0.9" in out and "0.412" in out and "See the table." in out


def test_experiments_refuse_a_seed_offset():
    env = {"ATTNLAB_SEED_OFFSET": "1", "PATH": ""}
    run = subprocess.run(
        [sys.executable, "-m", "attnlab.experiments", "ntm-copy", "--seeds", "1"],
        env=env, capture_output=True, text=True,
    )
    assert run.returncode != 0 and "ATTNLAB_SEED_OFFSET" in run.stderr
