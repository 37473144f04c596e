"""The Transformer (Vaswani et al., 2017) assembled from the course's pieces:
attention in three places.

* **encoder self-attention**: every source word attends to every source word
  (padding masked);
* **masked decoder self-attention**: every target position attends to itself and
  the positions before it (:func:`causal_mask`), so that teacher forcing can run all
  positions at once without looking ahead;
* **cross-attention**: every target position attends to the encoder's states, the
  parameterized attention of the previous chapter with the scaled dot product and
  several heads.

Each sub-layer is wrapped in a residual connection and a layer normalisation, either
after the residual sum ("post-norm", the original order: ``x <- norm(x + f(x))``) or
before the sub-layer ("pre-norm":
``x <- x + f(norm(x))``, with one more normalisation at the end of each stack). A
position-wise feed-forward network follows the attention in every layer. No dropout:
the toy task has unlimited fresh data.

:class:`Transformer` is a :class:`~attnlab.seq2seq.Seq2Seq`: ``model(src, src_mask,
targets)`` decodes with teacher forcing (all positions in one pass), ``model.greedy``
and ``model.beam_search`` decode word by word through ``decode_init`` /
``decode_step``, so the translation helpers of :mod:`attnlab.tasks.translation`
(training, :func:`~attnlab.tasks.translation.evaluate_translation`, attention maps)
work unchanged. Word-by-word decoding keeps a key/value cache: every decoder layer
stores the projected keys and values of the positions so far and adds one position
per step, and the cross-attention projects the encoder states once;
``model.greedy(..., cache=False)`` recomputes the whole prefix at every step
instead, for comparison. Masks follow the package convention: ``True`` = a real
position / may attend.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from attnlab._validate import check_ndim, check_positive, shape_of
from attnlab.alibi import alibi_bias, alibi_encoder_bias, alibi_slopes
from attnlab.attention import attend, causal_mask
from attnlab.selfattention import (
    MultiHeadAttention,
    biased_score,
    sinusoidal_positions,
)
from attnlab.seq2seq import (
    DecoderBase,
    DecodeResult,
    Encoded,
    Seq2Seq,
    State,
    check_source,
)

__all__ = [
    "DecoderLayer",
    "EncoderLayer",
    "LearnedPositions",
    "Transformer",
    "TransformerDecodeResult",
    "TransformerDecoder",
    "TransformerEncoder",
    "attend_projected",
    "attention_masks",
    "causal_mask",
    "project_keys_values",
    "sinusoidal_positions",
]


def _check_input(name: str, x: torch.Tensor, d_model: int, layout: str) -> None:
    check_ndim(name, x, layout, ndim=3)
    if x.shape[-1] != d_model:
        raise ValueError(
            f"{name} must have shape {layout} with d_model = {d_model}, got"
            f" {shape_of(x)}"
        )


def feed_forward(d_model: int, d_ff: int) -> nn.Sequential:
    """The position-wise feed-forward network ``W_2 relu(W_1 x + b_1) + b_2``
    (``d_ff`` hidden units)."""
    check_positive("d_ff", d_ff)
    return nn.Sequential(
        nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model)
    )


def project_keys_values(
    attention: MultiHeadAttention, x: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The keys and values that ``attention`` makes of ``x (B, T, d_model)``, split
    into heads: two ``(B, n_heads, T, d_head)``, ready to be cached."""
    return (
        attention.split_heads(attention.key_proj(x)),
        attention.split_heads(attention.value_proj(x)),
    )


