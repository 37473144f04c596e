"""Checks for the chapters "Pointer networks" and "Pointer networks for the
travelling salesman".

Chapter 11: the pointer distribution, the mask of the chosen inputs, a greedy decoder
to repair, and the trained sorter measured on lists of a new length. Chapter 12: the
length of a closed tour, Held-Karp, a 2-opt local search to repair, and the beam
width of the trained model against the optimality gap.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from attnlab import pointer
from attnlab.exercises._checking import (
    ExerciseError,
    as_tensor,
    call,
    exercise_check,
    expect_close,
    expect_number,
    expect_tensor,
    generator,
    passed,
)
from attnlab.pointer import PointerNet
from attnlab.tasks import geometry


# ==============================================================================
# chapter 11: pointer networks
def _reference_distribution(s, h, w1, w2, v) -> torch.Tensor:
    return torch.softmax(torch.tanh(h @ w1.T + w2 @ s) @ v, dim=-1)


@exercise_check(PointerNet.pointer_scores)
def check_pointer_distribution(
    pointer_distribution: Callable, seed: int | None = 0
) -> None:
    """Check ``pointer_distribution(s (d,), h (n, d), W1 (a, d), W2 (a, d), v (a,))
    -> (n,)``.

    The answer is ``softmax_j(v^T tanh(W1 h_j + W2 s))``: a distribution over the n
    inputs, not a weighted sum.
    """
    name = "pointer_distribution"
    gen = generator(seed)
    cases = 0
    for n, d, a, scale in [
        (5, 3, 4, 1.0),
        (1, 2, 3, 1.0),
        (9, 4, 6, 1.0),
        (7, 3, 5, 500.0),
    ]:
        s, h = torch.randn(d, generator=gen), torch.randn(n, d, generator=gen)
        w1, w2 = torch.randn(a, d, generator=gen), torch.randn(a, d, generator=gen)
        v = scale * torch.randn(a, generator=gen)
        out = call(pointer_distribution, name, s, h, w1, w2, v)
        if isinstance(out, tuple | list) and len(out) == 2:
            raise ExerciseError(
                f"{name} returned a pair: return only the distribution over the"
                " inputs, shape (n,)"
            )
        if (
            isinstance(out, torch.Tensor | np.ndarray)
            and tuple(out.shape) == (d,)
            and d != n
        ):
            raise ExerciseError(
                f"{name} returned a vector of size d = {d}: that is the weighted sum"
                " of the encoder states. A pointer network stops before it and"
                " returns the weights, one per input."
            )
        if (
            isinstance(out, torch.Tensor | np.ndarray)
            and tuple(out.shape) == (n,)
            and scale > 1
        ):
            if not torch.isfinite(as_tensor(name, out)).all():
                raise ExerciseError(
                    f"{name} returns NaN or infinity when the scores are large (v of"
                    f" size about {scale:g}): exp overflows. Subtract the largest"
                    " score before exp, or use torch.softmax, which does."
                )
        out = expect_tensor(name, out, (n,))
        if (out < 0).any() or not torch.allclose(
            out.sum(), torch.tensor(1.0), atol=1e-5
        ):
            raise ExerciseError(
                f"{name} must return probabilities (non-negative, summing to 1):"
                " apply a softmax over the inputs; yours sum to"
                f" {out.sum().item():.4f}"
            )
        expected = _reference_distribution(s, h, w1, w2, v)
        mistakes = [
            (
                torch.softmax((h @ w1.T + w2 @ s) @ v, dim=-1),
                "the scores lack the tanh: u_j = v^T tanh(W1 h_j + W2 s)",
            ),
            (
                torch.softmax(torch.tanh(h @ w2.T + w1 @ s) @ v, dim=-1),
                (
                    "W1 and W2 are swapped: W1 multiplies the encoder states h_j, W2"
                    " the decoder state s"
                ),
            ),
            (
                torch.softmax(torch.tanh(h @ w1.T) @ v, dim=-1),
                (
                    "the distribution does not depend on the decoder state s: add W2"
                    " s inside the tanh"
                ),
            ),
        ]
        for wrong, message in mistakes:
            if torch.allclose(out, wrong, atol=1e-5) and not torch.allclose(
                expected, wrong, atol=1e-5
            ):
                raise ExerciseError(message)
        expect_close(name, out, expected, f"for n={n} inputs of size d={d}")
        cases += 1
    passed(name, cases)


def _reference_masked(scores: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
    return torch.softmax(scores.masked_fill(chosen, float("-inf")), dim=-1)


def _masked_case(
    name: str,
    masked_pointer: Callable,
    scores: torch.Tensor,
    chosen: torch.Tensor,
    what: str,
) -> None:
    """Run the answer on one case; explain the typical ways of getting it wrong."""
    out = call(masked_pointer, name, scores, chosen)
    if not isinstance(out, torch.Tensor | np.ndarray):
        raise ExerciseError(
            f"{name} must return a torch.Tensor of probabilities, got"
            f" {type(out).__name__}"
        )
    if tuple(out.shape) != tuple(scores.shape):
        raise ExerciseError(
            f"{name} returned shape {tuple(out.shape)} but expected"
            f" {tuple(scores.shape)} (one probability per input, for every row of"
            " the batch)"
        )
    raw = as_tensor(name, out)
    if not torch.isfinite(raw).all():
        if not chosen.any() and scores.abs().max() < 500:
            raise ExerciseError(
                f"{name} masks the wrong inputs {what}: it rules out every input,"
                " and returns NaN. `chosen` is True where an input was already"
                " chosen, and only those are ruled out."
            )
        if scores.abs().max() >= 500 and chosen.any():
            raise ExerciseError(
                f"{name} returns NaN {what}: the chosen input has by far the largest"
                " score, so the softmax over all inputs gives every free input"
                " probability 0, and renormalising afterwards divides 0 by 0. Mask"
                " inside the softmax: fill the chosen scores with -inf before it."
            )
        raise ExerciseError(
            f"{name} returns NaN or infinity {what}: exp of a large score overflows."
            " Let torch.softmax normalise (it subtracts the largest score), after"
            " filling the chosen scores with -inf."
        )
    expected = _reference_masked(scores, chosen)
    free_rows = (~chosen).any(-1)
    inverted = _reference_masked(scores, ~chosen)
    if (
        chosen.any()
        and (~chosen).any()
        and torch.allclose(
            raw[free_rows & chosen.any(-1)],
            inverted[free_rows & chosen.any(-1)],
            atol=1e-5,
        )
    ):
        raise ExerciseError(
            f"{name} masks the wrong inputs {what}: `chosen` is True where an input"
            " was already chosen, and those are the ones to rule out (the others"
            " share the probability)"
        )
    leaked = raw.masked_fill(~chosen, 0.0)
    if (leaked != 0).any():
        row, col = (leaked != 0).nonzero()[0].tolist()
        raise ExerciseError(
            f"{name} gives an input that was already chosen probability"
            f" {leaked.abs().max():.3g} {what} (row {row} of the batch, input"
            f" {col}): every chosen input must get exactly 0, in every row. Use each"
            " row's own `chosen`, and fill the chosen scores with -inf (not 0, not"
            " a finite penalty)."
        )
    sums = raw.sum(-1)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-5):
        raise ExerciseError(
            f"{name}'s rows sum to between {sums.min():.4f} and {sums.max():.4f},"
            f" not 1, {what}: the free inputs must share all the probability. Mask"
            " the scores before the softmax, not the probabilities after it."
        )
    expect_close(name, raw, expected, what)


@exercise_check(pointer.masked_log_softmax)
def check_masked_pointer(masked_pointer: Callable, seed: int | None = 0) -> None:
    """Check ``masked_pointer(scores (B, n), chosen (B, n) bool) -> probs (B, n)``.

    Inputs already chosen get probability exactly 0; the others share all of it, in
    proportion to ``exp(score)``.
    """
    name = "masked_pointer"
    gen = generator(seed)
    cases = 0
    scores = torch.randn(6, 7, generator=gen) * 3
    for k in [0, 2, 6]:  # the same number of chosen inputs in every row
        chosen = torch.zeros(6, 7, dtype=torch.bool)
        for b in range(6):
            chosen[b, torch.randperm(7, generator=gen)[:k]] = True
        _masked_case(
            name,
            masked_pointer,
            scores,
            chosen,
            f"with {k} of 7 inputs chosen in every row",
        )
        cases += 1
    # 0 to 6 chosen per row
    chosen = torch.rand(6, 7, generator=gen) < torch.linspace(0.0, 0.85, 6)[:, None]
    chosen[:, 0] = False
    chosen[1:, -1] = True
    _masked_case(
        name,
        masked_pointer,
        scores,
        chosen,
        "with a different number of inputs chosen in each row",
    )
    huge = torch.tensor([[0.0, 1000.0, -1000.0, -5.0], [0.0, -1000.0, 1000.0, 3.0]])
    _masked_case(
        name,
        masked_pointer,
        huge,
        torch.zeros(2, 4, dtype=torch.bool),
        "for scores of size 1000 with nothing chosen",
    )
    _masked_case(
        name,
        masked_pointer,
        huge,
        torch.tensor([[False, True, False, False], [False, False, True, True]]),
        "when a chosen input has a score of 1000 and the free ones much smaller"
        " scores",
    )
    passed(name, cases + 4)


def _reference_greedy(
    model: PointerNet, inputs: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Greedy choices, their masked log-probability, and the (wrong) log-probability
    of the unmasked softmax."""
    encoded = model.encode(inputs)
    batch, n = inputs.shape[:2]
    rows = torch.arange(batch)
    chosen = torch.zeros(batch, n, dtype=torch.bool)
    decoder_in, state = model.start.expand(batch, 1, -1), encoded.state
    indices, masked, unmasked = [], torch.zeros(batch), torch.zeros(batch)
    for _ in range(n):
        out, state = model.decoder(decoder_in, state)
        scores = model.pointer_scores(out, encoded)[:, 0]
        log_p = scores.masked_fill(chosen, float("-inf")).log_softmax(dim=-1)
        choice = log_p.argmax(dim=-1)
        masked = masked + log_p[rows, choice]
        unmasked = unmasked + scores.log_softmax(dim=-1)[rows, choice]
        chosen = chosen | torch.nn.functional.one_hot(choice, n).bool()
        indices.append(choice)
        decoder_in = encoded.embedded[rows, choice].unsqueeze(1)
    return torch.stack(indices, dim=1), masked, unmasked


