"""Checks for the chapter "Simple vs parameterized attention, and the step to self-attention"."""

from __future__ import annotations

from collections.abc import Callable

import torch

from attnlab.attention import MultiHeadAttention
from attnlab.exercises._checking import ExerciseError, call, expect_close, expect_tensor, passed


def _close(a: object, b: torch.Tensor) -> bool:
    return isinstance(a, torch.Tensor) and a.shape == b.shape and torch.allclose(a.to(b.dtype), b, atol=1e-5,
                                                                                  rtol=1e-4)


def _reference_parameterized(y_d, Y_e, W_q, W_k, W_v):
    """The slides' formula with rows as vectors: a = softmax((Y_e W_k^T) (W_q y_d)), y_a = a^T (Y_e W_v^T)."""
    a = torch.softmax(((Y_e @ W_k.T) @ (y_d @ W_q.T)[..., None])[..., 0], dim=-1)  # (B, S)
    return (a[:, None] @ (Y_e @ W_v.T))[:, 0], a


def check_parameterized_attention(parameterized_attention: Callable) -> None:
    """Check ``parameterized_attention(y_d (B, d_dec), Y_e (B, S, d_enc), W_q, W_k, W_v) -> (y_a, a)``.

    ``W_q (d, d_dec)``, ``W_k (d, d_enc)``, ``W_v (d_v, d_enc)``; ``a = softmax((W_k Y_e)^T (W_q y_d))`` over
    the S source positions, ``y_a = (W_v Y_e) a``: ``y_a (B, d_v)``, ``a (B, S)``.
    """
    name = "parameterized_attention"
    gen = torch.Generator().manual_seed(0)
    # (B, S, d_dec, d_enc, d, d_v): the square cases make transposed or missing projections run without error
    cases = [(3, 4, 5, 5, 5, 5), (2, 5, 3, 4, 6, 2), (1, 7, 4, 6, 4, 3)]
    for batch, length, d_dec, d_enc, d, d_v in cases:
        y_d, Y_e = torch.randn(batch, d_dec, generator=gen), torch.randn(batch, length, d_enc, generator=gen)
        W_q, W_k = torch.randn(d, d_dec, generator=gen), torch.randn(d, d_enc, generator=gen)
        W_v = torch.randn(d_v, d_enc, generator=gen)
        what = (f"for y_d {tuple(y_d.shape)}, Y_e {tuple(Y_e.shape)}, W_q {tuple(W_q.shape)}, W_k {tuple(W_k.shape)}, "
                f"W_v {tuple(W_v.shape)}")
        out = call(parameterized_attention, name, y_d, Y_e, W_q, W_k, W_v)
        if not isinstance(out, tuple) or len(out) != 2:
            raise ExerciseError(f"{name} must return a pair (y_a, a), got {type(out).__name__}")
        y_a, a = out
        expected_y_a, expected_a = _reference_parameterized(y_d, Y_e, W_q, W_k, W_v)
        expect_tensor(f"{name}'s weights a", a, (batch, length))
        if not torch.allclose(a.sum(-1), torch.ones(batch), atol=1e-5):
            raise ExerciseError(f"the weights a do not sum to 1 over the source positions {what}: take the softmax "
                                "over the S positions (the last dimension of the scores)")
        keys = Y_e @ W_k.T
        if d_dec == d and _close(a, torch.softmax(keys @ y_d[..., None], dim=1)[..., 0]):
            raise ExerciseError(f"the weights ignore W_q {what}: the query is the projection W_q y_d")
        if W_q.shape[0] == W_q.shape[1] and _close(a, torch.softmax(keys @ (y_d @ W_q)[..., None], dim=1)[..., 0]):
            raise ExerciseError(f"the query is y_d W_q instead of W_q y_d {what}: with rows as vectors that is "
                                "y_d @ W_q.T")
        if _close(a, torch.softmax((keys @ (y_d @ W_q.T)[..., None])[..., 0] / d**0.5, dim=-1)):
            raise ExerciseError(f"the scores are divided by sqrt(d) {what}: the parameterized attention of this "
                                "chapter uses the plain dot product")
        expect_close(f"{name}'s weights a", a, expected_a, what)
        if d_v == d and _close(y_a, (a[:, None] @ keys)[:, 0]):
            raise ExerciseError(f"y_a averages the keys W_k Y_e {what}: the values are the projections W_v Y_e")
        if d_v == d_enc and _close(y_a, (a[:, None] @ Y_e)[:, 0]):
            raise ExerciseError(f"y_a averages the encoder states themselves {what}: project them with W_v first")
        expect_tensor(f"{name}'s attention vector y_a", y_a, (batch, d_v))
        expect_close(f"{name}'s attention vector y_a", y_a, expected_y_a, what)
    passed(name, len(cases))


