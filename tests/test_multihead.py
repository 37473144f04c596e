"""Parameterized (projected) and multi-head attention, against plain ``attend`` and ``torch.nn.MultiheadAttention``."""

import pytest
import torch
from torch import nn

from attnlab.attention import (
    attend,
    causal_mask,
    dot_score,
    padding_mask,
    scaled_dot_score,
)
from attnlab.selfattention import MultiHeadAttention, ProjectedAttention
from tests.tensors import randn


def twin_modules(d_model, n_heads, *, bias=True, seed=0):
    """A ``torch.nn.MultiheadAttention`` with random weights (biases included) and our copy of it."""
    torch.manual_seed(seed)
    reference = nn.MultiheadAttention(d_model, n_heads, bias=bias, batch_first=True)
    if bias:  # torch starts its biases at zero; random ones test that they are copied to the right place
        with torch.no_grad():
            reference.in_proj_bias.normal_()
            reference.out_proj.bias.normal_()
    return reference.eval(), MultiHeadAttention(d_model, n_heads, bias=bias).load_torch_weights(reference)


# --- ProjectedAttention ---------------------------------------------------------------------------------------


def identity_projections(module):
    with torch.no_grad():
        for proj in (module.query_proj, module.key_proj, module.value_proj):
            proj.weight.copy_(torch.eye(proj.weight.shape[0], proj.weight.shape[1]))
    return module


@pytest.mark.parametrize("score", [dot_score, scaled_dot_score])
def test_projected_with_identity_projections_is_plain_attend(score):
    q, k, v = randn(2, 3, 6, seed=1), randn(2, 5, 6, seed=2), randn(2, 5, 6, seed=3)
    mask = padding_mask(torch.tensor([5, 2]), 5)[:, None, :]
    module = identity_projections(ProjectedAttention(6, 6, 6, 6, score=score))
    context, weights = module(q, k, v, mask=mask)
    expected_context, expected_weights = attend(q, k, v, score=score, mask=mask)
    torch.testing.assert_close(context, expected_context, atol=1e-6, rtol=0)
    torch.testing.assert_close(weights, expected_weights, atol=1e-6, rtol=0)


def test_projected_equals_the_formula_of_the_slides():
    """a = softmax((W^K Y)^T (W^Q y_d)), y_a = (W^V Y) a, written column-wise for one query."""
    module = ProjectedAttention(4, 5, 3, 6)
    y_d, Y_k, Y_v = randn(4, seed=4), randn(5, 7, seed=5), randn(3, 7, seed=6)  # columns are entries, as on paper
    W_q, W_k, W_v = module.query_proj.weight, module.key_proj.weight, module.value_proj.weight
    a = torch.softmax((W_k @ Y_k).T @ (W_q @ y_d), dim=0)
    y_a = (W_v @ Y_v) @ a
    context, weights = module(y_d[None], Y_k.T, Y_v.T)
    torch.testing.assert_close(weights[0], a.detach(), atol=1e-6, rtol=0)
    torch.testing.assert_close(context[0], y_a.detach(), atol=1e-6, rtol=0)


def test_projected_memory_once_equals_forward():
    module = ProjectedAttention(3, 4, 5, 8, bias=True)
    q, k, v = randn(2, 6, 3, seed=7), randn(2, 9, 4, seed=8), randn(2, 9, 5, seed=9)
    projected = module.project_memory(k, v)
    for a, b in zip(module.attend_projected(q, *projected), module(q, k, v), strict=True):
        torch.testing.assert_close(a, b)


def test_projected_gradcheck():
    torch.manual_seed(0)
    module = ProjectedAttention(3, 4, 2, 5, score=scaled_dot_score).double()
    q, k, v = (randn(2, 3, 3, seed=10, dtype=torch.float64).requires_grad_(),
               randn(2, 4, 4, seed=11, dtype=torch.float64).requires_grad_(),
               randn(2, 4, 2, seed=12, dtype=torch.float64).requires_grad_())
    mask = padding_mask(torch.tensor([4, 1]), 4)[:, None, :]
    assert torch.autograd.gradcheck(lambda q, k, v: module(q, k, v, mask=mask)[0], (q, k, v))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: m(randn(2, 3, 5), randn(2, 4, 4), randn(2, 4, 2)), r"query must have shape .*last dimension 3"),
        (lambda m: m(randn(2, 3, 3), randn(2, 4, 7), randn(2, 4, 2)), r"keys must have shape .*last dimension 4"),
        (lambda m: m(randn(2, 3, 3), randn(2, 4, 4), randn(2, 4, 9)), r"values must have shape .*last dimension 2"),
        (lambda m: m(randn(2, 3, 3), randn(2, 4, 4), randn(2, 6, 2)), r"same number of entries Tk"),
        (lambda m: m(randn(3), randn(2, 4, 4), randn(2, 4, 2)), r"query must have shape \(\.\.\., Tq, d_query\)"),
    ],
    ids=["query-size", "key-size", "value-size", "key-value-count", "query-ndim"],
)
def test_projected_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call(ProjectedAttention(3, 4, 2, 5))