@exercise_check(PointerNet.greedy)
def check_greedy_pointer(fixed_greedy: Callable, seed: int | None = 0) -> None:
    """Check ``fixed_greedy(model, inputs (B, n, d)) -> (indices (B, n), log_prob
    (B,))`` on untrained models.

    Greedy decoding without an end token: every step points at the most probable
    input *not chosen before*, and ``log_prob`` is the sum of the log-probabilities
    of the choices under the masked distributions.
    """
    name = "fixed_greedy"
    gen = generator(seed)
    cases = 0
    for batch, n, d_input in [(16, 6, 1), (8, 9, 2)]:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
            model = PointerNet(d_input=d_input, d_hidden=12)
            # larger weights: every choice depends on what was fed back
            for parameter in model.parameters():
                parameter.data.mul_(3.0)
        inputs = torch.rand(batch, n, d_input, generator=gen)
        with torch.no_grad():
            ref_indices, ref_log_prob, unmasked_log_prob = _reference_greedy(
                model, inputs
            )
        out = call(fixed_greedy, name, model, inputs)
        if not isinstance(out, tuple | list) or len(out) != 2:
            raise ExerciseError(
                f"{name} must return the pair (indices, log_prob), got"
                f" {type(out).__name__}"
                + (f" of length {len(out)}" if isinstance(out, tuple | list) else "")
            )
        indices = expect_tensor(
            f"{name}'s indices", out[0], (batch, n), torch.float64
        )
        if (indices != indices.round()).any():
            raise ExerciseError(
                f"{name}'s indices must be input positions (integers), not"
                " probabilities"
            )
        indices = indices.long()
        for row in range(batch):
            counts = torch.bincount(indices[row].clamp(0, n - 1), minlength=n)
            if (indices[row] < 0).any() or (indices[row] >= n).any():
                raise ExerciseError(
                    f"{name}'s row {row} holds positions outside 0..{n - 1}"
                )
            if (counts > 1).any():
                raise ExerciseError(
                    f"{name} points at input {int(counts.argmax())}"
                    f" {int(counts.max())} times in row {row} (of a list of {n}):"
                    " mask the inputs already chosen, so that no step can point at"
                    " one again (fill their scores with -inf before the softmax,"
                    " and record every choice in the mask)"
                )
        if not torch.equal(indices, ref_indices):
            row = int((indices != ref_indices).any(1).nonzero()[0])
            raise ExerciseError(
                f"{name}'s choices differ from greedy decoding in row {row}: at"
                " every step take the most probable input that is still free, and"
                " feed the embedded input you pointed at to the decoder (start with"
                " model.start)"
            )
        log_prob = expect_tensor(f"{name}'s log_prob", out[1], (batch,))
        if not torch.allclose(log_prob, ref_log_prob, atol=1e-4) and torch.allclose(
            log_prob, unmasked_log_prob, atol=1e-4
        ):
            raise ExerciseError(
                f"{name}'s choices are right, but log_prob sums the"
                " log-probabilities of the unmasked softmax: take them from the"
                " masked distribution that made the choice"
            )
        expect_close(
            f"{name}'s log_prob",
            log_prob,
            ref_log_prob,
            f"for {batch} lists of {n} inputs (the sum over "
            "the steps of log p of each choice)",
            atol=1e-4,
        )
        cases += 1
    passed(name, cases)


