"""Results over seeds: the band of a committed record, and the reader's run
checked against it.

A chapter states as general only what holds over the seeds of a record that
``python -m attnlab.experiments NAME`` wrote (seeds 0-4, declared before any run);
the reader's own run is one more draw, drawn inside that band
(:func:`attnlab.plot.seed_band`) and checked with :func:`expect_within` or
:func:`expect_ahead`. Five seeds say little about how far a sixth may fall, so the
checks widen the recorded range by its own width on each side (with ``floor`` as
the least widening): a normal spread of five draws covers about 2.3 standard
deviations, the widened band about 7.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from attnlab.display import glue
from attnlab.runmode import expect

SEEDS = (0, 1, 2, 3, 4)  # every record's seeds, declared before any run
FLOOR = 0.02  # the least widening of a band, in the measure's units


@dataclass(frozen=True)
class Band:
    """One measure over the recorded seeds: ``values[i]`` is seed ``seeds[i]``'s."""

    values: tuple[float, ...]
    seeds: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.values or len(self.values) != len(self.seeds):
            raise ValueError(
                "a band needs one value per seed and at least one seed, got"
                f" {len(self.values)} values for seeds {list(self.seeds)}"
            )

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    @property
    def width(self) -> float:
        return self.high - self.low

    def widened(self, floor: float = FLOOR) -> tuple[float, float]:
        """The range a further seed is expected in: ``(low - w, high + w)`` with
        ``w = max(width, floor)``."""
        w = max(self.width, floor)
        return self.low - w, self.high + w

    def ranks(self, floor: float = FLOOR) -> bool:
        """Whether a gap over seeds holds on every seed by more than the seeds'
        spread (its widened band lies above 0): a ranking a single run may be
        checked against."""
        return self.widened(floor)[0] > 0

    @property
    def disagrees(self) -> bool:
        """Whether the seeds differ about the sign of a gap."""
        return self.low < 0 < self.high

    def text(self, digits: int = 3) -> str:
        """``"0.912 (0.880 to 0.931)"``: mean and range over the seeds."""
        return (
            f"{self.mean:.{digits}f} ({self.low:.{digits}f} to"
            f" {self.high:.{digits}f})"
        )

    def __sub__(self, other: Band) -> Band:
        """Seed by seed differences (a gap between two models)."""
        if self.seeds != other.seeds:
            raise ValueError(
                f"bands over different seeds: {list(self.seeds)} and"
                f" {list(other.seeds)}"
            )
        return Band(
            tuple(a - b for a, b in zip(self.values, other.values, strict=True)),
            self.seeds,
        )


def every_seed(holds: Callable[..., bool], *bands: Band) -> bool:
    """Whether ``holds(a, b, ...)`` is true of every seed's values of ``bands``
    (a relation between measures that must hold seed by seed, not on average)."""
    if len({b.seeds for b in bands}) > 1:
        raise ValueError(
            f"bands over different seeds: {[list(b.seeds) for b in bands]}"
        )
    rows = zip(*(b.values for b in bands), strict=True)
    return all(holds(*values) for values in rows)


def glue_band(name: str, recorded: Band) -> None:
    """Glue a band's mean, lowest and highest seed as ``NAME_mean``, ``NAME_low``
    and ``NAME_high``, for the prose to paste."""
    glue(f"{name}_mean", recorded.mean)
    glue(f"{name}_low", recorded.low)
    glue(f"{name}_high", recorded.high)


def _lookup(run: Mapping[str, Any], keys: Sequence[str]) -> Any:
    value: Any = run
    for depth, key in enumerate(keys):
        if not isinstance(value, Mapping) or key not in value:
            known = sorted(value) if isinstance(value, Mapping) else type(value)
            raise KeyError(
                f"the record's run of seed {run.get('seed')} has no"
                f" {'/'.join(keys[: depth + 1])!r}; there is {known}"
            )
        value = value[key]
    return value


def band(runs: Sequence[Mapping[str, Any]], *keys: str) -> Band:
    """The measure at ``run[keys[0]][keys[1]]...`` of every run of a record
    (``record["results"]["runs"]``)."""
    if not runs:
        raise ValueError("a record holds at least one run, got none")
    return Band(
        tuple(float(_lookup(run, keys)) for run in runs),
        tuple(int(run["seed"]) for run in runs),
    )


def curves(runs: Sequence[Mapping[str, Any]], *keys: str) -> list[list[float]]:
    """The curve (a list of numbers) at ``keys`` of every run, seed by seed."""
    return [[float(v) for v in _lookup(run, keys)] for run in runs]


def expect_within(
    value: float, recorded: Band, what: str, *, floor: float = FLOOR
) -> None:
    """Check that this run's ``value`` lies in the recorded band widened by its
    width (at least ``floor``) on each side; a reader's run outside is told so, with
    the band."""
    low, high = recorded.widened(floor)
    expect(
        low <= value <= high,
        f"{what} between {low:.3f} and {high:.3f}: the {len(recorded.values)}"
        f" recorded seeds' range {recorded.text()} widened by"
        f" {max(recorded.width, floor):.3f} on each side",
        f"{value:.3f}",
    )


def expect_ahead(
    gap: float, recorded: Band, what: str, *, floor: float = FLOOR
) -> None:
    """Check that this run's ``gap`` (one model's measure minus another's) is
    positive, a ranking the record must hold on every seed by more than its
    spread: ``ValueError`` if it does not, for then no single run may be ranked."""
    if not recorded.ranks(floor):
        raise ValueError(
            f"the record does not rank {what}: its gaps over seeds are"
            f" {recorded.text()}, which widened by their spread reach"
            f" {recorded.widened(floor)[0]:.3f};"
            " report the band instead of checking a ranking"
        )
    expect(
        gap > 0,
        f"{what}: ahead on every recorded seed, by {recorded.text()}",
        f"a gap of {gap:.3f}",
    )
