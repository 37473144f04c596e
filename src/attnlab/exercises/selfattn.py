"""Checks for the chapter "Simple vs parameterized attention, and the step to
self-attention".

Simple attention of a decoder state over encoder states, parameterized attention with
``W^Q, W^K, W^V``, the split of the projections into heads (a debugging exercise),
multi-head attention, and an experiment on the number of heads of the neighbour
tagger.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from attnlab.attention import attend
from attnlab.exercises._checking import (
    ExerciseError,
    call,
    describe,
    exercise_check,
    expect_close,
    expect_number,
    expect_tensor,
    generator,
    passed,
)
from attnlab.runmode import scaled
from attnlab.selfattention import (
    MultiHeadAttention,
    ProjectedAttention,
    SelfAttentionEncoder,
)
from attnlab.seq2seq import Encoded
from attnlab.simple_attention import SimpleAttentionDecoder


def _close(a: object, b: torch.Tensor) -> bool:
    """True if ``a`` is a tensor (of any float dtype) of ``b``'s shape with about its
    values."""
    if (
        not isinstance(a, torch.Tensor)
        or a.shape != b.shape
        or not a.is_floating_point()
    ):
        return False
    return torch.allclose(
        a.detach().to(torch.float64),
        b.detach().to(torch.float64),
        atol=1e-5,
        rtol=1e-4,
    )


def _mistake(out: object, wrong: torch.Tensor, right: torch.Tensor) -> bool:
    """True if ``out`` matches the result of a typical mistake that, on these inputs,
    differs from the right one."""
    return _close(out, wrong) and not _close(wrong, right)


def _pair(name: str, out: Any, first: str, second: str) -> tuple[Any, Any]:
    """The answer must be a pair ``(first, second)``."""
    if isinstance(out, torch.Tensor):
        raise ExerciseError(
            f"{name} returned one tensor {tuple(out.shape)}: return the pair"
            f" ({first}, {second})"
        )
    if not isinstance(out, tuple | list) or len(out) != 2:
        raise ExerciseError(
            f"{name} must return a pair ({first}, {second}), got"
            f" {type(out).__name__}"
        )
    return out[0], out[1]


def _lengths_mask(lengths: list[int], size: int) -> torch.Tensor:
    return torch.arange(size) < torch.tensor(lengths)[:, None]


def _reject_overflow(name: str, out: Any, what: str) -> None:
    """NaN or infinity for large scores: the softmax was written as exp(s) /
    sum(exp(s))."""
    if (
        isinstance(out, torch.Tensor)
        and out.is_floating_point()
        and not torch.isfinite(out).all()
    ):
        raise ExerciseError(
            f"{name} returns NaN or infinite values {what}: exp() of large scores"
            " overflows. Subtract each row's largest score before exp()"
            " (torch.softmax does this for you)"
        )


# Simple attention: a(t) = softmax(Y_e^T y_d(t)), y_a(t) = Y_e a(t), padding masked.


def _reference_simple(
    y_d: torch.Tensor, Y_e: torch.Tensor, mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    scores = torch.einsum("bsd,bd->bs", Y_e.double(), y_d.double()).masked_fill(
        ~mask, float("-inf")
    )
    a = torch.softmax(scores, dim=-1)
    return torch.einsum("bs,bsd->bd", a, Y_e.double()), a


@exercise_check(SimpleAttentionDecoder.attention, attend)
def check_simple_attention(simple_attention: Callable, seed: int | None = 0) -> None:
    """Check ``simple_attention(y_d (B, d), Y_e (B, S, d), mask (B, S)) -> (y_a (B,
    d), a (B, S))``.

    ``a = softmax(Y_e^T y_d)`` over the real positions (``mask`` True), weight 0 at
    padding; ``y_a = Y_e a``, the weighted average of the encoder states.
    """
    name = "simple_attention"
    gen = generator(seed)
    # (B, S, d, lengths, scale): the last case has scores in the thousands
    cases = [
        (3, 5, 4, [5, 5, 5], 1.0),
        (4, 6, 3, [6, 2, 4, 1], 1.0),
        (2, 7, 5, [7, 3], 1.0),
        (2, 5, 4, [5, 4], 30.0),
    ]
    for batch, length, d, lengths, scale in cases:
        y_d = scale * torch.randn(batch, d, generator=gen)
        Y_e = scale * torch.randn(batch, length, d, generator=gen)
        mask = _lengths_mask(lengths, length)
        what = (
            f"for y_d {tuple(y_d.shape)}, Y_e {tuple(Y_e.shape)} and sequence"
            f" lengths {lengths}"
        )
        if scale > 1:
            what += " (scores in the thousands)"
        y_a, a = _pair(
            name, call(simple_attention, name, y_d, Y_e, mask), "y_a", "a"
        )
        if scale > 1:
            _reject_overflow(f"{name}'s weights a", a, what)
        a = expect_tensor(f"{name}'s weights a", a, (batch, length), torch.float64)
        expected_y_a, expected_a = _reference_simple(y_d, Y_e, mask)
        if (a[~mask].abs() > 1e-6).any():
            raise ExerciseError(
                "the weights a give weight to padding positions (mask False)"
                f" {what}: set their scores to -inf (or a very negative number)"
                " before the softmax"
            )
        unmasked = torch.softmax(
            torch.einsum("bsd,bd->bs", Y_e.double(), y_d.double()), dim=-1
        )
        # weight on padding if it were not masked
        padding_share = (unmasked * ~mask).sum(-1).max().item()
        if padding_share > 1e-3 and _close(a, unmasked * mask):
            raise ExerciseError(
                f"the weights a do not sum to 1 over the real positions {what}: mask"
                " the scores before the softmax; zeroing the weights after it"
                " leaves them unnormalised"
            )
        if not torch.allclose(
            a.sum(-1), torch.ones(batch, dtype=torch.float64), atol=1e-5
        ):
            raise ExerciseError(
                f"the weights a do not sum to 1 over the source positions {what}:"
                " take the softmax over the S positions (the last dimension of the"
                " scores)"
            )
        # with scores in the thousands, float32 rounding of the scores alone moves
        # the weights by ~1e-4
        tolerance = 1e-5 if scale == 1 else 1e-3
        expect_close(f"{name}'s weights a", a, expected_a, what, atol=tolerance)
        y_a = expect_tensor(
            f"{name}'s attention vector y_a", y_a, (batch, d), torch.float64
        )
        if _mistake(
            y_a,
            Y_e.double().masked_fill(~mask[..., None], 0).sum(1)
            / mask.sum(1, keepdim=True),
            expected_y_a,
        ):
            raise ExerciseError(
                f"y_a is the plain average of the encoder states {what}: weight each"
                " state by a"
            )
        expect_close(
            f"{name}'s attention vector y_a",
            y_a,
            expected_y_a,
            what,
            atol=tolerance * scale,
        )
    passed(name, len(cases))


# Parameterized attention: a = softmax((W^K Y_e)^T (W^Q y_d)), y_a = (W^V Y_e) a.


def _reference_parameterized(y_d, Y_e, W_q, W_k, W_v):
    """The slides' formula with rows as vectors: a = softmax((Y_e W_k^T) (W_q y_d)),
    y_a = a^T (Y_e W_v^T)."""
    y_d, Y_e, W_q, W_k, W_v = (
        t.detach().double() for t in (y_d, Y_e, W_q, W_k, W_v)
    )
    # (B, S)
    a = torch.softmax(((Y_e @ W_k.T) @ (y_d @ W_q.T)[..., None])[..., 0], dim=-1)
    return (a[:, None] @ (Y_e @ W_v.T))[:, 0], a


@exercise_check(ProjectedAttention, attend)
def check_parameterized_attention(
    parameterized_attention: Callable, seed: int | None = 0
) -> None:
    """Check ``parameterized_attention(y_d (B, d_dec), Y_e (B, S, d_enc), W_q, W_k,
    W_v) -> (y_a, a)``.

    ``W_q (d, d_dec)``, ``W_k (d, d_enc)``, ``W_v (d_v, d_enc)``; ``a = softmax((W_k
    Y_e)^T (W_q y_d))`` over the S source positions, ``y_a = (W_v Y_e) a``: ``y_a (B,
    d_v)``, ``a (B, S)``. The projections are learned, so the result must carry their
    gradient.
    """
    name = "parameterized_attention"
    gen = generator(seed)
    # (B, S, d_dec, d_enc, d, d_v, scale): the square cases make transposed or
    # missing projections run without
    # error; the last case has scores in the thousands
    cases = [
        (3, 4, 5, 5, 5, 5, 1.0),
        (2, 5, 3, 4, 6, 2, 1.0),
        (1, 7, 4, 6, 4, 3, 1.0),
        (2, 4, 3, 3, 3, 3, 12.0),
    ]
    for batch, length, d_dec, d_enc, d, d_v, scale in cases:
        y_d, Y_e = (
            scale * torch.randn(batch, d_dec, generator=gen),
            scale * torch.randn(batch, length, d_enc, generator=gen),
        )
        W_q, W_k = (
            torch.randn(d, d_dec, generator=gen),
            torch.randn(d, d_enc, generator=gen),
        )
        W_v = torch.randn(d_v, d_enc, generator=gen)
        what = (
            f"for y_d {tuple(y_d.shape)}, Y_e {tuple(Y_e.shape)}, W_q"
            f" {tuple(W_q.shape)}, W_k {tuple(W_k.shape)}, W_v {tuple(W_v.shape)}"
        )
        if scale > 1:
            what += " (scores in the thousands)"
        weights = [w.clone().requires_grad_() for w in (W_q, W_k, W_v)]
        y_a, a = _pair(
            name, call(parameterized_attention, name, y_d, Y_e, *weights), "y_a", "a"
        )
        if scale > 1:
            _reject_overflow(f"{name}'s weights a", a, what)
        expected_y_a, expected_a = _reference_parameterized(y_d, Y_e, W_q, W_k, W_v)
        a = expect_tensor(f"{name}'s weights a", a, (batch, length), torch.float64)
        if not torch.allclose(
            a.sum(-1), torch.ones(batch, dtype=torch.float64), atol=1e-5
        ):
            raise ExerciseError(
                f"the weights a do not sum to 1 over the source positions {what}:"
                " take the softmax over the S positions (the last dimension of the"
                " scores)"
            )
        keys = (Y_e @ W_k.T).double()
        query = y_d.double()
        if d_dec == d and _mistake(
            a, torch.softmax(keys @ query[..., None], dim=1)[..., 0], expected_a
        ):
            raise ExerciseError(
                f"the weights ignore W_q {what}: the query is the projection W_q y_d"
            )
        if W_q.shape[0] == W_q.shape[1] and _mistake(
            a,
            torch.softmax(keys @ (query @ W_q.double())[..., None], dim=1)[..., 0],
            expected_a,
        ):
            raise ExerciseError(
                f"the query is y_d W_q instead of W_q y_d {what}: with rows as"
                " vectors that is y_d @ W_q.T"
            )
        if _mistake(
            a,
            torch.softmax(
                (keys @ (query @ W_q.double().T)[..., None])[..., 0] / d**0.5, dim=-1
            ),
            expected_a,
        ):
            raise ExerciseError(
                f"the scores are divided by sqrt(d) {what}: the parameterized"
                " attention of this chapter uses the plain dot product"
            )
        # float32 rounding of scores in the thousands
        tolerance = 1e-5 if scale == 1 else 1e-3
        expect_close(f"{name}'s weights a", a, expected_a, what, atol=tolerance)
        if scale > 1:
            _reject_overflow(f"{name}'s attention vector y_a", y_a, what)
        gradient = isinstance(y_a, torch.Tensor) and y_a.requires_grad
        y_a = expect_tensor(
            f"{name}'s attention vector y_a", y_a, (batch, d_v), torch.float64
        )
        if d_v == d and _mistake(y_a, (a[:, None] @ keys)[:, 0], expected_y_a):
            raise ExerciseError(
                f"y_a averages the keys W_k Y_e {what}: the values are the"
                " projections W_v Y_e"
            )
        if d_v == d_enc and _mistake(
            y_a, (a[:, None] @ Y_e.double())[:, 0], expected_y_a
        ):
            raise ExerciseError(
                f"y_a averages the encoder states themselves {what}: project them"
                " with W_v first"
            )
        expect_close(
            f"{name}'s attention vector y_a",
            y_a,
            expected_y_a,
            what,
            atol=tolerance * scale,
        )
        if not gradient:
            raise ExerciseError(
                f"y_a carries no gradient back to W_q, W_k and W_v {what}: do not"
                " compute it under torch.no_grad(), with .detach() or through"
                " NumPy, or a model could not learn the projections"
            )
    passed(name, len(cases))


# Splitting the projections into heads, and merging them back.


def _heads_wrongly(x: torch.Tensor, n_heads: int, kind: str) -> torch.Tensor:
    """``x (B, T, d)`` split into heads in one of the typical wrong ways."""
    batch, length, d = x.shape
    if kind == "no-transpose":  # the right numbers, but positions mixed into heads
        return x.reshape(batch, n_heads, length, d // n_heads)
    if kind == "strided":  # head h gets features h, h + n_heads, ...
        return x.unflatten(-1, (d // n_heads, n_heads)).permute(0, 3, 1, 2)
    raise ValueError(kind)


def _split(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    return x.unflatten(-1, (n_heads, x.shape[-1] // n_heads)).transpose(1, 2)


def _call_with_hint(fn: Callable, name: str, *args: Any) -> Any:
    try:
        return call(fn, name, *args)
    except ExerciseError as exc:
        if "view size is not compatible" in str(exc):
            raise ExerciseError(
                f"{exc}. After a transpose the tensor is no longer contiguous in"
                " memory: use .reshape(...) (or .contiguous().view(...)) instead of"
                " .view(...)"
            ) from None
        raise


@exercise_check(MultiHeadAttention.split_heads, MultiHeadAttention.merge_heads)
def check_split_heads(
    split_heads: Callable, merge_heads: Callable, seed: int | None = 0
) -> None:
    """Check ``split_heads(x (B, T, d), n_heads) -> (B, n_heads, T, d_head)`` and its
    inverse ``merge_heads(x (B, n_heads, T, d_head)) -> (B, T, d)``.

    Head ``h`` of position ``t`` holds features ``h*d_head .. (h+1)*d_head - 1`` of
    ``x[:, t]``.
    """
    gen = generator(seed)
    # (B, T, d, n_heads): T = n_heads in one case, so that forgetting the transpose
    # gives the right shape
    cases = [(2, 5, 12, 3), (3, 4, 8, 2), (2, 4, 8, 4), (1, 6, 6, 1)]
    for batch, length, d, n_heads in cases:
        x = torch.randn(batch, length, d, generator=gen)
        d_head = d // n_heads
        what = f"for x {tuple(x.shape)} and n_heads = {n_heads}"
        out = _call_with_hint(split_heads, "split_heads", x, n_heads)
        if isinstance(out, torch.Tensor) and tuple(out.shape) == (
            batch,
            length,
            n_heads,
            d_head,
        ) != (batch, n_heads, length, d_head):
            raise ExerciseError(
                f"split_heads returned (B, T, n_heads, d_head) = {tuple(out.shape)}"
                f" {what}: swap the T and head dimensions to get (B, n_heads, T,"
                " d_head)"
            )
        out = expect_tensor("split_heads", out, (batch, n_heads, length, d_head))
        if n_heads > 1 and _close(out, _heads_wrongly(x, n_heads, "no-transpose")):
            raise ExerciseError(
                "split_heads reshapes (B, T, d) straight to (B, n_heads, T, d_head)"
                f" {what}: that keeps the shape but mixes positions into heads."
                " Reshape to (B, T, n_heads, d_head), then swap the T and head"
                " dimensions"
            )
        if (
            n_heads > 1
            and length == n_heads
            and _close(out, x.unflatten(-1, (n_heads, d_head)))
        ):
            raise ExerciseError(
                f"split_heads does not swap the T and head dimensions {what} (the"
                " shape only looks right because T = n_heads): transpose (B, T,"
                " n_heads, d_head) to (B, n_heads, T, d_head)"
            )
        if n_heads > 1 and _close(out, _heads_wrongly(x, n_heads, "strided")):
            raise ExerciseError(
                f"split_heads gives head h every n_heads-th feature {what}: head h"
                " must get the consecutive features h*d_head .. (h+1)*d_head - 1,"
                " so split d as (n_heads, d_head)"
            )
        expect_close("split_heads", out, _split(x, n_heads), what)

        merged = _call_with_hint(
            merge_heads, "merge_heads", _split(x, n_heads).contiguous()
        )
        if (
            isinstance(merged, torch.Tensor)
            and tuple(merged.shape) == (batch, length, d)
            and n_heads > 1
            and _close(merged, _split(x, n_heads).reshape(batch, length, d))
            and not _close(merged, x)
        ):
            raise ExerciseError(
                "merge_heads reshapes (B, n_heads, T, d_head) straight to (B, T, d)"
                f" {what}: swap the head and T dimensions back first, so that"
                " merge_heads undoes split_heads"
            )
        merged = expect_tensor("merge_heads", merged, (batch, length, d))
        expect_close(
            "merge_heads",
            merged,
            x,
            f"{what}: merge_heads(split(x)) must give x back",
        )
    passed("split_heads and merge_heads", len(cases))


# Multi-head attention.


def _reference_multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, n_heads):
    module = MultiHeadAttention(x_q.shape[-1], n_heads, bias=False)
    with torch.no_grad():
        for proj, weight in [
            (module.query_proj, W_q),
            (module.key_proj, W_k),
            (module.value_proj, W_v),
            (module.out_proj, W_o),
        ]:
            proj.weight.copy_(weight)
        return module(x_q, x_kv, x_kv)[0]


def _variant(
    x_q, x_kv, W_q, W_k, W_v, W_o, n_heads, *, scale, split="heads", output=True
):
    """Multi-head attention with one typical mistake, to recognise it in a wrong
    answer."""
    x_q, x_kv, W_q, W_k, W_v, W_o = (
        t.detach() for t in (x_q, x_kv, W_q, W_k, W_v, W_o)
    )
    batch, d = x_q.shape[0], x_q.shape[-1]

    def heads(x):
        # reshape straight to (B, h, T, d_head): mixes positions into heads
        if split == "view":
            return x.reshape(batch, n_heads, -1, d // n_heads)
        return x.unflatten(-1, (n_heads, d // n_heads)).transpose(1, 2)

    q, k, v = heads(x_q @ W_q.T), heads(x_kv @ W_k.T), heads(x_kv @ W_v.T)
    weights = torch.softmax(q @ k.transpose(-2, -1) / scale, dim=-1)
    merged = (weights @ v).transpose(1, 2).flatten(-2)
    return merged @ W_o.T if output else merged


@exercise_check(
    MultiHeadAttention.forward,
    MultiHeadAttention.split_heads,
    MultiHeadAttention.merge_heads,
)
def check_multi_head_attention(
    multi_head_attention: Callable, seed: int | None = 0
) -> None:
    """Check ``multi_head_attention(x_q (B, Tq, d), x_kv (B, Tk, d), W_q, W_k, W_v,
    W_o, n_heads) -> (B, Tq, d)``.

    Every ``W`` is ``(d, d)`` and acts as ``x @ W.T``; head ``h`` uses features
    ``h*d_head .. (h+1)*d_head`` of the projections (``d_head = d / n_heads``),
    scores with the scaled dot product ``q . k / sqrt(d_head)``; the heads' contexts
    are concatenated and multiplied by ``W_o``. The result must carry the gradient.
    """
    name = "multi_head_attention"
    gen = generator(seed)
    cases = [(2, 3, 4, 8, 1), (2, 5, 5, 8, 2), (3, 4, 6, 12, 3), (1, 2, 7, 16, 4)]
    for batch, tq, tk, d, n_heads in cases:
        x_q, x_kv = (
            torch.randn(batch, tq, d, generator=gen),
            torch.randn(batch, tk, d, generator=gen),
        )
        W_q, W_k, W_v, W_o = (
            (torch.randn(d, d, generator=gen) / d**0.5).requires_grad_()
            for _ in range(4)
        )
        args = (x_q, x_kv, W_q, W_k, W_v, W_o, n_heads)
        what = (
            f"for x_q {tuple(x_q.shape)}, x_kv {tuple(x_kv.shape)} and n_heads ="
            f" {n_heads}"
        )
        result = call(multi_head_attention, name, *args)
        if (
            isinstance(result, tuple | list)
            and len(result) == 2
            and isinstance(result[0], torch.Tensor)
        ):
            raise ExerciseError(
                f"{name} returned a pair {what}: return only the output (B, Tq, d),"
                " not the weights"
            )
        out = expect_tensor(name, result, (batch, tq, d))
        d_head = d // n_heads
        expected = _reference_multi_head(*args)
        if n_heads > 1 and _mistake(
            out, _variant(*args, scale=d_head**0.5, split="view"), expected
        ):
            raise ExerciseError(
                f"{name} splits the heads wrongly {what}: reshaping (B, T, d)"
                " straight to (B, n_heads, T, d_head) mixes positions; reshape to"
                " (B, T, n_heads, d_head) and then swap the T and head dimensions"
            )
        if _mistake(out, _variant(*args, scale=1.0), expected):
            raise ExerciseError(
                f"{name} does not scale the scores {what}: divide q . k by"
                " sqrt(d_head)"
            )
        if n_heads > 1 and _mistake(out, _variant(*args, scale=d**0.5), expected):
            raise ExerciseError(
                f"{name} divides by sqrt(d) {what}: each head's dot product has"
                " d_head = d / n_heads terms, so divide by sqrt(d_head)"
            )
        if _mistake(out, _variant(*args, scale=d_head**0.5, output=False), expected):
            raise ExerciseError(
                f"{name} leaves out the output projection {what}: multiply the"
                " merged heads by W_o"
            )
        expect_close(name, out, expected, what)
        if not (isinstance(result, torch.Tensor) and result.requires_grad):
            raise ExerciseError(
                f"{name}'s output carries no gradient back to the weights {what}: do"
                " not compute it under torch.no_grad(), with .detach() or through"
                " NumPy"
            )
    passed(name, len(cases))


# The learned scale: simple attention, every score times one learned number.


def _scaled_reference(
    query: torch.Tensor, memory: torch.Tensor, mask: torch.Tensor, beta: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """``softmax(beta * Y_e^T y_d)`` over the real words and its context: a loop over
    the batch, apart from the library's ``attend``."""
    contexts, weights = [], []
    for b in range(query.shape[0]):
        scores = beta * (memory[b] @ query[b])  # (S,)
        a = torch.zeros_like(scores)
        a[mask[b]] = torch.softmax(scores[mask[b]], -1)
        weights.append(a)
        contexts.append(a @ memory[b])
    return torch.stack(contexts), torch.stack(weights)


