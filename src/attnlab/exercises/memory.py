"""Checks for chapter 1, "Context-sensitive memory": the soft lookup, its
temperature, a top-k lookup, and the experiment that learns a query at another
temperature."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from attnlab.attention import attend, masked_softmax
from attnlab.exercises._checking import (
    ExerciseError,
    as_tensor,
    call,
    describe,
    exercise_check,
    expect_close,
    expect_number,
    expect_tensor,
    generator,
    passed,
)
from attnlab.memory import SoftDict

SUBTRACT_MAX = (
    "subtract the largest score from all scores before taking exp (torch.softmax"
    " does this for you), so that exp never overflows or underflows"
)


def _reference_lookup(
    query: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    temperature: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    weights = torch.softmax(keys.double() @ query.double() / temperature, dim=-1)
    return weights @ values.double(), weights


def _pair(name: str, out: Any, n: int, m: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The answer ``out`` as the pair (value (m,), weights (n,)); explains the usual
    ways of getting it wrong."""
    if isinstance(out, torch.Tensor):
        raise ExerciseError(
            f"{name} returned one tensor of shape {tuple(out.shape)}: return the"
            " pair (value, weights), e.g. `return weights @ values, weights`"
        )
    if not isinstance(out, tuple | list) or len(out) != 2:
        raise ExerciseError(
            f"{name} must return a pair (value, weights), got {describe(out)}"
        )
    value, weights = out
    shapes = [tuple(getattr(x, "shape", ())) for x in (value, weights)]
    if n != m and shapes == [(n,), (m,)]:
        raise ExerciseError(
            f"{name} returned (weights, value): return the value first, then the"
            " weights"
        )
    for what, x in [("value", value), ("weights", weights)]:
        if (
            isinstance(x, torch.Tensor)
            and x.is_floating_point()
            and not torch.isfinite(x).all()
        ):
            raise ExerciseError(
                f"{name}'s {what} contains NaN or infinity: {SUBTRACT_MAX}"
            )
    return expect_tensor(f"{name}'s value", value, (m,)), expect_tensor(
        f"{name}'s weights", weights, (n,)
    )


def _expect_distribution(name: str, weights: torch.Tensor, what: str) -> None:
    if (weights < 0).any():
        raise ExerciseError(
            f"some of {name}'s weights are negative {what}: normalise the scores"
            " with a softmax"
        )
    total = weights.sum().item()
    if abs(total - 1) > 1e-4:
        raise ExerciseError(
            f"{name}'s weights sum to {total:.4f} {what}, not 1: normalise them over"
            " the keys"
        )


def _random_case(
    n: int, d: int, m: int, gen: torch.Generator
) -> tuple[torch.Tensor, ...]:
    return (
        torch.randn(d, generator=gen),
        torch.randn(n, d, generator=gen),
        torch.randn(n, m, generator=gen),
    )


