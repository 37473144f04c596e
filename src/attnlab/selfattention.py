"""Attention with learned projections and self-attention, chapter 7 (the layers that
chapter 8's Transformer is built from).

:class:`ProjectedAttention` is parameterized attention with one head: the query,
keys and values are projected, then attended. :class:`MultiHeadAttention` runs
several such heads side by side with the scaled dot product (Vaswani et al., 2017),
with the layout of ``torch.nn.MultiheadAttention``.
:func:`sinusoidal_positions` is the positional encoding of the Transformer;
:class:`SelfAttentionLayer` is one Transformer encoder layer (multi-head
self-attention and a position-wise feed-forward network, each wrapped in a residual
connection and layer normalisation, the original "post-norm" order);
:class:`SelfAttentionEncoder` stacks embedding, positions and layers and returns the
same :class:`~attnlab.seq2seq.Encoded` as the recurrent
:class:`~attnlab.seq2seq.Encoder`. Masks follow the package convention: ``True`` = a
real position / may attend.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from attnlab._validate import (
    check_last_dim,
    check_ndim,
    check_positive,
    check_tensor,
    shape_of,
)
from attnlab.alibi import check_bias
from attnlab.attention import Score, attend, dot_score, scaled_dot_score
from attnlab.seq2seq import Encoded, check_source

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
        check_last_dim("keys", keys, self.d_key, "(..., Tk, d_key)")
        check_last_dim("values", values, self.d_value, "(..., Tk, d_value)")
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
        check_last_dim("query", query, self.d_query, "(..., Tq, d_query)")
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


def biased_score(bias: torch.Tensor | None, n_heads: int) -> Score:
    """:func:`scaled_dot_score` plus ``bias (n_heads, Tq, Tk)`` (``None``: no bias),
    for queries and keys split into heads, ``(B, n_heads, T, d_head)``."""
    if bias is None:
        return scaled_dot_score

    def score(query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        check_bias(bias, n_heads, query.shape[-2], keys.shape[-2])
        return scaled_dot_score(query, keys) + bias.to(query)

    return score


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
    :func:`~attnlab.attention.padding_mask`), and ``attn_mask (Tq, Tk)`` or ``(B,
    Tq, Tk)`` is ``True`` where a query may look at a key (e.g.
    :func:`~attnlab.attention.causal_mask`). To give torch the same masks, pass
    ``~key_padding_mask`` and ``~attn_mask``. A query that may attend to no key gets
    zero weights and output ``W^O``'s bias (torch returns NaN there).
    ``attn_bias (n_heads, Tq, Tk)``, a float tensor, is added to every head's scores
    before the softmax (relative positions, :mod:`attnlab.alibi`).
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
        # W^Q of all heads, stacked
        self.query_proj = nn.Linear(d_model, d_model, bias=bias)
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
        attn_bias: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        for name, x, layout in [
            ("query", query, "(batch, Tq, d_model)"),
            ("key", key, "(batch, Tk, d_model)"),
            ("value", value, "(batch, Tk, d_model)"),
        ]:
            check_ndim(name, x, layout, ndim=3)
            check_last_dim(name, x, self.d_model, layout)
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
        # (B, h, Tq, d_head), (B, h, Tq, Tk)
        context, weights = attend(
            q, k, v, score=biased_score(attn_bias, self.n_heads), mask=mask
        )
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


# Self-attention: positions, one encoder layer, the encoder.


def sinusoidal_positions(
    length: int, d_model: int, base: float = 10_000.0
) -> torch.Tensor:
    """The sinusoidal positional encoding ``(length, d_model)``.

    ``P[t, 2i] = sin(t / base^(2i / d_model))`` and ``P[t, 2i + 1] = cos(t / base^(2i
    / d_model))`` for positions ``t = 0 .. length - 1``: feature pair ``i`` turns at
    the angular frequency ``base^(-2i / d_model)``, from one radian per position (``i
    = 0``) down to about ``1 / base``. Because every pair is a rotation, ``P[t + k]``
    is a fixed linear function of ``P[t]`` for each offset ``k``. An odd ``d_model``
    drops the last cosine.
    """
    if length < 0:
        raise ValueError(f"length must be >= 0, got {length}")
    check_positive("d_model", d_model)
    check_positive("base", base)
    positions = torch.arange(length, dtype=torch.float32)[:, None]  # (length, 1)
    # (ceil(d / 2),)
    frequencies = base ** (
        -torch.arange(0, d_model, 2, dtype=torch.float32) / d_model
    )
    angles = positions * frequencies  # (length, ceil(d / 2))
    return torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(-2)[:, :d_model]


class SelfAttentionLayer(nn.Module):
    """One Transformer encoder layer: ``x <- norm(x + MHA(x, x, x))``, then ``x <-
    norm(x + FFN(x))``.

    ``FFN(x) = W_2 relu(W_1 x + b_1) + b_2`` acts on every position separately
    (``d_ff`` hidden units). No dropout. ``forward(x (B, T, d_model),
    key_padding_mask=None, attn_mask=None)`` returns ``(x (B, T, d_model), weights
    (B, n_heads, T, T))`` with the attention weights of every head. The masks are
    those of :class:`MultiHeadAttention` (``True`` = real key / may attend).
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int) -> None:
        super().__init__()
        check_positive("d_ff", d_ff)
        self.attention = MultiHeadAttention(d_model, n_heads)
        self.norm1 = nn.LayerNorm(d_model)
        self.feed_forward = nn.Sequential(
            nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model)
        )
        self.norm2 = nn.LayerNorm(d_model)

    def forward(
        self,
        x: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        mixed, weights = self.attention(
            x,
            x,
            x,
            key_padding_mask=key_padding_mask,
            attn_mask=attn_mask,
            average_attn_weights=False,
        )
        x = self.norm1(x + mixed)  # every position has looked at every other one
        # then each position is transformed on its own
        return (
            self.norm2(x + self.feed_forward(x)),
            weights,
        )

    @torch.no_grad()
    def load_torch_weights(
        self, layer: nn.TransformerEncoderLayer
    ) -> SelfAttentionLayer:
        """Copy a ``torch.nn.TransformerEncoderLayer`` (ReLU, ``norm_first=False``,
        same sizes); returns ``self``."""
        if not isinstance(layer, nn.TransformerEncoderLayer):
            raise TypeError(
                "layer must be a torch.nn.TransformerEncoderLayer, got"
                f" {type(layer).__name__}"
            )
        if layer.norm_first or layer.activation_relu_or_gelu != 1:
            raise ValueError(
                "only a post-norm layer with ReLU activation (norm_first=False, "
                "activation='relu') has the same computation"
            )
        d_ff = self.feed_forward[0].out_features
        if (layer.linear1.in_features, layer.linear1.out_features) != (
            self.attention.d_model,
            d_ff,
        ):
            raise ValueError(
                f"sizes differ: this layer has d_model = {self.attention.d_model},"
                f" d_ff = {d_ff}; the torch layer has d_model ="
                f" {layer.linear1.in_features}, dim_feedforward ="
                f" {layer.linear1.out_features}"
            )
        self.attention.load_torch_weights(layer.self_attn)
        for ours, theirs in [
            (self.norm1, layer.norm1),
            (self.norm2, layer.norm2),
            (self.feed_forward[0], layer.linear1),
            (self.feed_forward[2], layer.linear2),
        ]:
            ours.load_state_dict(theirs.state_dict())
        return self


class SelfAttentionEncoder(nn.Module):
    """Embedding, scaled by ``sqrt(d_model)``, plus sinusoidal positions, then
    ``n_layers`` self-attention layers.

    The embeddings start with entries of standard deviation ``1 / sqrt(d_model)``, so
    after the scaling they have about the size of the positional encoding (entries in
    ``[-1, 1]``) and neither drowns the other.

    ``forward(src (B, S), src_mask (B, S)) -> Encoded``, like the recurrent encoder:
    ``states (B, S, d_model)`` (zero at padding), ``final (B, d_model)`` the mean of
    the states over the real words (there is no last state: no position comes after
    the others), ``mask``. Padding keys are masked in every layer.
    ``positions=False`` leaves the positional encoding out (the layers then cannot
    tell the order of the words). The attention weights of the last call are kept in
    ``last_weights``: one ``(B, n_heads, S, S)`` per layer.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        n_heads: int,
        *,
        n_layers: int = 1,
        d_ff: int | None = None,
        positions: bool = True,
        pad_id: int = 0,
    ) -> None:
        super().__init__()
        check_positive("vocab_size", vocab_size)
        check_positive("n_layers", n_layers)
        self.d_model, self.positions, self.output_size = d_model, positions, d_model
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
        # entries of spread 1/sqrt(d_model): times sqrt(d_model), as large as the
        # positions
        with torch.no_grad():
            self.embedding.weight.normal_(0.0, d_model**-0.5)
            self.embedding.weight[pad_id] = 0.0
        self.layers = nn.ModuleList(
            SelfAttentionLayer(d_model, n_heads, d_ff or 4 * d_model)
            for _ in range(n_layers)
        )
        self.last_weights: list[torch.Tensor] = []

    def embed(self, src: torch.Tensor) -> torch.Tensor:
        """``(B, S)`` word indices -> ``(B, S, d_model)``: scaled embeddings plus
        (optionally) positions."""
        check_ndim("src", src, "(batch, S)", ndim=2)
        x = self.embedding(src) * math.sqrt(self.d_model)
        if self.positions:
            x = x + sinusoidal_positions(src.shape[1], self.d_model).to(x)
        return x

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor) -> Encoded:
        lengths = check_source(src, src_mask)
        x = self.embed(src)
        self.last_weights = []
        for layer in self.layers:
            x, weights = layer(x, key_padding_mask=src_mask)
            self.last_weights.append(weights.detach())
        states = x.masked_fill(~src_mask[..., None], 0.0)
        final = states.sum(1) / lengths[:, None].to(states)
        return Encoded(states, final, src_mask)