def test_projected_rejects_bad_sizes():
    with pytest.raises(ValueError, match="d_model must be > 0, got 0"):
        ProjectedAttention(3, 4, 2, 0)


# --- MultiHeadAttention against torch.nn.MultiheadAttention -----------------------------------------------------


@pytest.mark.parametrize(("d_model", "n_heads"), [(8, 1), (8, 2), (12, 3), (16, 8)])
@pytest.mark.parametrize("bias", [True, False])
def test_multihead_matches_torch_without_mask(d_model, n_heads, bias):
    reference, ours = twin_modules(d_model, n_heads, bias=bias)
    q, k, v = randn(3, 5, d_model, seed=1), randn(3, 7, d_model, seed=2), randn(3, 7, d_model, seed=3)
    expected, expected_weights = reference(q, k, v)
    output, weights = ours(q, k, v)
    torch.testing.assert_close(output, expected, atol=1e-5, rtol=0)
    torch.testing.assert_close(weights, expected_weights, atol=1e-5, rtol=0)


@pytest.mark.parametrize(("d_model", "n_heads"), [(8, 2), (12, 4)])
def test_multihead_matches_torch_with_key_padding_mask(d_model, n_heads):
    reference, ours = twin_modules(d_model, n_heads, seed=1)
    lengths = torch.tensor([7, 3, 1, 5])
    real = padding_mask(lengths, 7)  # ours: True = a real key
    q, k, v = randn(4, 6, d_model, seed=4), randn(4, 7, d_model, seed=5), randn(4, 7, d_model, seed=6)
    expected, expected_weights = reference(q, k, v, key_padding_mask=~real)  # torch: True = ignore
    output, weights = ours(q, k, v, key_padding_mask=real)
    torch.testing.assert_close(output, expected, atol=1e-5, rtol=0)
    torch.testing.assert_close(weights, expected_weights, atol=1e-5, rtol=0)
    assert (weights[~real[:, None, :].expand_as(weights)] == 0).all()


def test_multihead_matches_torch_self_attention_with_both_masks_and_per_head_weights():
    reference, ours = twin_modules(12, 3, seed=2)
    x = randn(2, 6, 12, seed=7)
    real = padding_mask(torch.tensor([6, 4]), 6)
    allowed = causal_mask(6)
    expected, expected_weights = reference(x, x, x, key_padding_mask=~real, attn_mask=~allowed,
                                           average_attn_weights=False)
    output, weights = ours(x, x, x, key_padding_mask=real, attn_mask=allowed, average_attn_weights=False)
    assert weights.shape == (2, 3, 6, 6)
    torch.testing.assert_close(output, expected, atol=1e-5, rtol=0)
    torch.testing.assert_close(weights, expected_weights, atol=1e-5, rtol=0)


def test_multihead_per_example_attn_mask():
    reference, ours = twin_modules(8, 2, seed=3)
    x = randn(3, 5, 8, seed=8)
    allowed = torch.rand(3, 5, 5, generator=torch.Generator().manual_seed(9)) < 0.5
    allowed[..., 0] = True
    # torch takes a per-example mask as (batch * heads, Tq, Tk)
    expected, _ = reference(x, x, x, attn_mask=~allowed.repeat_interleave(2, dim=0))
    output, _ = ours(x, x, x, attn_mask=allowed)
    torch.testing.assert_close(output, expected, atol=1e-5, rtol=0)


def test_one_head_is_projected_attention_with_scaling_and_an_output_layer():
    ours = MultiHeadAttention(6, 1, bias=False)
    single = ProjectedAttention(6, 6, 6, 6, score=scaled_dot_score)
    single.load_state_dict({k: v for k, v in ours.state_dict().items() if not k.startswith("out_proj")})
    q, k = randn(2, 3, 6, seed=10), randn(2, 4, 6, seed=11)
    context, weights = single(q, k, k)
    output, mh_weights = ours(q, k, k)
    torch.testing.assert_close(output, ours.out_proj(context))
    torch.testing.assert_close(mh_weights, weights)


