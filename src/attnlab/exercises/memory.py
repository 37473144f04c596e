"""Checks for chapter 1, "Context-sensitive memory"."""

from __future__ import annotations

from collections.abc import Callable

import torch

from attnlab.exercises._checking import ExerciseError, call, expect_close, expect_tensor, passed


def _reference_lookup(query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, ...]:
    weights = torch.softmax(query @ keys.T, dim=-1)
    return weights @ values, weights


def check_soft_lookup(soft_lookup: Callable) -> None:
    """Check ``soft_lookup(query (d,), keys (n, d), values (n, m)) -> (value (m,), weights (n,))``."""
    name = "soft_lookup"
    gen = torch.Generator().manual_seed(0)
    cases = 0
    for n, d, m in [(5, 3, 2), (1, 4, 3), (7, 2, 1)]:
        query, keys = torch.randn(d, generator=gen), torch.randn(n, d, generator=gen)
        values = torch.randn(n, m, generator=gen)
        out = call(soft_lookup, name, query, keys, values)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise ExerciseError(f"{name} must return a pair (value, weights), got {type(out).__name__}")
        value, weights = out
        expect_tensor(f"{name}'s weights", weights, (n,))
        expect_tensor(f"{name}'s value", value, (m,))
        if (weights < 0).any():
            raise ExerciseError("some weights are negative: normalise the scores with a softmax")
        if not torch.allclose(weights.sum(), torch.tensor(1.0), atol=1e-5):
            raise ExerciseError(f"the weights sum to {weights.sum().item():.4f}, not 1: normalise over the keys")
        ref_value, ref_weights = _reference_lookup(query, keys, values)
        expect_close(f"{name}'s weights", weights, ref_weights, f"for n={n} keys of dimension d={d}")
        expect_close(f"{name}'s value", value, ref_value,
                     "although the weights are right: return the weighted sum of the values")
        cases += 1
    big = torch.tensor([1000.0, 0.0])
    value, weights = call(soft_lookup, name, big, torch.eye(2), torch.tensor([[1.0], [2.0]]))
    if torch.isnan(weights).any() or torch.isnan(value).any():
        raise ExerciseError("large scores give NaN: use torch.softmax (it subtracts the maximum) rather than exp/sum")
    passed(name, cases + 1)


def check_sharpness(lookup_with_temperature: Callable) -> None:
    """Check ``lookup_with_temperature(query, keys, values, temperature) -> (value, weights)``."""
    name = "lookup_with_temperature"
    gen = torch.Generator().manual_seed(1)
    query, keys = torch.randn(3, generator=gen), torch.randn(6, 3, generator=gen)
    values = torch.randn(6, 2, generator=gen)
    scores = keys @ query
    temperatures = [0.1, 1.0, 10.0]
    for temperature in temperatures:
        value, weights = call(lookup_with_temperature, name, query, keys, values, temperature)
        expect_tensor(f"{name}'s weights", weights, (6,))
        expected = torch.softmax(scores / temperature, dim=-1)
        if temperature != 1.0 and torch.allclose(weights, torch.softmax(scores * temperature, dim=-1), atol=1e-5):
            raise ExerciseError("you multiply the scores by the temperature: divide them, so a high temperature "
                                "flattens the weights")
        expect_close(f"{name}'s weights", weights, expected, f"at temperature {temperature}")
        expect_close(f"{name}'s value", value, expected @ values, f"at temperature {temperature}")
    value, weights = call(lookup_with_temperature, name, query, keys, values, 1e-3)
    if torch.isnan(weights).any():
        raise ExerciseError("a tiny temperature gives NaN: divide the scores first, then use torch.softmax")
    if weights.argmax() != scores.argmax() or weights.max() < 0.999:
        raise ExerciseError("at temperature 0.001 the lookup should put (almost) all weight on the best key")
    passed(name, len(temperatures) + 1)
