"""Checks for the chapters "The Transformer" (the causal mask, the masks of the three
places of attention, a decoder layer to debug, the pre-norm vs post-norm experiment)
and "Positions and the cost of attention" (sinusoidal and learned positions, ALiBi's
bias)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from attnlab import alibi, transformer
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
from attnlab.runmode import scaled


def _randint(gen: torch.Generator, low: int, high: int) -> int:
    """An integer in ``low .. high`` (inclusive) drawn from ``gen``."""
    return int(torch.randint(low, high + 1, (), generator=gen))


@exercise_check(transformer.causal_mask)
def check_causal_mask(causal_mask: Callable, seed: int | None = 0) -> None:
    """Check ``causal_mask(size) -> (size, size)`` boolean, ``True`` where position
    ``i`` may attend to ``j <= i``."""
    name = "causal_mask"
    gen = generator(seed)
    sizes = [4, _randint(gen, 5, 12), 1]
    for size in sizes:
        out = call(causal_mask, name, size)
        if isinstance(out, torch.Tensor) and out.dtype != torch.bool:
            raise ExerciseError(
                f"{name}({size}) returned dtype {out.dtype}: the mask must be"
                " boolean (True = may attend), e.g. built with dtype=torch.bool or"
                " by a comparison"
            )
        mask = expect_tensor(name, out, (size, size)).bool()
        lower = torch.ones(size, size, dtype=torch.bool).tril()
        if size > 1 and torch.equal(mask, ~lower):
            raise ExerciseError(
                "True and False are swapped: in this course True marks where a"
                " position MAY attend (itself and the past), False what is hidden"
            )
        if size > 1 and torch.equal(mask, lower.T):
            raise ExerciseError(
                "your mask lets position i see the positions after it (the upper"
                " triangle): a decoder position may only see itself and the"
                " positions before it"
            )
        if torch.equal(mask, lower.tril(-1)):
            raise ExerciseError(
                "the diagonal is False: a position may attend to itself (j <= i, not"
                " j < i); otherwise the first position has nothing to attend to"
            )
        if torch.equal(mask, ~lower.tril(-1)) and size > 1:
            raise ExerciseError(
                "your mask is the inverse of the right one: True marks the positions"
                " that may be attended (j <= i), and the future is False"
            )
        if not torch.equal(mask, lower):
            wrong = int((mask != lower).sum())
            raise ExerciseError(
                f"{name}({size}) is wrong in {wrong} of its {size * size} entries:"
                " entry (i, j) is True exactly when j <= i"
            )
    passed(name, len(sizes))


def _positions(
    length: int,
    d_model: int,
    *,
    base: float = 10_000.0,
    swap: bool = False,
    per_dim: bool = False,
    halves: bool = False,
    start: int = 0,
) -> torch.Tensor:
    """The sinusoidal table and its typical mistakes, for the messages of
    :func:`check_sinusoidal_positions`."""
    t = torch.arange(start, start + length, dtype=torch.float64)[:, None]
    pair = torch.arange(0, d_model, 2 if not per_dim else 1, dtype=torch.float64)
    angles = t * base ** (-pair / d_model)
    if per_dim:  # every dimension its own frequency base^(-j/d)
        out = angles.clone()
        out[:, 0::2], out[:, 1::2] = angles[:, 0::2].sin(), angles[:, 1::2].cos()
        return out
    first, second = (
        (angles.cos(), angles.sin()) if swap else (angles.sin(), angles.cos())
    )
    if halves:
        return torch.cat([first, second], dim=-1)
    return torch.stack([first, second], dim=-1).flatten(-2)


@exercise_check(transformer.sinusoidal_positions)
def check_sinusoidal_positions(
    sinusoidal_positions: Callable, add_positions: Callable, seed: int | None = 0
) -> None:
    """Check ``sinusoidal_positions(length, d_model) -> (length, d_model)`` for even
    ``d_model``, and ``add_positions(x (B, T, d_model)) -> x + P[:T]`` (a new tensor;
    ``x`` unchanged).
    """
    name = "sinusoidal_positions"
    gen = generator(seed)
    cases = [(3, 4), (_randint(gen, 6, 30), 2 * _randint(gen, 3, 16))]
    for length, d_model in cases:
        out = expect_tensor(
            name,
            call(sinusoidal_positions, name, length, d_model),
            (length, d_model),
            torch.float64,
        )
        what = f"for length = {length}, d_model = {d_model}"
        mistakes = [
            (
                _positions(length, d_model, swap=True),
                (
                    "sine and cosine are swapped: the even dimensions 2i hold the"
                    " sine, the odd dimensions 2i + 1 the cosine (position 0 is then"
                    " (0, 1, 0, 1, ...))"
                ),
            ),
            (
                _positions(length, d_model, per_dim=True),
                (
                    "the frequency exponent is wrong: dimensions 2i and 2i + 1 share"
                    " one frequency 10000^(-2i / d_model); you gave every dimension"
                    " j its own 10000^(-j / d_model)"
                ),
            ),
            (
                _positions(length, d_model, halves=True),
                (
                    "the sines and cosines are in two halves; they must alternate:"
                    " sine in dimension 2i, cosine of the same angle in dimension"
                    " 2i + 1"
                ),
            ),
            (
                _positions(length, d_model, start=1),
                "the positions start at 1; they start at t = 0",
            ),
            (
                _positions(length, d_model, base=1 / 10_000.0),
                (
                    "the frequencies grow with i; they must fall: divide "
                    "the position by 10000^(2i / d_model)"
                ),
            ),
        ]
        for wrong, message in mistakes:
            if torch.allclose(out, wrong, atol=1e-5):
                raise ExerciseError(message)
        expect_close(name, out, _positions(length, d_model), what)
    x = torch.randn(2, cases[1][0], cases[1][1], generator=gen)
    added = expect_tensor(
        "add_positions", call(add_positions, "add_positions", x), tuple(x.shape)
    )
    if torch.allclose(added, x + _positions(*x.shape[1:]).flip(0).to(x), atol=1e-5):
        raise ExerciseError(
            "add_positions adds the table upside down: position t of x gets row t of"
            " the table"
        )
    expect_close(
        "add_positions",
        added,
        x + _positions(*x.shape[1:]).to(x),
        f"for embeddings x of shape {tuple(x.shape)}: every position t gets row t of"
        " the table added",
    )
    passed(name, len(cases) + 1)


@exercise_check(transformer.LearnedPositions)
def check_learned_positions(LearnedPositions: type, seed: int | None = 0) -> None:
    """Check a module ``LearnedPositions(max_len, d_model)`` whose
    ``forward(length)`` returns ``(length, d_model)``."""
    name = "LearnedPositions"
    gen = generator(seed)
    max_len, d_model = _randint(gen, 8, 20), 2 * _randint(gen, 2, 6)
    torch.manual_seed(int(torch.randint(0, 2**31 - 1, (), generator=gen)))
    module = call(LearnedPositions, name, max_len, d_model)
    if not isinstance(module, nn.Module):
        raise ExerciseError(
            f"{name}(max_len, d_model) must build an nn.Module (subclass nn.Module"
            f" and call super().__init__()), got {type(module).__name__}"
        )
    count = sum(p.numel() for p in module.parameters())
    if count != max_len * d_model:
        raise ExerciseError(
            f"{name}({max_len}, {d_model}) has {count} trainable numbers; it needs"
            " one vector of d_model numbers per position, registered as an"
            " nn.Parameter (or an nn.Embedding)"
        )
    length = _randint(gen, 2, max_len - 1)
    out = call(module, f"{name}.forward", length)
    table = expect_tensor(f"{name}.forward({length})", out, (length, d_model))
    if not out.requires_grad:
        raise ExerciseError(
            f"{name}.forward returns a tensor without gradient: return the"
            " parameter's rows, not a copy made with torch.no_grad(), .detach() or"
            " .data, or the positions cannot be learned"
        )
    full = expect_tensor(
        f"{name}.forward({max_len})",
        call(module, f"{name}.forward", max_len),
        (max_len, d_model),
    )
    expect_close(
        f"{name}.forward",
        table,
        full[:length],
        f"for positions 0..{length - 1}: forward({length}) must be the first"
        f" {length} rows of forward({max_len}), the same vector for the same"
        " position",
    )
    if torch.cdist(full, full).add(torch.eye(max_len) * 1e3).min() < 1e-6:
        raise ExerciseError(
            "two positions start with the same vector: initialise the table at"
            " random (e.g. 0.1 * torch.randn) so that the model can tell the"
            " positions apart from the start"
        )
    module.zero_grad(set_to_none=True)
    call(module, f"{name}.forward", length).sum().backward()
    grads = [p.grad for p in module.parameters() if p.grad is not None]
    touched = sum(int((g != 0).sum()) for g in grads)
    if touched != length * d_model:
        raise ExerciseError(
            f"forward({length}) sent a gradient to {touched} numbers; it should"
            f" reach exactly the {length} x {d_model} numbers of the positions it"
            " returned"
        )
    try:
        module(max_len + 1)
    except ValueError:
        pass
    except Exception as exc:
        raise ExerciseError(
            f"{name}.forward({max_len + 1}) raised {type(exc).__name__}; raise a"
            " ValueError that names max_len: there is no learned vector for that"
            " position"
        ) from None
    else:
        raise ExerciseError(
            f"{name}.forward({max_len + 1}) with max_len = {max_len} did not raise:"
            " there is no learned vector for that position, raise a ValueError"
        )
    passed(name, 5)


def _norm_orders(model: nn.Module) -> set[bool]:
    return {
        m.norm_first
        for m in model.modules()
        if isinstance(m, transformer.EncoderLayer | transformer.DecoderLayer)
    }


@exercise_check()
def check_norm_experiment(
    norm_experiment: Callable, steps: int | None = None, seed: int | None = 0
) -> None:
    """Check ``norm_experiment(steps) -> {"post": (model, accuracy), "pre": (model,
    accuracy)}``.

    Each accuracy must be the model's teacher-forced word accuracy on the held-out
    batch of the exercise; the check measures it again, and also on a fresh batch,
    and prints both models side by side.
    """
    from attnlab.experiments.transformer_translation import norm_held_out
    from attnlab.tasks.translation import teacher_forced_accuracy

    name = "norm_experiment"
    steps = scaled(100, 2) if steps is None else steps
    gen = generator(seed)
    out = call(norm_experiment, name, steps)
    if not isinstance(out, dict) or set(out) != {"post", "pre"}:
        got = sorted(out) if isinstance(out, dict) else type(out).__name__
        raise ExerciseError(
            f"{name} must return a dict with the keys 'post' and 'pre', got {got}"
        )
    held_out = norm_held_out()
    fresh = norm_held_out(int(torch.randint(0, 10**6, (), generator=gen)))
    measured = {}
    for key, norm_first in [("post", False), ("pre", True)]:
        if not isinstance(out[key], tuple | list) or len(out[key]) != 2:
            raise ExerciseError(
                f"out[{key!r}] must be a pair (model, accuracy), got"
                f" {type(out[key]).__name__}"
            )
        model, reported = out[key]
        if not isinstance(model, transformer.Transformer):
            raise ExerciseError(
                f"the {key!r} model must be an attnlab Transformer, got"
                f" {type(model).__name__}"
            )
        orders = _norm_orders(model)
        if orders != {norm_first}:
            raise ExerciseError(
                f"the {key!r} model is built with norm_first = {sorted(orders)};"
                f" '{key}' needs norm_first = {norm_first} in every layer"
            )
        reported = expect_number(f"the accuracy of {key!r}", reported)
        was_training = model.training
        model.eval()
        with torch.no_grad():
            again, other = (
                teacher_forced_accuracy(model, held_out),
                teacher_forced_accuracy(model, fresh),
            )
        model.train(was_training)
        if abs(again - reported) > 1e-6:
            raise ExerciseError(
                f"the accuracy you report for {key!r} is not the model's"
                " teacher-forced word accuracy on the held-out batch of the"
                " exercise (sample_examples(256, 5, 20, seed=2024)); measure it"
                " with teacher_forced_accuracy after training"
            )
        measured[key] = (again, other)
    post, pre = out["post"][0], out["pre"][0]
    if post is pre or all(
        torch.equal(a, b)
        for a, b in zip(
            post.state_dict().values(), pre.state_dict().values(), strict=False
        )
    ):
        raise ExerciseError(
            "the 'post' and 'pre' entries hold the same model: build and train two"
            " models"
        )
    for key, (again, other) in measured.items():
        print(
            f"{key}-norm: held-out accuracy {again:.3f}, on a fresh batch"
            f" {other:.3f}"
        )
    passed(name, 4)


def _alibi_reference(
    n_heads: int, length: int, causal: bool, **mistake
) -> torch.Tensor:
    """The ``(n_heads, length, length)`` ALiBi bias and its typical mistakes, in
    float64, for the messages of :func:`check_alibi_bias`."""
    h = torch.arange(1, n_heads + 1, dtype=torch.float64)
    if mistake.get("from_zero"):
        h = h - 1
    slopes = 2.0 ** (-8.0 * h / n_heads)
    if mistake.get("halving"):
        slopes = 2.0**-h
    if mistake.get("one_slope"):
        slopes = torch.full_like(slopes, slopes[0].item())
    if mistake.get("reversed"):
        slopes = slopes.flip(0)
    i = torch.arange(length, dtype=torch.float64)
    distance = i[:, None] - i[None, :]  # query i minus key j
    size = distance if mistake.get("no_abs") else distance.abs()
    bias = -slopes[:, None, None] * size
    if mistake.get("sign"):
        bias = -bias
    if causal:
        hidden = distance > 0 if mistake.get("past_hidden") else distance < 0
        bias = bias.masked_fill(hidden, -torch.inf)
    return bias


@exercise_check(alibi.alibi_bias, alibi.alibi_slopes)
def check_alibi_bias(alibi_bias: Callable, seed: int | None = 0) -> None:
    """Check ``alibi_bias(n_heads, length, causal) -> (n_heads, length, length)``:
    ``-m_h |i - j|`` with ``m_h = 2^{-8 h / n_heads}``, and ``-inf`` (or any value
    below -10^4) after the query when ``causal``."""
    name = "alibi_bias"
    gen = generator(seed)
    cases = [
        (2, 5, False),
        (4, _randint(gen, 5, 9), True),
        (8, 6, False),
        (1, 3, True),
    ]
    mistakes = [
        (
            "sign",
            "your bias is positive: it must be subtracted, -m_h |i - j|, so that"
            " distant keys score LOWER (a penalty that grows with the distance)",
        ),
        (
            "no_abs",
            "keys after the query get a positive bias: use the distance"
            " |i - j|, so that a key is penalised the same on either side",
        ),
        (
            "past_hidden",
            "your causal bias hides the past and shows the future: the"
            " keys AFTER the query (j > i) get -inf, those before keep -m_h (i - j)",
        ),
        (
            "one_slope",
            "every head has the same slope: head h (from 1) has its own"
            " slope m_h = 2^(-8 h / n_heads), a geometric sequence",
        ),
        (
            "reversed",
            "the slopes are in reverse order: head 1 has the LARGEST slope,"
            " 2^(-8 / n_heads), and the last head the smallest, 2^(-8) = 1/256",
        ),
        (
            "from_zero",
            "the heads are counted from 0: with h = 1 .. n_heads the first"
            " slope is 2^(-8 / n_heads), not 1",
        ),
        (
            "halving",
            "the slopes halve from head to head whatever the number of heads:"
            " the ratio is 2^(-8 / n_heads), so that the last head's slope is always"
            " 2^(-8)",
        ),
    ]
    for n_heads, length, causal in cases:
        what = f"for n_heads = {n_heads}, length = {length}, causal = {causal}"
        out = call(alibi_bias, name, n_heads, length, causal)
        if not isinstance(out, torch.Tensor | np.ndarray):
            raise ExerciseError(
                f"{name} must return a torch.Tensor, got {type(out).__name__}"
            )
        bias = as_tensor(name, out, torch.float64)
        if tuple(bias.shape) != (n_heads, length, length):
            raise ExerciseError(
                f"{name} returned shape {tuple(bias.shape)} {what}, expected"
                f" (n_heads, length, length) = {(n_heads, length, length)}"
            )
        if bias.isnan().any():
            raise ExerciseError(f"{name} returned NaN {what}")
        future = torch.ones(length, length, dtype=torch.bool).triu(1)
        if causal and (bias[:, future] > -1e4).any():
            shown = _alibi_reference(n_heads, length, causal, past_hidden=True)
            if torch.equal(bias.isinf(), shown.isinf()):
                raise ExerciseError(mistakes[2][1])
            raise ExerciseError(
                f"{name} lets a query see the keys after it {what}: with causal ="
                " True those entries (j > i) must be -inf"
            )
        seen = ~future if causal else torch.ones_like(future)
        if not torch.isfinite(bias[:, seen]).all():
            raise ExerciseError(
                f"{name} returned infinite values at keys a query may see {what}:"
                " only the keys after the query (causal) are -inf"
            )
        expected = _alibi_reference(n_heads, length, causal)
        if torch.allclose(bias[:, seen], expected[:, seen], atol=1e-5, rtol=1e-4):
            continue
        for mistake, message in mistakes:
            wrong = _alibi_reference(n_heads, length, causal, **{mistake: True})
            if torch.allclose(bias[:, seen], wrong[:, seen], atol=1e-5, rtol=1e-4):
                raise ExerciseError(message)
        error = (bias[:, seen] - expected[:, seen]).abs().max().item()
        raise ExerciseError(
            f"{name} is wrong {what}: largest difference from the reference is"
            f" {error:.3g}; entry (h, i, j) is -m_h |i - j| with m_h = 2^(-8 h /"
            " n_heads), h = 1 .. n_heads"
        )
    passed(name, len(cases))


def _boolean(name: str, out: Any, shape: tuple[int, ...], what: str) -> torch.Tensor:
    """A boolean mask of ``shape`` (a torch or NumPy bool array), for the messages of
    :func:`check_attention_masks`."""
    if not isinstance(out, torch.Tensor | np.ndarray):
        raise ExerciseError(
            f"the {what} mask must be a torch.Tensor, got {type(out).__name__}"
        )
    mask = torch.as_tensor(out)
    if mask.dtype != torch.bool:
        raise ExerciseError(
            f"the {what} mask has dtype {mask.dtype}: masks are boolean (True = may"
            " attend), e.g. made by a comparison"
        )
    if tuple(mask.shape) != shape:
        raise ExerciseError(
            f"the {what} mask ({name}) has shape {tuple(mask.shape)}, expected"
            f" {shape}: one row per query, one column per key"
        )
    return mask


@exercise_check(transformer.attention_masks)
def check_attention_masks(attention_masks: Callable, seed: int | None = 0) -> None:
    """Check ``attention_masks(src_mask (B, S), tgt_len) -> (encoder (B, S, S),
    decoder (B, T, T), cross (B, T, S))``, boolean, ``True`` where query ``i`` may
    attend to key ``j``."""
    name = "attention_masks"
    gen = generator(seed)
    cases = []
    for batch, length, tgt_len in [
        (3, 7, 5),
        (2, _randint(gen, 4, 9), _randint(gen, 2, 12)),
        (1, 3, 1),
    ]:
        lengths = torch.randint(1, length + 1, (batch,), generator=gen)
        lengths[0] = length  # one sentence without padding
        if batch > 1:
            lengths[1] = max(1, length - 2)  # and one with
        cases.append(((torch.arange(length) < lengths[:, None]), tgt_len))
    for src_mask, tgt_len in cases:
        batch, length = src_mask.shape
        what = f"for src_mask of shape {tuple(src_mask.shape)}, tgt_len = {tgt_len}"
        out = call(attention_masks, name, src_mask, tgt_len)
        if not isinstance(out, tuple | list) or len(out) != 3:
            raise ExerciseError(
                f"{name} must return three masks (encoder, decoder, cross), got"
                f" {type(out).__name__}"
            )
        shapes = {
            "encoder": (batch, length, length),
            "decoder": (batch, tgt_len, tgt_len),
            "cross": (batch, tgt_len, length),
        }
        if tuple(getattr(out[2], "shape", ())) in {
            (batch, length, tgt_len),
            (batch, tgt_len, tgt_len),
        } and (length != tgt_len):
            raise ExerciseError(
                "the cross-attention mask has the wrong shape: its queries are the"
                " target positions (rows, T) and its keys the source words"
                " (columns, S), so it is (B, T, S)"
            )
        encoder, decoder, cross = (
            _boolean(name, mask, shapes[place], place)
            for mask, place in zip(out, shapes, strict=True)
        )
        keys = src_mask[:, None, :]
        causal = torch.ones(tgt_len, tgt_len, dtype=torch.bool).tril()
        if not torch.equal(encoder, keys.expand_as(encoder)):
            if torch.equal(encoder, keys & src_mask[:, :, None]):
                raise ExerciseError(
                    "your encoder mask also hides the padding positions' rows: a"
                    " padding query then has no key at all. Mask the keys (columns)"
                    " only; the padding rows are ignored later"
                )
            if torch.equal(encoder, src_mask[:, :, None].expand_as(encoder)):
                raise ExerciseError(
                    "your encoder mask hides padding rows (queries) instead of"
                    " padding columns (keys): entry (b, i, j) depends on whether"
                    " key j is a real word"
                )
            if bool(encoder.all()):
                raise ExerciseError(
                    "your encoder mask lets every source word read the padding:"
                    " the keys at padding positions must be False"
                )
            raise ExerciseError(
                f"the encoder mask is wrong {what}: entry (b, i, j) is True exactly"
                " when source word j of sentence b is a real word"
            )
        if not torch.equal(decoder, causal.expand_as(decoder)):
            if torch.equal(decoder, causal.T.expand_as(decoder)):
                raise ExerciseError(
                    "your decoder mask is the transposed causal mask: position i"
                    " would read the positions after it. Query i may read key j"
                    " when j <= i (the lower triangle)"
                )
            if bool(decoder.all()):
                raise ExerciseError(
                    "your decoder mask lets every target position read the future:"
                    " the masked self-attention needs the causal mask, j <= i"
                )
            raise ExerciseError(
                f"the decoder mask is wrong {what}: entry (b, i, j) is True exactly"
                " when j <= i, for every sentence"
            )
        if not torch.equal(cross, keys.expand_as(cross)):
            if bool(cross.all()):
                raise ExerciseError(
                    "your cross-attention mask lets target positions read the"
                    " source's padding: its keys are the source words, so it takes"
                    " the source's padding mask"
                )
            if length == tgt_len and torch.equal(
                cross, (keys & causal).expand_as(cross)
            ):
                raise ExerciseError(
                    "your cross-attention mask is causal: a target position may read"
                    " every real source word, the whole source is known"
                )
            raise ExerciseError(
                f"the cross-attention mask is wrong {what}: entry (b, i, j) is True"
                " exactly when source word j of sentence b is a real word"
            )
    passed(name, len(cases))


def _decoder_reference(
    layer: transformer.DecoderLayer,
    x: torch.Tensor,
    memory: torch.Tensor,
    memory_mask: torch.Tensor,
    **mistake: bool,
) -> torch.Tensor:
    """A post-norm decoder layer's output and its typical mistakes, for the messages
    of :func:`check_decoder_layer`."""
    causal = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril()
    if mistake.get("future"):
        causal = causal.T
    if mistake.get("no_causal"):
        causal = None
    keep = {k: not mistake.get(f"no_{k}_residual") for k in ("self", "cross", "ffn")}
    with torch.no_grad():
        mixed, _ = layer.self_attention(x, x, x, attn_mask=causal)
        x = layer.norm1(x * keep["self"] + mixed)
        padding = None if mistake.get("no_padding") else memory_mask
        read, _ = layer.cross_attention(x, memory, memory, key_padding_mask=padding)
        x = layer.norm2(x * keep["cross"] + read)
        return layer.norm3(x * keep["ffn"] + layer.feed_forward(x))


@exercise_check(transformer.DecoderLayer.forward, transformer.DecoderLayer.sublayers)
def check_decoder_layer(decoder_layer: Callable, seed: int | None = 0) -> None:
    """Check ``decoder_layer(layer, x (B, T, d), memory (B, S, d), memory_mask (B,
    S)) -> (B, T, d)``: the post-norm decoder layer of a
    :class:`~attnlab.transformer.DecoderLayer`'s modules, causal self-attention,
    cross-attention to the real source words, feed-forward, each with its
    residual."""
    name = "decoder_layer"
    gen = generator(seed)
    mistakes = [
        (
            "future",
            "position i reads the positions after it: the self-attention's mask is"
            " the transposed causal mask (the upper triangle). Query i may read key"
            " j when j <= i",
        ),
        (
            "no_causal",
            "the self-attention has no mask: every target position reads the words"
            " after it, which teacher forcing gives it. Pass the causal mask",
        ),
        (
            "no_cross_residual",
            "the cross-attention's output replaces x instead of being added to it:"
            " every sub-layer adds its output to its input before the layer norm",
        ),
        (
            "no_self_residual",
            "the self-attention's output replaces x instead of being added to it:"
            " every sub-layer adds its output to its input before the layer norm",
        ),
        (
            "no_ffn_residual",
            "the feed-forward network's output replaces x instead of being added"
            " to it: every sub-layer adds its output to its input before the layer"
            " norm",
        ),
        (
            "no_padding",
            "the cross-attention reads the source's padding: pass memory_mask as"
            " its key padding mask",
        ),
    ]
    cases = [(torch.float32, 5, 7), (torch.float64, _randint(gen, 2, 9), 6)]
    for dtype, tgt_len, src_len in cases:
        d_model, heads = 8, 2
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (), generator=gen)))
        layer = transformer.DecoderLayer(d_model, heads, 16).to(dtype).eval()
        x = torch.randn(2, tgt_len, d_model, generator=gen, dtype=dtype)
        memory = torch.randn(2, src_len, d_model, generator=gen, dtype=dtype)
        memory_mask = (
            torch.arange(src_len) < torch.tensor([src_len, src_len - 2])[:, None]
        )
        what = (
            f"for x of shape {tuple(x.shape)} and memory of shape"
            f" {tuple(memory.shape)} in {dtype}"
        )
        with torch.no_grad():
            out = call(decoder_layer, name, layer, x, memory, memory_mask)
        if isinstance(out, tuple | list):
            raise ExerciseError(
                f"{name} must return the layer's output x (B, T, d_model) alone, got"
                f" a {type(out).__name__}"
            )
        got = expect_tensor(name, out, tuple(x.shape), torch.float64)
        expected = _decoder_reference(layer, x, memory, memory_mask).double()
        if torch.allclose(got, expected, atol=1e-5, rtol=1e-4):
            continue
        for mistake, message in mistakes:
            wrong = _decoder_reference(
                layer, x, memory, memory_mask, **{mistake: True}
            )
            if torch.allclose(got, wrong.double(), atol=1e-5, rtol=1e-4):
                raise ExerciseError(message)
        if torch.allclose(got[:, 0], expected[:, 0], atol=1e-5, rtol=1e-4):
            raise ExerciseError(
                f"{name} is right at the first position but not after it {what}:"
                " look at the self-attention's mask and residual"
            )
        raise ExerciseError(
            f"{name} is wrong {what}: post-norm order, x <- norm1(x + self-attention"
            " under the causal mask), x <- norm2(x + cross-attention to the real"
            " source words), x <- norm3(x + feed-forward)"
        )
    passed(name, len(cases))
