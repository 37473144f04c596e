"""Attention as three interchangeable parts: a score, a (masked) softmax, a weighted
sum.

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


def _check_last_dim(name: str, x: torch.Tensor, expected: int, layout: str) -> None:
    """Raise ``ValueError`` unless the last dimension of ``x`` is ``expected``."""
    if x.shape[-1] != expected:
        raise ValueError(
            f"{name} must have shape {layout} with last dimension {expected}, got"
            f" {shape_of(x)}"
        )


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
        _check_last_dim("query", query, self.d_query, "(..., Tq, d_query)")
        _check_last_dim("keys", keys, self.d_key, "(..., Tk, d_key)")
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
        _check_last_dim("keys", keys, self.d_key, "(..., Tk, d_key)")
        return self.key_proj(keys)

    def forward(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        projected_keys: torch.Tensor | None = None,
    ) -> torch.Tensor:
        check_query_keys(query, keys, same_dim=False)
        _check_last_dim("query", query, self.d_query, "(..., Tq, d_query)")
        _check_last_dim("keys", keys, self.d_key, "(..., Tk, d_key)")
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
        _check_last_dim("query", query, self.d_query, "(..., Tq, d_query)")
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


# Attention with learned projections: parameterized (one head) and multi-head
# attention.


class ProjectedAttention(nn.Module):
    """Parameterized attention: project the query, the keys and the values, then
    attend.

    ``q = W^Q query``, ``k_j = W^K keys_j``, ``v_j = W^V values_j`` (each ``W`` a
    linear map to ``d_model``, without bias unless ``bias=True``), then ``attend(q,
    k, v, score)``. The projections separate what a query looks for (``W^Q``), what
    makes an entry findable (``W^K``) and what an entry hands over (``W^V``). With
    identity projections (all sizes equal) it is plain ``attend``.

    query ``(..., Tq, d_query)``, keys ``(..., Tk, d_key)``, values ``(..., Tk,
    d_value)``, mask broadcastable to ``(..., Tq, Tk)`` (``True`` = may attend).
    Returns ``(context (..., Tq, d_model), weights (..., Tq, Tk))``. ``score``
    defaults to the plain dot product of the projections (pass ``scaled_dot_score``
    to scale it).
    """

    def __init__(
        self,
        d_query: int,
        d_key: int,
        d_value: int,
        d_model: int,
        *,
        score: Score = dot_score,
        bias: bool = False,
    ) -> None:
        super().__init__()
        for name, value in [
            ("d_query", d_query),
            ("d_key", d_key),
            ("d_value", d_value),
            ("d_model", d_model),
        ]:
            check_positive(name, value)
        self.d_query, self.d_key, self.d_value, self.d_model = (
            d_query,
            d_key,
            d_value,
            d_model,
        )
        self.score = score
        self.query_proj = nn.Linear(d_query, d_model, bias=bias)  # W^Q
        self.key_proj = nn.Linear(d_key, d_model, bias=bias)  # W^K
        self.value_proj = nn.Linear(d_value, d_model, bias=bias)  # W^V

    def project_memory(
        self, keys: torch.Tensor, values: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(W^K keys, W^V values)``: ``(..., Tk, d_key)``, ``(..., Tk, d_value)``
        -> two ``(..., Tk, d_model)``.

        They do not depend on the query: a decoder computes them once per source
        sequence.
        """
        check_ndim("keys", keys, "(..., Tk, d_key)", min_ndim=2)
        check_ndim("values", values, "(..., Tk, d_value)", min_ndim=2)
        _check_last_dim("keys", keys, self.d_key, "(..., Tk, d_key)")
        _check_last_dim("values", values, self.d_value, "(..., Tk, d_value)")
        return self.key_proj(keys), self.value_proj(values)

    def attend_projected(
        self,
        query: torch.Tensor,
        projected_keys: torch.Tensor,
        projected_values: torch.Tensor,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Project only the query and attend over keys and values from
        :meth:`project_memory`."""
        check_ndim("query", query, "(..., Tq, d_query)", min_ndim=2)
        _check_last_dim("query", query, self.d_query, "(..., Tq, d_query)")
        return attend(
            self.query_proj(query),
            projected_keys,
            projected_values,
            score=self.score,
            mask=mask,
        )

    def forward(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return self.attend_projected(
            query, *self.project_memory(keys, values), mask=mask
        )


class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention (Vaswani et al., 2017), batch-first,
    with the layout of ``torch.nn.MultiheadAttention``.

    Each of the ``n_heads`` heads attends with its own slice of the projections: the
    projected query, keys and values ``(B, T, d_model)`` are split into ``n_heads``
    pieces of ``d_head = d_model / n_heads`` features, every head runs :func:`attend`
    with :func:`scaled_dot_score` on its piece, and the heads' contexts are
    concatenated and mixed by the output projection ``W^O``.

    ``forward(query (B, Tq, d_model), key (B, Tk, d_model), value (B, Tk, d_model),
    key_padding_mask=None, attn_mask=None)`` returns ``(output (B, Tq, d_model),
    weights)``; the weights are averaged over the heads, ``(B, Tq, Tk)``, or per head
    ``(B, n_heads, Tq, Tk)`` with ``average_attn_weights=False``.

    **Masks follow this package's convention, True = may attend**, the opposite of
    ``torch.nn.MultiheadAttention`` (where a boolean ``True`` means "ignore"):
    ``key_padding_mask (B, Tk)`` is ``True`` at real keys (e.g.
    :func:`padding_mask`), and ``attn_mask (Tq, Tk)`` or ``(B, Tq, Tk)`` is ``True``
    where a query may look at a key (e.g. :func:`causal_mask`). To give torch the
    same masks, pass ``~key_padding_mask`` and ``~attn_mask``. A query that may
    attend to no key gets zero weights and output ``W^O``'s bias (torch returns NaN
    there).
    """

    def __init__(self, d_model: int, n_heads: int, *, bias: bool = True) -> None:
        super().__init__()
        check_positive("d_model", d_model)
        check_positive("n_heads", n_heads)
        if d_model % n_heads:
            raise ValueError(
                f"d_model must be divisible by n_heads, got d_model = {d_model},"
                f" n_heads = {n_heads}"
            )
        self.d_model, self.n_heads, self.d_head = (
            d_model,
            n_heads,
            d_model // n_heads,
        )
        self.query_proj = nn.Linear(
            d_model, d_model, bias=bias
        )  # W^Q of all heads, stacked
        self.key_proj = nn.Linear(d_model, d_model, bias=bias)  # W^K
        self.value_proj = nn.Linear(d_model, d_model, bias=bias)  # W^V
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)  # W^O

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, T, d_model)`` -> ``(B, n_heads, T, d_head)``: head ``h`` gets
        features ``h*d_head .. (h+1)*d_head``."""
        return x.unflatten(-1, (self.n_heads, self.d_head)).transpose(1, 2)

    @staticmethod
    def merge_heads(x: torch.Tensor) -> torch.Tensor:
        """``(B, n_heads, T, d_head)`` -> ``(B, T, d_model)``, the inverse of
        :meth:`split_heads`."""
        return x.transpose(1, 2).flatten(-2)

    def combined_mask(
        self,
        batch: int,
        tq: int,
        tk: int,
        key_padding_mask: torch.Tensor | None,
        attn_mask: torch.Tensor | None,
    ) -> torch.Tensor | None:
        """Check both masks and join them into one ``(B or 1, 1, Tq or 1, Tk)`` mask
        that broadcasts over heads."""
        mask = None
        if key_padding_mask is not None:
            check_tensor("key_padding_mask", key_padding_mask)
            if key_padding_mask.shape != (batch, tk):
                raise ValueError(
                    f"key_padding_mask must have shape (batch, Tk) = {(batch, tk)}, "
                    f"got {shape_of(key_padding_mask)}"
                )
            if key_padding_mask.dtype != torch.bool:
                raise ValueError(
                    "key_padding_mask must be a boolean tensor (True = real key), "
                    f"got dtype {key_padding_mask.dtype}"
                )
            mask = key_padding_mask[:, None, None, :]
        if attn_mask is not None:
            check_tensor("attn_mask", attn_mask)
            if attn_mask.dtype != torch.bool:
                raise ValueError(
                    "attn_mask must be a boolean tensor (True = may attend), got"
                    f" dtype {attn_mask.dtype}"
                )
            if attn_mask.shape == (tq, tk):
                extra = attn_mask[None, None]
            elif attn_mask.shape == (batch, tq, tk):
                extra = attn_mask[:, None]
            else:
                raise ValueError(
                    f"attn_mask must have shape (Tq, Tk) = {(tq, tk)} or (batch, Tq,"
                    f" Tk) = {(batch, tq, tk)}, got {shape_of(attn_mask)}"
                )
            mask = extra if mask is None else mask & extra
        return mask

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
        average_attn_weights: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        for name, x, layout in [
            ("query", query, "(batch, Tq, d_model)"),
            ("key", key, "(batch, Tk, d_model)"),
            ("value", value, "(batch, Tk, d_model)"),
        ]:
            check_ndim(name, x, layout, ndim=3)
            _check_last_dim(name, x, self.d_model, layout)
        if key.shape[:2] != value.shape[:2] or key.shape[0] != query.shape[0]:
            raise ValueError(
                "query, key and value must share the batch size, and key and value"
                f" the length Tk: query {shape_of(query)}, key {shape_of(key)},"
                f" value {shape_of(value)}"
            )
        batch, tq, tk = query.shape[0], query.shape[1], key.shape[1]
        mask = self.combined_mask(batch, tq, tk, key_padding_mask, attn_mask)
        q, k, v = (
            self.split_heads(proj(x))
            for proj, x in [
                (self.query_proj, query),
                (self.key_proj, key),
                (self.value_proj, value),
            ]
        )
        context, weights = attend(
            q, k, v, score=scaled_dot_score, mask=mask
        )  # (B, h, Tq, d_head), (B, h, Tq, Tk)
        output = self.out_proj(self.merge_heads(context))
        return output, weights.mean(1) if average_attn_weights else weights

    @torch.no_grad()
    def load_torch_weights(
        self, module: nn.MultiheadAttention
    ) -> MultiHeadAttention:
        """Copy the weights of a ``torch.nn.MultiheadAttention`` with the same sizes
        into this module.

        The torch module must have ``embed_dim = d_model``, ``num_heads = n_heads``,
        keys and values of size ``d_model``, no ``add_bias_kv`` and a bias exactly
        when this module has one. Returns ``self``.
        """
        if not isinstance(module, nn.MultiheadAttention):
            raise TypeError(
                "module must be a torch.nn.MultiheadAttention, got"
                f" {type(module).__name__}"
            )
        if (module.embed_dim, module.num_heads) != (self.d_model, self.n_heads):
            raise ValueError(
                f"sizes differ: this module has d_model = {self.d_model}, n_heads ="
                f" {self.n_heads}; the torch module has embed_dim ="
                f" {module.embed_dim}, num_heads = {module.num_heads}"
            )
        if not module._qkv_same_embed_dim or module.bias_k is not None:
            raise ValueError(
                "only a torch module with kdim = vdim = embed_dim and"
                " add_bias_kv=False can be loaded"
            )
        if (module.in_proj_bias is None) != (self.query_proj.bias is None):
            raise ValueError(
                "one module has biases and the other has not: build both with the"
                " same bias setting"
            )
        projections = [self.query_proj, self.key_proj, self.value_proj]
        for proj, weight in zip(
            projections, module.in_proj_weight.chunk(3), strict=True
        ):
            proj.weight.copy_(weight)
        if module.in_proj_bias is not None:
            for proj, b in zip(
                projections, module.in_proj_bias.chunk(3), strict=True
            ):
                proj.bias.copy_(b)
            self.out_proj.bias.copy_(module.out_proj.bias)
        self.out_proj.weight.copy_(module.out_proj.weight)
        return self


# Local attention (Luong et al., 2015): only a window of 2D + 1 source positions
# around a centre p_t is scored.


def window_positions(centre: torch.Tensor, half_width: int) -> torch.Tensor:
    """The ``2D + 1`` integer positions ``round(p_t) - D, ..., round(p_t) + D``
    around each centre ``p_t``.

    centre ``(...)`` real or integer positions (``round`` is ``floor(p + 1/2)``);
    returns a long tensor ``(..., 2D + 1)``. Positions that fall outside a sequence
    (below 0, past its end) are returned as they are:
    :func:`local_window` gives them weight 0 through its mask and
    :func:`gather_positions` reads them clamped.
    """
    check_tensor("centre", centre)
    if half_width < 0:
        raise ValueError(f"half_width D must be >= 0, got {half_width}")
    middle = torch.floor(centre.detach().to(torch.float64) + 0.5).long()
    return middle.unsqueeze(-1) + torch.arange(
        -half_width, half_width + 1, device=centre.device
    )


def gather_positions(values: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Read ``values (B, S, d)`` at ``positions (B, ..., W)``: returns ``(B, ..., W,
    d)``.

    Positions are clamped to ``0 .. S-1`` (a window hanging over an edge reads the
    edge word; give those positions weight 0). The cost is that of the positions
    read, whatever ``S`` is.
    """
    check_ndim("values", values, "(batch, S, d)", ndim=3)
    check_ndim("positions", positions, "(batch, ..., W)", min_ndim=2)
    if positions.shape[0] != values.shape[0]:
        raise ValueError(
            "positions must have shape (batch, ..., W) with batch ="
            f" {values.shape[0]} like values {shape_of(values)}, got"
            f" {shape_of(positions)}"
        )
    if values.shape[1] == 0:
        raise ValueError(
            f"values must hold at least one position, got {shape_of(values)}"
        )
    index = positions.clamp(0, values.shape[1] - 1).flatten(1)  # (B, n)
    picked = values.gather(
        1, index.unsqueeze(-1).expand(-1, -1, values.shape[-1])
    )  # (B, n, d)
    return picked.view(*positions.shape, values.shape[-1])