def _exact_fraction(decoded: torch.Tensor, values: torch.Tensor) -> float:
    return (
        (decoded == values[..., 0].argsort(dim=1)).all(dim=1).double().mean().item()
    )


@exercise_check()
def check_sort_length(
    sort_at_length: Callable, model: PointerNet, seed: int | None = 0
) -> None:
    """Check the experiment ``sort_at_length(model, n) -> (fraction, values (B, n,
    1), decoded (B, n))``.

    The sorter trained on lists of 10 is measured on fresh lists of ``n`` numbers:
    ``fraction`` must be the fraction of the returned lists that greedy decoding of
    ``model`` puts exactly in increasing order.
    """
    name = "sort_at_length"
    gen = generator(seed)
    lengths = [
        int(torch.randint(5, 9, (1,), generator=gen)),
        int(torch.randint(12, 16, (1,), generator=gen)),
    ]
    for n in lengths:
        out = call(sort_at_length, name, model, n)
        if not isinstance(out, tuple | list) or len(out) != 3:
            raise ExerciseError(
                f"{name} must return the triple (fraction, values, decoded), got"
                f" {type(out).__name__}: the check recomputes the fraction from the"
                " lists"
            )
        fraction = expect_number(f"{name}'s fraction", out[0])
        values = out[1]
        if (
            not isinstance(values, torch.Tensor)
            or values.dim() != 3
            or values.shape[-1] != 1
        ):
            got = (
                tuple(values.shape)
                if isinstance(values, torch.Tensor)
                else type(values).__name__
            )
            raise ExerciseError(
                f"{name}'s values must be the lists the model sorted, a tensor (B,"
                f" n, 1), got {got}"
            )
        if values.shape[1] != n:
            raise ExerciseError(
                f"{name}(model, {n}) measured lists of {values.shape[1]} numbers:"
                " draw lists of length n"
            )
        if values.shape[0] < 100:
            raise ExerciseError(
                f"{name} measured {values.shape[0]} lists: use at least 100, or the"
                " fraction is mostly noise"
            )
        decoded = expect_tensor(
            f"{name}'s decoded", out[2], tuple(values.shape[:2]), torch.float64
        ).long()
        values = values.detach().float()
        with torch.no_grad():
            greedy = model.greedy(values).indices
        if not torch.equal(decoded, greedy):
            raise ExerciseError(
                f"{name}'s decoded lists are not the greedy decoding of the model on"
                " its values: decode with model.greedy(values) (the mask switched"
                " on) and return its indices"
            )
        exact = _exact_fraction(decoded, values)
        if abs(fraction - 100 * exact) < 1e-3 and exact > 0.01:
            raise ExerciseError(
                f"{name}'s fraction is in percent: return a fraction between 0 and 1"
            )
        per_position = (
            (decoded == values[..., 0].argsort(dim=1)).double().mean().item()
        )
        if abs(fraction - per_position) < 1e-6 and abs(per_position - exact) > 1e-6:
            raise ExerciseError(
                f"{name} counts the correct positions; count the lists that come out"
                " *exactly* sorted (every position right)"
            )
        descending = _exact_fraction(decoded, -values)
        if abs(fraction - descending) < 1e-6 and abs(descending - exact) > 1e-6:
            raise ExerciseError(
                f"{name} compares with decreasing order: the sorter lists the"
                " smallest number first"
            )
        if abs(fraction - exact) > 1e-6:
            raise ExerciseError(
                f"{name}'s fraction does not match its lists for n = {n}: the"
                f" difference is {abs(fraction - exact):.3g}. Count the rows of"
                " decoded equal to values.argsort"
            )
    passed(name, len(lengths))


