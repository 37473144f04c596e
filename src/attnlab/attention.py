"""Attention as three interchangeable parts: a score, a (masked) softmax, a weighted
sum: the soft lookup :func:`attend` of chapter 1, the scores and masks of chapter 2.

Shapes follow one convention everywhere: ``query (..., Tq, d_k)``, ``keys (..., Tk,
d_k)``, ``values (..., Tk, d_v)``; scores and weights are ``(..., Tq, Tk)``; ``...``
are batch dimensions that broadcast. A mask is boolean, ``True`` where a query may
attend to a key.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from attnlab._validate import (
    broadcast_batch,
    check_last_dim,
    check_ndim,
    check_positive,
    check_tensor,
    shape_of,
)

Score = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def check_query_keys(
    query: torch.Tensor, keys: torch.Tensor, *, same_dim: bool = True
) -> None:
    """Validate a ``(..., Tq, d_k)`` query against ``(..., Tk, d_k)`` keys."""
    check_ndim("query", query, "(..., Tq, d_k)", min_ndim=2)
    check_ndim("keys", keys, "(..., Tk, d_k)", min_ndim=2)
    if same_dim and query.shape[-1] != keys.shape[-1]:
        raise ValueError(
            "query and keys must share their last dimension d_k: "
            f"query {shape_of(query)}, keys {shape_of(keys)}"
        )
    broadcast_batch(["query", "keys"], [query.shape[:-2], keys.shape[:-2]])


def dot_score(query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """Dot-product score ``q . k`` for every query-key pair.

    ``(..., Tq, d)``, ``(..., Tk, d)`` -> ``(..., Tq, Tk)``.
    """
    check_query_keys(query, keys)
    return query @ keys.transpose(-2, -1)


def inverse_distance_score(
    query: torch.Tensor, keys: torch.Tensor, eps: float = 1e-8
) -> torch.Tensor:
    """Inverse Euclidean distance ``1 / (||q - k|| + eps)``.

    ``(..., Tq, d)``, ``(..., Tk, d)`` -> ``(..., Tq, Tk)``.

    ``eps`` keeps the score finite when the query sits exactly on a key.
    """
    check_query_keys(query, keys)
    diff = query.unsqueeze(-2) - keys.unsqueeze(-3)
    return 1.0 / (diff.pow(2).sum(-1).sqrt() + eps)


def masked_softmax(
    scores: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Softmax over the last axis (the keys) where ``mask`` is ``True``.

    Masked positions get weight exactly 0. A row in which every position is masked
    gets all-zero weights (not NaN), and its gradient is zero too.

    scores: ``(..., Tq, Tk)``; mask: boolean, broadcastable to ``scores``. Returns
    ``(..., Tq, Tk)``.
    """
    check_tensor("scores", scores)
    if mask is None:
        return torch.softmax(scores, dim=-1)
    check_tensor("mask", mask)
    if mask.dtype != torch.bool:
        raise ValueError(
            "mask must be a boolean tensor (True = may attend), got dtype"
            f" {mask.dtype}"
        )
    try:
        mask = mask.expand_as(scores)
    except RuntimeError:
        raise ValueError(
            f"mask {shape_of(mask)} does not broadcast to the scores"
            f" {shape_of(scores)}"
        ) from None
    # The smallest finite value, not -inf: a fully masked row then stays finite
    # (uniform) before we zero it.
    filled = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(filled, dim=-1).masked_fill(~mask, 0.0)


