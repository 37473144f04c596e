"""The NTM's addressing, reading and writing against hand-written loops, plus properties; the copy task."""

import json
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attnlab import ntm, ntm_kernels
from attnlab.tasks import copy as copytask


def randw(batch: int, n: int, gen: torch.Generator, dtype=torch.float32) -> torch.Tensor:
    return torch.softmax(2 * torch.randn(batch, n, generator=gen, dtype=dtype), dim=-1)


@pytest.fixture
def gen() -> torch.Generator:
    return torch.Generator().manual_seed(0)


# --- reading and writing -------------------------------------------------------------------------------------


def test_read_is_weighted_sum_of_rows(gen):
    memory, w = torch.randn(3, 5, 4, generator=gen), randw(3, 5, gen)
    expected = torch.zeros(3, 4)
    for b in range(3):
        for i in range(5):
            expected[b] += w[b, i] * memory[b, i]
    torch.testing.assert_close(ntm.read(memory, w), expected)


def test_write_matches_loop_and_leaves_input_alone(gen):
    memory, w = torch.randn(2, 6, 3, generator=gen), randw(2, 6, gen)
    erase, add = torch.rand(2, 3, generator=gen), torch.randn(2, 3, generator=gen)
    before = memory.clone()
    expected = torch.empty_like(memory)
    for b in range(2):
        for i in range(6):
            for m in range(3):
                erased = memory[b, i, m] * (1 - w[b, i] * erase[b, m])
                expected[b, i, m] = erased + w[b, i] * add[b, m]
    torch.testing.assert_close(ntm.write(memory, w, erase, add), expected)
    assert torch.equal(memory, before)


def test_full_erase_with_full_focus_wipes_one_row_only(gen):
    memory = torch.randn(1, 4, 3, generator=gen)
    w = F.one_hot(torch.tensor([2]), 4).float()
    new = ntm.write(memory, w, erase=torch.ones(1, 3), add=torch.zeros(1, 3))
    assert torch.equal(new[0, 2], torch.zeros(3))
    torch.testing.assert_close(new[0, [0, 1, 3]], memory[0, [0, 1, 3]])
    added = ntm.write(memory, w, erase=torch.ones(1, 3), add=torch.tensor([[1.0, -2.0, 0.5]]))
    torch.testing.assert_close(added[0, 2], torch.tensor([1.0, -2.0, 0.5]))


def test_hand_checked_write_example():
    # Row 0 = (1, 2), row 1 = (3, 4); w = (0.5, 0.5); erase (1, 0); add (2, 2).
    memory = torch.tensor([[[1.0, 2.0], [3.0, 4.0]]])
    new = ntm.write(memory, torch.tensor([[0.5, 0.5]]), torch.tensor([[1.0, 0.0]]), torch.tensor([[2.0, 2.0]]))
    torch.testing.assert_close(new, torch.tensor([[[0.5 + 1.0, 2.0 + 1.0], [1.5 + 1.0, 4.0 + 1.0]]]))


# --- content addressing ---------------------------------------------------------------------------------------


def test_cosine_matches_torch_per_row(gen):
    memory, key = torch.randn(3, 7, 5, generator=gen), torch.randn(3, 5, generator=gen)
    expected = torch.stack([
        torch.stack([F.cosine_similarity(memory[b, i], key[b], dim=0) for i in range(7)]) for b in range(3)
    ])
    torch.testing.assert_close(ntm.cosine_similarity(memory, key), expected, atol=1e-6, rtol=1e-5)


def test_cosine_of_zero_rows_is_zero_with_finite_gradient(gen):
    memory = torch.randn(2, 4, 3, generator=gen)
    memory[:, 1] = 0.0
    memory.requires_grad_(True)
    key = torch.randn(2, 3, generator=gen, requires_grad=True)
    sim = ntm.cosine_similarity(memory, key)
    assert torch.equal(sim[:, 1].detach(), torch.zeros(2))
    w = ntm.content_addressing(memory, key, torch.full((2,), 5.0))
    w.pow(2).sum().backward()
    assert torch.isfinite(w).all() and torch.isfinite(memory.grad).all() and torch.isfinite(key.grad).all()
    zero_key = ntm.content_addressing(memory.detach(), torch.zeros(2, 3), torch.full((2,), 5.0))
    torch.testing.assert_close(zero_key, torch.full((2, 4), 0.25))  # a zero key matches nothing: uniform


