"""Checks for the chapter "Scoring functions"."""

from __future__ import annotations

from collections.abc import Callable

import torch

from attnlab.exercises._checking import ExerciseError, call, expect_close, expect_tensor, passed


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and torch.allclose(a.to(b.dtype), b, atol=1e-5, rtol=1e-4)


def check_scaled_dot_score(scaled_dot_score: Callable) -> None:
    """Check ``scaled_dot_score(query (..., Tq, d), keys (..., Tk, d)) -> scores (..., Tq, Tk)``."""
    name = "scaled_dot_score"
    gen = torch.Generator().manual_seed(0)
    cases = [((), 3, 5, 4), ((), 1, 6, 16), ((2,), 4, 7, 9), ((2, 3), 2, 5, 1)]
    for batch, n_queries, n_keys, d in cases:
        query, keys = torch.randn(*batch, n_queries, d, generator=gen), torch.randn(*batch, n_keys, d, generator=gen)
        out = call(scaled_dot_score, name, query, keys)
        what = f"for query {tuple(query.shape)} and keys {tuple(keys.shape)}"
        if isinstance(out, torch.Tensor) and tuple(out.shape) == (*batch, n_keys, n_queries):
            raise ExerciseError(f"{name} returned shape {tuple(out.shape)} {what}: that is (..., Tk, Tq); "
                                "put the queries first, query @ keys^T")
        expect_tensor(name, out, (*batch, n_queries, n_keys))
        dot = query @ keys.transpose(-2, -1)
        if d > 1 and _close(out, dot):
            raise ExerciseError(f"{name} returns the plain dot product {what}: divide it by sqrt(d)")
        if d > 1 and _close(out, dot / d):
            raise ExerciseError(f"{name} divides by d {what}: divide by sqrt(d), the standard deviation of "
                                "the dot product of two random vectors")
        expect_close(name, out, dot / d**0.5, what)
    passed(name, len(cases))


def _reference_additive(query: torch.Tensor, keys: torch.Tensor, W_q: torch.Tensor, W_k: torch.Tensor,
                        v: torch.Tensor) -> torch.Tensor:
    return torch.tanh((query @ W_q.T).unsqueeze(-2) + (keys @ W_k.T).unsqueeze(-3)) @ v


def check_additive_score(additive_score: Callable) -> None:
    """Check ``additive_score(query, keys, W_q, W_k, v) -> scores (..., Tq, Tk)``.

    query ``(..., Tq, d_q)``, keys ``(..., Tk, d_k)``, ``W_q (h, d_q)``, ``W_k (h, d_k)``, ``v (h,)``;
    the score of a pair is ``v . tanh(W_q q + W_k k)``.
    """
    name = "additive_score"
    gen = torch.Generator().manual_seed(1)
    cases = [((), 3, 5, 2, 4, 6), ((2,), 4, 4, 3, 5, 8), ((2, 3), 1, 6, 4, 3, 5)]
    for batch, n_queries, n_keys, d_q, d_k, h in cases:
        query = torch.randn(*batch, n_queries, d_q, generator=gen)
        keys = torch.randn(*batch, n_keys, d_k, generator=gen)
        W_q, W_k = torch.randn(h, d_q, generator=gen), torch.randn(h, d_k, generator=gen)
        v = torch.randn(h, generator=gen)
        out = call(additive_score, name, query, keys, W_q, W_k, v)
        what = f"for query {tuple(query.shape)}, keys {tuple(keys.shape)} and hidden size {h}"
        expect_tensor(name, out, (*batch, n_queries, n_keys))
        hidden = (query @ W_q.T).unsqueeze(-2) + (keys @ W_k.T).unsqueeze(-3)  # (..., Tq, Tk, h)
        if _close(out, hidden @ v):
            raise ExerciseError(f"{name} has no tanh {what}: without it the score is linear, "
                                "v . (W_q q + W_k k); apply tanh before the product with v")
        if _close(out, torch.tanh(hidden @ v)):
            raise ExerciseError(f"{name} applies tanh after the product with v {what}: "
                                "take tanh of the hidden vector W_q q + W_k k, then the dot product with v")
        expect_close(name, out, _reference_additive(query, keys, W_q, W_k, v), what)
    passed(name, len(cases))


def check_padding_mask(padding_mask: Callable) -> None:
    """Check ``padding_mask(lengths (batch,), max_len) -> mask (batch, max_len)``, True at real positions."""
    name = "padding_mask"
    cases = [([2, 0, 3], 4), ([5], 5), ([1, 4, 2, 4], 6), ([0, 0], 3)]
    for lengths, max_len in cases:
        out = call(padding_mask, name, torch.tensor(lengths), max_len)
        what = f"for lengths {lengths} and max_len {max_len}"
        if not isinstance(out, torch.Tensor):
            raise ExerciseError(f"{name} must return a torch.Tensor, got {type(out).__name__}")
        if tuple(out.shape) != (len(lengths), max_len):
            raise ExerciseError(f"{name} returned shape {tuple(out.shape)} {what}, expected (batch, max_len) = "
                                f"{(len(lengths), max_len)}: pad to max_len, not to the longest length")
        if out.dtype != torch.bool:
            raise ExerciseError(f"{name} returned dtype {out.dtype}: return a boolean tensor "
                                "(compare with <, do not convert to numbers)")
        expected = torch.tensor([[j < n for j in range(max_len)] for n in lengths], dtype=torch.bool)
        if torch.equal(out, expected):
            continue
        if torch.equal(out, ~expected):
            raise ExerciseError(f"{name} is inverted {what}: True must mark the real positions "
                                "(those a query may attend to), False the padding")
        if torch.equal(out, torch.tensor([[j <= n for j in range(max_len)] for n in lengths])):
            raise ExerciseError(f"{name} keeps one position too many {what}: positions count from 0, "
                                "so a sequence of length n has the real positions j < n")
        raise ExerciseError(f"{name} is wrong {what}: expected\n{expected.int()}\ngot\n{out.int()}")
    passed(name, len(cases))
