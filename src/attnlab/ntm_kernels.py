"""The NTM's step as four operations with hand-written gradients (chapter 10).

Training the NTM runs its controller, its heads' parameters, the addressing of
both heads, a read and a write once per time step: a few dozen small tensor
operations each, whose gradient bookkeeping, recorded one operation at a time, costs
more than their arithmetic. Here each is one ``torch.autograd.Function`` whose
backward pass is derived by hand, so that autograd records one operation for each.
They compute the same numbers as ``torch.nn.LSTMCell`` and the reference functions
:func:`attnlab.ntm.head_parameters`, :func:`attnlab.ntm.address`,
:func:`attnlab.ntm.read` and :func:`attnlab.ntm.write`, values and gradients (up to
rounding; tested with ``gradcheck`` and against the references).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F


def _softmax_backward(p: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """Gradient with respect to the logits of ``p = softmax(logits)`` over the last
    dimension."""
    return p * (grad - (p * grad).sum(-1, keepdim=True))


class AddressHeads(torch.autograd.Function):
    """Content focus, interpolation, circular shift and sharpening for ``H`` heads
    on one memory; shapes as in :func:`attnlab.ntm.address_heads`, which applies it;
    ``eps`` is added to every squared norm, as in
    :func:`attnlab.ntm.cosine_similarity`."""

    @staticmethod
    def forward(
        ctx: Any,
        memory: torch.Tensor,
        w_prev: torch.Tensor,
        key: torch.Tensor,
        beta: torch.Tensor,
        gate: torch.Tensor,
        kernel: torch.Tensor,
        gamma: torch.Tensor,
        eps: float,
    ) -> torch.Tensor:
        dot = torch.bmm(key, memory.transpose(1, 2))  # (batch, H, N)
        row_norm = ((memory * memory).sum(-1) + eps).rsqrt().unsqueeze(1)  # 1/|M(i)|
        key_norm = ((key * key).sum(-1, keepdim=True) + eps).rsqrt()  # 1/|k|
        cosine = dot * row_norm * key_norm
        w_content = torch.softmax(beta * cosine, dim=-1)
        w_gated = torch.lerp(w_prev, w_content, gate)
        k = kernel.shape[-1] // 2
        rolled = [w_gated.roll(j - k, -1) for j in range(2 * k + 1)]
        w_shifted = rolled[0] * kernel[..., :1]
        for j in range(1, 2 * k + 1):
            w_shifted = torch.addcmul(w_shifted, rolled[j], kernel[..., j : j + 1])
        # log w of w clamped to the smallest float: an entry below it has a zero
        # gradient, and a zero entry (logit -inf) stays zero.
        tiny = torch.finfo(w_shifted.dtype).tiny
        log_w = w_shifted.clamp_min(tiny).log()
        logits = (gamma * log_w).masked_fill(w_shifted == 0, -torch.inf)
        w = torch.softmax(logits, dim=-1)
        ctx.save_for_backward(
            memory, key, w_prev, beta, gate, kernel, gamma, dot, row_norm, key_norm,
            cosine, w_content, w_gated, w_shifted, log_w, w,
        )  # fmt: skip
        return w

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        (
            memory, key, w_prev, beta, gate, kernel, gamma, dot, row_norm, key_norm,
            cosine, w_content, w_gated, w_shifted, log_w, w,
        ) = ctx.saved_tensors  # fmt: skip
        # Sharpening: w = softmax(gamma * log w_shifted).
        d_logits = _softmax_backward(w, grad)
        d_gamma = (d_logits * log_w).sum(-1, keepdim=True)
        clamped = w_shifted < torch.finfo(w_shifted.dtype).tiny
        d_shifted = (d_logits * gamma / w_shifted).masked_fill(clamped, 0.0)
        # Shift: w_shifted = sum_j roll(w_gated, j - k) * kernel_j.
        k = kernel.shape[-1] // 2
        d_kernel = torch.cat(
            [
                (d_shifted * w_gated.roll(j - k, -1)).sum(-1, keepdim=True)
                for j in range(2 * k + 1)
            ],
            dim=-1,
        )
        d_gated = d_shifted.roll(k, -1) * kernel[..., :1]
        for j in range(1, 2 * k + 1):
            d_gated = torch.addcmul(
                d_gated, d_shifted.roll(k - j, -1), kernel[..., j : j + 1]
            )
        # Interpolation: w_gated = w_prev + gate * (w_content - w_prev).
        d_gate = (d_gated * (w_content - w_prev)).sum(-1, keepdim=True)
        d_prev = d_gated * (1 - gate)
        d_z = _softmax_backward(w_content, d_gated * gate)
        # Content focus: softmax(beta * dot * row_norm * key_norm).
        d_beta = (d_z * cosine).sum(-1, keepdim=True)
        d_cosine = d_z * beta
        d_dot = d_cosine * row_norm * key_norm
        # d(x^2 + eps)^(-1/2) / dx = -x (x^2 + eps)^(-3/2)
        d_row = (d_cosine * dot * key_norm).sum(1)  # (batch, N)
        # (batch, H, 1)
        d_key_norm = (d_cosine * dot * row_norm).sum(-1, keepdim=True)
        d_memory = torch.bmm(d_dot.transpose(1, 2), key)
        d_memory = d_memory - memory * (d_row * row_norm.squeeze(1) ** 3).unsqueeze(
            -1
        )
        d_key = torch.bmm(d_dot, memory) - key * (d_key_norm * key_norm**3)
        return d_memory, d_prev, d_key, d_beta, d_gate, d_kernel, d_gamma, None


class _ReadWrite(torch.autograd.Function):
    """Read with head 0's weighting, then erase and add with head 1's, on the same
    memory: ``r = sum_i w_0(i) M(i)`` and ``M + w_1 (a - M e) = M (1 - w_1 e) + w_1
    a``."""

    @staticmethod
    def forward(
        ctx: Any,
        memory: torch.Tensor,
        weights: torch.Tensor,
        erase: torch.Tensor,
        add: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        read = torch.bmm(weights[:, :1], memory).squeeze(1)
        update = torch.addcmul(
            add.unsqueeze(1), memory, erase.unsqueeze(1), value=-1
        )
        ctx.save_for_backward(memory, weights, erase, update)
        return read, torch.addcmul(memory, weights[:, 1].unsqueeze(-1), update)

    @staticmethod
    def backward(
        ctx: Any, d_read: torch.Tensor, grad: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        memory, weights, erase, update = ctx.saved_tensors
        weighted = grad * weights[:, 1].unsqueeze(-1)
        d_memory = torch.addcmul(grad, weighted, erase.unsqueeze(1), value=-1)
        d_memory = torch.addcmul(
            d_memory, weights[:, 0].unsqueeze(-1), d_read.unsqueeze(1)
        )
        d_weights = torch.stack(
            [
                torch.bmm(memory, d_read.unsqueeze(-1)).squeeze(-1),
                (grad * update).sum(-1),
            ],
            dim=1,
        )
        d_erase = -(weighted * memory).sum(1)
        return d_memory, d_weights, d_erase, weighted.sum(1)


def read_and_write(
    memory: torch.Tensor,
    weights: torch.Tensor,
    erase: torch.Tensor,
    add: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`attnlab.ntm.read` with head 0's weighting and :func:`attnlab.ntm.write`
    with head 1's, both on memory ``(batch, N, M)``: ``weights (batch, 2, N)``,
    erase and add vectors ``(batch, M)`` -> ``(read vector (batch, M), new
    memory)``."""
    return _ReadWrite.apply(memory, weights, erase, add)


