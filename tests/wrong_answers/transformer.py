"""Typical wrong answers to the code exercises of chapters 8, "The Transformer", and 9, "Positions and the cost of
attention".

Each entry maps an exercise label to the full source of its solution cell with a wrong answer that still runs;
the chapter's check must reject it.
"""

WRONG: dict[str, str] = {
    "ex-tf-causal-mask": r'''def my_causal_mask(size: int) -> torch.Tensor:
    """(size, size) boolean mask, True where query i may attend to key j."""
    ### BEGIN SOLUTION
    positions = torch.arange(size)
    return positions[None, :] < positions[:, None]  # the diagonal is left out
    ### END SOLUTION''',
    "ex-tf-sinusoidal": r'''def my_sinusoidal_positions(length: int, d_model: int) -> torch.Tensor:
    """The (length, d_model) table: sin in dimensions 2i, cos in 2i + 1."""
    ### BEGIN SOLUTION
    t = torch.arange(length, dtype=torch.float32)[:, None]
    pairs = torch.arange(0, d_model, 2, dtype=torch.float32)
    angles = t / 10_000 ** (pairs / d_model)  # (length, d_model / 2)
    table = torch.zeros(length, d_model)
    table[:, 0::2], table[:, 1::2] = angles.cos(), angles.sin()  # swapped
    return table
    ### END SOLUTION


def my_add_positions(x: torch.Tensor) -> torch.Tensor:
    """Embeddings x (B, T, d_model) plus the positions 0..T-1, as a new tensor."""
    ### BEGIN SOLUTION
    return x + my_sinusoidal_positions(x.shape[1], x.shape[2])
    ### END SOLUTION''',
    "ex-tf-learned-positions": r'''class MyLearnedPositions(nn.Module):
    """One trained vector per position; forward(length) -> (length, d_model)."""

    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        ### BEGIN SOLUTION
        self.max_len = max_len
        self.table = nn.Parameter(0.1 * torch.randn(max_len, d_model))
        ### END SOLUTION

    def forward(self, length: int) -> torch.Tensor:
        ### BEGIN SOLUTION
        if length > self.max_len:
            raise ValueError(f"length {length} exceeds max_len = {self.max_len}")
        return self.table[:length].detach()  # no gradient: never learns
        ### END SOLUTION''',
    "ex-tf-alibi": r'''def my_alibi_bias(n_heads: int, length: int, causal: bool) -> torch.Tensor:
    """(n_heads, length, length): -m_h |i - j|; -inf after the query if causal."""
    ### BEGIN SOLUTION
    heads = torch.arange(1, n_heads + 1, dtype=torch.float32)
    slopes = 2.0 ** (-8.0 * heads / n_heads)  # (n_heads,)
    positions = torch.arange(length, dtype=torch.float32)
    distance = positions[:, None] - positions[None, :]  # i - j
    bias = slopes[:, None, None] * distance.abs()  # the sign: a reward for distance
    if causal:
        bias = bias.masked_fill(distance < 0, float("-inf"))
    return bias
    ### END SOLUTION''',
    "ex-tf-attention-masks": r'''def my_attention_masks(src_mask: torch.Tensor, tgt_len: int) -> tuple:
    """Boolean masks (B, S, S), (B, T, T), (B, T, S): True where query i may attend
    to key j."""
    ### BEGIN SOLUTION
    batch, length = src_mask.shape
    real = src_mask[:, None, :] & src_mask[:, :, None]  # padding rows masked too
    decoder = torch.ones(tgt_len, tgt_len, dtype=torch.bool).tril()
    cross = src_mask[:, None, :].expand(batch, tgt_len, length)
    return real, decoder.expand(batch, tgt_len, tgt_len), cross
    ### END SOLUTION''',
    "ex-tf-decoder-layer": r'''def fixed_decoder_layer(layer, x, memory, memory_mask):
    """Post-norm decoder layer of layer's modules: x (B, T, d_model) reads itself
    (causal) and memory (B, S, d_model) at its real words (memory_mask (B, S));
    returns (B, T, d_model)."""
    ### BEGIN SOLUTION
    causal = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril()
    mixed, _ = layer.self_attention(x, x, x, attn_mask=causal)  # the mask fixed
    x = layer.norm1(x + mixed)
    read, _ = layer.cross_attention(x, memory, memory, key_padding_mask=memory_mask)
    x = layer.norm2(read)  # but the residual still missing
    return layer.norm3(x + layer.feed_forward(x))
    ### END SOLUTION''',
}