def local_window(
    scores: torch.Tensor,
    centre: torch.Tensor,
    half_width: int,
    *,
    positions: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
    gaussian: bool = True,
    sigma: float | None = None,
) -> torch.Tensor:
    """Luong's local attention weights over a window ``[p_t - D, p_t + D]`` of source
    positions.

    ``scores (..., K)`` are the scores of ``K`` source positions ``positions (...,
    K)`` (integers; default ``0 .. K-1``, i.e. the scores of the whole source). A
    position is *inside* the window when
    ``|s - round(p_t)| <= D`` and ``mask`` (boolean ``(..., K)``, ``True`` at real
    words) allows it. Returns

    ``a_t(s) = softmax_{s' inside}(score_{s'})[s] * exp(-(s - p_t)^2 / (2 sigma^2))``
    inside, ``0`` outside,

    with ``sigma = D / 2`` unless given; ``gaussian=False`` drops the Gaussian factor
    (local-m in the paper). ``centre (...)`` is ``p_t`` (the weights are
    differentiable in it through the Gaussian). The window can be given densely (all
    ``S`` positions) or as the ``2D + 1`` positions of :func:`window_positions`: both
    give the same weights at the same positions. A window with no real word inside
    gets all-zero weights.
    """
    check_ndim("scores", scores, "(..., K)", min_ndim=1)
    check_tensor("centre", centre)
    if half_width < 0:
        raise ValueError(f"half_width D must be >= 0, got {half_width}")
    if centre.shape != scores.shape[:-1]:
        raise ValueError(
            f"centre must have shape {shape_of(scores)[:-1]} (the scores"
            f" {shape_of(scores)} without their last axis), got {shape_of(centre)}"
        )
    if positions is None:
        positions = torch.arange(scores.shape[-1], device=scores.device).expand_as(
            scores
        )
    elif positions.shape != scores.shape or positions.dtype.is_floating_point:
        raise ValueError(
            "positions must be an integer tensor shaped like scores"
            f" {shape_of(scores)}, got {shape_of(positions)} of dtype"
            f" {positions.dtype}"
        )
    middle = torch.floor(centre.detach().to(torch.float64) + 0.5).long()
    inside = (positions - middle.unsqueeze(-1)).abs() <= half_width
    if mask is not None:
        if mask.dtype != torch.bool or mask.shape != scores.shape:
            raise ValueError(
                "mask must be a boolean tensor shaped like scores"
                f" {shape_of(scores)}, got {shape_of(mask)} of dtype {mask.dtype}"
            )
        inside = inside & mask
    weights = masked_softmax(scores, inside)
    if not gaussian:
        return weights
    sigma = half_width / 2 if sigma is None else sigma
    if not sigma > 0:
        raise ValueError(
            f"the Gaussian needs sigma > 0, got sigma = {sigma} (half_width D ="
            f" {half_width}; with D = 0 pass sigma explicitly or gaussian=False)"
        )
    distance = positions.to(scores.dtype) - centre.unsqueeze(-1).to(scores.dtype)
    return weights * torch.exp(-distance.pow(2) / (2 * sigma**2))
