"""Checks for chapter 2, "Scoring functions": the scaled dot product, the additive
score, the padding mask, the fix of a masked softmax, and the experiment on the
hidden size of the additive score.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from attnlab.attention import (
    AdditiveScore,
    attend,
    dot_score,
    masked_softmax,
    padding_mask,
    scaled_dot_score,
)
from attnlab.exercises._checking import (
    ExerciseError,
    call,
    close,
    describe,
    exercise_check,
    expect_close,
    expect_number,
    expect_tensor,
    generator,
    passed,
)


@exercise_check(scaled_dot_score, dot_score)
def check_scaled_dot_score(scaled_dot_score: Callable, seed: int | None = 0) -> None:
    """Check ``scaled_dot_score(query (..., Tq, d), keys (..., Tk, d)) -> scores
    (..., Tq, Tk)``."""
    name = "scaled_dot_score"
    gen = generator(seed)
    cases = [
        ((), 3, 5, 4),
        ((), 1, 6, 16),
        ((2,), 4, 7, 9),
        ((2, 3), 2, 5, 1),
        ((3,), 5, 5, 8),
    ]
    for batch, n_queries, n_keys, d in cases:
        query, keys = (
            torch.randn(*batch, n_queries, d, generator=gen),
            torch.randn(*batch, n_keys, d, generator=gen),
        )
        out = call(scaled_dot_score, name, query, keys)
        what = f"for query {tuple(query.shape)} and keys {tuple(keys.shape)}"
        if (
            isinstance(out, torch.Tensor)
            and n_queries != n_keys
            and tuple(out.shape) == (*batch, n_keys, n_queries)
        ):
            raise ExerciseError(
                f"{name} returned shape {tuple(out.shape)} {what}: that is (..., Tk,"
                " Tq); put the queries first, query @ keys^T"
            )
        out = expect_tensor(name, out, (*batch, n_queries, n_keys))
        dot = query.double() @ keys.double().transpose(-2, -1)
        if d > 1 and close(out, dot):
            raise ExerciseError(
                f"{name} returns the plain dot product {what}: divide it by sqrt(d)"
            )
        if d > 1 and close(out, dot / d):
            raise ExerciseError(
                f"{name} divides by d {what}: divide by sqrt(d), the standard"
                " deviation of the dot product of two random vectors"
            )
        if (
            n_queries == n_keys
            and n_queries > 1
            and close(out, dot.transpose(-2, -1) / d**0.5)
        ):
            raise ExerciseError(
                f"{name} returns the scores transposed {what}: entry (i, j) is the"
                " score of query i against key j, query @ keys^T"
            )
        if n_keys != d and close(out, dot / n_keys**0.5):
            raise ExerciseError(
                f"{name} divides by the square root of the number of keys {what}:"
                " divide by sqrt(d), d the size of a query or key vector (the last"
                " axis)"
            )
        expect_close(name, out, dot / d**0.5, what)
    passed(name, len(cases))


def _reference_additive(
    query: torch.Tensor,
    keys: torch.Tensor,
    W_q: torch.Tensor,
    W_k: torch.Tensor,
    v: torch.Tensor,
) -> torch.Tensor:
    return (
        torch.tanh((query @ W_q.T).unsqueeze(-2) + (keys @ W_k.T).unsqueeze(-3)) @ v
    )


@exercise_check(AdditiveScore)
def check_additive_score(additive_score: Callable, seed: int | None = 0) -> None:
    """Check ``additive_score(query, keys, W_q, W_k, v) -> scores (..., Tq, Tk)``.

    query ``(..., Tq, d_q)``, keys ``(..., Tk, d_k)``, ``W_q (h, d_q)``, ``W_k (h,
    d_k)``, ``v (h,)``; the score of a pair is ``v . tanh(W_q q + W_k k)``.
    """
    name = "additive_score"
    gen = generator(seed)
    cases = [
        ((), 3, 5, 2, 4, 6),
        ((2,), 4, 4, 3, 5, 8),
        ((2, 3), 1, 6, 4, 3, 5),
        ((), 4, 4, 3, 3, 3),
    ]
    for batch, n_queries, n_keys, d_q, d_k, h in cases:
        query = torch.randn(*batch, n_queries, d_q, generator=gen)
        keys = torch.randn(*batch, n_keys, d_k, generator=gen)
        W_q, W_k = (
            torch.randn(h, d_q, generator=gen),
            torch.randn(h, d_k, generator=gen),
        )
        v = torch.randn(h, generator=gen)
        out = call(additive_score, name, query, keys, W_q, W_k, v)
        what = (
            f"for query {tuple(query.shape)}, keys {tuple(keys.shape)} and hidden"
            f" size {h}"
        )
        out = expect_tensor(name, out, (*batch, n_queries, n_keys))
        q, k, W_q64, W_k64, v64 = (x.double() for x in (query, keys, W_q, W_k, v))
        # (..., Tq, Tk, h)
        hidden = (q @ W_q64.T).unsqueeze(-2) + (k @ W_k64.T).unsqueeze(-3)
        if close(out, hidden @ v64):
            raise ExerciseError(
                f"{name} has no tanh {what}: without it the score is linear, "
                "v . (W_q q + W_k k); apply tanh before the product with v"
            )
        if close(out, torch.tanh(hidden @ v64)):
            raise ExerciseError(
                f"{name} applies tanh after the product with v {what}: take tanh of"
                " the hidden vector W_q q + W_k k, then the dot product with v"
            )
        if n_queries == n_keys and close(
            out, _reference_additive(q, k, W_q64, W_k64, v64).transpose(-2, -1)
        ):
            raise ExerciseError(
                f"{name} returns the scores transposed {what}: entry (i, j) must"
                " score query i against key j; unsqueeze the projected queries at"
                " -2 and the keys at -3"
            )
        if d_q == d_k and close(out, _reference_additive(q, k, W_k64, W_q64, v64)):
            raise ExerciseError(
                f"{name} swaps W_q and W_k {what}: project the query with W_q and"
                " the keys with W_k"
            )
        expect_close(name, out, _reference_additive(q, k, W_q64, W_k64, v64), what)
    passed(name, len(cases))


def _distances(query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """The distances ``(..., Tq, Tk)`` of every query to every key, in float64."""
    return torch.cdist(query.double(), keys.double())


def _shepard_weights(r: torch.Tensor, p: float) -> torch.Tensor:
    """Shepard's weights ``r_j^-p / sum r^-p`` from the distances ``r (..., Tq,
    Tk)``, all the weight on the keys at distance 0 where there are any (the limit as
    the query reaches them)."""
    on_key = r == 0
    weights = torch.softmax(-p * r.clamp_min(1e-300).log(), dim=-1)
    hit = on_key.any(-1, keepdim=True)
    return torch.where(hit, on_key.double() / on_key.sum(-1, keepdim=True), weights)


@exercise_check()
def check_shepard_score(shepard_score: Callable, seed: int | None = 0) -> None:
    """Check ``shepard_score(query (..., Tq, d), keys (..., Tk, d), p) -> scores
    (..., Tq, Tk)``: scores whose softmax over the keys is Shepard's
    inverse-distance weighting with power ``p`` (scores that differ from ``-p log
    r`` by a constant per query pass), finite for a query exactly on a key."""
    name = "shepard_score"
    gen = generator(seed)
    cases = [((), 3, 5, 2, 2.0), ((2,), 4, 6, 3, 1.0), ((), 6, 4, 2, 3.5)]
    cases += [((2, 2), 2, 7, 1, 0.5)]
    for batch, n_queries, n_keys, d, p in cases:
        query = torch.rand(*batch, n_queries, d, generator=gen)
        keys = torch.rand(*batch, n_keys, d, generator=gen)
        what = (
            f"for query {tuple(query.shape)}, keys {tuple(keys.shape)} and p = {p}"
        )
        out = expect_tensor(
            name,
            call(shepard_score, name, query, keys, p),
            (*batch, n_queries, n_keys),
        )
        weights = torch.softmax(out.double(), dim=-1)
        r = _distances(query, keys)
        for wrong, mistake in [
            (
                torch.softmax(-r.log(), -1) if p != 1.0 else None,
                "ignores p: the score is -p log r",
            ),
            (
                torch.softmax(p * r.log(), -1),
                "gives the farthest key the most weight:"
                " the score must fall as the distance grows, -p log r",
            ),
            (
                torch.softmax(r.pow(-p), -1),
                "returns r^-p itself: the softmax"
                " exponentiates its scores, so return its logarithm, -p log r",
            ),
            (
                torch.softmax(-p * r.pow(2).log(), -1),
                "uses the squared distance:"
                " -p log r^2 is Shepard's weighting with power 2p",
            ),
        ]:
            if wrong is not None and close(weights, wrong):
                raise ExerciseError(f"{name} {mistake} ({what})")
        reference = _shepard_weights(r, p)
        if close(out.double(), reference) and not close(weights, reference):
            raise ExerciseError(
                f"{name} returns Shepard's weights themselves ({what}): return the"
                " scores whose softmax gives them, -p log r (attend takes the"
                " softmax)"
            )
        expect_close(name, weights, reference, what)
    # a query exactly on a key: that key takes all the weight, nothing is infinite
    keys = torch.rand(5, 2, generator=gen)
    query = torch.cat([keys[2:3], torch.rand(1, 2, generator=gen)])
    what = "for a query exactly on key 2 (the first of two queries)"
    out = call(shepard_score, name, query, keys, 2.0)
    if isinstance(out, torch.Tensor) and not torch.isfinite(out).all():
        raise ExerciseError(
            f"{name} returns an infinite or NaN score {what}: the distance is 0 and"
            " its log is -inf; clamp the distance to a tiny positive number first"
            " (the key on the query then gets all the weight)"
        )
    out = expect_tensor(name, out, (2, 5))
    weights = torch.softmax(out.double(), dim=-1)
    expect_close(name, weights, _shepard_weights(_distances(query, keys), 2.0), what)
    passed(name, len(cases) + 1)


@exercise_check(padding_mask)
def check_padding_mask(padding_mask: Callable, seed: int | None = 0) -> None:
    """Check ``padding_mask(lengths (batch,), max_len) -> mask (batch, max_len)``,
    True at real positions."""
    name = "padding_mask"
    gen = generator(seed)
    random_lengths = torch.randint(0, 9, (5,), generator=gen).tolist()
    cases = [
        ([2, 0, 3], 4),
        ([5], 5),
        (random_lengths, 9),
        ([0, 0], 3),
        ([1, 4, 2, 4], 6),
    ]
    for lengths, max_len in cases:
        what = f"for lengths {lengths} and max_len {max_len}"
        out = call(padding_mask, name, torch.tensor(lengths), max_len)
        if not isinstance(out, torch.Tensor):
            raise ExerciseError(
                f"{name} must return a torch.Tensor, got {type(out).__name__}"
            )
        if tuple(out.shape) != (len(lengths), max_len):
            raise ExerciseError(
                f"{name} returned shape {tuple(out.shape)} {what}, expected (batch,"
                f" max_len) = {(len(lengths), max_len)}: pad to max_len, not to the"
                " longest length"
            )
        if out.dtype != torch.bool:
            raise ExerciseError(
                f"{name} returned dtype {out.dtype}: return a boolean tensor "
                "(compare with <, do not convert to numbers)"
            )
        positions = torch.arange(max_len)[None, :]
        column = torch.tensor(lengths)[:, None]
        expected = positions < column
        if torch.equal(out, expected):
            continue
        if torch.equal(out, ~expected):
            raise ExerciseError(
                f"{name} is inverted {what}: True must mark the real positions "
                "(those a query may attend to), False the padding"
            )
        if torch.equal(out, positions <= column):
            raise ExerciseError(
                f"{name} keeps one position too many {what}: positions count from 0,"
                " so a sequence of length n has the real positions j < n"
            )
        if torch.equal(out, positions < column - 1):
            raise ExerciseError(
                f"{name} keeps one position too few {what}: a sequence of length n"
                " has the n real positions 0, ..., n - 1"
            )
        if torch.equal(out, positions < column.flip(0)):
            raise ExerciseError(
                f"{name} gives each row the length of another sequence {what}: row b"
                " must use lengths[b]"
            )
        wrong_rows = [
            b for b in range(len(lengths)) if not torch.equal(out[b], expected[b])
        ]
        raise ExerciseError(
            f"{name} is wrong {what}: rows {wrong_rows} do not mark exactly the"
            " positions j < lengths[b]"
        )
    passed(name, len(cases))


# --- debugging a masked softmax
# ---------------------------------------------------------------------------------


def _masked_case(gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Scores (4, 6) with a partly masked row, an all-masked row, a row whose masked
    key has a huge score, and a row whose real keys all have very negative scores;
    the mask, True = may attend.
    """
    scores = torch.randn(4, 6, generator=gen)
    mask = torch.rand(4, 6, generator=gen) < 0.6
    mask[0, :2], mask[0, -1] = True, False
    mask[1] = False
    mask[2] = torch.tensor([False, True, True, False, True, False])
    scores[2, 0] = 1000.0
    mask[3] = torch.tensor([True, False, True, True, False, False])
    scores[3] = scores[3] - 1e6 * mask[3]
    return scores, mask