@exercise_check()
def check_scaled_simple_decoder(decoder_class: Any, seed: int | None = 0) -> None:
    """Check ``decoder_class``: a subclass of :class:`SimpleAttentionDecoder` built
    with the same arguments, with exactly one more parameter, one learned number
    ``beta`` that starts at 1, whose ``attention(y_d, state)`` returns the simple
    attention of ``y_d (B, d)`` with every score ``y_e(i) . y_d`` multiplied by
    ``beta``, and passes the gradient to ``beta``."""
    name = "ScaledSimpleDecoder"
    if not (
        isinstance(decoder_class, type) and issubclass(decoder_class, nn.Module)
    ):
        raise ExerciseError(
            f"pass the class {name} itself, not {describe(decoder_class)}"
        )
    if not issubclass(decoder_class, SimpleAttentionDecoder):
        raise ExerciseError(
            f"{name} must derive from SimpleAttentionDecoder (class"
            f" {name}(SimpleAttentionDecoder): ...), so that it keeps its decoder"
            " loop"
        )
    gen = generator(seed)
    vocab, embed, hidden = 11, 6, 8
    ids = {"pad_id": 0, "bos_id": 1, "eos_id": 2}
    torch.manual_seed(0 if seed is None else seed)
    decoder = call(decoder_class, name, vocab, embed, hidden, cell="gru", **ids)
    base = {
        n
        for n, _ in SimpleAttentionDecoder(
            vocab, embed, hidden, **ids
        ).named_parameters()
    }
    extra = [(n, p) for n, p in decoder.named_parameters() if n not in base]
    if not extra:
        raise ExerciseError(
            f"{name} has no parameter of its own: make beta an nn.Parameter, so"
            " that training learns it"
        )
    if len(extra) > 1 or extra[0][1].numel() != 1:
        raise ExerciseError(
            f"{name} adds {sum(p.numel() for _, p in extra)} numbers to"
            " SimpleAttentionDecoder's parameters: the exercise asks for one learned"
            " number that multiplies every score"
        )
    beta_name, beta = extra[0]
    if not torch.allclose(
        beta.detach().double().reshape(()), torch.ones((), dtype=torch.float64)
    ):
        raise ExerciseError(
            f"{name}'s {beta_name} starts at {beta.item():g}: start it at 1, so that"
            " the decoder starts as simple attention"
        )
    cases = [(2, 5, 2.5), (3, 4, 0.5), (1, 6, -1.0)]
    for batch, length, value in cases:
        memory = torch.randn(batch, length, hidden, generator=gen)
        mask = torch.ones(batch, length, dtype=torch.bool)
        mask[0, length - 2 :] = False  # two padded positions in the first sequence
        memory = memory * mask[..., None]
        encoded = Encoded(memory, memory[:, 0], mask)
        query = torch.randn(batch, hidden, generator=gen)
        with torch.no_grad():
            beta.fill_(value)
        what = (
            f"with {beta_name} = {value} and encoder states ({batch}, {length},"
            f" {hidden})"
        )
        state = call(decoder.decode_init, f"{name}.decode_init", encoded)
        result = call(decoder.attention, f"{name}.attention", query, state)
        context, weights = _pair(f"{name}.attention", result, "y_a", "a")
        answer = context  # as returned, with its graph
        weights = expect_tensor(
            f"{name}.attention's weights", weights, (batch, length)
        )
        context = expect_tensor(
            f"{name}.attention's context", context, (batch, hidden)
        )
        right_context, right_weights = _scaled_reference(query, memory, mask, value)
        _, plain_weights = _scaled_reference(query, memory, mask, 1.0)
        sums = weights.detach().double().sum(-1)
        if torch.allclose(sums, torch.full_like(sums, value)) and value != 1:
            raise ExerciseError(
                f"{name} multiplies the weights by {beta_name} {what}: they no"
                " longer sum to 1; multiply the scores, before the softmax"
            )
        if not torch.allclose(sums, torch.ones_like(sums), atol=1e-5):
            raise ExerciseError(
                f"{name}'s weights do not sum to 1 over the source words {what}"
            )
        if _mistake(weights, plain_weights, right_weights):
            raise ExerciseError(
                f"{name}'s weights do not change with {beta_name} {what}: multiply"
                " the scores by it, before the softmax"
            )
        if bool((weights.detach()[~mask].abs() > 1e-6).any()):
            raise ExerciseError(
                f"{name} gives weight to padded positions {what}: pass the mask of"
                " the state to the attention"
            )
        expect_close(f"{name}.attention's weights", weights, right_weights, what)
        expect_close(f"{name}.attention's context", context, right_context, what)
        beta.grad = None
        if isinstance(answer, torch.Tensor) and answer.requires_grad:
            answer.sum().backward()
        if (
            beta.grad is None
            or not torch.isfinite(beta.grad).all()
            or beta.grad.abs().item() == 0
        ):
            raise ExerciseError(
                f"no gradient reaches {beta_name} {what}: use the parameter itself"
                " in the scores (not .item(), a float copy or torch.no_grad())"
            )
    passed(name, len(cases))


