"""Sinusoidal positions and the self-attention layer/encoder, against hand-computed values and torch's layer."""

import math

import pytest
import torch
from torch import nn

from attnlab.attention import padding_mask
from attnlab.selfattention import (
    SelfAttentionEncoder,
    SelfAttentionLayer,
    sinusoidal_positions,
)
from tests.tensors import randn

# --- positional encoding ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("d_model", [1, 2, 5, 8])
def test_positions_match_the_formula_entry_by_entry(d_model):
    table = sinusoidal_positions(7, d_model)
    assert table.shape == (7, d_model)
    for t in range(7):
        for j in range(d_model):
            angle = t / 10_000 ** ((j - j % 2) / d_model)
            expected = math.sin(angle) if j % 2 == 0 else math.cos(angle)
            assert table[t, j].item() == pytest.approx(expected, abs=1e-6)


def test_positions_hand_computed_case():
    # d_model = 4: frequencies 1 and 1/100
    expected = torch.tensor([[0.0, 1.0, 0.0, 1.0],
                             [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)],
                             [math.sin(2), math.cos(2), math.sin(0.02), math.cos(0.02)]])
    torch.testing.assert_close(sinusoidal_positions(3, 4), expected)


def test_a_shift_is_the_same_rotation_at_every_position():
    """P[t + k] = P[t] R_k with one matrix R_k for all t: relative offsets are linear functions of the code."""
    table = sinusoidal_positions(40, 16).double()
    k = 3
    solution = torch.linalg.lstsq(table[:-k], table[k:]).solution  # R_k fitted on all positions at once
    torch.testing.assert_close(table[:-k] @ solution, table[k:], atol=1e-6, rtol=0)


def test_positions_are_distinct_and_bounded():
    table = sinusoidal_positions(200, 32)
    assert table.abs().max() <= 1.0
    assert torch.cdist(table, table).add(torch.eye(200) * 10).min() > 1e-2


def test_positions_edge_cases_and_errors():
    assert sinusoidal_positions(0, 6).shape == (0, 6)
    with pytest.raises(ValueError, match="length must be >= 0, got -1"):
        sinusoidal_positions(-1, 4)
    with pytest.raises(ValueError, match="d_model must be > 0, got 0"):
        sinusoidal_positions(3, 0)


# --- one layer against torch.nn.TransformerEncoderLayer ---------------------------------------------------------


def twin_layers(d_model=12, n_heads=3, d_ff=20, seed=0):
    torch.manual_seed(seed)
    reference = nn.TransformerEncoderLayer(d_model, n_heads, d_ff, dropout=0.0, batch_first=True).eval()
    with torch.no_grad():
        for parameter in reference.parameters():  # random biases and norm weights, so misplaced copies show
            parameter.add_(0.1 * torch.randn_like(parameter))
    return reference, SelfAttentionLayer(d_model, n_heads, d_ff).load_torch_weights(reference).eval()


def test_layer_matches_torch_without_mask():
    reference, ours = twin_layers()
    x = randn(3, 6, 12, seed=1)
    output, weights = ours(x)
    torch.testing.assert_close(output, reference(x), atol=1e-5, rtol=0)
    assert weights.shape == (3, 3, 6, 6)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 3, 6))


def test_layer_matches_torch_with_padding():
    reference, ours = twin_layers(seed=1)
    x = randn(3, 6, 12, seed=2)
    real = padding_mask(torch.tensor([6, 2, 4]), 6)
    output, weights = ours(x, key_padding_mask=real)
    expected = reference(x, src_key_padding_mask=~real)
    torch.testing.assert_close(output[real], expected[real], atol=1e-5, rtol=0)  # torch's fast path zeroes padding
    assert (weights.masked_select(~real[:, None, None, :]) == 0).all()


def test_layer_gradcheck():
    torch.manual_seed(0)
    layer = SelfAttentionLayer(4, 2, 6).double()
    x = randn(2, 3, 4, seed=3, dtype=torch.float64).requires_grad_()
    assert torch.autograd.gradcheck(lambda x: layer(x)[0], (x,))


def test_layer_load_errors():
    ours = SelfAttentionLayer(8, 2, 16)
    with pytest.raises(ValueError, match="post-norm layer with ReLU"):
        ours.load_torch_weights(nn.TransformerEncoderLayer(8, 2, 16, norm_first=True, batch_first=True))
    with pytest.raises(ValueError, match="sizes differ"):
        ours.load_torch_weights(nn.TransformerEncoderLayer(8, 2, 32, batch_first=True))
    with pytest.raises(TypeError, match="TransformerEncoderLayer"):
        ours.load_torch_weights(nn.Linear(8, 8))


# --- the encoder ------------------------------------------------------------------------------------------------


def test_without_positions_the_encoder_is_permutation_equivariant():
    torch.manual_seed(0)
    encoder = SelfAttentionEncoder(20, 8, 2, n_layers=2, positions=False).eval()
    src = torch.randint(1, 20, (2, 7), generator=torch.Generator().manual_seed(4))
    mask = torch.ones(2, 7, dtype=torch.bool)
    order = torch.randperm(7, generator=torch.Generator().manual_seed(5))
    states = encoder(src, mask).states
    torch.testing.assert_close(encoder(src[:, order], mask).states, states[:, order], atol=1e-5, rtol=0)
    with_positions = SelfAttentionEncoder(20, 8, 2, n_layers=2).eval()
    shuffled = with_positions(src[:, order], mask).states
    assert not torch.allclose(shuffled, with_positions(src, mask).states[:, order], atol=1e-3)


def test_encoder_output_ignores_padding_and_averages_real_states():
    torch.manual_seed(0)
    encoder = SelfAttentionEncoder(20, 8, 2).eval()
    src = torch.tensor([[3, 4, 5, 0, 0], [6, 7, 8, 9, 10]])
    mask = src != 0
    encoded = encoder(src, mask)
    assert len(encoder.last_weights) == 1 and encoder.last_weights[0].shape == (2, 2, 5, 5)
    assert (encoded.states[0, 3:] == 0).all()
    torch.testing.assert_close(encoded.final[0], encoded.states[0, :3].mean(0))
    alone = encoder(src[:1, :3], mask[:1, :3])  # the same sentence without padding
    torch.testing.assert_close(alone.states[0], encoded.states[0, :3], atol=1e-5, rtol=0)


def test_encoder_checks_its_input():
    encoder = SelfAttentionEncoder(20, 8, 2)
    with pytest.raises(ValueError, match="src_mask must be True on a prefix"):
        encoder(torch.tensor([[1, 2, 3]]), torch.tensor([[True, False, True]]))
    with pytest.raises(ValueError, match=r"src must have shape \(batch, S\)"):
        encoder(torch.tensor([1, 2, 3]), torch.tensor([True, True, True]))
