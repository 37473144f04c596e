"""Attention with linear biases (ALiBi, Press et al., 2022): relative positions as a
penalty on the scores instead of vectors added to the embeddings.

Head ``h`` subtracts ``m_h |i - j|`` from the score of query position ``i`` and key
position ``j``, so every head prefers nearby keys, each at its own rate. The slopes
``m_h`` form a geometric sequence: for ``n`` heads (a power of two),
``m_h = 2^{-8 h / n}``, ``h = 1 .. n``. Nothing depends on the absolute position, so
the same bias is defined at every length; in a causal self-attention the keys after
the query are masked (``-inf``), and the bias there is the distance to the past,
``i - j``.

Press et al. designed ALiBi for causal self-attention. In an encoder, where every
word may see every other, the symmetric penalty ``m_h |i - j|`` cannot tell a
word on the left from one on the right; :func:`alibi_encoder_bias` therefore
makes half of the heads look back and half look ahead, each half a causal ALiBi
(one of them mirrored).
"""

from __future__ import annotations

import math

import torch

from attnlab._validate import check_ndim, check_positive, shape_of

__all__ = ["alibi_bias", "alibi_encoder_bias", "alibi_slopes"]


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """The ``(n_heads,)`` slopes of Press et al.: ``2^{-8 h / n}`` for ``h = 1 .. n``
    when ``n`` is a power of two; otherwise the slopes of the power of two ``p`` just
    below ``n``, then every other slope of ``2 p`` heads until there are ``n``."""
    check_positive("n_heads", n_heads)

    def power_of_two(n: int) -> list[float]:
        return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]

    below = 2 ** int(math.log2(n_heads))
    slopes = power_of_two(below)
    slopes += power_of_two(2 * below)[0::2][: n_heads - below]
    return torch.tensor(slopes)


def alibi_bias(
    slopes: torch.Tensor,
    n_queries: int,
    n_keys: int,
    *,
    causal: bool,
    query_offset: int = 0,
) -> torch.Tensor:
    """The ``(n_heads, n_queries, n_keys)`` bias added to the attention scores.

    Query ``i`` sits at position ``query_offset + i`` among the keys ``0 .. n_keys -
    1`` (a cached decoder's new position has ``query_offset = t``). Entry ``(h, i,
    j)`` is ``-slopes[h] * |query_offset + i - j|``; with ``causal=True`` the keys
    after the query get ``-inf`` (the query may not see them).
    """
    check_ndim("slopes", slopes, "(n_heads,)", ndim=1)
    check_positive("n_queries", n_queries)
    check_positive("n_keys", n_keys)
    if query_offset < 0 or (causal and query_offset + n_queries > n_keys):
        raise ValueError(
            "query positions query_offset .. query_offset + n_queries - 1 must be"
            f" keys 0 .. n_keys - 1 in a causal attention, got query_offset ="
            f" {query_offset}, n_queries = {n_queries}, n_keys = {n_keys}"
        )
    queries = torch.arange(n_queries, dtype=slopes.dtype) + query_offset
    distance = queries[:, None] - torch.arange(n_keys, dtype=slopes.dtype)
    bias = -slopes[:, None, None] * distance.abs()  # (n_heads, Tq, Tk)
    if causal:
        bias = bias.masked_fill(distance < 0, -math.inf)
    return bias


def alibi_encoder_bias(n_heads: int, length: int) -> torch.Tensor:
    """The direction-aware ``(n_heads, length, length)`` bias of an encoder's
    self-attention, for an even ``n_heads``.

    Heads ``0 .. n_heads/2 - 1`` look back: the causal bias of
    :func:`alibi_bias` (keys ``j <= i``, ``-m (i - j)``). Heads ``n_heads/2 ..``
    look ahead: its mirror image (keys ``j >= i``, ``-m (j - i)``). Each half has
    the slopes :func:`alibi_slopes` gives ``n_heads / 2`` heads.
    """
    check_positive("n_heads", n_heads)
    check_positive("length", length)
    if n_heads % 2:
        raise ValueError(
            "a direction-aware ALiBi needs an even number of heads (half look back,"
            f" half ahead), got n_heads = {n_heads}"
        )
    back = alibi_bias(alibi_slopes(n_heads // 2), length, length, causal=True)
    return torch.cat([back, back.transpose(1, 2)])


def check_bias(bias: torch.Tensor, n_heads: int, tq: int, tk: int) -> None:
    """Validate an additive score bias ``(n_heads, Tq, Tk)``."""
    if bias.shape != (n_heads, tq, tk):
        raise ValueError(
            f"attn_bias must have shape (n_heads, Tq, Tk) = {(n_heads, tq, tk)}, got"
            f" {shape_of(bias)}"
        )