class _LSTMCell(torch.autograd.Function):
    """One step of ``torch.nn.LSTMCell`` (gates in its order: input, forget, cell,
    output)."""

    @staticmethod
    def forward(
        ctx: Any,
        x: torch.Tensor,
        h: torch.Tensor,
        c: torch.Tensor,
        weight_ih: torch.Tensor,
        weight_hh: torch.Tensor,
        bias_ih: torch.Tensor,
        bias_hh: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        gates = torch.addmm(bias_ih + bias_hh, x, weight_ih.t())
        gates = torch.addmm(gates, h, weight_hh.t())
        i, f, g, o = gates.chunk(4, dim=-1)
        i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
        c_new = torch.addcmul(f * c, i, g)
        tanh_c = c_new.tanh()
        ctx.save_for_backward(x, h, c, weight_ih, weight_hh, i, f, g, o, tanh_c)
        return o * tanh_c, c_new

    @staticmethod
    def backward(
        ctx: Any, d_h_new: torch.Tensor, d_c_new: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        x, h, c, weight_ih, weight_hh, i, f, g, o, tanh_c = ctx.saved_tensors
        d_c = d_c_new + d_h_new * o * (1 - tanh_c * tanh_c)
        d_gates = torch.cat(
            [
                d_c * g * i * (1 - i),
                d_c * c * f * (1 - f),
                d_c * i * (1 - g * g),
                d_h_new * tanh_c * o * (1 - o),
            ],
            dim=-1,
        )
        d_bias = d_gates.sum(0)
        return (
            d_gates @ weight_ih,
            d_gates @ weight_hh,
            d_c * f,
            d_gates.t() @ x,
            d_gates.t() @ h,
            d_bias,
            d_bias,
        )


def lstm_cell(
    cell: torch.nn.LSTMCell,
    x: torch.Tensor,
    state: tuple[torch.Tensor, torch.Tensor],
) -> tuple[torch.Tensor, torch.Tensor]:
    """``cell(x, state)`` for an ``nn.LSTMCell`` with biases: ``x (batch, input)``,
    ``state = (h, c)``, each ``(batch, hidden)`` -> the new ``(h, c)``."""
    return _LSTMCell.apply(
        x, *state, cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh
    )


class _HeadParameters(torch.autograd.Function):
    """The heads' linear layer and the activations of
    :func:`attnlab.ntm.head_parameters`, for ``H`` heads at once."""

    @staticmethod
    def forward(
        ctx: Any,
        h: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor,
        heads: int,
        memory_width: int,
    ) -> tuple[torch.Tensor, ...]:
        raw = torch.addmm(bias, h, weight.t()).view(h.shape[0], heads, -1)
        m = memory_width
        key = raw[..., :m]
        beta, gate, gamma = (raw[..., j : j + 1] for j in range(m, m + 3))
        kernel = torch.softmax(raw[..., m + 3 :], dim=-1)
        gate = gate.sigmoid()
        ctx.save_for_backward(
            h, weight, beta.sigmoid(), gate, gamma.sigmoid(), kernel
        )
        ctx.memory_width = m
        return key, F.softplus(beta), gate, kernel, 1 + F.softplus(gamma)

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        h, weight, beta_slope, gate, gamma_slope, kernel = ctx.saved_tensors
        d_key, d_beta, d_gate, d_kernel, d_gamma = grads
        d_raw = torch.cat(
            [
                d_key,
                d_beta * beta_slope,  # softplus'(x) = sigmoid(x)
                d_gate * gate * (1 - gate),
                d_gamma * gamma_slope,
                _softmax_backward(kernel, d_kernel),
            ],
            dim=-1,
        ).flatten(1)
        return d_raw @ weight, d_raw.t() @ h, d_raw.sum(0), None, None


def head_parameters(
    h: torch.Tensor, layer: torch.nn.Linear, heads: int, memory_width: int
) -> tuple[torch.Tensor, ...]:
    """:func:`attnlab.ntm.head_parameters` of ``layer(h)`` for ``heads`` heads:
    ``h (batch, hidden)`` -> key ``(batch, H, M)``, beta, gate ``(batch, H, 1)``,
    kernel ``(batch, H, 2k+1)``, gamma ``(batch, H, 1)``."""
    return _HeadParameters.apply(h, layer.weight, layer.bias, heads, memory_width)