# The experiment: the neighbour tagger with one head.


def _neighbour_hits(
    logits: torch.Tensor, src: torch.Tensor, src_mask: torch.Tensor
) -> torch.Tensor:
    """Correct guesses ``(number of real words, 2)`` of the previous and next word of
    every real word."""
    # (B, S, 2), 0 = none
    labels = torch.stack([F.pad(src[:, :-1], (1, 0)), F.pad(src[:, 1:], (0, 1))], -1)
    return (logits.argmax(-1) == labels)[src_mask]


def _attention_modules(model: nn.Module, kind: type) -> list[nn.Module]:
    return [module for module in model.modules() if isinstance(module, kind)]


@exercise_check()
def check_head_experiment(
    train_tagger: Callable, test_batch: Any, seed: int | None = 0
) -> None:
    """Check the experiment ``train_tagger(n_heads, steps) -> (model, accuracy)`` on
    the neighbour task.

    The check trains a tagger with one head for a budget of steps (scaled down in a
    quick run), then re-evaluates the returned model on ``test_batch``: the reported
    accuracy must be the share of correct guesses of the previous and the next word
    over the real words, and the model must have one head and the positional
    encoding.
    """
    name = "train_tagger"
    # nothing is drawn at random here: the student's function seeds its own training
    del seed
    steps = scaled(250, 3)
    model, accuracy = _pair(
        name, call(train_tagger, name, 1, steps), "model", "accuracy"
    )
    if not isinstance(model, nn.Module):
        raise ExerciseError(
            f"{name} must return the trained model (an nn.Module) first, got"
            f" {type(model).__name__}"
        )
    accuracy = expect_number(f"{name}'s accuracy", accuracy)
    layers = _attention_modules(model, MultiHeadAttention)
    if not layers:
        raise ExerciseError(
            "the returned model has no MultiHeadAttention layer: build it as the"
            " chapter's NeighbourTagger, with a SelfAttentionEncoder"
        )
    heads = sorted({layer.n_heads for layer in layers})
    if heads != [1]:
        raise ExerciseError(
            f"the returned model's attention has {heads} heads, not 1: build the"
            " encoder with the n_heads that train_tagger was given"
        )
    if not all(
        encoder.positions
        for encoder in _attention_modules(model, SelfAttentionEncoder)
    ):
        raise ExerciseError(
            "the returned model has no positional encoding: keep positions=True, so"
            " that the experiment changes the number of heads and nothing else"
        )
    if not 0 <= accuracy <= 1:
        raise ExerciseError(
            f"the accuracy {accuracy:.4g} is not a fraction between 0 and 1: report"
            " the share of correct guesses, not a percentage or a count"
        )
    src, src_mask = test_batch.src, test_batch.src_mask
    with torch.no_grad():
        logits = model(src, src_mask)
    if (
        not isinstance(logits, torch.Tensor)
        or logits.dim() != 4
        or tuple(logits.shape[:3]) != (*src.shape, 2)
    ):
        got = (
            tuple(logits.shape)
            if isinstance(logits, torch.Tensor)
            else type(logits).__name__
        )
        raise ExerciseError(
            "the returned model must give logits (B, S, 2, vocabulary) like the"
            f" NeighbourTagger, got {got}"
        )
    hits = _neighbour_hits(logits.float(), src, src_mask)
    measured = hits.float().mean().item()
    # padding counted as misses
    over_all_positions = hits.float().sum().item() / (2 * src.numel())
    if abs(accuracy - measured) > 1e-4:
        if abs(accuracy - over_all_positions) < 1e-4 and not src_mask.all():
            raise ExerciseError(
                "the accuracy counts the padding positions too: average over the"
                " real words only (src_mask True)"
            )
        if abs(accuracy - (1 - measured)) < 1e-4:
            raise ExerciseError(
                "the number returned is the error rate: report the accuracy, the"
                " share of correct guesses"
            )
        raise ExerciseError(
            f"the accuracy returned ({accuracy:.4f}) is not that of the returned"
            " model on the test sentences (it differs by"
            f" {abs(accuracy - measured):.3g}): evaluate the model you return, after"
            " training, on test_batch, over both neighbours of every real word"
        )
    print(
        f"one head, {steps} steps: neighbour accuracy {measured:.3f} over"
        f" {hits.numel()} guesses"
    )
    passed(name, 5)