@exercise_check(masked_softmax)
def check_masked_softmax(
    fixed_masked_softmax: Callable, seed: int | None = 0
) -> None:
    """Check ``fixed_masked_softmax(scores (..., Tk), mask (..., Tk)) -> weights
    (..., Tk)``: the softmax over the keys where ``mask`` is True, weight 0
    elsewhere, all-zero weights (and a zero gradient) for an all-masked row.
    """
    name = "fixed_masked_softmax"
    gen = generator(seed)
    scores, mask = _masked_case(gen)
    row_names = [
        "a partly masked row",
        "a row whose every key is masked",
        "a row where a masked key has a much larger score (1000) than the real ones",
        "a row whose real keys all score about -1000000",
    ]
    expected = masked_softmax(scores.double(), mask)
    leaf = scores.clone().requires_grad_()
    out = call(fixed_masked_softmax, name, leaf, mask)
    if not isinstance(out, torch.Tensor):
        raise ExerciseError(
            f"{name} must return a torch.Tensor, got {describe(out)}"
        )
    if tuple(out.shape) != tuple(scores.shape):
        raise ExerciseError(
            f"{name} returned shape {tuple(out.shape)} for scores"
            f" {tuple(scores.shape)}: return one weight per score"
        )
    weights = out.detach().double()
    if torch.allclose(
        torch.nan_to_num(weights[0]),
        masked_softmax(scores[0].double(), ~mask[0]),
        atol=1e-5,
    ):
        raise ExerciseError(
            f"{name} gives weight to the masked keys: True in the mask means 'may"
            " attend', so the keys where the mask is False get weight 0"
        )
    for row, what in enumerate(row_names):
        finite = torch.isfinite(weights[row]).all()
        if row == 1 and not finite:
            raise ExerciseError(
                f"{name} returns NaN for {what}: there is nothing to normalise over"
                " (0 / 0); the library's convention is all-zero weights for such a"
                " row, with no NaN"
            )
        if row == 1 and torch.allclose(
            weights[row], torch.full((6,), 1 / 6, dtype=torch.float64), atol=1e-5
        ):
            raise ExerciseError(
                f"{name} gives uniform weights to {what}: set the weights of masked"
                " keys to 0 after the softmax, so that such a row gets all-zero"
                " weights"
            )
        if row == 2 and (not finite or weights[row].sum() < 0.5):
            raise ExerciseError(
                f"{name} fails for {what}: the masked key takes (almost) all the"
                " softmax and renormalising what is left gives NaN or zeros. Mask"
                " the scores *before* the softmax (fill masked scores with a very"
                " negative number), not the weights after it"
            )
        if row == 3 and (not finite or weights[row].sum() < 0.5):
            raise ExerciseError(
                f"{name} fails for {what}: the value that fills the masked scores"
                " must be below every real score, e.g."
                " torch.finfo(scores.dtype).min"
            )
        if not finite:
            raise ExerciseError(f"{name} returns NaN or infinity for {what}")
        if row == 0 and abs(weights[row].sum().item() - 1) > 1e-4:
            raise ExerciseError(
                f"the weights of {what} sum to {weights[row].sum().item():.4f}, not"
                " 1: normalise over the keys that are not masked"
            )
        expect_close(name, weights[row], expected[row], f"for {what}")
    if not out.requires_grad:
        raise ExerciseError(
            f"{name}'s output does not require a gradient: do not compute it under"
            " torch.no_grad() or detach it, training needs the gradient of the"
            " weights with respect to the scores"
        )
    (out * torch.randn(out.shape, generator=gen, dtype=out.dtype)).sum().backward()
    if leaf.grad is None or not torch.isfinite(leaf.grad).all():
        raise ExerciseError(
            f"the gradient of {name} with respect to the scores contains NaN: a"
            " softmax over -inf scores gives NaN in the backward pass even where"
            " the forward result is replaced afterwards (torch.where does not stop"
            " it); fill masked scores with a finite number"
        )
    if not torch.all(leaf.grad[1] == 0):
        raise ExerciseError(
            f"the gradient of {name} is not zero for {row_names[1]}: its weights are"
            " all zero whatever the scores, so their gradient must be zero too"
        )
    batched = torch.randn(2, 3, 5, generator=gen)
    batched_mask = torch.rand(2, 3, 5, generator=gen) < 0.5
    out = expect_tensor(
        name, call(fixed_masked_softmax, name, batched, batched_mask), (2, 3, 5)
    )
    expect_close(
        name,
        out,
        masked_softmax(batched.double(), batched_mask),
        "for scores (2, 3, 5) with batch axes",
    )
    passed(name, len(row_names) + 2)


