"""The soft dictionary of chapter 1: a Python dict whose lookup is differentiable."""

from __future__ import annotations

import torch

from attnlab._validate import check_ndim, check_positive, shape_of
from attnlab.attention import Score, attend, dot_score


class SoftDict:
    """Key-value memory with soft lookup.

    keys ``(n, d_k)``, values ``(n, d_v)``. ``lookup`` compares a query with every
    key using ``score``, turns the scores into weights with a softmax (scores divided
    by ``temperature``) and returns the weighted sum of the values. With one exactly
    matching key and a low temperature it behaves like ``dict``.
    """

    def __init__(
        self, keys: torch.Tensor, values: torch.Tensor, score: Score = dot_score
    ) -> None:
        check_ndim("keys", keys, "(n, d_k)", ndim=2)
        check_ndim("values", values, "(n, d_v)", ndim=2)
        if keys.shape[0] != values.shape[0]:
            raise ValueError(
                "keys (n, d_k) and values (n, d_v) need the same n: keys"
                f" {shape_of(keys)}, values {shape_of(values)}"
            )
        self.keys, self.values, self.score = keys, values, score

    def __len__(self) -> int:
        return self.keys.shape[0]

    def lookup(
        self, query: torch.Tensor, temperature: float = 1.0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Soft lookup of ``query (d_k,)`` or ``(batch, d_k)``.

        Returns ``(value (d_v,) or (batch, d_v), weights (n,) or (batch, n))``.
        """
        check_positive("temperature", temperature)
        check_ndim("query", query, "(d_k,) or (batch, d_k)", min_ndim=1)
        if query.dim() > 2 or query.shape[-1] != self.keys.shape[1]:
            raise ValueError(
                "query must have shape (d_k,) or (batch, d_k) with d_k ="
                f" {self.keys.shape[1]}, got {shape_of(query)}"
            )
        single = query.dim() == 1
        queries = query.reshape(-1, 1, query.shape[-1])  # (batch, Tq=1, d_k)

        def scaled(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
            return self.score(q, k) / temperature

        value, weights = attend(queries, self.keys, self.values, score=scaled)
        value, weights = value[:, 0], weights[:, 0]
        return (value[0], weights[0]) if single else (value, weights)