# ==============================================================================
# chapter 12: travelling salesman
def _reference_tour_length(
    points: torch.Tensor, tours: torch.Tensor
) -> torch.Tensor:
    ordered = points.gather(1, tours.unsqueeze(-1).expand(-1, -1, 2))
    return (ordered - ordered.roll(-1, dims=1)).norm(dim=-1).sum(-1)


@exercise_check(geometry.tour_length)
def check_tour_length(tour_length: Callable, seed: int | None = 0) -> None:
    """Check ``tour_length(points (B, n, 2), tours (B, n)) -> (B,)``: the length of
    each *closed* tour."""
    name = "tour_length"
    square = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]])
    out = expect_tensor(
        name, call(tour_length, name, square, torch.tensor([[0, 1, 2, 3]])), (1,)
    )
    if torch.isclose(out[0], torch.tensor(3.0)):
        raise ExerciseError(
            "the unit square's tour 0-1-2-3 has length 4, you get 3: close the tour,"
            " back from the last city to the first"
        )
    if torch.isclose(out[0], torch.tensor(2.0)):
        raise ExerciseError(
            "the unit square's tour 0-1-2-3 has length 4, you get 2: the distance is"
            " the square root of the sum of squared differences (not the sum over"
            " one axis only)"
        )
    expect_close(
        name, out, torch.tensor([4.0]), "for the unit square visited in order"
    )
    out = expect_tensor(
        name, call(tour_length, name, square, torch.tensor([[0, 2, 1, 3]])), (1,)
    )
    if torch.isclose(out[0], torch.tensor(6.0)):
        raise ExerciseError(
            f"{name} adds squared distances: take the square root of each leg before"
            " summing"
        )
    expect_close(
        name,
        expect_tensor(name, out, (1,)),
        torch.tensor([2 + 2 * 2**0.5]),
        "for the unit square visited along both diagonals (follow the order given by"
        " the tour)",
    )
    gen = generator(seed)
    points = torch.rand(6, 9, 2, generator=gen)
    tours = torch.stack([torch.randperm(9, generator=gen) for _ in range(6)])
    out = expect_tensor(name, call(tour_length, name, points, tours), (6,))
    ordered = points.gather(1, tours.unsqueeze(-1).expand(-1, -1, 2))
    squared = ((ordered - ordered.roll(-1, dims=1)) ** 2).sum(-1).sum(-1)
    if torch.allclose(out, squared, atol=1e-5):
        raise ExerciseError(
            f"{name} adds squared distances: take the square root of each leg before"
            " summing"
        )
    expect_close(
        name,
        out,
        _reference_tour_length(points, tours),
        "on random tours of 9 cities",
    )
    passed(name, 3)