def attend(
    query: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    score: Score = dot_score,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Soft lookup: score the query against every key, normalise, return the weighted
    sum of the values.

    query ``(..., Tq, d_k)``, keys ``(..., Tk, d_k)``, values ``(..., Tk, d_v)``,
    mask ``(..., Tq, Tk)`` or broadcastable (``True`` = may attend). ``score`` is any
    function or module mapping ``(query, keys)`` to ``(..., Tq, Tk)``.

    Returns ``(context (..., Tq, d_v), weights (..., Tq, Tk))``; each row of
    ``weights`` sums to 1 over the keys (0 for a fully masked row).
    """
    check_ndim("query", query, "(..., Tq, d_k)", min_ndim=2)
    check_ndim("keys", keys, "(..., Tk, d_k)", min_ndim=2)
    check_ndim("values", values, "(..., Tk, d_v)", min_ndim=2)
    if keys.shape[-2] != values.shape[-2]:
        raise ValueError(
            "keys and values must have the same number of entries Tk: keys"
            f" {shape_of(keys)} (..., Tk, d_k), values {shape_of(values)} (..., Tk,"
            " d_v)"
        )
    broadcast_batch(
        ["query", "keys", "values"],
        [query.shape[:-2], keys.shape[:-2], values.shape[:-2]],
    )
    scores = score(query, keys)
    expected = (query.shape[-2], keys.shape[-2])
    if scores.dim() < 2 or tuple(scores.shape[-2:]) != expected:
        raise ValueError(
            "the score function must return (..., Tq, Tk) = "
            f"(..., {expected[0]}, {expected[1]}), got {shape_of(scores)}"
        )
    weights = masked_softmax(scores, mask)
    return weights @ values, weights


# Scoring functions. Every score maps ``query (..., Tq, d_q)`` and ``keys (..., Tk,
# d_k)`` to
# ``(..., Tq, Tk)`` and can be passed to ``attend(..., score=...)``.


def scaled_dot_score(query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """Scaled dot product ``q . k / sqrt(d)``: ``(..., Tq, d)``, ``(..., Tk, d)`` ->
    ``(..., Tq, Tk)``.

    The query is scaled before the product: ``Tq * d`` multiplications instead of
    ``Tq * Tk``.
    """
    check_query_keys(query, keys)
    return (query * query.shape[-1] ** -0.5) @ keys.transpose(-2, -1)


def _unit(x: torch.Tensor, eps: float) -> torch.Tensor:
    """``x / max(||x||, eps)`` along the last axis; the zero vector stays the zero
    vector."""
    return x / torch.linalg.vector_norm(x, dim=-1, keepdim=True).clamp_min(eps)


def cosine_score(
    query: torch.Tensor, keys: torch.Tensor, eps: float = 1e-8
) -> torch.Tensor:
    """Cosine similarity ``q . k / (||q|| ||k||)`` in ``[-1, 1]``.

    ``(..., Tq, d)``, ``(..., Tk, d)`` -> ``(..., Tq, Tk)``.

    Each vector is divided by ``max(||x||, eps)``, so a zero query or key (which has
    no direction) scores
    exactly 0 against everything, with a finite gradient (of size at most ``||other||
    / eps``).
    """
    check_query_keys(query, keys)
    check_positive("eps", eps)
    return _unit(query, eps) @ _unit(keys, eps).transpose(-2, -1)


def scaled_cosine_score(
    query: torch.Tensor,
    keys: torch.Tensor,
    beta: float | torch.Tensor,
    eps: float = 1e-8,
) -> torch.Tensor:
    """Cosine similarity times a sharpness ``beta`` (the key strength of the Neural
    Turing Machine).

    ``beta`` is a number or a tensor ``(..., Tq)`` (one strength per query). Returns
    ``(..., Tq, Tk)``. The larger ``beta``, the more the softmax of these scores
    concentrates on the most similar key.
    """
    scores = cosine_score(query, keys, eps)
    if not isinstance(beta, torch.Tensor):
        return scores * beta
    try:
        return scores * beta.unsqueeze(-1)
    except RuntimeError:
        raise ValueError(
            "beta must be a number or have shape (..., Tq) = (...,"
            f" {query.shape[-2]}), got {shape_of(beta)}"
        ) from None


class GeneralScore(nn.Module):
    """Luong's general (bilinear) score ``q^T W k`` with a learned ``weight W
    (d_query, d_key)``.

    query ``(..., Tq, d_query)``, keys ``(..., Tk, d_key)`` -> ``(..., Tq, Tk)``. ``W
    = I`` gives the dot product. The query side is projected, ``(q^T W) k``: one
    ``d_key`` vector per query, then plain dot products with the keys, so nothing
    needs to be cached across decoder steps.
    """

    def __init__(self, d_query: int, d_key: int) -> None:
        super().__init__()
        check_positive("d_query", d_query)
        check_positive("d_key", d_key)
        self.d_query, self.d_key = d_query, d_key
        # Uniform in +-1/sqrt(d_query): the entries of q^T W then have about the
        # spread of the entries of q.
        bound = d_query**-0.5
        self.weight = nn.Parameter(
            torch.empty(d_query, d_key).uniform_(-bound, bound)
        )

    def forward(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        check_query_keys(query, keys, same_dim=False)
        check_last_dim("query", query, self.d_query, "(..., Tq, d_query)")
        check_last_dim("keys", keys, self.d_key, "(..., Tk, d_key)")
        return (query @ self.weight) @ keys.transpose(-2, -1)


class AdditiveScore(nn.Module):
    """Bahdanau's additive (concat) score ``v^T tanh(W_q q + W_k k + b)``.

    This is ``v^T tanh(W [q; k] + b)`` with ``W = [W_q  W_k]`` split by columns.
    ``W_q`` is ``query_proj`` ``(d_hidden, d_query)``; ``W_k`` and ``b`` are
    ``key_proj`` (``d_hidden x d_key`` and ``d_hidden``); ``v`` is ``(d_hidden,)``.
    Because ``W_k k + b`` does not depend on the query, a decoder computes it once
    per source sequence with :meth:`project_keys` and passes it to every step as
    ``projected_keys``.

    query ``(..., Tq, d_query)``, keys ``(..., Tk, d_key)`` -> ``(..., Tq, Tk)``.
    Memory grows as ``Tq * Tk * d_hidden`` (the tanh is taken for every pair).
    """

    def __init__(self, d_query: int, d_key: int, d_hidden: int) -> None:
        super().__init__()
        for name, value in [
            ("d_query", d_query),
            ("d_key", d_key),
            ("d_hidden", d_hidden),
        ]:
            check_positive(name, value)
        self.d_query, self.d_key, self.d_hidden = d_query, d_key, d_hidden
        self.query_proj = nn.Linear(d_query, d_hidden, bias=False)
        self.key_proj = nn.Linear(d_key, d_hidden)
        self.v = nn.Parameter(
            torch.empty(d_hidden).uniform_(-(d_hidden**-0.5), d_hidden**-0.5)
        )

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        """``W_k k + b`` for every key: ``(..., Tk, d_key)`` -> ``(..., Tk,
        d_hidden)``."""
        check_ndim("keys", keys, "(..., Tk, d_key)", min_ndim=2)
        check_last_dim("keys", keys, self.d_key, "(..., Tk, d_key)")
        return self.key_proj(keys)

    def forward(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        projected_keys: torch.Tensor | None = None,
    ) -> torch.Tensor:
        check_query_keys(query, keys, same_dim=False)
        check_last_dim("query", query, self.d_query, "(..., Tq, d_query)")
        check_last_dim("keys", keys, self.d_key, "(..., Tk, d_key)")
        if projected_keys is None:
            projected_keys = self.project_keys(keys)
        elif projected_keys.dim() < 2 or projected_keys.shape[-2:] != (
            keys.shape[-2],
            self.d_hidden,
        ):
            raise ValueError(
                "projected_keys must have shape (..., Tk, d_hidden) = (...,"
                f" {keys.shape[-2]}, {self.d_hidden}) to match keys"
                f" {shape_of(keys)}, got {shape_of(projected_keys)}"
            )
        # (..., Tq, 1, h) + (..., 1, Tk, h) -> (..., Tq, Tk, h): every query paired
        # with every key
        hidden = torch.tanh(
            self.query_proj(query).unsqueeze(-2) + projected_keys.unsqueeze(-3)
        )
        return hidden @ self.v


class LocationScore(nn.Module):
    """Luong's location-based score ``W_a q``: the scores come from the query alone,
    one per key position.

    ``W_a`` is a linear layer ``d_query -> n_keys``; the keys are only used for their
    number ``Tk <= n_keys`` (the first ``Tk`` outputs are the scores; longer inputs
    raise). query ``(..., Tq, d_query)``, keys ``(..., Tk, d_key)`` -> ``(..., Tq,
    Tk)`` with the batch dimensions of both broadcast.
    """

    def __init__(self, d_query: int, n_keys: int) -> None:
        super().__init__()
        check_positive("d_query", d_query)
        check_positive("n_keys", n_keys)
        self.d_query, self.n_keys = d_query, n_keys
        self.proj = nn.Linear(d_query, n_keys)

    def forward(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        check_query_keys(query, keys, same_dim=False)
        check_last_dim("query", query, self.d_query, "(..., Tq, d_query)")
        if keys.shape[-2] > self.n_keys:
            raise ValueError(
                f"LocationScore was built for at most n_keys = {self.n_keys}"
                f" positions, got keys {shape_of(keys)} with Tk = {keys.shape[-2]}"
            )
        batch = torch.broadcast_shapes(query.shape[:-2], keys.shape[:-2])
        scores = self.proj(query)[..., : keys.shape[-2]]
        return scores.expand(*batch, *scores.shape[-2:])


# Masks: boolean, True where a query may attend to a key.


def padding_mask(lengths: torch.Tensor, max_len: int | None = None) -> torch.Tensor:
    """``(batch, max_len)`` boolean mask, ``True`` at the real positions ``j <
    lengths[b]`` of each sequence.

    ``lengths`` is an integer tensor ``(batch,)`` with ``0 <= lengths <= max_len``
    (``max_len`` defaults to ``lengths.max()``). To mask keys for every query, index
    it as ``padding_mask(lengths, Tk)[:, None, :]``:
    shape ``(batch, 1, Tk)`` broadcasts against scores ``(batch, Tq, Tk)``.
    """
    check_ndim("lengths", lengths, "(batch,)", ndim=1)
    if (
        lengths.dtype.is_floating_point
        or lengths.dtype.is_complex
        or lengths.dtype == torch.bool
    ):
        raise ValueError(
            f"lengths must be an integer tensor, got dtype {lengths.dtype}"
        )
    if max_len is None:
        max_len = int(lengths.max()) if lengths.numel() else 0
    if max_len < 0:
        raise ValueError(f"max_len must be >= 0, got {max_len}")
    if lengths.numel() and (lengths.min() < 0 or lengths.max() > max_len):
        raise ValueError(
            f"lengths must lie in [0, max_len = {max_len}], got {lengths.tolist()}"
        )
    return torch.arange(max_len, device=lengths.device) < lengths.unsqueeze(-1)


def causal_mask(size: int, device: torch.device | str | None = None) -> torch.Tensor:
    """``(size, size)`` boolean mask, ``True`` where key position ``j <= i`` of query
    position ``i``.

    A query may look at itself and the past, never the future (lower triangle,
    diagonal included).
    """
    check_positive("size", size)
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()