def attend_projected(
    attention: MultiHeadAttention,
    query: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    key_padding_mask: torch.Tensor | None = None,
    attn_bias: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``attention(query, ., .)`` with keys and values projected beforehand (by
    :func:`project_keys_values`).

    ``query (B, Tq, d_model)``, ``keys`` and ``values (B, n_heads, Tk, d_head)``,
    ``key_padding_mask (B, Tk)`` (``True`` = real key), ``attn_bias (n_heads, Tq,
    Tk)`` added to the scores. Returns ``(output (B, Tq, d_model), weights (B,
    n_heads, Tq, Tk))``: the computation of
    :class:`~attnlab.selfattention.MultiHeadAttention` without projecting the keys.
    """
    batch, tq, tk = query.shape[0], query.shape[1], keys.shape[2]
    mask = attention.combined_mask(batch, tq, tk, key_padding_mask, None)
    q = attention.split_heads(attention.query_proj(query))  # (B, h, Tq, d_head)
    score = biased_score(attn_bias, attention.n_heads)
    context, weights = attend(q, keys, values, score=score, mask=mask)
    return attention.out_proj(attention.merge_heads(context)), weights


def _check_torch_layer(
    layer: nn.Module, kind: type, norm_first: bool, d_model: int, d_ff: int
) -> None:
    if not isinstance(layer, kind):
        raise TypeError(
            f"layer must be a torch.nn.{kind.__name__}, got {type(layer).__name__}"
        )
    if layer.norm_first != norm_first:
        raise ValueError(
            f"this layer has norm_first = {norm_first}, the torch layer"
            f" {layer.norm_first}"
        )
    activation = layer.activation
    if not (
        activation is torch.nn.functional.relu or isinstance(activation, nn.ReLU)
    ):
        raise ValueError(
            "only a torch layer with activation='relu' has the same computation"
        )
    if (layer.linear1.in_features, layer.linear1.out_features) != (d_model, d_ff):
        raise ValueError(
            f"sizes differ: this layer has d_model = {d_model}, d_ff = {d_ff}; the"
            f" torch layer has d_model = {layer.linear1.in_features},"
            f" dim_feedforward = {layer.linear1.out_features}"
        )


class EncoderLayer(nn.Module):
    """One encoder layer: multi-head self-attention, then the feed-forward network,
    each with a residual.

    Post-norm (``norm_first=False``): ``x <- norm1(x + MHA(x, x, x))``, ``x <-
    norm2(x + FFN(x))``. Pre-norm (``norm_first=True``): ``x <- x + MHA(n, n, n)``
    with ``n = norm1(x)``, ``x <- x + FFN(norm2(x))``.

    ``forward(x (B, T, d_model), key_padding_mask (B, T) = None, attn_mask (T, T) =
    None, attn_bias (n_heads, T, T) = None)`` returns ``(x (B, T, d_model), weights
    (B, n_heads, T, T))``; ``attn_bias`` is added to the scores (relative positions).
    """

    def __init__(
        self, d_model: int, n_heads: int, d_ff: int, *, norm_first: bool = False
    ) -> None:
        super().__init__()
        self.d_model, self.d_ff, self.norm_first = d_model, d_ff, norm_first
        self.self_attention = MultiHeadAttention(d_model, n_heads)
        self.feed_forward = feed_forward(d_model, d_ff)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    def forward(
        self,
        x: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
        attn_bias: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        _check_input("x", x, self.d_model, "(batch, T, d_model)")

        def attend(h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return self.self_attention(
                h,
                h,
                h,
                key_padding_mask=key_padding_mask,
                attn_mask=attn_mask,
                average_attn_weights=False,
                attn_bias=attn_bias,
            )

        if self.norm_first:
            mixed, weights = attend(self.norm1(x))
            x = x + mixed
            return x + self.feed_forward(self.norm2(x)), weights
        mixed, weights = attend(x)
        x = self.norm1(x + mixed)  # every position has looked at every other one
        # then each position is transformed on its own
        return (
            self.norm2(x + self.feed_forward(x)),
            weights,
        )

    @torch.no_grad()
    def load_torch_weights(self, layer: nn.TransformerEncoderLayer) -> EncoderLayer:
        """Copy a ``torch.nn.TransformerEncoderLayer`` (ReLU, same sizes and
        ``norm_first``); returns ``self``."""
        _check_torch_layer(
            layer,
            nn.TransformerEncoderLayer,
            self.norm_first,
            self.d_model,
            self.d_ff,
        )
        self.self_attention.load_torch_weights(layer.self_attn)
        for ours, theirs in [
            (self.norm1, layer.norm1),
            (self.norm2, layer.norm2),
            (self.feed_forward[0], layer.linear1),
            (self.feed_forward[2], layer.linear2),
        ]:
            ours.load_state_dict(theirs.state_dict())
        return self


class DecoderLayer(nn.Module):
    """One decoder layer: masked self-attention, cross-attention to the encoder,
    feed-forward; each with a residual.

    Post-norm: ``x <- norm1(x + MHA(x, x, x; causal))``, ``x <- norm2(x + MHA(x,
    memory, memory))``, ``x <- norm3(x + FFN(x))``. Pre-norm: the same sub-layers
    applied to ``norm_i(x)`` and added to ``x``.

    ``forward(x (B, T, d_model), memory (B, S, d_model), tgt_mask (T, T) = None,
    memory_key_padding_mask (B, S) = None, past=None)`` returns ``(x, self_weights
    (B, h, T, T'), cross_weights (B, h, T, S))``. ``tgt_mask`` is ``True`` where a
    target position may attend (pass :func:`causal_mask`). ``past (B, t, d_model)``
    may hold this layer's inputs at ``t`` earlier positions: the self-attention then
    uses ``[past; x]`` as keys and values (``T' = t + T``, ``tgt_mask`` ``(T, t +
    T)``), projecting all of them again. :meth:`step` decodes one position from a
    cache of projected keys and values instead (:meth:`init_cache`).
    ``self_attn_bias (n_heads, T, T')`` is added to the self-attention's scores.
    """

    def __init__(
        self, d_model: int, n_heads: int, d_ff: int, *, norm_first: bool = False
    ) -> None:
        super().__init__()
        self.d_model, self.d_ff, self.norm_first = d_model, d_ff, norm_first
        self.self_attention = MultiHeadAttention(d_model, n_heads)
        self.cross_attention = MultiHeadAttention(d_model, n_heads)
        self.feed_forward = feed_forward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = (
            nn.LayerNorm(d_model),
            nn.LayerNorm(d_model),
            nn.LayerNorm(d_model),
        )

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        tgt_mask: torch.Tensor | None = None,
        memory_key_padding_mask: torch.Tensor | None = None,
        past: torch.Tensor | None = None,
        self_attn_bias: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        _check_input("x", x, self.d_model, "(batch, T, d_model)")
        _check_input("memory", memory, self.d_model, "(batch, S, d_model)")
        if memory.shape[0] != x.shape[0]:
            raise ValueError(
                "memory must have shape (batch, S, d_model) with batch ="
                f" {x.shape[0]} like x {shape_of(x)}, got {shape_of(memory)}"
            )
        context = x
        if past is not None:
            _check_input("past", past, self.d_model, "(batch, t, d_model)")
            if past.shape[0] != x.shape[0]:
                raise ValueError(
                    "past must have shape (batch, t, d_model) with batch ="
                    f" {x.shape[0]}, got {shape_of(past)}"
                )
            context = torch.cat([past, x], dim=1)

        def self_attend(h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            # keys and values: the positions so far, normalised like h
            c = h
            if past is not None:
                c = self.norm1(context) if self.norm_first else context
            return self.self_attention(
                h,
                c,
                c,
                attn_mask=tgt_mask,
                average_attn_weights=False,
                attn_bias=self_attn_bias,
            )

        def cross_attend(h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return self.cross_attention(
                h,
                memory,
                memory,
                key_padding_mask=memory_key_padding_mask,
                average_attn_weights=False,
            )

        return self.sublayers(x, self_attend, cross_attend)

    def sublayers(
        self,
        x: torch.Tensor,
        self_attend: Callable[[torch.Tensor], tuple[torch.Tensor, Any]],
        cross_attend: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
    ) -> tuple[torch.Tensor, Any, torch.Tensor]:
        """The three sub-layers around ``x (B, T, d_model)``, each with its residual
        connection and layer norm in this layer's order: ``self_attend(h) -> (mixed,
        extra)``, ``cross_attend(h) -> (read, cross_weights)``, the feed-forward
        network. Returns ``(x, extra, cross_weights)``; :meth:`forward` and
        :meth:`step` differ only in how they attend."""
        if self.norm_first:
            mixed, extra = self_attend(self.norm1(x))
            x = x + mixed
            read, cross_weights = cross_attend(self.norm2(x))
            x = x + read
            return x + self.feed_forward(self.norm3(x)), extra, cross_weights
        mixed, extra = self_attend(x)
        x = self.norm1(x + mixed)  # what has been written so far
        read, cross_weights = cross_attend(x)
        x = self.norm2(x + read)  # what the source says
        return self.norm3(x + self.feed_forward(x)), extra, cross_weights

    def init_cache(self, memory: torch.Tensor) -> dict[str, torch.Tensor]:
        """The cache before the first position, for ``memory (B, S, d_model)``.

        ``memory_keys``, ``memory_values (B, n_heads, S, d_head)``: the
        cross-attention's keys and values, projected once; ``keys``, ``values (B,
        n_heads, 0, d_head)``: the self-attention's, one position more after every
        :meth:`step`.
        """
        _check_input("memory", memory, self.d_model, "(batch, S, d_model)")
        memory_keys, memory_values = project_keys_values(
            self.cross_attention, memory
        )
        empty = memory_keys[:, :, :0]
        return {
            "keys": empty,
            "values": empty,
            "memory_keys": memory_keys,
            "memory_values": memory_values,
        }

    def step(
        self,
        x: torch.Tensor,
        cache: dict[str, torch.Tensor],
        memory_key_padding_mask: torch.Tensor | None = None,
        self_attn_bias: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor]:
        """One new position ``x (B, 1, d_model)`` after the ``t`` positions of
        ``cache`` (from :meth:`init_cache`).

        Only the new position is projected: its key and value are appended to the
        cache, its query attends over the ``t + 1`` cached keys (no mask needed: they
        are all in the past) and over the cached memory keys. Returns ``(x (B, 1,
        d_model), cache with keys and values (B, n_heads, t + 1, d_head),
        cross_weights (B, n_heads, 1, S))``, what :meth:`forward` gives at position
        ``t`` under the causal mask. ``self_attn_bias (n_heads, 1, t + 1)`` is added
        to the self-attention's scores.
        """
        _check_input("x", x, self.d_model, "(batch, 1, d_model)")
        if x.shape[1] != 1 or x.shape[0] != cache["keys"].shape[0]:
            raise ValueError(
                "x must have shape (batch, 1, d_model) with batch ="
                f" {cache['keys'].shape[0]} like the cache, got {shape_of(x)}"
            )

        def self_attend(h: torch.Tensor) -> tuple[torch.Tensor, dict]:
            # the new position's key and value, (B, n_heads, 1, d_head) each
            key, value = project_keys_values(self.self_attention, h)
            keys = torch.cat([cache["keys"], key], dim=2)
            values = torch.cat([cache["values"], value], dim=2)
            mixed, _ = attend_projected(
                self.self_attention, h, keys, values, attn_bias=self_attn_bias
            )
            return mixed, {**cache, "keys": keys, "values": values}

        def cross_attend(h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return attend_projected(
                self.cross_attention,
                h,
                cache["memory_keys"],
                cache["memory_values"],
                memory_key_padding_mask,
            )

        return self.sublayers(x, self_attend, cross_attend)

    @torch.no_grad()
    def load_torch_weights(self, layer: nn.TransformerDecoderLayer) -> DecoderLayer:
        """Copy a ``torch.nn.TransformerDecoderLayer`` (ReLU, same sizes and
        ``norm_first``); returns ``self``."""
        _check_torch_layer(
            layer,
            nn.TransformerDecoderLayer,
            self.norm_first,
            self.d_model,
            self.d_ff,
        )
        self.self_attention.load_torch_weights(layer.self_attn)
        self.cross_attention.load_torch_weights(layer.multihead_attn)
        for ours, theirs in [
            (self.norm1, layer.norm1),
            (self.norm2, layer.norm2),
            (self.norm3, layer.norm3),
            (self.feed_forward[0], layer.linear1),
            (self.feed_forward[2], layer.linear2),
        ]:
            ours.load_state_dict(theirs.state_dict())
        return self


class LearnedPositions(nn.Module):
    """Learned positional embeddings: one trained vector per position, ``0`` to
    ``max_len - 1``.

    ``forward(length) -> (length, d_model)``, the first ``length`` rows of ``weight
    (max_len, d_model)`` (initialised with entries of standard deviation 0.1). A
    position at or beyond ``max_len`` has no vector and raises ``ValueError``: unlike
    sinusoids, learned positions cannot be evaluated at unseen positions.
    """

    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        check_positive("max_len", max_len)
        check_positive("d_model", d_model)
        self.max_len, self.d_model = max_len, d_model
        self.weight = nn.Parameter(0.1 * torch.randn(max_len, d_model))

    def forward(self, length: int) -> torch.Tensor:
        if not 0 <= length <= self.max_len:
            raise ValueError(
                f"length must be between 0 and max_len = {self.max_len}, got"
                f" {length}"
            )
        return self.weight[:length]


POSITIONS = ("sinusoidal", "learned", "alibi", "none")


class _Embedding(nn.Module):
    """Word embedding times ``sqrt(d_model)`` plus positions (sinusoidal, learned or
    none; ALiBi adds none here but biases the scores), from ``offset`` on."""

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        positions: str,
        max_len: int,
        pad_id: int,
    ) -> None:
        super().__init__()
        check_positive("vocab_size", vocab_size)
        check_positive("d_model", d_model)
        if positions not in POSITIONS:
            raise ValueError(
                f"positions must be one of {POSITIONS}, got {positions!r}"
            )
        self.d_model, self.positions = d_model, positions
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
        # entries of spread 1/sqrt(d_model): times sqrt(d_model), as large as the
        # positions
        with torch.no_grad():
            self.embedding.weight.normal_(0.0, d_model**-0.5)
            self.embedding.weight[pad_id] = 0.0
        self.learned = (
            LearnedPositions(max_len, d_model) if positions == "learned" else None
        )

    def forward(self, tokens: torch.Tensor, offset: int = 0) -> torch.Tensor:
        x = self.embedding(tokens) * math.sqrt(self.d_model)
        end = offset + tokens.shape[1]
        if self.learned is not None:
            x = x + self.learned(end)[offset:]
        elif self.positions == "sinusoidal":
            x = x + sinusoidal_positions(end, self.d_model)[offset:].to(x)
        return x


class TransformerEncoder(nn.Module):
    """Embedding (times ``sqrt(d_model)``) plus positions, then ``n_layers``
    :class:`EncoderLayer`.

    With ``positions="alibi"`` no position is added to the embeddings; in every
    self-attention half of the heads look back and half ahead, each subtracting
    ``m_h`` times the distance from its scores
    (:func:`~attnlab.alibi.alibi_encoder_bias`).

    ``forward(src (B, S), src_mask (B, S)) -> Encoded`` like the recurrent encoder:
    ``states (B, S, d_model)`` (zero at padding; after a final layer normalisation in
    the pre-norm order), ``final (B, d_model)`` the mean of the states over the real
    words, ``mask``. The self-attention weights of the last call are kept in
    ``last_weights``, one ``(B, n_heads, S, S)`` per layer.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        n_heads: int,
        *,
        n_layers: int = 1,
        d_ff: int | None = None,
        norm_first: bool = False,
        positions: str = "sinusoidal",
        max_len: int = 256,
        pad_id: int = 0,
    ) -> None:
        super().__init__()
        check_positive("n_layers", n_layers)
        self.d_model, self.output_size = d_model, d_model
        self.n_heads, self.positions = n_heads, positions
        if positions == "alibi":
            alibi_encoder_bias(n_heads, 1)  # an odd number of heads is an error
        self.embed = _Embedding(vocab_size, d_model, positions, max_len, pad_id)
        self.layers = nn.ModuleList(
            EncoderLayer(
                d_model, n_heads, d_ff or 4 * d_model, norm_first=norm_first
            )
            for _ in range(n_layers)
        )
        self.final_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.last_weights: list[torch.Tensor] = []

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor) -> Encoded:
        lengths = check_source(src, src_mask)
        x = self.embed(src)
        bias = None
        if self.positions == "alibi":  # half the heads look back, half ahead
            bias = alibi_encoder_bias(self.n_heads, x.shape[1])
        self.last_weights = []
        for layer in self.layers:
            x, weights = layer(x, key_padding_mask=src_mask, attn_bias=bias)
            self.last_weights.append(weights.detach())
        states = self.final_norm(x).masked_fill(~src_mask[..., None], 0.0)
        return Encoded(states, states.sum(1) / lengths[:, None].to(states), src_mask)