def _reference_multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, n_heads):
    module = MultiHeadAttention(x_q.shape[-1], n_heads, bias=False)
    with torch.no_grad():
        for proj, weight in [(module.query_proj, W_q), (module.key_proj, W_k), (module.value_proj, W_v),
                             (module.out_proj, W_o)]:
            proj.weight.copy_(weight)
        return module(x_q, x_kv, x_kv)[0]


def _variant(x_q, x_kv, W_q, W_k, W_v, W_o, n_heads, *, scale, split="heads", output=True):
    """Multi-head attention with one typical mistake, to recognise it in a wrong answer."""
    batch, d = x_q.shape[0], x_q.shape[-1]

    def heads(x):
        if split == "view":  # reshape straight to (B, h, T, d_head): mixes positions into heads
            return x.reshape(batch, n_heads, -1, d // n_heads)
        return x.unflatten(-1, (n_heads, d // n_heads)).transpose(1, 2)

    q, k, v = heads(x_q @ W_q.T), heads(x_kv @ W_k.T), heads(x_kv @ W_v.T)
    weights = torch.softmax(q @ k.transpose(-2, -1) / scale, dim=-1)
    merged = (weights @ v).transpose(1, 2).flatten(-2)
    return merged @ W_o.T if output else merged


def check_multi_head_attention(multi_head_attention: Callable) -> None:
    """Check ``multi_head_attention(x_q (B, Tq, d), x_kv (B, Tk, d), W_q, W_k, W_v, W_o, n_heads) -> (B, Tq, d)``.

    Every ``W`` is ``(d, d)`` and acts as ``x @ W.T``; head ``h`` uses features ``h*d_head .. (h+1)*d_head`` of
    the projections (``d_head = d / n_heads``), scores with the scaled dot product ``q . k / sqrt(d_head)``;
    the heads' contexts are concatenated and multiplied by ``W_o``.
    """
    name = "multi_head_attention"
    gen = torch.Generator().manual_seed(1)
    cases = [(2, 3, 4, 8, 1), (2, 5, 5, 8, 2), (3, 4, 6, 12, 3), (1, 2, 7, 16, 4)]
    for batch, tq, tk, d, n_heads in cases:
        x_q, x_kv = torch.randn(batch, tq, d, generator=gen), torch.randn(batch, tk, d, generator=gen)
        W_q, W_k, W_v, W_o = (torch.randn(d, d, generator=gen) / d**0.5 for _ in range(4))
        args = (x_q, x_kv, W_q, W_k, W_v, W_o, n_heads)
        what = f"for x_q {tuple(x_q.shape)}, x_kv {tuple(x_kv.shape)} and n_heads = {n_heads}"
        out = expect_tensor(name, call(multi_head_attention, name, *args), (batch, tq, d))
        d_head = d // n_heads
        if n_heads > 1 and _close(out, _variant(*args, scale=d_head**0.5, split="view")):
            raise ExerciseError(f"{name} splits the heads wrongly {what}: reshaping (B, T, d) straight to "
                                "(B, n_heads, T, d_head) mixes positions; reshape to (B, T, n_heads, d_head) and "
                                "then swap the T and head dimensions")
        if _close(out, _variant(*args, scale=1.0)):
            raise ExerciseError(f"{name} does not scale the scores {what}: divide q . k by sqrt(d_head)")
        if n_heads > 1 and _close(out, _variant(*args, scale=d**0.5)):
            raise ExerciseError(f"{name} divides by sqrt(d) {what}: each head's dot product has d_head = d / n_heads "
                                "terms, so divide by sqrt(d_head)")
        if _close(out, _variant(*args, scale=d_head**0.5, output=False)):
            raise ExerciseError(f"{name} leaves out the output projection {what}: multiply the merged heads by W_o")
        expect_close(name, out, _reference_multi_head(*args), what)
    passed(name, len(cases))
