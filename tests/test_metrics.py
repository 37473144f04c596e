"""Confidence interval of a mean: against scipy, a hand-computed case and its coverage."""

import numpy as np
import pytest
import torch
from scipy import stats

from attnlab.metrics import mean_interval


def test_mean_interval_matches_a_hand_computed_case():
    # values 1..5: mean 3, s = sqrt(2.5), t(0.975, 4) = 2.7764451, half width
    # 2.7764451 * sqrt(2.5) / sqrt(5) = 2.7764451 / sqrt(2) = 1.9632432
    mean, low, high = mean_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    assert mean == pytest.approx(3.0)
    assert low == pytest.approx(3.0 - 1.9632432, abs=1e-6)
    assert high == pytest.approx(3.0 + 1.9632432, abs=1e-6)


@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95, 0.99])
def test_mean_interval_matches_scipy(confidence):
    values = np.random.default_rng(0).exponential(size=37)
    expected = stats.t.interval(
        confidence, len(values) - 1, loc=values.mean(), scale=stats.sem(values)
    )
    mean, low, high = mean_interval(values, confidence)
    assert mean == pytest.approx(values.mean())
    assert (low, high) == pytest.approx(expected)


def test_mean_interval_takes_tensors_lists_and_float32():
    values = [0.0, 0.01, 0.03, 0.0, 0.02]
    expected = mean_interval(np.array(values))
    assert mean_interval(values) == pytest.approx(expected)
    assert mean_interval(torch.tensor(values)) == pytest.approx(expected, abs=1e-7)
    assert all(type(x) is float for x in mean_interval(torch.tensor(values)))


def test_equal_values_give_an_interval_of_width_zero():
    assert mean_interval([0.5, 0.5, 0.5]) == pytest.approx((0.5, 0.5, 0.5))


def test_mean_interval_covers_the_true_mean_at_its_confidence():
    # 4000 samples of 10 normal values: the 95% interval holds the mean 0 in about
    # 95% of them (the binomial standard error of the share is 0.0034)
    rng = np.random.default_rng(1)
    covered = [
        low <= 0.0 <= high
        for low, high in (
            mean_interval(rng.normal(size=10))[1:] for _ in range(4000)
        )
    ]
    assert np.mean(covered) == pytest.approx(0.95, abs=0.015)


def test_mean_interval_rejects_bad_input():
    with pytest.raises(ValueError, match="values"):
        mean_interval([1.0])
    with pytest.raises(ValueError, match="values"):
        mean_interval(np.ones((2, 3)))
    with pytest.raises(ValueError, match="values"):
        mean_interval([1.0, float("nan")])
    with pytest.raises(ValueError, match="confidence"):
        mean_interval([1.0, 2.0], confidence=95)