# --- the experiment: how many hidden units does the additive score need?
# ---------------------------------------


def _accuracy(model: Callable, test_data: tuple[torch.Tensor, ...]) -> float:
    query, keys, target = test_data
    with torch.no_grad():
        _, weights = attend(query, keys, keys, score=model)
    return (weights[:, 0].argmax(-1) == target).double().mean().item()


def _run(
    experiment: Callable,
    name: str,
    d_hidden: int,
    steps: int,
    test_data: tuple[torch.Tensor, ...],
    d_q: int,
    d_k: int,
) -> tuple[nn.Module, float, torch.Tensor]:
    out = call(experiment, name, d_hidden, steps)
    if not isinstance(out, tuple | list) or len(out) != 2:
        raise ExerciseError(
            f"{name} must return the pair (model, accuracy), got {describe(out)}"
        )
    model, reported = out
    if not isinstance(model, nn.Module):
        raise ExerciseError(
            f"{name} must return the trained score module first, got"
            f" {describe(model)}"
        )
    reported = expect_number(f"{name}'s accuracy", reported)
    n_parameters = sum(p.numel() for p in model.parameters())
    if n_parameters != d_hidden * (d_q + d_k + 2):
        raise ExerciseError(
            f"the model that {name}({d_hidden}, {steps}) returns has {n_parameters}"
            f" parameters; an additive score with d_hidden = {d_hidden} has d_hidden"
            " * (d_q + d_k + 2) of them: build it with the hidden size you are"
            " given"
        )
    measured = _accuracy(model, test_data)
    if reported > 1 and math.isclose(reported, 100 * measured, abs_tol=1e-4):
        raise ExerciseError(
            f"{name} reports a percentage: report the accuracy as a fraction between"
            " 0 and 1"
        )
    if not math.isclose(reported, measured, abs_tol=1e-6):
        raise ExerciseError(
            f"{name}({d_hidden}, {steps}) reports accuracy {reported:.4f}, but the"
            f" model it returns has accuracy {measured:.4f} on the test set: measure"
            " the model you return, on the test set, after training"
        )
    with torch.no_grad():
        scores = model(test_data[0][:64], test_data[1][:64])
    return model, reported, scores


