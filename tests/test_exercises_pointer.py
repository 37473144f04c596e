import itertools

import numpy as np
import pytest
import torch

from attnlab.exercises import (
    ExerciseError,
    check_held_karp,
    check_masked_pointer,
    check_pointer_distribution,
    check_tour_length,
)


# ---------------------------------------------------------------- pointer distribution
def good_distribution(s, h, w1, w2, v):
    return torch.softmax(torch.tanh(h @ w1.T + w2 @ s) @ v, dim=-1)


def test_pointer_distribution_accepts_the_reference(capsys):
    check_pointer_distribution(good_distribution)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda s, h, w1, w2, v: good_distribution(s, h, w1, w2, v) @ h, "weighted sum"),
        (lambda s, h, w1, w2, v: torch.tanh(h @ w1.T + w2 @ s) @ v, "probabilities"),
        (lambda s, h, w1, w2, v: torch.softmax((h @ w1.T + w2 @ s) @ v, dim=-1), "lack the tanh"),
        (lambda s, h, w1, w2, v: torch.softmax(torch.tanh(h @ w2.T + w1 @ s) @ v, dim=-1), "swapped"),
        (lambda s, h, w1, w2, v: torch.softmax(torch.tanh(h @ w1.T) @ v, dim=-1), "is wrong"),
    ],
    ids=["weighted-sum", "no-softmax", "no-tanh", "swapped-weights", "ignores-decoder"],
)
def test_pointer_distribution_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_pointer_distribution(wrong)


# ---------------------------------------------------------------- masking
def good_mask(scores, chosen):
    return torch.softmax(scores.masked_fill(chosen, float("-inf")), dim=-1)


def test_masked_pointer_accepts_the_reference(capsys):
    check_masked_pointer(good_mask)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda scores, chosen: torch.softmax(scores, dim=-1), "exactly 0"),
        (lambda scores, chosen: torch.softmax(scores, dim=-1).masked_fill(chosen, 0.0), "not 1"),
        (lambda scores, chosen: torch.softmax(scores.masked_fill(chosen, 0.0), dim=-1), "exactly 0"),
        (lambda scores, chosen: (e := scores.exp().masked_fill(chosen, 0.0)) / e.sum(-1, keepdim=True), "large"),
    ],
    ids=["no-mask", "zero-after-softmax", "zero-score", "naive-exp-overflow"],
)
def test_masked_pointer_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_masked_pointer(wrong)


# ---------------------------------------------------------------- tour length
def good_tour_length(points, tours):
    ordered = points[torch.arange(len(points))[:, None], tours]
    return (ordered - ordered.roll(-1, dims=1)).norm(dim=-1).sum(-1)


def test_tour_length_accepts_the_reference(capsys):
    check_tour_length(good_tour_length)
    assert "passed" in capsys.readouterr().out


def open_path(points, tours):
    ordered = points[torch.arange(len(points))[:, None], tours]
    return (ordered[:, 1:] - ordered[:, :-1]).norm(dim=-1).sum(-1)


def squared(points, tours):
    ordered = points[torch.arange(len(points))[:, None], tours]
    return (ordered - ordered.roll(-1, dims=1)).pow(2).sum(-1).sum(-1)


def index_order(points, tours):
    return (points - points.roll(-1, dims=1)).norm(dim=-1).sum(-1)


@pytest.mark.parametrize(("wrong", "message"),
                         [(open_path, "close the tour"), (squared, "is wrong"), (index_order, "diagonals")],
                         ids=["open-path", "squared-distances", "ignores-tour"])
def test_tour_length_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_tour_length(wrong)


# ---------------------------------------------------------------- Held-Karp
def good_held_karp(points):
    n = len(points)
    d = np.linalg.norm(points[:, None] - points[None], axis=-1)
    cost = {(1 << j, j): d[0, j] for j in range(1, n)}
    for size in range(2, n):
        for subset in itertools.combinations(range(1, n), size):
            bits = sum(1 << j for j in subset)
            for j in subset:
                cost[bits, j] = min(cost[bits ^ (1 << j), k] + d[k, j] for k in subset if k != j)
    full = sum(1 << j for j in range(1, n))
    return min(cost[full, j] + d[j, 0] for j in range(1, n)) if n > 1 else 0.0


def test_held_karp_accepts_the_reference(capsys):
    check_held_karp(good_held_karp)
    assert "passed" in capsys.readouterr().out


def nearest_neighbour(points):
    n, here, left, length = len(points), 0, set(range(1, len(points))), 0.0
    while left:
        nxt = min(left, key=lambda j: np.linalg.norm(points[here] - points[j]))
        length += np.linalg.norm(points[here] - points[nxt])
        left.remove(nxt)
        here = nxt
    return length + np.linalg.norm(points[here] - points[0]) if n > 1 else 0.0


def open_optimal_path(points):
    n = len(points)
    best = np.inf
    for rest in itertools.permutations(range(1, n)):
        tour = (0, *rest)
        best = min(best, sum(np.linalg.norm(points[tour[i]] - points[tour[i + 1]]) for i in range(n - 1)))
    return best


@pytest.mark.parametrize(("wrong", "message"),
                         [(nearest_neighbour, "not the optimum"), (open_optimal_path, "return to city 0"),
                          (lambda points: "short", "must return a number")],
                         ids=["nearest-neighbour", "open-path", "not-a-number"])
def test_held_karp_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_held_karp(wrong)


def test_stub_gets_the_not_implemented_message():
    def stub(*args):
        raise NotImplementedError()

    for check in (check_pointer_distribution, check_masked_pointer, check_tour_length, check_held_karp):
        with pytest.raises(ExerciseError, match="not implemented yet"):
            check(stub)
