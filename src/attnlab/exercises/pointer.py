"""Checks for the chapters "Pointer networks" and "Pointer networks for the travelling salesman"."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import torch

from attnlab.exercises._checking import ExerciseError, call, expect_close, expect_tensor, passed


def _reference_distribution(s, h, w1, w2, v) -> torch.Tensor:
    return torch.softmax(torch.tanh(h @ w1.T + w2 @ s) @ v, dim=-1)


def check_pointer_distribution(pointer_distribution: Callable) -> None:
    """Check ``pointer_distribution(s (d,), h (n, d), W1 (a, d), W2 (a, d), v (a,)) -> (n,)``.

    The answer is ``softmax_j(v^T tanh(W1 h_j + W2 s))``: a distribution over the n inputs, not a weighted sum.
    """
    name = "pointer_distribution"
    gen = torch.Generator().manual_seed(0)
    cases = 0
    for n, d, a in [(5, 3, 4), (1, 2, 3), (9, 4, 6)]:
        s, h = torch.randn(d, generator=gen), torch.randn(n, d, generator=gen)
        w1, w2, v = torch.randn(a, d, generator=gen), torch.randn(a, d, generator=gen), torch.randn(a, generator=gen)
        out = call(pointer_distribution, name, s, h, w1, w2, v)
        if isinstance(out, torch.Tensor) and tuple(out.shape) == (d,) and d != n:
            raise ExerciseError(f"{name} returned a vector of size d = {d}: that is the weighted sum of the encoder "
                                "states. A pointer network stops before it and returns the weights, one per input.")
        expect_tensor(name, out, (n,))
        if (out < 0).any() or not torch.allclose(out.sum(), torch.tensor(1.0), atol=1e-5):
            raise ExerciseError(f"{name} must return probabilities (non-negative, summing to 1): apply a softmax "
                                f"over the inputs; yours sum to {out.sum().item():.4f}")
        if n > 1 and torch.allclose(out, torch.softmax((h @ w1.T + w2 @ s) @ v, dim=-1), atol=1e-5):
            raise ExerciseError("the scores lack the tanh: u_j = v^T tanh(W1 h_j + W2 s)")
        if n > 1 and torch.allclose(out, torch.softmax(torch.tanh(h @ w2.T + w1 @ s) @ v, dim=-1), atol=1e-5):
            raise ExerciseError("W1 and W2 are swapped: W1 multiplies the encoder states h_j, W2 the decoder state s")
        expect_close(name, out, _reference_distribution(s, h, w1, w2, v), f"for n={n} inputs of size d={d}")
        cases += 1
    passed(name, cases)


def check_masked_pointer(masked_pointer: Callable) -> None:
    """Check ``masked_pointer(scores (B, n), chosen (B, n) bool) -> probs (B, n)``.

    Inputs already chosen get probability exactly 0; the others share all of it, in proportion to
    ``exp(score)``.
    """
    name = "masked_pointer"
    gen = torch.Generator().manual_seed(1)
    cases = 0
    scores = torch.randn(4, 6, generator=gen) * 3
    for k in [0, 1, 3, 5]:
        chosen = torch.zeros(4, 6, dtype=torch.bool)
        for b in range(4):
            chosen[b, torch.randperm(6, generator=gen)[:k]] = True
        out = expect_tensor(name, call(masked_pointer, name, scores, chosen), (4, 6))
        if k and (out[chosen] != 0).any():
            raise ExerciseError(f"with {k} inputs already chosen, {name} still gives them probability "
                                f"{out[chosen].max().item():.3g}: they must get exactly 0")
        if not torch.allclose(out.sum(-1), torch.ones(4), atol=1e-5):
            raise ExerciseError(f"{name}'s rows sum to {out.sum(-1).tolist()}, not 1: normalise over the inputs "
                                "that are still free (mask the scores before the softmax, not the probabilities after)")
        expected = torch.softmax(scores.masked_fill(chosen, float("-inf")), dim=-1)
        expect_close(name, out, expected, f"with {k} of 6 inputs chosen")
        cases += 1
    huge = torch.tensor([[1000.0, -1000.0, 0.0]])
    out = call(masked_pointer, name, huge, torch.tensor([[False, False, True]]))
    if torch.isnan(out).any() or not torch.allclose(out, torch.tensor([[1.0, 0.0, 0.0]]), atol=1e-5):
        raise ExerciseError(f"{name} fails for large scores (got {out.tolist()}): fill the chosen scores with -inf "
                            "(or a very negative number) and let torch.softmax normalise")
    passed(name, cases + 1)


def _reference_tour_length(points: torch.Tensor, tours: torch.Tensor) -> torch.Tensor:
    ordered = points.gather(1, tours.unsqueeze(-1).expand(-1, -1, 2))
    return (ordered - ordered.roll(-1, dims=1)).norm(dim=-1).sum(-1)


def check_tour_length(tour_length: Callable) -> None:
    """Check ``tour_length(points (B, n, 2), tours (B, n)) -> (B,)``: the length of each *closed* tour."""
    name = "tour_length"
    square = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]])
    out = expect_tensor(name, call(tour_length, name, square, torch.tensor([[0, 1, 2, 3]])), (1,))
    if torch.isclose(out[0], torch.tensor(3.0)):
        raise ExerciseError("the unit square's tour 0-1-2-3 has length 4, you get 3: close the tour, back from the "
                            "last city to the first")
    expect_close(name, out, torch.tensor([4.0]), "for the unit square visited in order")
    out = call(tour_length, name, square, torch.tensor([[0, 2, 1, 3]]))
    expect_close(name, expect_tensor(name, out, (1,)), torch.tensor([2 + 2 * 2**0.5]),
                 "for the unit square visited along both diagonals (follow the order given by the tour)")
    gen = torch.Generator().manual_seed(2)
    points = torch.rand(6, 9, 2, generator=gen)
    tours = torch.stack([torch.randperm(9, generator=gen) for _ in range(6)])
    out = expect_tensor(name, call(tour_length, name, points, tours), (6,))
    expect_close(name, out, _reference_tour_length(points, tours), "on random tours of 9 cities")
    passed(name, 3)


def _optimal_length(points: np.ndarray) -> float:
    n = len(points)
    best = np.inf
    for rest in itertools.permutations(range(1, n)):
        tour = (0, *rest)
        best = min(best, sum(float(np.linalg.norm(points[tour[i]] - points[tour[(i + 1) % n]])) for i in range(n)))
    return best


def check_held_karp(shortest_tour_length: Callable) -> None:
    """Check ``shortest_tour_length(points (n, 2) numpy) -> float``: the length of the optimal closed tour."""
    name = "shortest_tour_length"
    rng = np.random.default_rng(3)
    cases = 0
    for n in [2, 3, 4, 6, 7, 7, 8]:
        points = rng.random((n, 2))
        out = call(shortest_tour_length, name, points)
        try:
            value = float(out)
        except (TypeError, ValueError):
            raise ExerciseError(f"{name} must return a number, got {type(out).__name__}") from None
        expected = _optimal_length(points)
        if value > expected + 1e-6:
            raise ExerciseError(f"for {n} cities {name} returned {value:.4f}, but a closed tour of length "
                                f"{expected:.4f} exists: the answer is not the optimum")
        if value < expected - 1e-6:
            raise ExerciseError(f"for {n} cities {name} returned {value:.4f}, shorter than the optimal closed tour "
                                f"({expected:.4f}): does your tour return to city 0 and visit every city?")
        cases += 1
    passed(name, cases)