def _large_scores() -> list[tuple[str, torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Queries whose dot-product scores are about +1000 and -1000 (keys: the
    identity)."""
    keys, values = torch.eye(3), torch.tensor([[1.0], [2.0], [4.0]])
    return [
        (
            "for scores of about +1000",
            torch.tensor([1000.0, 999.0, 0.0]),
            keys,
            values,
        ),
        (
            "for scores of about -1000",
            torch.tensor([-1000.0, -1001.0, -1003.0]),
            keys,
            values,
        ),
    ]


@exercise_check(attend, masked_softmax, SoftDict.lookup)
def check_soft_lookup(soft_lookup: Callable, seed: int | None = 0) -> None:
    """Check ``soft_lookup(query (d,), keys (n, d), values (n, m)) -> (value (m,),
    weights (n,))``."""
    name = "soft_lookup"
    gen = generator(seed)
    cases = [(5, 3, 2), (1, 4, 3), (7, 2, 1), (6, 4, 4)]
    for n, d, m in cases:
        query, keys, values = _random_case(n, d, m, gen)
        value, weights = _pair(
            name, call(soft_lookup, name, query, keys, values), n, m
        )
        what = f"for n={n} keys of dimension d={d} and values of dimension m={m}"
        ref_value, ref_weights = _reference_lookup(query, keys, values)
        scaled = torch.softmax(keys.double() @ query.double() / d**0.5, -1)
        if n > 1 and d > 1 and torch.allclose(weights.double(), scaled, atol=1e-5):
            raise ExerciseError(
                f"{name} divides the scores by sqrt(d) {what}: this lookup uses the"
                " plain dot product q . k (the scaled dot product comes in the next"
                " chapter)"
            )
        _expect_distribution(name, weights, what)
        expect_close(f"{name}'s weights", weights, ref_weights, what)
        if (
            d == m
            and n > 1
            and torch.allclose(
                value.double(), ref_weights @ keys.double(), atol=1e-5
            )
        ):
            raise ExerciseError(
                f"{name} returns the weighted sum of the keys {what}: the answer is"
                " the weighted sum of the values"
            )
        expect_close(
            f"{name}'s value",
            value,
            ref_value,
            f"{what}, although the weights are right: return the weighted sum of the"
            " values, weights @ values",
        )
    for what, query, keys, values in _large_scores():
        value, weights = _pair(
            name, call(soft_lookup, name, query, keys, values), 3, 1
        )
        ref_value, ref_weights = _reference_lookup(query, keys, values)
        expect_close(f"{name}'s weights", weights, ref_weights, what)
        expect_close(f"{name}'s value", value, ref_value, what)
    passed(name, len(cases) + 2)


@exercise_check(SoftDict.lookup)
def check_sharpness(lookup_with_temperature: Callable, seed: int | None = 0) -> None:
    """Check ``lookup_with_temperature(query (d,), keys (n, d), values (n, m),
    temperature) -> (value, weights)``."""
    name = "lookup_with_temperature"
    gen = generator(seed)
    query, keys, values = _random_case(6, 3, 2, gen)
    temperatures = [0.1, 1.0, 10.0]
    for temperature in temperatures:
        what = f"at temperature {temperature}"
        value, weights = _pair(
            name,
            call(lookup_with_temperature, name, query, keys, values, temperature),
            6,
            2,
        )
        _expect_distribution(name, weights, what)
        if temperature != 1.0 and torch.allclose(
            weights.double(),
            _reference_lookup(query, keys, values, 1 / temperature)[1],
            atol=1e-5,
        ):
            raise ExerciseError(
                "you multiply the scores by the temperature: divide them by it, so"
                " that a high temperature flattens the weights and a low one"
                " sharpens them"
            )
        if temperature != 1.0 and torch.allclose(
            weights.double(), _reference_lookup(query, keys, values)[1], atol=1e-5
        ):
            raise ExerciseError(
                f"{name} ignores its temperature: divide the scores by it before the"
                " softmax"
            )
        ref_value, ref_weights = _reference_lookup(query, keys, values, temperature)
        expect_close(f"{name}'s weights", weights, ref_weights, what)
        expect_close(f"{name}'s value", value, ref_value, what)
    # Scores proportional to the temperature: the weights must be the same at every
    # temperature. A clamped or
    # floored temperature gives flatter weights, a capped one sharper weights.
    keys, values = torch.eye(4), torch.tensor([[1.0], [2.0], [3.0], [4.0]])
    pattern = torch.tensor([3.0, 1.0, 0.0, -2.0])[torch.randperm(4, generator=gen)]
    extremes = [1e-3, 1e-5, 1e4]
    for temperature in extremes:
        what = f"at temperature {temperature:g}"
        query = pattern * temperature
        value, weights = _pair(
            name,
            call(lookup_with_temperature, name, query, keys, values, temperature),
            4,
            1,
        )
        _expect_distribution(name, weights, what)
        ref_value, ref_weights = _reference_lookup(query, keys, values, temperature)
        if weights.max() < ref_weights.max().item() - 1e-4:
            raise ExerciseError(
                f"{name}'s weights {what} are flatter than the softmax of scores /"
                " temperature: do not clamp or floor the temperature, a tiny"
                " temperature must sharpen the weights"
            )
        if weights.max() > ref_weights.max().item() + 1e-4:
            raise ExerciseError(
                f"{name}'s weights {what} are sharper than the softmax of scores /"
                " temperature: do not cap the temperature, a huge temperature must"
                " flatten the weights"
            )
        expect_close(f"{name}'s weights", weights, ref_weights, what)
        expect_close(f"{name}'s value", value, ref_value, what)
    big = torch.tensor([2.0, 1.0, 0.0, 0.0])
    _pair(name, call(lookup_with_temperature, name, big, keys, values, 1e-3), 4, 1)
    passed(name, len(temperatures) + len(extremes) + 1)


def _reference_topk(
    query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, k: int
) -> tuple[torch.Tensor, torch.Tensor]:
    scores = keys.double() @ query.double()
    kept = torch.zeros_like(scores, dtype=torch.bool)
    kept[scores.topk(k).indices] = True
    weights = masked_softmax(scores, kept)
    return weights @ values.double(), weights


@exercise_check()
def check_topk_lookup(topk_lookup: Callable, seed: int | None = 0) -> None:
    """Check ``topk_lookup(query (d,), keys (n, d), values (n, m), k) -> (value (m,),
    weights (n,))``: the softmax over the ``k`` best-scoring keys only, weight 0 for
    the others, weights in the keys' order.
    """
    name = "topk_lookup"
    gen = generator(seed)
    cases = [(8, 4, 3, 3), (6, 3, 2, 1), (5, 2, 2, 5), (9, 5, 1, 4)]
    for n, d, m, k in cases:
        query, keys, values = _random_case(n, d, m, gen)
        what = f"for n={n} keys and k={k}"
        out = call(topk_lookup, name, query, keys, values, k)
        if (
            isinstance(out, tuple | list)
            and len(out) == 2
            and k < n
            and tuple(getattr(out[1], "shape", ())) == (k,)
        ):
            raise ExerciseError(
                f"{name} returned {k} weights {what}: return one weight per key,"
                " shape (n,), with 0 for the keys left out"
            )
        value, weights = _pair(name, out, n, m)
        ref_value, ref_weights = _reference_topk(query, keys, values, k)
        kept = int((weights.abs() > 1e-12).sum())
        scores = keys.double() @ query.double()
        if (
            torch.allclose(
                weights.double(),
                _reference_topk(-query, keys, values, k)[1],
                atol=1e-5,
            )
            and k < n
        ):
            raise ExerciseError(
                f"{name} keeps the k lowest-scoring keys {what}: keep the k highest"
            )
        if abs(weights.sum().item() - 1) > 1e-4 and kept == k:
            full = torch.softmax(scores, -1)
            if torch.allclose(weights.double(), full * (ref_weights > 0), atol=1e-5):
                raise ExerciseError(
                    f"{name}'s weights sum to {weights.sum().item():.4f} {what}: you"
                    " take the softmax over all keys and then zero the others; take"
                    " the softmax over the k kept keys only (mask the others before"
                    " the softmax)"
                )
        _expect_distribution(name, weights, what)
        if kept != k:
            raise ExerciseError(
                f"{name} gives weight to {kept} keys {what}: keep exactly k keys,"
                " the k largest scores"
            )
        order = scores.argsort(descending=True)
        if (
            k < n
            and torch.allclose(
                weights.double()[:k], ref_weights[order[:k]], atol=1e-5
            )
            and not torch.equal(order[:k].sort().values, torch.arange(k))
        ):
            raise ExerciseError(
                f"{name} puts the weights in the order of the scores, at positions"
                f" 0..k-1 {what}: put each weight at the index of its key (e.g."
                " scatter them with the indices of topk)"
            )
        expect_close(f"{name}'s weights", weights, ref_weights, what)
        expect_close(f"{name}'s value", value, ref_value, what)
    query, keys, values = _large_scores()[0][1:]
    value, weights = _pair(
        name, call(topk_lookup, name, query, keys, values, 2), 3, 1
    )
    expect_close(
        f"{name}'s weights",
        weights,
        _reference_topk(query, keys, values, 2)[1],
        "for scores of about 1000",
    )
    passed(name, len(cases) + 1)


def _losses(name: str, losses: Any, steps: int) -> list[float]:
    values = as_tensor(f"{name}'s losses", losses, torch.float64).flatten()
    if values.numel() != steps:
        raise ExerciseError(
            f"{name} recorded {values.numel()} losses for steps={steps}: record one"
            " loss per step"
        )
    if not torch.isfinite(values).all():
        raise ExerciseError(
            f"{name}'s losses contain NaN or infinity: look at the lookup"
            f" ({SUBTRACT_MAX})"
        )
    return values.tolist()


@exercise_check()
def check_query_training(
    learn_query: Callable,
    memory: SoftDict,
    target: torch.Tensor,
    seed: int | None = 0,
) -> None:
    """Check the experiment ``learn_query(temperature, steps) -> (query (d_k,),
    losses)``.

    ``learn_query`` trains a query through ``memory`` at ``temperature`` for
    ``steps`` steps on the squared error between the looked-up value and ``target``
    (summed over the value's entries). The check trains at two temperatures and
    verifies that the losses were recorded, fell, depend on the temperature, and
    belong to the query returned.
    """
    name = "learn_query"
    gen = generator(seed)
    steps = 20
    temperatures = [
        0.2 + 0.6 * torch.rand((), generator=gen).item(),
        2.0 + 3.0 * torch.rand((), generator=gen).item(),
    ]
    runs = []
    for temperature in temperatures:
        out = call(learn_query, name, temperature, steps)
        if not isinstance(out, tuple | list) or len(out) != 2:
            raise ExerciseError(
                f"{name} must return the pair (query, losses), got {describe(out)}"
            )
        query = expect_tensor(
            f"{name}'s query", out[0], (memory.keys.shape[1],), torch.float32
        )
        runs.append((temperature, query, _losses(name, out[1], steps)))
    for temperature, _, losses in runs:
        what = f"at temperature {temperature:.2f}"
        if max(losses) - min(losses) < 1e-7:
            raise ExerciseError(
                f"the loss never changed during training {what}: the query gets no"
                " gradient. Create it with requires_grad_(), do not compute the"
                " lookup under torch.no_grad() or on a detached tensor, and call"
                " optimizer.step() after loss.backward()"
            )
    if runs[0][2] == runs[1][2]:
        raise ExerciseError(
            f"{name} records the same losses at temperatures {temperatures[0]:.2f}"
            f" and {temperatures[1]:.2f}: pass its temperature to the lookup"
        )
    for temperature, query, losses in runs:
        what = f"at temperature {temperature:.2f}"
        with torch.no_grad():
            value, _ = memory.lookup(query, temperature=temperature)
            final = expect_number(
                "the loss of the query", (value - target).pow(2).sum()
            )
        if (
            abs(final - losses[-1]) > abs(final - losses[0])
            or abs(final - losses[-1]) > 0.2 * abs(losses[0]) + 1e-3
        ):
            raise ExerciseError(
                f"the query that {name} returns has loss {final:.4g} {what} (the"
                " squared error summed over the value's entries), but the last loss"
                f" recorded is {losses[-1]:.4g}: return the trained query, and"
                " record the summed squared error of the lookup at this temperature"
            )
        if not final < losses[0]:
            raise ExerciseError(
                f"training did not lower the loss {what} (first {losses[0]:.4g},"
                f" after the last step {final:.4g}): step against the gradient with"
                " a small learning rate"
            )
    passed(name, 2 * len(runs) + 1)