def _brute_force_length(points: np.ndarray) -> float:
    n = len(points)
    if n < 2:
        return 0.0
    rest = np.array(list(itertools.permutations(range(1, n))), dtype=np.int64)
    tours = np.concatenate([np.zeros((len(rest), 1), dtype=np.int64), rest], axis=1)
    ordered = points[tours]
    return float(
        np.linalg.norm(ordered - np.roll(ordered, -1, axis=1), axis=-1).sum(-1).min()
    )


@exercise_check(geometry.solve_tsp_batch, geometry.solve_tsp)
def check_held_karp(shortest_tour_length: Callable, seed: int | None = 0) -> None:
    """Check ``shortest_tour_length(points (n, 2) numpy) -> float``: the length of
    the optimal closed tour.

    The instances are random (drawn from ``seed``); the answer is compared with brute
    force over all tours.
    """
    name = "shortest_tour_length"
    gen = generator(seed)
    cases = 0
    for n in [2, 3, 4, 5, 6, 7, 8, 8]:
        points = torch.rand(n, 2, generator=gen, dtype=torch.float64).numpy()
        given = points.copy()
        out = call(shortest_tour_length, name, points)
        if not np.array_equal(points, given):
            raise ExerciseError(
                f"{name} changed the points it was given: leave them as they are"
            )
        sequence = isinstance(out, tuple | list | np.ndarray | torch.Tensor)
        if sequence and n > 1 and len(np.atleast_1d(np.asarray(out))) == n:
            raise ExerciseError(
                f"{name} returned {n} values for {n} cities, a tour or a list of"
                " costs: return the length of the shortest closed tour, one number"
            )
        value = expect_number(name, out)
        expected = _brute_force_length(points)
        if value > expected + 1e-6:
            raise ExerciseError(
                f"for {n} cities {name} returned a length {value - expected:.3g} too"
                " long: that tour is not the shortest. Take the minimum over every"
                " last city k before j, and over every last city j before the way"
                " back to city 0."
            )
        if value < expected - 1e-6:
            raise ExerciseError(
                f"for {n} cities {name} returned a length {expected - value:.3g}"
                " shorter than possible: no closed tour is that short. Does it skip"
                " a city, or leave out the way back to city 0?"
            )
        cases += 1
    passed(name, cases)


