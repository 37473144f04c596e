"""ALiBi's slopes and biases against the paper's values and a loop, and a Transformer with ALiBi: its scores, its
invariance to where a sentence sits, its cache."""

import math

import pytest
import torch

from attnlab.alibi import alibi_bias, alibi_encoder_bias, alibi_slopes
from attnlab.attention import causal_mask, masked_softmax
from attnlab.selfattention import MultiHeadAttention
from attnlab.tasks.translation import SOURCE_VOCAB, TARGET_VOCAB
from attnlab.transformer import EncoderLayer, Transformer


def test_slopes_for_a_power_of_two_are_the_papers():
    # Press et al. 2022, section 3: 8 heads get 1/2, 1/4, ..., 1/256
    torch.testing.assert_close(
        alibi_slopes(8), torch.tensor([2.0**-k for k in range(1, 9)])
    )
    torch.testing.assert_close(alibi_slopes(2), torch.tensor([2.0**-4, 2.0**-8]))
    torch.testing.assert_close(alibi_slopes(1), torch.tensor([2.0**-8]))


def test_slopes_for_other_head_counts_interleave_the_next_power_of_two():
    # 6 heads: the 4 slopes of 4 heads, then every other slope of 8 heads (2^-1, 2^-3)
    expected = [2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8, 2.0**-1, 2.0**-3]
    torch.testing.assert_close(alibi_slopes(6), torch.tensor(expected))
    assert alibi_slopes(3).shape == (3,)
    assert (alibi_slopes(12) > 0).all() and len(set(alibi_slopes(12).tolist())) == 12


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("offset", [0, 3])
def test_bias_matches_a_loop(causal, offset):
    slopes = torch.tensor([0.5, 0.25, 0.125])
    n_queries, n_keys = 2, 6
    bias = alibi_bias(slopes, n_queries, n_keys, causal=causal, query_offset=offset)
    assert bias.shape == (3, n_queries, n_keys)
    for h in range(3):
        for i in range(n_queries):
            for j in range(n_keys):
                position = offset + i
                if causal and j > position:
                    assert bias[h, i, j] == -math.inf
                else:
                    assert bias[h, i, j].item() == pytest.approx(
                        -slopes[h].item() * abs(position - j)
                    )


def test_bias_rejects_queries_beyond_the_keys_of_a_causal_attention():
    with pytest.raises(
        ValueError, match="query_offset = 5, n_queries = 2, n_keys = 6"
    ):
        alibi_bias(alibi_slopes(2), 2, 6, causal=True, query_offset=5)
    with pytest.raises(ValueError, match=r"slopes must have shape \(n_heads,\)"):
        alibi_bias(torch.ones(2, 2), 2, 2, causal=False)


def test_multi_head_attention_adds_the_bias_to_every_heads_scores():
    torch.manual_seed(0)
    attention = MultiHeadAttention(8, 2)
    x = torch.randn(3, 5, 8)
    bias = alibi_bias(alibi_slopes(2), 5, 5, causal=True)
    _, weights = attention(
        x, x, x, attn_mask=causal_mask(5), average_attn_weights=False, attn_bias=bias
    )
    q = attention.split_heads(attention.query_proj(x))
    k = attention.split_heads(attention.key_proj(x))
    scores = q @ k.transpose(-2, -1) / math.sqrt(4) + bias
    torch.testing.assert_close(weights, masked_softmax(scores, causal_mask(5)))
    with pytest.raises(
        ValueError,
        match=r"attn_bias must have shape \(n_heads, Tq, Tk\) = \(2, 5, 5\), got \(5, 5\)",
    ):
        attention(x, x, x, attn_bias=torch.zeros(5, 5))


def test_alibi_prefers_near_keys_when_the_content_is_equal():
    """Equal keys: the weights fall with the distance, faster for the head with the larger slope."""
    bias = alibi_bias(alibi_slopes(2), 1, 7, causal=False, query_offset=3)
    weights = torch.softmax(bias, dim=-1)[
        :, 0
    ]  # (2 heads, 7 keys), scores all equal otherwise
    assert torch.argmax(weights, dim=-1).tolist() == [3, 3]
    for head in weights:
        assert torch.allclose(head, head.flip(0))  # symmetric around the query
        assert (head[:3].diff() > 0).all()
    assert weights[0, 3] > weights[1, 3]  # slope 1/16 concentrates more than 1/256