@exercise_check()
def check_hidden_units_experiment(
    experiment: Callable, test_data: tuple[torch.Tensor, ...], seed: int | None = 0
) -> None:
    """Check the experiment ``experiment(d_hidden, steps) -> (model, accuracy)``.

    ``experiment`` trains an additive score with ``d_hidden`` hidden units for
    ``steps`` steps and returns it with its accuracy on ``test_data = (query (n, 1,
    d_q), keys (n, Tk, d_k), target (n,))``. The check runs it for a few settings and
    verifies that the model has the hidden size asked for, was trained for the steps
    asked for, and has the accuracy reported.
    """
    name = "hidden_units_experiment"
    gen = generator(seed)
    query, keys, target = test_data
    d_q, d_k = query.shape[-1], keys.shape[-1]
    hidden = [int(h) for h in torch.randint(2, 9, (2,), generator=gen)]
    _, _, untrained = _run(experiment, name, hidden[0], 1, test_data, d_q, d_k)
    _, _, trained = _run(experiment, name, hidden[0], 30, test_data, d_q, d_k)
    if torch.allclose(untrained, trained):
        raise ExerciseError(
            f"{name} returns the same model after 1 and after 30 steps: train it for"
            " `steps` steps"
        )
    _run(experiment, name, hidden[1] + 8, 30, test_data, d_q, d_k)
    passed(name, 3)
