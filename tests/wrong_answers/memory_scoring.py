"""Typical wrong answers to the code exercises of chapters 1 and 2: each runs, and each must lose its points."""

WRONG: dict[str, str] = {
    # softmax written as exp / sum: overflows on scores of about 1000
    "ex-memory-soft-lookup": '''def soft_lookup(query: torch.Tensor, keys: torch.Tensor,
                values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Soft dictionary lookup of one query (d,) in keys (n, d) with values (n, m)."""
    e = torch.exp(keys @ query)
    weights = e / e.sum()
    return weights @ values, weights
''',
    # the temperature clamped "to avoid dividing by a tiny number"
    "ex-memory-temperature": '''def lookup_with_temperature(query: torch.Tensor, keys: torch.Tensor,
                            values: torch.Tensor, temperature: float,
                            ) -> tuple[torch.Tensor, torch.Tensor]:
    """Soft lookup whose scores are divided by ``temperature`` before the softmax."""
    weights = torch.softmax(keys @ query / max(temperature, 0.01), dim=-1)
    return weights @ values, weights
''',
    # softmax over all keys, then the others zeroed: the weights no longer sum to 1
    "ex-memory-topk": '''def topk_lookup(query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Soft lookup over the k best-scoring keys only; weight 0 for all others."""
    scores = keys @ query
    weights = torch.softmax(scores, dim=-1) * (scores >= scores.topk(k).values[-1])
    return weights @ values, weights
''',
    # divides by d instead of sqrt(d)
    "ex-scoring-scaled-dot": '''def my_scaled_dot_score(query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """Scores q . k / sqrt(d): query (..., Tq, d), keys (..., Tk, d) -> (..., Tq, Tk)"""
    return query @ keys.transpose(-2, -1) / query.shape[-1]
''',
    # no clamp: a query exactly on a key gets an infinite score
    "ex-scoring-shepard-score": '''def shepard_score(query: torch.Tensor, keys: torch.Tensor, p: float) -> torch.Tensor:
    """Scores (..., Tq, Tk) whose softmax is Shepard's inverse-distance weighting."""
    return -p * torch.cdist(query, keys).log()
''',
    # one position too many: j <= length
    "ex-memory-padding-mask": '''def my_padding_mask(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    """(batch, max_len) boolean mask, True where position j < lengths[b]."""
    return torch.arange(max_len) <= lengths[:, None]
''',
    # -inf instead of a finite fill: an all-masked row becomes NaN
    "ex-memory-masked-softmax": '''def fixed_masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis where mask is True; all-zero weights for a row
    in which every key is masked."""
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
''',
}