def _expect_tour(name: str, out: Any, n: int) -> torch.Tensor:
    if isinstance(out, list | tuple):
        out = np.asarray(out)
    if not isinstance(out, torch.Tensor | np.ndarray):
        raise ExerciseError(
            f"{name} must return a tour, a tensor (n,) of city indices, got"
            f" {type(out).__name__}"
        )
    count = out.numel() if isinstance(out, torch.Tensor) else out.size
    if count != n:
        raise ExerciseError(
            f"{name} returned {count} values for {n} cities: return the tour, one"
            " index per city"
        )
    tour = as_tensor(name, out, torch.float64).reshape(-1)
    if (tour != tour.round()).any():
        raise ExerciseError(f"{name} must return city indices (integers)")
    tour = tour.long()
    if sorted(tour.tolist()) != list(range(n)):
        raise ExerciseError(
            f"{name} returned {tour.tolist()}, not a permutation of 0..{n - 1}: a"
            " 2-opt move only reverses a segment of the tour, so every city must"
            " stay exactly once"
        )
    return tour


def _two_opt_gain(points: torch.Tensor, tour: torch.Tensor) -> float:
    """The largest shortening that one 2-opt move (reverse tour[i..j], 1 <= i < j <=
    n-1) would still give."""
    d = torch.cdist(points[None], points[None])[0].double()
    n, best = len(tour), 0.0
    t = tour.tolist()
    for i in range(1, n - 1):
        for j in range(i + 1, n):
            a, b, c, e = t[i - 1], t[i], t[j], t[(j + 1) % n]
            best = max(best, float(d[a, b] + d[c, e] - d[a, c] - d[b, e]))
    return best


@exercise_check(geometry.two_opt)
def check_two_opt(fixed_two_opt: Callable, seed: int | None = 0) -> None:
    """Check ``fixed_two_opt(points (n, 2), tour (n,)) -> tour (n,)``: a 2-opt local
    optimum, never longer.

    The returned tour must visit every city once, start at city 0, be no longer than
    the tour given, and leave no 2-opt move that shortens it (local searches may stop
    at different local optima, so no single answer is expected).
    """
    name = "fixed_two_opt"
    gen = generator(seed)
    cases = 0
    for n in [4, 7, 10, 10, 12]:
        points = torch.rand(n, 2, generator=gen)
        start = torch.cat(
            [
                torch.zeros(1, dtype=torch.long),
                torch.randperm(n - 1, generator=gen) + 1,
            ]
        )
        out = _expect_tour(name, call(fixed_two_opt, name, points, start), n)
        if out[0] != 0:
            raise ExerciseError(
                f"{name}'s tour starts at city {int(out[0])}: keep city 0 first"
                " (reverse segments that start at position 1 or later)"
            )
        before = _reference_tour_length(points[None].double(), start[None])[0].item()
        after = _reference_tour_length(points[None].double(), out[None])[0].item()
        if after > before + 1e-6:
            raise ExerciseError(
                f"{name} made a tour of {n} cities longer (by {after - before:.3g}):"
                " the segment you reverse is not the one whose gain you computed."
                " The move that replaces the edges (t[i-1], t[i]) and (t[j],"
                " t[j+1]) reverses t[i..j], both ends included."
            )
        gain = _two_opt_gain(points, out)
        if gain > 1e-6:
            raise ExerciseError(
                f"{name}'s tour of {n} cities is not a 2-opt local optimum: one"
                f" reversal would still shorten it by {gain:.3g}. Check that the"
                " reversed segment t[i..j] includes both ends, that j runs up to n"
                " - 1, and that you repeat until no move improves."
            )
        cases += 1
    passed(name, cases)


