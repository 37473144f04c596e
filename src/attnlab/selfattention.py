"""Self-attention: queries, keys and values from the same sequence, positions added
as sinusoids.

:func:`sinusoidal_positions` is the positional encoding of the Transformer (Vaswani
et al., 2017); :class:`SelfAttentionLayer` is one Transformer encoder layer
(multi-head self-attention and a position-wise feed-forward network, each wrapped in
a residual connection and layer normalisation, the original "post-norm" order);
:class:`SelfAttentionEncoder` stacks embedding, positions and layers and returns the
same :class:`~attnlab.seq2seq.Encoded` as the recurrent
:class:`~attnlab.seq2seq.Encoder`. Masks follow the package convention: ``True`` = a
real position / may attend.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from attnlab._validate import check_ndim, check_positive
from attnlab.attention import MultiHeadAttention
from attnlab.seq2seq import Encoded, check_source


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
    frequencies = base ** (
        -torch.arange(0, d_model, 2, dtype=torch.float32) / d_model
    )  # (ceil(d / 2),)
    angles = positions * frequencies  # (length, ceil(d / 2))
    return torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(-2)[:, :d_model]


class SelfAttentionLayer(nn.Module):
    """One Transformer encoder layer: ``x <- norm(x + MHA(x, x, x))``, then ``x <-
    norm(x + FFN(x))``.

    ``FFN(x) = W_2 relu(W_1 x + b_1) + b_2`` acts on every position separately
    (``d_ff`` hidden units). No dropout. ``forward(x (B, T, d_model),
    key_padding_mask=None, attn_mask=None)`` returns ``(x (B, T, d_model), weights
    (B, n_heads, T, T))`` with the attention weights of every head. The masks are
    those of :class:`~attnlab.attention.MultiHeadAttention` (``True`` = real key /
    may attend).
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
        return (
            self.norm2(x + self.feed_forward(x)),
            weights,
        )  # then each position is transformed on its own

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