def test_split_and_merge_heads_are_inverse():
    module = MultiHeadAttention(12, 4)
    x = randn(2, 5, 12, seed=12)
    heads = module.split_heads(x)
    assert heads.shape == (2, 4, 5, 3)
    torch.testing.assert_close(heads[:, 1], x[..., 3:6])  # head 1 holds features 3..5
    torch.testing.assert_close(module.merge_heads(heads), x)


def test_fully_masked_query_gets_zero_weights_not_nan():
    ours = MultiHeadAttention(8, 2)
    x = randn(1, 3, 8, seed=13)
    allowed = torch.tensor([[True, False, False], [False, False, False], [True, True, True]])
    output, weights = ours(x, x, x, attn_mask=allowed)
    assert torch.isfinite(output).all()
    assert (weights[0, 1] == 0).all()
    torch.testing.assert_close(output[0, 1], ours.out_proj.bias.detach())


def test_multihead_gradcheck():
    torch.manual_seed(0)
    module = MultiHeadAttention(6, 3).double()
    q = randn(2, 3, 6, seed=14, dtype=torch.float64).requires_grad_()
    kv = randn(2, 4, 6, seed=15, dtype=torch.float64).requires_grad_()
    real = padding_mask(torch.tensor([4, 2]), 4)
    assert torch.autograd.gradcheck(lambda q, kv: module(q, kv, kv, key_padding_mask=real)[0], (q, kv))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: m(randn(2, 3, 7), randn(2, 4, 8), randn(2, 4, 8)), r"query must have shape \(batch, Tq, d_model\) "
                                                                      r"with last dimension 8, got \(2, 3, 7\)"),
        (lambda m: m(randn(3, 8), randn(2, 4, 8), randn(2, 4, 8)), r"query must have shape \(batch, Tq, d_model\)"),
        (lambda m: m(randn(2, 3, 8), randn(2, 4, 8), randn(2, 5, 8)), r"key and value the length Tk"),
        (lambda m: m(randn(1, 3, 8), randn(2, 4, 8), randn(2, 4, 8)), r"share the batch size"),
        (lambda m: m(randn(2, 3, 8), randn(2, 4, 8), randn(2, 4, 8), key_padding_mask=torch.ones(2, 5, dtype=bool)),
         r"key_padding_mask must have shape \(batch, Tk\) = \(2, 4\), got \(2, 5\)"),
        (lambda m: m(randn(2, 3, 8), randn(2, 4, 8), randn(2, 4, 8), key_padding_mask=torch.ones(2, 4)),
         r"key_padding_mask must be a boolean tensor \(True = real key\)"),
        (lambda m: m(randn(2, 3, 8), randn(2, 4, 8), randn(2, 4, 8), attn_mask=torch.ones(4, 3, dtype=bool)),
         r"attn_mask must have shape \(Tq, Tk\) = \(3, 4\) or \(batch, Tq, Tk\) = \(2, 3, 4\), got \(4, 3\)"),
        (lambda m: m(randn(2, 3, 8), randn(2, 4, 8), randn(2, 4, 8), attn_mask=torch.zeros(3, 4)),
         r"attn_mask must be a boolean tensor \(True = may attend\)"),
    ],
    ids=["query-size", "query-ndim", "key-value-length", "batch", "kpm-shape", "kpm-dtype", "attn-shape", "attn-dtype"],
)
def test_multihead_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call(MultiHeadAttention(8, 2))


def test_multihead_rejects_indivisible_heads():
    with pytest.raises(ValueError, match="d_model must be divisible by n_heads, got d_model = 10, n_heads = 3"):
        MultiHeadAttention(10, 3)


def test_load_rejects_other_modules():
    with pytest.raises(ValueError, match="sizes differ"):
        MultiHeadAttention(8, 2).load_torch_weights(nn.MultiheadAttention(8, 4, batch_first=True))
    with pytest.raises(ValueError, match="kdim = vdim = embed_dim"):
        MultiHeadAttention(8, 2).load_torch_weights(nn.MultiheadAttention(8, 2, kdim=5, batch_first=True))
    with pytest.raises(ValueError, match="same bias setting"):
        MultiHeadAttention(8, 2, bias=False).load_torch_weights(nn.MultiheadAttention(8, 2, batch_first=True))
    with pytest.raises(TypeError, match="torch.nn.MultiheadAttention"):
        MultiHeadAttention(8, 2).load_torch_weights(nn.Linear(8, 8))