def alibi_model(norm_first: bool = False) -> Transformer:
    torch.manual_seed(0)
    return Transformer(
        len(SOURCE_VOCAB),
        len(TARGET_VOCAB),
        d_model=16,
        n_heads=2,
        n_layers=2,
        d_ff=24,
        norm_first=norm_first,
        positions="alibi",
        pad_id=TARGET_VOCAB.pad,
        bos_id=TARGET_VOCAB.bos,
        eos_id=TARGET_VOCAB.eos,
    ).eval()


@pytest.mark.parametrize("norm_first", [False, True])
def test_an_alibi_layer_does_not_know_absolute_positions(norm_first):
    """A sentence moved three positions to the right, behind keys no query may see, gives the same outputs: only
    distances count."""
    torch.manual_seed(0)
    layer = EncoderLayer(16, 2, 24, norm_first=norm_first).eval()
    x = torch.randn(2, 6, 16)
    moved = torch.cat([torch.randn(2, 3, 16), x], dim=1)
    hidden = torch.ones(9, 9, dtype=torch.bool)
    hidden[:, :3] = False  # the three positions in front are never attended to
    slopes = alibi_slopes(2)
    with torch.no_grad():
        out, _ = layer(x, attn_bias=alibi_bias(slopes, 6, 6, causal=False))
        out_moved, _ = layer(
            moved, attn_mask=hidden, attn_bias=alibi_bias(slopes, 9, 9, causal=False)
        )
    torch.testing.assert_close(out_moved[:, 3:], out, atol=1e-5, rtol=1e-5)


def test_an_alibi_transformer_adds_no_position_vectors_and_has_no_position_parameters():
    model = alibi_model()
    tokens = torch.tensor([[5, 5, 5]])
    embedded = model.encoder.embed(tokens)
    assert torch.equal(embedded[0, 0], embedded[0, 2])
    assert not any("learned" in name for name, _ in model.named_parameters())


@pytest.mark.parametrize("n_heads", [2, 4])
def test_the_encoder_bias_looks_back_with_half_the_heads_and_ahead_with_the_rest(n_heads):
    length, half = 5, n_heads // 2
    bias = alibi_encoder_bias(n_heads, length)
    slopes = alibi_slopes(half)
    assert bias.shape == (n_heads, length, length)
    for h in range(n_heads):
        m = slopes[h % half].item()
        for i in range(length):
            for j in range(length):
                seen = j <= i if h < half else j >= i
                expected = -m * abs(i - j) if seen else -math.inf
                assert bias[h, i, j].item() == pytest.approx(expected)


def test_the_encoder_bias_needs_an_even_number_of_heads():
    with pytest.raises(ValueError, match="even number of heads .* got n_heads = 3"):
        alibi_encoder_bias(3, 4)
    with pytest.raises(ValueError, match="got n_heads = 1"):
        alibi_model_with_heads(1)


def alibi_model_with_heads(n_heads: int) -> Transformer:
    return Transformer(len(SOURCE_VOCAB), len(TARGET_VOCAB), d_model=16, n_heads=n_heads, positions="alibi")


def test_a_symmetric_bias_cannot_tell_a_sentence_from_its_mirror_image_and_the_encoders_can():
    """Under -m|i - j| reversing the words reverses the outputs (no left, no right); with half the heads looking
    back and half ahead it does not."""
    torch.manual_seed(0)
    layer = EncoderLayer(16, 2, 24).eval()
    x = torch.randn(1, 6, 16)
    with torch.no_grad():
        for bias, mirrored in [
            (alibi_bias(alibi_slopes(2), 6, 6, causal=False), True),
            (alibi_encoder_bias(2, 6), False),
        ]:
            out, _ = layer(x, attn_bias=bias)
            out_reversed, _ = layer(x.flip(1), attn_bias=bias)
            assert torch.allclose(out_reversed.flip(1), out, atol=1e-5) == mirrored


def test_an_alibi_encoder_has_one_head_reading_back_and_one_ahead():
    model = alibi_model()
    src = torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, 0, 0]])
    with torch.no_grad():
        model.encoder(src, src != 0)
    for weights in model.encoder.last_weights:  # (B, heads, S, S) per layer
        assert weights[:, 0].triu(1).abs().max() == 0  # head 0: keys j <= i
        assert weights[:, 1].tril(-1).abs().max() == 0  # head 1: keys j >= i
        assert weights[1, :, :3, 3:].abs().max() == 0  # never the padding
        assert not weights.isnan().any()