def _reference_beam_gap(
    model: PointerNet, points: torch.Tensor, tours: torch.Tensor, width: int
) -> dict[str, float]:
    with torch.no_grad():
        beams, _ = model.beam_search(points, width)
    lengths = torch.stack(
        [_reference_tour_length(points, beams[:, w]) for w in range(width)], dim=1
    ).double()
    optimal = _reference_tour_length(points, tours).double()
    shortest = lengths.min(dim=1).values
    return {
        "gap": (shortest / optimal).mean().item() - 1,
        "probable": (lengths[:, 0] / optimal).mean().item() - 1,
        "of_means": shortest.mean().item() / optimal.mean().item() - 1,
    }


@exercise_check()
def check_beam_gaps(
    beam_gaps: Callable,
    model: PointerNet,
    points: torch.Tensor,
    tours: torch.Tensor,
    seed: int | None = 0,
) -> None:
    """Check the experiment ``beam_gaps(model, points (B, n, 2), tours (B, n),
    widths) -> {width: gap}``.

    For every width, the gap is that of the shortest tour of the beam: the mean over
    the instances of each one's gap ``L_i / L_i* - 1``. The check runs the answer on
    a random part of the test set and recomputes every gap.
    """
    name = "beam_gaps"
    gen = generator(seed)
    n = points.shape[1]
    subset = torch.randperm(len(points), generator=gen)[: min(len(points), 300)]
    points, tours = points[subset], tours[subset]
    widths = sorted({1, int(torch.randint(2, 4, (1,), generator=gen)), min(n, 6)})
    out = call(beam_gaps, name, model, points, tours, widths)
    if not isinstance(out, dict):
        raise ExerciseError(
            f"{name} must return a dict {{width: gap}}, got {type(out).__name__}"
        )
    if sorted(out) != widths:
        raise ExerciseError(
            f"{name}(..., widths={widths}) returned gaps for the widths"
            f" {sorted(out)}: one gap per width asked for, keyed by the width"
        )
    gaps = {w: expect_number(f"{name}'s gap for width {w}", out[w]) for w in widths}
    reference = {w: _reference_beam_gap(model, points, tours, w) for w in widths}
    for w in widths:
        ref, gap = reference[w], gaps[w]
        if abs(gap - ref["gap"]) <= 1e-4:
            continue
        if abs(gap - 100 * ref["gap"]) <= 1e-2:
            raise ExerciseError(
                f"{name}'s gaps are in percent: return fractions (0.01 for 1%)"
            )
        if abs(gap - 1 - ref["gap"]) <= 1e-4:
            raise ExerciseError(
                f"{name} returns the mean ratio of the tour lengths to the optimal"
                " ones: the gap is that ratio minus 1"
            )
        if abs(gap - ref["probable"]) <= 1e-4:
            raise ExerciseError(
                f"{name} measures the most probable tour of the beam for width {w}:"
                " keep the shortest tour of the beam"
            )
        if abs(gap - ref["of_means"]) <= 1e-4:
            raise ExerciseError(
                f"{name} divides the mean tour length by the mean optimal length:"
                " the gap is the mean of each instance's gap L_i / L_i* - 1"
            )
        if (
            len(widths) > 1
            and all(abs(gaps[v] - gaps[widths[-1]]) <= 1e-9 for v in widths)
            and any(
                abs(reference[v]["gap"] - reference[widths[-1]]["gap"]) > 1e-4
                for v in widths
            )
        ):
            raise ExerciseError(
                f"{name} returns the same gap for every width: run beam_search with"
                " each width"
            )
        raise ExerciseError(
            f"{name}'s gap for width {w} does not match the shortest tours of"
            f" model.beam_search: the difference is {abs(gap - ref['gap']):.3g}"
        )
    passed(name, len(widths))