def test_content_addressing_matches_loop(gen):
    memory, key = torch.randn(2, 6, 4, generator=gen), torch.randn(2, 4, generator=gen)
    beta = torch.tensor([0.5, 8.0])
    expected = torch.empty(2, 6)
    for b in range(2):
        cos = [float(memory[b, i] @ key[b] / (memory[b, i].norm() * key[b].norm())) for i in range(6)]
        exps = [math.exp(float(beta[b]) * c) for c in cos]
        expected[b] = torch.tensor([e / sum(exps) for e in exps])
    w = ntm.content_addressing(memory, key, beta)
    torch.testing.assert_close(w, expected, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(w.sum(-1), torch.ones(2))


def test_beta_zero_is_uniform_and_large_beta_finds_the_matching_row(gen):
    memory = torch.randn(1, 5, 4, generator=gen)
    key = 3 * memory[:, 3]
    torch.testing.assert_close(ntm.content_addressing(memory, key, torch.zeros(1)), torch.full((1, 5), 0.2))
    assert ntm.content_addressing(memory, key, torch.full((1,), 100.0))[0, 3] > 0.99


# --- interpolation, shift, sharpening ------------------------------------------------------------------------


def test_interpolate_matches_loop_and_endpoints(gen):
    wc, wp, g = randw(3, 5, gen), randw(3, 5, gen), torch.tensor([0.0, 0.3, 1.0])
    out = ntm.interpolate(wc, wp, g)
    for b in range(3):
        for i in range(5):
            assert math.isclose(out[b, i], g[b] * wc[b, i] + (1 - g[b]) * wp[b, i], rel_tol=1e-6)
    torch.testing.assert_close(out[0], wp[0])
    torch.testing.assert_close(out[2], wc[2])
    torch.testing.assert_close(out.sum(-1), torch.ones(3))


def loop_shift(w: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
    """w~(i) = sum_j w(j) s(i - j), with s indexed by the shift i - j taken circularly in [-k, k]."""
    batch, n = w.shape
    k = kernel.shape[1] // 2
    out = torch.zeros_like(w)
    for b in range(batch):
        for i in range(n):
            for j in range(n):
                for offset in range(-k, k + 1):
                    if (j + offset) % n == i:
                        out[b, i] += w[b, j] * kernel[b, offset + k]
    return out


@pytest.mark.parametrize("n,k", [(6, 1), (7, 2), (5, 0)])
def test_shift_matches_loop(gen, n, k):
    w = randw(3, n, gen)
    kernel = torch.softmax(torch.randn(3, 2 * k + 1, generator=gen), dim=-1)
    out = ntm.shift(w, kernel)
    torch.testing.assert_close(out, loop_shift(w, kernel))
    torch.testing.assert_close(out.sum(-1), torch.ones(3))


def test_pure_plus_one_shift_is_roll_by_one(gen):
    w = randw(4, 9, gen)
    plus_one = torch.tensor([[0.0, 0.0, 1.0]]).expand(4, 3)
    torch.testing.assert_close(ntm.shift(w, plus_one), torch.roll(w, 1, dims=-1))
    minus_one = torch.tensor([[1.0, 0.0, 0.0]]).expand(4, 3)
    torch.testing.assert_close(ntm.shift(w, minus_one), torch.roll(w, -1, dims=-1))
    last = F.one_hot(torch.tensor([8]), 9).float()  # the last row wraps around to row 0
    assert ntm.shift(last, plus_one[:1])[0, 0] == 1.0


def test_blur_kernel_on_a_focused_weighting():
    w = F.one_hot(torch.tensor([2]), 5).float()
    out = ntm.shift(w, torch.tensor([[0.2, 0.6, 0.2]]))
    torch.testing.assert_close(out, torch.tensor([[0.0, 0.2, 0.6, 0.2, 0.0]]))


def loop_sharpen(w: torch.Tensor, gamma: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(w)
    for b in range(w.shape[0]):
        powered = [float(w[b, i]) ** float(gamma[b]) for i in range(w.shape[1])]
        out[b] = torch.tensor([p / sum(powered) for p in powered])
    return out


def test_sharpen_matches_loop_and_gamma_one_is_identity(gen):
    w, gamma = randw(3, 6, gen), torch.tensor([1.0, 2.5, 10.0])
    out = ntm.sharpen(w, gamma)
    torch.testing.assert_close(out, loop_sharpen(w, gamma), atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(out[0], w[0])
    torch.testing.assert_close(out.sum(-1), torch.ones(3))
    assert (out[2].argmax() == w[2].argmax()) and out[2].max() > w[2].max()


def test_sharpen_keeps_zeros_zero_with_finite_gradient():
    w = torch.tensor([[0.0, 0.25, 0.75, 0.0]], requires_grad=True)
    gamma = torch.tensor([3.0], requires_grad=True)
    out = ntm.sharpen(w, gamma)
    assert out[0, 0] == 0 and out[0, 3] == 0
    (out * torch.arange(4.0)).sum().backward()
    assert torch.isfinite(w.grad).all() and torch.isfinite(gamma.grad).all()


def test_sharpen_does_not_underflow_and_all_zero_stays_zero():
    uniform = torch.full((1, 128), 1 / 128)
    torch.testing.assert_close(ntm.sharpen(uniform, torch.tensor([50.0])), uniform)
    assert torch.equal(ntm.sharpen(torch.zeros(2, 4), torch.tensor([1.0, 3.0])), torch.zeros(2, 4))


def test_address_is_the_four_steps_in_order(gen):
    memory, key, w_prev = torch.randn(2, 8, 3, generator=gen), torch.randn(2, 3, generator=gen), randw(2, 8, gen)
    beta, g, gamma = torch.tensor([2.0, 9.0]), torch.tensor([0.2, 0.9]), torch.tensor([1.5, 4.0])
    kernel = torch.softmax(torch.randn(2, 3, generator=gen), dim=-1)
    expected = loop_sharpen(loop_shift(ntm.interpolate(ntm.content_addressing(memory, key, beta), w_prev, g),
                                       kernel), gamma)
    out = ntm.address(memory, w_prev, key, beta, g, kernel, gamma)
    torch.testing.assert_close(out, expected, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(out.sum(-1), torch.ones(2))


@pytest.mark.parametrize("k", [0, 1, 2])
def test_address_heads_equals_address_on_each_head(gen, k):
    """The fused pipeline NTM.step runs against the four steps the chapter shows, head by head."""
    batch, heads, n, m = 3, 2, 7, 4
    d = dict(dtype=torch.float64)
    memory = torch.randn(batch, n, m, generator=gen, **d)
    memory[0, 2] = 0.0  # a zero row: cosine 0, not NaN
    w_prev = torch.softmax(3 * torch.randn(batch, heads, n, generator=gen, **d), -1)
    key = torch.randn(batch, heads, m, generator=gen, **d)
    beta = 10 * torch.rand(batch, heads, 1, generator=gen, **d)
    gate = torch.rand(batch, heads, 1, generator=gen, **d)
    kernel = torch.softmax(torch.randn(batch, heads, 2 * k + 1, generator=gen, **d), -1)
    gamma = 1 + 5 * torch.rand(batch, heads, 1, generator=gen, **d)
    out = ntm.address_heads(memory, w_prev, key, beta, gate, kernel, gamma)
    assert out.shape == (batch, heads, n)
    for h in range(heads):
        expected = ntm.address(memory, w_prev[:, h], key[:, h], beta[:, h, 0], gate[:, h, 0], kernel[:, h],
                               gamma[:, h, 0])
        torch.testing.assert_close(out[:, h], expected, rtol=1e-12, atol=1e-12)
    leaves = [x.requires_grad_(True) for x in (memory, w_prev, key, beta, gate, kernel, gamma)]
    assert torch.autograd.gradcheck(ntm.address_heads, leaves)


def test_address_heads_keeps_zeros_and_a_pure_shift_exact():
    """A one-hot weighting moved by a pure shift of +1 lands one row down (row N-1 wraps to row 0)."""
    memory = torch.zeros(1, 5, 2)  # all rows zero: content weights uniform; gate 0 keeps w_prev
    w_prev = torch.zeros(1, 1, 5)
    w_prev[0, 0, 4] = 1.0
    kernel = torch.tensor([[[0.0, 0.0, 1.0]]])
    one = torch.ones(1, 1, 1)
    out = ntm.address_heads(memory, w_prev, torch.ones(1, 1, 2), one, 0 * one, kernel, one)
    assert torch.equal(out, torch.tensor([[[1.0, 0.0, 0.0, 0.0, 0.0]]]))


def test_address_heads_gradient_equals_the_reference_steps(gen):
    """The hand-written gradient of the fused addressing against autograd through the four reference steps."""
    batch, heads, n, m = 2, 2, 6, 3
    d = dict(dtype=torch.float64)
    inputs = [
        torch.randn(batch, n, m, generator=gen, **d),
        torch.softmax(3 * torch.randn(batch, heads, n, generator=gen, **d), -1),
        torch.randn(batch, heads, m, generator=gen, **d),
        5 * torch.rand(batch, heads, 1, generator=gen, **d),
        torch.rand(batch, heads, 1, generator=gen, **d),
        torch.softmax(torch.randn(batch, heads, 3, generator=gen, **d), -1),
        1 + 3 * torch.rand(batch, heads, 1, generator=gen, **d),
    ]
    upstream = torch.randn(batch, heads, n, generator=gen, **d)
    fused = [x.clone().requires_grad_(True) for x in inputs]
    (ntm.address_heads(*fused) * upstream).sum().backward()
    ref = [x.clone().requires_grad_(True) for x in inputs]
    memory, w_prev, key, beta, gate, kernel, gamma = ref
    out = torch.stack([ntm.address(memory, w_prev[:, h], key[:, h], beta[:, h, 0], gate[:, h, 0], kernel[:, h],
                                   gamma[:, h, 0]) for h in range(heads)], dim=1)
    (out * upstream).sum().backward()
    for a, b in zip(fused, ref, strict=True):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-9, atol=1e-12)


def test_read_and_write_equal_read_then_write_in_values_and_gradients(gen):
    """The NTM's read and write with a hand-written gradient against the reference functions, and gradcheck."""
    d = dict(dtype=torch.float64)
    inputs = [torch.randn(3, 5, 4, generator=gen, **d), torch.stack([randw(3, 5, gen, torch.float64), randw(3, 5, gen, torch.float64)], 1),
              torch.rand(3, 4, generator=gen, **d), torch.rand(3, 4, generator=gen, **d) * 2 - 1]
    up_read, up_memory = torch.randn(3, 4, generator=gen, **d), torch.randn(3, 5, 4, generator=gen, **d)
    fused = [x.clone().requires_grad_(True) for x in inputs]
    r, memory = ntm_kernels.read_and_write(*fused)
    ((r * up_read).sum() + (memory * up_memory).sum()).backward()
    ref = [x.clone().requires_grad_(True) for x in inputs]
    expected_r, expected_memory = ntm.read(ref[0], ref[1][:, 0]), ntm.write(ref[0], ref[1][:, 1], *ref[2:])
    ((expected_r * up_read).sum() + (expected_memory * up_memory).sum()).backward()
    torch.testing.assert_close(r, expected_r, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(memory, expected_memory, rtol=1e-12, atol=1e-12)
    for a, b in zip(fused, ref, strict=True):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-12, atol=1e-12)
    assert torch.autograd.gradcheck(ntm_kernels.read_and_write, fused)


def test_lstm_cell_equals_torch_in_values_and_gradients(gen):
    """The controller's step with a hand-written gradient against nn.LSTMCell, and gradcheck."""
    torch.manual_seed(0)
    cell = nn.LSTMCell(5, 4).double()
    d = dict(dtype=torch.float64)
    inputs = [torch.randn(3, 5, generator=gen, **d), torch.randn(3, 4, generator=gen, **d),
              torch.randn(3, 4, generator=gen, **d)]
    up_h, up_c = torch.randn(3, 4, generator=gen, **d), torch.randn(3, 4, generator=gen, **d)
    grads = []
    for step in (lambda x, h, c: ntm_kernels.lstm_cell(cell, x, (h, c)), lambda x, h, c: cell(x, (h, c))):
        cell.zero_grad()
        leaves = [x.clone().requires_grad_(True) for x in inputs]
        h, c = step(*leaves)
        ((h * up_h).sum() + (c * up_c).sum()).backward()
        grads.append([h, c, *(x.grad for x in leaves), *(p.grad.clone() for p in cell.parameters())])
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    leaves = [x.clone().requires_grad_(True) for x in inputs]
    assert torch.autograd.gradcheck(lambda x, h, c: ntm_kernels.lstm_cell(cell, x, (h, c)), leaves)


def test_head_parameters_kernel_equals_the_layer_and_the_reference_activations(gen):
    """Both heads' parameters with a hand-written gradient against head_layer + ntm.head_parameters per head."""
    torch.manual_seed(0)
    layer = nn.Linear(6, 2 * (3 + 3 + 5)).double()  # M = 3, shifts -2..2
    layer.bias.data[:] = 30 * torch.randn(layer.bias.shape, generator=gen, dtype=torch.float64)  # both softplus regimes
    h0 = torch.randn(4, 6, generator=gen, dtype=torch.float64)
    ups = [torch.randn(4, 2, n, generator=gen, dtype=torch.float64) for n in (3, 1, 1, 5, 1)]
    results = []
    for fused in (True, False):
        layer.zero_grad()
        h = h0.clone().requires_grad_(True)
        if fused:
            out = ntm_kernels.head_parameters(h, layer, 2, 3)
        else:
            heads = [ntm.head_parameters(raw, 3) for raw in layer(h).view(4, 2, -1).unbind(1)]
            out = [torch.stack([hp[i] for hp in heads], 1).reshape(4, 2, -1) for i in range(5)]
        sum((o * u).sum() for o, u in zip(out, ups, strict=True)).backward()
        results.append([*out, h.grad, layer.weight.grad.clone(), layer.bias.grad.clone()])
    for a, b in zip(*results, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-7, atol=1e-9)
    h = h0.clone().requires_grad_(True)
    layer.bias.data[:] = torch.randn(layer.bias.shape, generator=gen, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda x: ntm_kernels.head_parameters(x, layer, 2, 3), (h,))


def test_address_heads_gives_zero_gradients_at_zero_weights():
    """A weighting that is exactly zero before sharpening stays zero, with zero, finite gradients."""
    memory = torch.zeros(1, 5, 2, requires_grad=True)
    w_prev = torch.zeros(1, 1, 5)
    w_prev[0, 0, 1] = 1.0
    w_prev.requires_grad_(True)
    one = torch.ones(1, 1, 1)
    kernel = torch.tensor([[[0.0, 1.0, 0.0]]], requires_grad=True)
    gamma = (2 * one).requires_grad_(True)
    out = ntm.address_heads(memory, w_prev, torch.ones(1, 1, 2), one, 0 * one, kernel, gamma)
    assert torch.equal(out, w_prev.detach())
    (out * torch.arange(5.0)).sum().backward()
    for x in (memory, w_prev, kernel, gamma):
        assert torch.isfinite(x.grad).all()


def test_gradcheck_float64():
    gen = torch.Generator().manual_seed(1)
    d = dict(dtype=torch.float64)

    def leaf(x):
        return x.detach().clone().requires_grad_(True)

    memory, key = leaf(torch.randn(2, 5, 3, generator=gen, **d)), leaf(torch.randn(2, 3, generator=gen, **d))
    w, w2 = leaf(randw(2, 5, gen, torch.float64)), leaf(randw(2, 5, gen, torch.float64))
    beta, gate, gamma = leaf(torch.tensor([1.5, 4.0], **d)), leaf(torch.tensor([0.3, 0.8], **d)), leaf(
        torch.tensor([1.0, 2.7], **d))
    kernel = leaf(torch.softmax(torch.randn(2, 3, generator=gen, **d), -1))
    erase, add = leaf(torch.rand(2, 3, generator=gen, **d)), leaf(torch.randn(2, 3, generator=gen, **d))
    gc = torch.autograd.gradcheck
    assert gc(ntm.cosine_similarity, (memory, key))
    assert gc(ntm.content_addressing, (memory, key, beta))
    assert gc(ntm.interpolate, (w, w2, gate))
    assert gc(ntm.shift, (w, kernel))
    assert gc(ntm.sharpen, (w, gamma))
    assert gc(ntm.read, (memory, w))
    assert gc(ntm.write, (memory, w, erase, add))
    assert gc(ntm.address, (memory, w2, key, beta, gate, kernel, gamma))
    raw = leaf(torch.randn(2, 3 + 3 + 3, generator=gen, **d))
    assert gc(lambda r: ntm.head_parameters(r, 3), (raw,))


@pytest.mark.parametrize("call,message", [
    (lambda: ntm.read(torch.zeros(2, 5, 3), torch.zeros(2, 4)), r"w must have shape \(batch, N\) = \(2, 5\)"),
    (lambda: ntm.read(torch.zeros(5, 3), torch.zeros(2, 5)), r"memory must have shape \(batch, N, M\)"),
    (lambda: ntm.write(torch.zeros(2, 5, 3), torch.zeros(2, 5), torch.zeros(2, 4), torch.zeros(2, 3)),
     r"erase must have shape \(batch, M\) = \(2, 3\), got \(2, 4\)"),
    (lambda: ntm.write(torch.zeros(2, 5, 3), torch.zeros(2, 5), torch.zeros(2, 3), torch.zeros(3)),
     r"add must have shape"),
    (lambda: ntm.content_addressing(torch.zeros(2, 5, 3), torch.zeros(2, 4), torch.ones(2)), r"key must have"),
    (lambda: ntm.content_addressing(torch.zeros(2, 5, 3), torch.zeros(2, 3), torch.ones(2, 1)), r"beta must"),
    (lambda: ntm.interpolate(torch.zeros(2, 5), torch.zeros(2, 4), torch.ones(2)), r"w_prev must have"),
    (lambda: ntm.interpolate(torch.zeros(2, 5), torch.zeros(2, 5), torch.ones(3)), r"gate must have"),
    (lambda: ntm.shift(torch.zeros(2, 5), torch.zeros(2, 2)), r"odd number of shifts, got \(2, 2\)"),
    (lambda: ntm.shift(torch.zeros(2, 5), torch.zeros(3, 3)), r"kernel must have shape \(batch, 2k\+1\)"),
    (lambda: ntm.shift(torch.zeros(5), torch.zeros(1, 3)), r"w must have shape \(batch, N\), got \(5,\)"),
    (lambda: ntm.sharpen(torch.zeros(2, 5), torch.ones(2, 5)), r"gamma must have shape \(batch,\)"),
    (lambda: ntm.head_parameters(torch.zeros(2, 9), 4), r"raw must have shape \(batch, M \+ 3 \+ 2k\+1\)"),
    (lambda: ntm.write_vectors(torch.zeros(2, 5)), r"raw must have shape \(batch, 2M\)"),
])
def test_bad_shapes_raise_clear_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_head_parameters_land_in_their_ranges(gen):
    raw = 10 * torch.randn(50, 4 + 3 + 3, generator=gen)
    p = ntm.head_parameters(raw, 4)
    torch.testing.assert_close(p.key, raw[:, :4])
    assert (p.beta >= 0).all() and ((p.gate >= 0) & (p.gate <= 1)).all() and (p.gamma >= 1).all()
    torch.testing.assert_close(p.kernel.sum(-1), torch.ones(50))
    torch.testing.assert_close(p.beta, F.softplus(raw[:, 4]))
    erase, add = ntm.write_vectors(raw[:, :8])
    assert ((erase >= 0) & (erase <= 1)).all() and (add.abs() <= 1).all() and erase.shape == (50, 4)


# --- the machine ---------------------------------------------------------------------------------------------


def small_ntm() -> ntm.NTM:
    torch.manual_seed(0)
    return ntm.NTM(3, 2, hidden_size=16, memory_rows=10, memory_width=4)


def test_ntm_shapes_trace_and_weightings():
    model = small_ntm()
    inputs = torch.randn(5, 7, 3)
    outputs, state, trace = model.run(inputs, trace=True)
    assert outputs.shape == (5, 7, 2) and state.memory.shape == (5, 10, 4) and state.weights.shape == (5, 2, 10)
    assert trace.read_weights.shape == (5, 7, 10) and trace.write_weights.shape == (5, 7, 10)
    assert trace.read_vectors.shape == (5, 7, 4) and trace.add_vectors.shape == (5, 7, 4)
    torch.testing.assert_close(trace.read_weights.sum(-1), torch.ones(5, 7))
    torch.testing.assert_close(trace.write_weights.sum(-1), torch.ones(5, 7))
    torch.testing.assert_close(model(inputs), outputs)
    with pytest.raises(ValueError, match=r"input_size = 3, got \(5, 7, 4\)"):
        model(torch.randn(5, 7, 4))


def test_initial_state_is_constant_memory_heads_on_row_zero_and_a_zero_controller_state():
    model = small_ntm()
    state = model.initial_state(3)
    assert torch.equal(state.memory, torch.full((3, 10, 4), model.memory_init))
    assert torch.equal(state.weights, torch.zeros(3, 2, 10).index_fill_(2, torch.tensor([0]), 1.0))
    torch.testing.assert_close(state.read, torch.full((3, 4), model.memory_init))
    assert all(torch.equal(x, torch.zeros(3, 16)) for x in state.controller)


def test_trace_records_the_head_parameters_that_produced_each_weighting():
    model = small_ntm()
    inputs = torch.randn(3, 6, 3)
    _, _, trace = model.run(inputs, trace=True)
    assert trace.gates.shape == trace.gammas.shape == trace.betas.shape == (3, 6, 2)
    assert trace.kernels.shape == (3, 6, 2, 3)
    assert ((trace.gates > 0) & (trace.gates < 1)).all() and (trace.gammas >= 1).all() and (trace.betas >= 0).all()
    torch.testing.assert_close(trace.kernels.sum(-1), torch.ones(3, 6, 2))
    state = model.initial_state(3)
    for t in range(6):  # step by step: split the controller's output by hand, head 0 reads and head 1 writes
        h, _ = model.controller(torch.cat([inputs[:, t], state.read], dim=-1), state.controller)
        raw = model.head_layer(h).reshape(3, 2, -1)
        for head in range(2):
            params = ntm.head_parameters(raw[:, head], model.memory_width)
            torch.testing.assert_close(trace.gates[:, t, head], params.gate)
            torch.testing.assert_close(trace.gammas[:, t, head], params.gamma)
            torch.testing.assert_close(trace.betas[:, t, head], params.beta)
            torch.testing.assert_close(trace.kernels[:, t, head], params.kernel)
            weights = ntm.address(state.memory, state.weights[:, head], *params)
            recorded = trace.read_weights if head == 0 else trace.write_weights
            torch.testing.assert_close(recorded[:, t], weights)
        _, state, _ = model.step(inputs[:, t], state)


def test_state_is_explicit_so_runs_can_be_split():
    model = small_ntm()
    inputs = torch.randn(2, 6, 3)
    whole, _, _ = model.run(inputs)
    first, state, _ = model.run(inputs[:, :4])
    second, _, _ = model.run(inputs[:, 4:], state)
    torch.testing.assert_close(torch.cat([first, second], dim=1), whole)
    torch.testing.assert_close(model.run(inputs)[0], whole)  # nothing remembered between calls


def test_both_heads_in_one_call_equal_one_head_at_a_time():
    model = small_ntm()
    state = model.initial_state(3)
    state = model.run(torch.randn(3, 4, 3), state)[1]  # a memory with content and heads that have moved
    x = torch.randn(3, 3)
    _, new_state, add = model.step(x, state)
    h, _ = model.controller(torch.cat([x, state.read], -1), state.controller)
    raw = model.head_layer(h).reshape(3, 2, -1)
    for head in range(2):
        expected = ntm.address(state.memory, state.weights[:, head], *ntm.head_parameters(raw[:, head], 4))
        torch.testing.assert_close(new_state.weights[:, head], expected)
    erase, add_expected = ntm.write_vectors(model.write_layer(h))
    torch.testing.assert_close(add, add_expected)
    torch.testing.assert_close(new_state.read, ntm.read(state.memory, new_state.weights[:, 0]))
    torch.testing.assert_close(new_state.memory, ntm.write(state.memory, new_state.weights[:, 1], erase, add))


def test_gradient_reaches_every_parameter_and_a_tiny_copy_is_learned():
    model = ntm.NTM(3, 2, hidden_size=32, memory_rows=8, memory_width=6)
    gen = torch.Generator().manual_seed(0)
    inputs, targets = copytask.copy_batch(8, 3, generator=gen, bits=2)
    batch = (inputs, targets)
    loss = copytask.copy_loss(model, batch)
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    first = loss.item()
    for _ in range(150):
        optimizer.zero_grad()
        loss = copytask.copy_loss(model, batch)
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.1 * first


def test_lstm_baseline_shapes():
    model = ntm.LSTMBaseline(9, 8, hidden_size=12, layers=2)
    assert model(torch.randn(4, 11, 9)).shape == (4, 11, 8)


# --- the copy task -------------------------------------------------------------------------------------------


def test_copy_batch_layout():
    inputs, targets = copytask.copy_batch(3, 4, generator=torch.Generator().manual_seed(0))
    assert inputs.shape == (3, 9, 9) and targets.shape == (3, 4, 8)
    assert torch.equal(inputs[:, :4, :8], targets) and torch.equal(inputs[:, :4, 8], torch.zeros(3, 4))
    assert torch.equal(inputs[:, 4], F.one_hot(torch.tensor(8), 9).float().expand(3, 9))
    assert torch.equal(inputs[:, 5:], torch.zeros(3, 4, 9))
    assert set(targets.unique().tolist()) == {0.0, 1.0}


def test_sampler_is_deterministic_per_step_and_in_range():
    a, b = copytask.copy_sampler(4, seed=1), copytask.copy_sampler(4, seed=1)
    lengths = set()
    for step in (5, 1, 3):
        (xa, ya), (xb, yb) = a(step), b(step)
        assert torch.equal(xa, xb) and torch.equal(ya, yb)
    for step in range(200):
        lengths.add(a(step)[1].shape[1])
    assert lengths == set(range(1, 21))
    assert not torch.equal(a(1)[0], copytask.copy_sampler(4, seed=2)(1)[0])
    with pytest.raises(ValueError, match="min_length <= max_length"):
        copytask.copy_sampler(4, seed=0, min_length=5, max_length=3)


def test_sampler_adds_all_zero_vectors_on_request_and_only_then():
    plain = copytask.copy_sampler(64, seed=3)
    zeroed = copytask.copy_sampler(64, seed=3, zero_vectors=0.25)
    shares = []
    for step in range(30):
        (x, y), (xz, yz) = plain(step), zeroed(step)
        length = y.shape[1]
        assert yz.shape == y.shape and xz.shape == x.shape
        # the inputs still carry the targets, the delimiter and the blank steps
        assert torch.equal(xz[:, :length, :8], yz) and torch.equal(xz[:, length:], x[:, length:])
        is_zero = yz.sum(-1) == 0
        # a vector is either the task's own or all zeros
        assert torch.equal(yz[~is_zero], y[~is_zero])
        shares.append(is_zero.float().mean().item())
    # 1/256 of the task's vectors are all zeros by chance; here about a quarter more
    assert 0.2 < sum(shares) / len(shares) < 0.3, shares
    with pytest.raises(ValueError, match="0 <= zero_vectors < 1"):
        copytask.copy_sampler(4, seed=0, zero_vectors=1.0)


def test_sampler_curriculum_grows_the_longest_length_then_draws_all():
    sampler = copytask.copy_sampler(2, seed=5, curriculum=100)
    plain = copytask.copy_sampler(2, seed=5)
    # the longest length allowed at each step, from 2 at step 0 to 20 at step 99
    longest = [1 + math.ceil(19 * (step + 1) / 100) for step in range(100)]
    assert longest[0] == 2 and longest[-1] == 20
    lengths = [sampler(step)[1].shape[1] for step in range(100)]
    assert all(1 <= n <= top for n, top in zip(lengths, longest, strict=True))
    assert max(lengths[:20]) <= 5 and max(lengths[80:]) > 10
    # after the curriculum, the batches are the task's own
    for step in (100, 150, 321):
        assert all(torch.equal(a, b) for a, b in zip(sampler(step), plain(step), strict=True))
    with pytest.raises(ValueError, match="curriculum >= 0"):
        copytask.copy_sampler(4, seed=0, curriculum=-1)


def test_bits_per_sequence_counts_wrong_bits_and_nan():
    targets = torch.tensor([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [0.0, 0.0]]])
    logits = torch.tensor([[[2.0, -1.0], [1.0, 3.0]], [[float("nan"), 1.0], [-1.0, 0.0]]])
    torch.testing.assert_close(copytask.bits_per_sequence(logits, targets), torch.tensor([1.0, 1.0]))


def test_cost_per_sequence_is_the_cross_entropy_in_bits():
    targets = torch.tensor([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [0.0, 0.0]]])
    logits = torch.tensor([[[2.0, -1.0], [1.0, 3.0]], [[0.0, 1.0], [-1.0, 0.5]]])
    p = torch.sigmoid(logits)
    by_hand = -(targets * torch.log2(p) + (1 - targets) * torch.log2(1 - p)).sum((1, 2))
    torch.testing.assert_close(copytask.cost_per_sequence(logits, targets), by_hand)
    # a logit of 0 costs exactly one bit; confident and right costs almost nothing; no overflow at +-100
    assert copytask.cost_per_sequence(torch.zeros(1, 1, 1), torch.ones(1, 1, 1)).item() == pytest.approx(1.0)
    huge = copytask.cost_per_sequence(torch.full((1, 2, 1), 100.0), torch.tensor([[[1.0], [0.0]]]))
    assert huge.item() == pytest.approx(100 / math.log(2), rel=1e-5)
    with pytest.raises(ValueError, match="like targets"):
        copytask.cost_per_sequence(torch.zeros(1, 2, 3), torch.zeros(1, 2, 2))


class Oracle(nn.Module):
    """Outputs the input vectors again during the last L steps (as logits +-5): a perfect copier."""

    def forward(self, inputs):
        length = (inputs.shape[1] - 1) // 2
        out = torch.zeros(inputs.shape[0], inputs.shape[1], 8)
        out[:, -length:] = 10 * inputs[:, :length, :8] - 5
        return out


def test_evaluate_lengths_on_a_perfect_and_a_silent_model():
    assert copytask.evaluate_lengths(Oracle(), [1, 7, 30], n=4) == {1: 0.0, 7: 0.0, 30: 0.0}
    silent = copytask.evaluate_lengths(lambda_module(lambda x: -torch.ones(x.shape[0], x.shape[1], 8)), [10], n=64)
    assert abs(silent[10] - 40) < 5  # it misses every 1, about half of 80 bits


def test_evaluate_copy_cost_is_small_for_a_perfect_model_and_one_bit_per_bit_for_a_silent_one():
    perfect = copytask.evaluate_copy(Oracle(), [3, 12], n=4)["cost"]
    per_bit = math.log2(1 + math.exp(-5))  # the oracle's logits are +-5: right, with probability 0.993
    assert perfect == pytest.approx({3: 3 * 8 * per_bit, 12: 12 * 8 * per_bit}, rel=1e-5)
    silent = copytask.evaluate_copy(lambda_module(lambda x: torch.zeros(x.shape[0], x.shape[1], 8)), [10], n=8)["cost"]
    assert silent[10] == pytest.approx(80.0)  # probability 1/2 for each of the 80 bits


def test_evaluate_copy_counts_sequences_without_a_wrong_bit():
    assert copytask.evaluate_copy(Oracle(), [5, 20], n=8)["perfect"] == {5: 1.0, 20: 1.0}
    silent = lambda_module(lambda x: -torch.ones(x.shape[0], x.shape[1], 8))
    assert copytask.evaluate_copy(silent, [10], n=16)["perfect"] == {10: 0.0}

    def one_bad_sequence(inputs):  # the oracle, with every bit of the first sequence flipped
        out = Oracle()(inputs)
        out[0] = -out[0]
        return out

    assert copytask.evaluate_copy(lambda_module(one_bad_sequence), [6], n=4)["perfect"] == {6: 0.75}


def lambda_module(fn):
    class Wrapped(nn.Module):
        def forward(self, inputs):
            return fn(inputs)

    return Wrapped()


def test_train_copy_is_deterministic_and_keeps_the_best_checkpoint():
    def run():
        torch.manual_seed(0)
        model = ntm.LSTMBaseline(9, 8, hidden_size=8, layers=1)
        history = copytask.train_copy(model, steps=6, seed=3, eval_every=3)
        return model, history

    (m1, h1), (_, h2) = run(), run()
    assert h1.loss == h2.loss and [e["val_bits"] for e in h1.evals] == [e["val_bits"] for e in h2.evals]
    assert len(h1.evals) == 2 and h1.best_step in (3, 6) and h1.examples == 6 * 32
    best = min(h1.evals, key=lambda e: e["val_loss"])
    val_generator = torch.Generator().manual_seed(3 + 10_000)
    losses = []
    for length in copytask.VAL_LENGTHS:
        inputs, targets = copytask.copy_batch(32, length, generator=val_generator)
        with torch.no_grad():
            losses.append(copytask.sequence_loss(copytask.copy_outputs(m1(inputs), targets), targets).item())
    assert math.isclose(sum(losses) / len(losses), best["val_loss"], rel_tol=1e-5)


def test_sequence_loss_is_summed_per_sequence_and_averaged_over_the_batch():
    gen = torch.Generator().manual_seed(0)
    logits, targets = torch.randn(4, 3, 2, generator=gen), torch.randint(0, 2, (4, 3, 2), generator=gen).float()
    per_sequence = [sum(F.binary_cross_entropy_with_logits(logits[b, t, i], targets[b, t, i]).item()
                        for t in range(3) for i in range(2)) for b in range(4)]
    assert math.isclose(copytask.sequence_loss(logits, targets).item(), sum(per_sequence) / 4, rel_tol=1e-5)


def test_experiment_prints_a_table_and_counts_failures(capsys):
    from attnlab.experiments import ntm_copy

    ntm_copy.main(["--seeds", "2", "--steps", "1", "--eval-sequences", "1"])
    out = capsys.readouterr().out
    assert out.count("| length | seed 0 | seed 1 | mean | std |") == 2
    assert "percentage of the test sequences with at least one wrong bit" in out
    assert all(f"| {n} |" in out for n in (10, 20, 30, 40, 50, 60))
    assert "seeds meeting the target (< 0.1 bits at lengths 10 and 20, < 1 at 40): 0 of 2" in out
    assert "torch " + torch.__version__ in out
    solved = {10: 0.0, 20: 0.09, 30: 5.0, 40: 0.9, 50: 9.0, 60: 9.0}
    assert ntm_copy.met_target(solved)
    assert not ntm_copy.met_target({**solved, 10: 0.1})  # the bounds are strict
    assert not ntm_copy.met_target({**solved, 40: 1.0})
    table = {"a": {n: 1.0 for n in ntm_copy.LENGTHS}, "b": {n: 3.0 for n in ntm_copy.LENGTHS}}
    assert "| 10 | 1.00 | 3.00 | 2.00 | 1.41 |" in ntm_copy.table(table)
    assert "| 10 | 1.0 | 3.0 | 2.0 | 1.4 |" in ntm_copy.table(table, digits=1)
    ntm_copy.main(["--model", "lstm", "--seeds", "1", "--steps", "1", "--eval-sequences", "1"])
    assert "LSTM copy task" in capsys.readouterr().out


def test_experiment_with_jobs_trains_the_same_seeds_as_one_by_one(tmp_path):
    """--jobs N trains each seed in its own process on one thread: the same runs, the same record."""
    from attnlab.experiments import ntm_copy

    records = {}
    for jobs in ("1", "2"):
        path = tmp_path / f"jobs{jobs}.json"
        ntm_copy.main(["--seeds", "2", "--steps", "2", "--eval-sequences", "2", "--jobs", jobs, "--json", str(path)])
        seeds = json.loads(path.read_text())["results"]["seeds"]
        records[jobs] = {seed: (run["test"], run["validation"]) for seed, run in seeds.items()}
    assert list(records["2"]) == ["0", "1"] and records["1"] == records["2"]


def test_experiment_changes_the_recipe_and_evaluates_on_validation_sequences(capsys, monkeypatch):
    from attnlab.experiments import ntm_copy

    calls = []

    def fake_train(model, **kwargs):
        calls.append(kwargs)
        return copytask.train_copy(model, **{**kwargs, "steps": 1})

    seeds = []
    real_evaluate = ntm_copy.evaluate_copy

    def spy_evaluate(model, lengths, *, n, seed):
        seeds.append(seed)
        return real_evaluate(model, lengths, n=n, seed=seed)

    monkeypatch.setattr(ntm_copy, "train_copy", fake_train)
    monkeypatch.setattr(ntm_copy, "evaluate_copy", spy_evaluate)
    ntm_copy.main(["--seeds", "1", "--steps", "1", "--eval-sequences", "1"])
    ntm_copy.main(["--seeds", "1", "--steps", "1", "--eval-sequences", "1", "--validation",
                   "--lr", "2e-3", "--lr-drop", "0.15", "--zero-vectors", "0.05",
                   "--curriculum", "7"])
    out = capsys.readouterr().out
    # the default recipe is train_copy's own, and it is evaluated on the test sequences
    assert (calls[0]["lr"], calls[0]["lr_drop"]) == (1e-3, 1.0) and "zero_vectors" not in calls[0]
    assert (calls[1]["lr"], calls[1]["lr_drop"], calls[1]["zero_vectors"]) == (2e-3, 0.15, 0.05)
    assert calls[1]["curriculum"] == 7 and "curriculum" not in calls[0]
    # every seed is evaluated on both sets; --validation prints the validation tables
    assert seeds == [ntm_copy.TEST_SEED, ntm_copy.VALIDATION_SEED] * 2
    assert ntm_copy.TEST_SEED != ntm_copy.VALIDATION_SEED
    assert "1 test sequences per length" in out and "1 validation sequences per length" in out
    assert "learning rate 0.001 throughout" in out
    assert "learning rate 0.002 (times 0.15 once validation is below 1 bit)" in out and "probability 0.05" in out
    assert "curriculum over 7 steps" in out


def test_experiment_writes_a_record_that_makes_the_reproducing_tables(tmp_path, capsys):
    from attnlab.experiments import ntm_copy, record

    path = tmp_path / "ntm.json"
    ntm_copy.main(["--seeds", "2", "--steps", "1", "--eval-sequences", "2", "--json", str(path)])
    printed = capsys.readouterr().out
    data = record.load(path)
    assert data["command"].endswith(f"ntm-copy --seeds 2 --steps 1 --eval-sequences 2 --json {path}")
    assert data["torch"] == torch.__version__ and data["machine"]["torch_threads"] == 1
    seeds = data["results"]["seeds"]
    assert list(seeds) == ["0", "1"] and set(seeds["0"]) == {"test", "validation", "seconds"}
    text = ntm_copy.markdown(data)
    # the page's table is the one the command printed, from the same test measures
    assert ntm_copy.table({s: {int(n): b for n, b in r["test"]["bits"].items()} for s, r in seeds.items()}) in text
    assert text.split("| 10 |")[1].split("\n")[0] in printed
    assert "Seeds that copy on the test sequences" in text and "on the validation sequences" in text
    assert text.endswith(record.provenance(data))
    path.write_text('{"format": 0}')
    with pytest.raises(ValueError, match="not an experiment record"):
        record.load(path)


def test_plots_of_weightings_and_sequences_label_their_axes():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from attnlab.plot import sequence_images, weighting_panels

    fig = weighting_panels({"a": torch.full((5,), 0.2), "b": F.one_hot(torch.tensor(2), 5).float()}, ncols=1)
    assert [ax.get_xlabel() for ax in fig.axes] == ["memory row", "memory row"]
    fig = sequence_images({"x": torch.rand(7, 3), "y": torch.rand(4, 3)}, ylabel="bit", cbar_label="P")
    assert fig.axes[0].get_ylabel() == "bit" and fig.axes[-1].get_ylabel() == "P"  # the last axis: colour bar
    with pytest.raises(ValueError, match=r"panel 'x' must be a weighting of shape \(N,\)"):
        weighting_panels({"x": torch.rand(2, 3)})
    with pytest.raises(ValueError, match=r"panel 'x' must have shape \(T, channels\)"):
        sequence_images({"x": torch.rand(3)})
    plt.close("all")


def test_first_under_finds_the_first_measure_below_the_threshold_in_steps():
    from attnlab.experiments.neural_turing_machines import first_under

    assert first_under([40.0, 3.0, 0.5, 2.0, 0.1], every=50) == 150  # the third measure, at step 150
    assert first_under([0.9]) == 50
    assert first_under([1.0, 1.0]) is None  # "under" is strict
    assert first_under([5.0, 0.4], bits=0.5, every=10) == 20