@dataclass
class TransformerDecodeResult(DecodeResult):
    """:class:`~attnlab.seq2seq.DecodeResult` plus the cross-attention of every layer
    and head.

    ``cross_weights``: one ``(B, n_heads, T, S)`` per decoder layer. ``weights (B, T,
    S)`` is the map the decoder shows (:attr:`TransformerDecoder.shown_head`: one
    head, or by default the mean of the last layer's heads), which is what
    :func:`~attnlab.tasks.translation.attention_maps` reads.
    """

    cross_weights: list[torch.Tensor] | None = None


class TransformerDecoder(DecoderBase):
    """Embedding plus positions, ``n_layers`` :class:`DecoderLayer`, and a linear map
    to the vocabulary.

    With targets, :meth:`decode` runs every position at once under the causal mask
    (teacher forcing in one pass). Without them, :meth:`decode_step` adds one
    position at a time from a key/value cache (:meth:`decode_init`), so a step
    projects one position, not the whole prefix; :meth:`step_uncached` is the
    reference that re-runs the prefix. With ``positions="alibi"`` the masked
    self-attention subtracts ``m_h (i - j)`` from its scores; the cross-attention has
    no position bias. ``shown_head = (layer, head)`` picks the
    cross-attention map returned as ``weights``; ``None`` averages the heads of the
    last layer.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        n_heads: int,
        *,
        n_layers: int = 1,
        d_ff: int | None = None,
        norm_first: bool = False,
        positions: str = "sinusoidal",
        max_len: int = 256,
        pad_id: int = 0,
        bos_id: int = 1,
        eos_id: int = 2,
    ) -> None:
        super().__init__(vocab_size, pad_id=pad_id, bos_id=bos_id, eos_id=eos_id)
        check_positive("n_layers", n_layers)
        self.d_model, self.n_heads, self.positions = d_model, n_heads, positions
        self.embed = _Embedding(vocab_size, d_model, positions, max_len, pad_id)
        self.layers = nn.ModuleList(
            DecoderLayer(
                d_model, n_heads, d_ff or 4 * d_model, norm_first=norm_first
            )
            for _ in range(n_layers)
        )
        self.final_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.out = nn.Linear(d_model, vocab_size)
        self.shown_head: tuple[int, int] | None = None

    def shown(self, cross_weights: list[torch.Tensor]) -> torch.Tensor:
        """The map of :attr:`shown_head` from per-layer weights ``(B, h, T, S)``:
        ``(B, T, S)``."""
        if self.shown_head is None:
            return cross_weights[-1].mean(1)
        layer, head = self.shown_head
        if not (0 <= layer < len(self.layers) and 0 <= head < self.n_heads):
            raise ValueError(
                f"shown_head must be (layer, head) with layer < {len(self.layers)}"
                f" and head < {self.n_heads}, got {self.shown_head}"
            )
        return cross_weights[layer][:, head]

    def decode_init(self, encoded: Encoded) -> State:
        """The state before the first word: the source mask ``(B, S)`` and one cache
        per layer (:meth:`DecoderLayer.init_cache`), whose cross-attention keys and
        values ``(B, n_heads, S, d_head)`` are projected here, once per sentence."""
        _check_input(
            "encoded.states", encoded.states, self.d_model, "(batch, S, d_model)"
        )
        cache = tuple(layer.init_cache(encoded.states) for layer in self.layers)
        return {"mask": encoded.mask, "cache": cache}

    def step(
        self, state: State, x: torch.Tensor
    ) -> tuple[torch.Tensor, State, list[torch.Tensor]]:
        """One position: ``(logits (B, V), new state, cross-attention per layer (B,
        h, S))``.

        Every layer's cache grows by the new position's keys and values, ``(B,
        n_heads, t, d_head)`` after ``t`` steps.
        """
        position = state["cache"][0]["keys"].shape[2]  # the number of words read
        h = self.embed(x[:, None], offset=position)  # (B, 1, d_model)
        bias = self._self_bias(1, position + 1, position)
        cache, cross = [], []
        for layer, layer_cache in zip(self.layers, state["cache"], strict=True):
            h, layer_cache, weights = layer.step(
                h, layer_cache, state["mask"], self_attn_bias=bias
            )
            cache.append(layer_cache)
            cross.append(weights[:, :, 0])
        logits = self.out(self.final_norm(h))[:, 0]
        return logits, {**state, "cache": tuple(cache)}, cross

    def _self_bias(
        self, n_queries: int, n_keys: int, offset: int = 0
    ) -> torch.Tensor | None:
        """The masked self-attention's ALiBi bias ``(n_heads, n_queries, n_keys)``
        (``None`` with other positions)."""
        if self.positions != "alibi":
            return None
        slopes = alibi_slopes(self.n_heads)
        return alibi_bias(
            slopes, n_queries, n_keys, causal=True, query_offset=offset
        )

    def step_uncached(
        self, encoded: Encoded, previous: torch.Tensor
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """What :meth:`step` computes, the slow way: the next word after ``previous
        (B, t)`` (``<bos>`` and the words so far) from a teacher-forced pass of
        :meth:`decode` over all ``t`` positions, without a cache.

        Returns ``(logits (B, V), cross-attention per layer (B, h, S))``.
        """
        # decode reads <bos> and targets[:, :-1]: the last target is a placeholder
        targets = F.pad(previous[:, 1:], (0, 1), value=self.pad_id)
        result = self.decode(encoded, targets=targets)
        return result.logits[:, -1], [w[:, :, -1] for w in result.cross_weights]

    def decode_step(
        self, state: State, x: torch.Tensor
    ) -> tuple[torch.Tensor, State, torch.Tensor]:
        logits, state, cross = self.step(state, x)
        return logits, state, self.shown([w[:, :, None] for w in cross])[:, 0]

    def decode(
        self,
        encoded: Encoded,
        targets: torch.Tensor | None = None,
        max_len: int | None = None,
    ) -> TransformerDecodeResult:
        """Teacher forcing on ``targets (B, T)`` in one pass, or greedy inference for
        up to ``max_len`` words."""
        if (targets is None) == (max_len is None):
            raise ValueError(
                "give either targets (teacher forcing) or max_len (inference), not"
                " both or neither"
            )
        _check_input(
            "encoded.states", encoded.states, self.d_model, "(batch, S, d_model)"
        )
        batch = encoded.states.shape[0]
        if targets is None:
            return self._greedy(encoded, max_len)
        check_ndim("targets", targets, "(batch, T)", ndim=2)
        if targets.shape[0] != batch or targets.shape[1] < 1:
            raise ValueError(
                f"targets must have shape (batch, T) with batch = {batch} and T >="
                f" 1, got {shape_of(targets)}"
            )
        previous = torch.cat(
            [torch.full((batch, 1), self.bos_id, dtype=torch.long), targets[:, :-1]],
            dim=1,
        )
        h = self.embed(previous)
        mask = causal_mask(targets.shape[1], device=h.device)
        bias = self._self_bias(targets.shape[1], targets.shape[1])
        cross = []
        for layer in self.layers:
            h, _, weights = layer(
                h,
                encoded.states,
                tgt_mask=mask,
                memory_key_padding_mask=encoded.mask,
                self_attn_bias=bias,
            )
            cross.append(weights)
        logits = self.out(self.final_norm(h))
        return TransformerDecodeResult(
            logits, self.choose(logits).argmax(-1), self.shown(cross), cross
        )

    def _greedy(
        self, encoded: Encoded, max_len: int, *, cache: bool = True
    ) -> TransformerDecodeResult:
        """Greedy inference for up to ``max_len`` words, with the key/value cache
        (:meth:`step`) or, with ``cache=False``, re-running the prefix at every step
        (:meth:`step_uncached`); both give the same result."""
        check_positive("max_len", max_len)
        batch = encoded.states.shape[0]
        state = self.decode_init(encoded) if cache else None
        x = torch.full((batch,), self.bos_id, dtype=torch.long)
        previous = x[:, None]  # (B, t): <bos> and the words so far
        logits, tokens, cross = [], [], []
        finished = torch.zeros(batch, dtype=torch.bool)
        # one word at a time: step t needs the word chosen at step t - 1
        for _ in range(max_len):
            if state is not None:
                word_logits, state, step_cross = self.step(state, x)
            else:
                word_logits, step_cross = self.step_uncached(encoded, previous)
            x = self.choose(word_logits).argmax(-1)
            previous = torch.cat([previous, x[:, None]], dim=1)
            logits.append(word_logits)
            tokens.append(x)
            cross.append(torch.stack(step_cross))  # (L, B, h, S)
            finished |= x == self.eos_id
            if finished.all():
                break
        tokens_t = torch.stack(tokens, dim=1)
        is_eos = (
            tokens_t == self.eos_id
        ).long()  # blank out everything after a row's first <eos>
        tokens_t = tokens_t.masked_fill(is_eos.cumsum(1) - is_eos > 0, self.pad_id)
        per_layer = list(torch.stack(cross, dim=3).unbind(0))  # L x (B, h, T, S)
        return TransformerDecodeResult(
            torch.stack(logits, dim=1), tokens_t, self.shown(per_layer), per_layer
        )


class Transformer(Seq2Seq):
    """An encoder-decoder Transformer with the interface of
    :class:`~attnlab.seq2seq.Seq2Seq`.

    ``n_layers`` encoder and decoder layers of width ``d_model`` with ``n_heads``
    heads and ``d_ff`` hidden units in the feed-forward networks (default ``4
    d_model``); ``norm_first`` selects the pre-norm order; ``positions`` is
    ``"sinusoidal"``, ``"learned"`` (up to ``max_len`` positions), ``"alibi"``
    (linear biases on the self-attention scores, :mod:`attnlab.alibi`) or ``"none"``.
    ``model(src, src_mask, targets)`` returns a :class:`TransformerDecodeResult` with
    the cross-attention of every layer and head.
    """

    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        *,
        d_model: int = 64,
        n_heads: int = 4,
        n_layers: int = 2,
        d_ff: int | None = None,
        norm_first: bool = False,
        positions: str = "sinusoidal",
        max_len: int = 256,
        pad_id: int = 0,
        bos_id: int = 1,
        eos_id: int = 2,
    ) -> None:
        options = {
            "d_ff": d_ff,
            "n_layers": n_layers,
            "norm_first": norm_first,
            "positions": positions,
            "max_len": max_len,
        }
        encoder = TransformerEncoder(
            src_vocab_size, d_model, n_heads, pad_id=pad_id, **options
        )
        decoder = TransformerDecoder(
            tgt_vocab_size,
            d_model,
            n_heads,
            pad_id=pad_id,
            bos_id=bos_id,
            eos_id=eos_id,
            **options,
        )
        super().__init__(encoder, decoder)
        self.norm_first = norm_first

    def greedy(
        self,
        src: torch.Tensor,
        src_mask: torch.Tensor,
        max_len: int | None = None,
        *,
        cache: bool = True,
    ) -> TransformerDecodeResult:
        """Greedy inference, at most ``max_len`` words (default ``2 S + 10``); with
        ``cache=False`` every step re-runs the decoder over the whole prefix (same
        result, more work)."""
        return self.decoder._greedy(
            self.encode(src, src_mask),
            max_len or 2 * src.shape[1] + 10,
            cache=cache,
        )


def attention_masks(
    src_mask: torch.Tensor, tgt_len: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The masks of the three places of attention for one batch, ``True`` where query
    ``i`` may attend to key ``j``.

    ``src_mask (B, S)`` is ``True`` at the real source words, ``tgt_len`` the number
    ``T`` of target positions. Returns the encoder self-attention's ``(B, S, S)``
    (every source position may read the real source words), the masked decoder
    self-attention's ``(B, T, T)`` (the causal mask, ``j <= i``) and the
    cross-attention's ``(B, T, S)`` (every target position may read the real source
    words). Only keys are masked: a padding query's row is ignored downstream.
    """
    check_ndim("src_mask", src_mask, "(batch, S)", ndim=2)
    check_positive("tgt_len", tgt_len)
    batch, length = src_mask.shape
    keys = src_mask.bool()[:, None, :]  # (B, 1, S): the real source words
    causal = causal_mask(tgt_len, device=src_mask.device)
    return (
        keys.expand(batch, length, length),
        causal.expand(batch, tgt_len, tgt_len),
        keys.expand(batch, tgt_len, length),
    )
