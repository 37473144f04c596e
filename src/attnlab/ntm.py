"""The Neural Turing Machine of Graves, Wayne and Danihelka (2014), read top to
bottom like its section 3.

Memory is a matrix ``(batch, N, M)``: ``N`` rows (locations) of width ``M``. A head
looks at memory through a weighting ``w (batch, N)`` over the rows (non-negative,
summing to 1). Reading and writing (3.1, 3.2) are functions of memory and a
weighting; the weighting itself comes out of four addressing steps (3.3): content
focus, interpolation with the previous weighting, a circular shift, and sharpening.
Every step is a pure, batched function of tensors, so each can be tested and plotted
on its own. The controller (an LSTM) emits the parameters of every step; :class:`NTM`
wires it all together, with the whole state passed in and out explicitly
(:class:`NTMState`), never kept inside the module between calls.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from attnlab import ntm_kernels
from attnlab._validate import check_ndim, check_shape, shape_of

EPS = 1e-8


def _check_weighting(name: str, w: torch.Tensor) -> None:
    check_ndim(name, w, "(batch, N)", ndim=2)


def _check_per_batch(name: str, x: torch.Tensor, batch: int) -> None:
    check_shape(name, x, (batch,), "(batch,)")


# --- 3.1 Reading
# -----------------------------------------------------------------------------------


def read(memory: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Read vector ``r = sum_i w(i) M(i)``: memory ``(batch, N, M)``, weighting
    ``(batch, N)`` -> ``(batch, M)``."""
    check_ndim("memory", memory, "(batch, N, M)", ndim=3)
    check_shape("w", w, memory.shape[:2], "(batch, N)")
    return (w.unsqueeze(-1) * memory).sum(1)  # weight row i by w(i), add the rows


# --- 3.2 Writing: erase, then add
# -----------------------------------------------------------------------------


def write(
    memory: torch.Tensor, w: torch.Tensor, erase: torch.Tensor, add: torch.Tensor
) -> torch.Tensor:
    """Erase then add: ``M'(i) = M(i) * (1 - w(i) e) + w(i) a``.

    memory ``(batch, N, M)``, weighting ``w (batch, N)``, erase vector ``e (batch,
    M)`` with entries in [0, 1], add vector ``a (batch, M)``. Returns the new memory
    ``(batch, N, M)``; the input is not modified.
    """
    check_ndim("memory", memory, "(batch, N, M)", ndim=3)
    batch, n_rows, width = memory.shape
    check_shape("w", w, (batch, n_rows), "(batch, N)")
    check_shape("erase", erase, (batch, width), "(batch, M)")
    check_shape("add", add, (batch, width), "(batch, M)")
    w = w.unsqueeze(-1)  # (batch, N, 1): one weight per row, broadcast along the row
    return memory * (1 - w * erase.unsqueeze(1)) + w * add.unsqueeze(1)


# --- 3.3.1 Content addressing
# ---------------------------------------------------------------------------------


def cosine_similarity(
    memory: torch.Tensor, key: torch.Tensor, eps: float = EPS
) -> torch.Tensor:
    """Cosine of the angle between ``key (batch, M)`` and every row of ``memory
    (batch, N, M)`` -> ``(batch, N)``.

    Each norm is computed as ``sqrt(||x||^2 + eps)``: a zero row (or key) then has
    similarity exactly 0, and the function stays smooth there, so neither the value
    nor the gradient becomes NaN.
    """
    check_ndim("memory", memory, "(batch, N, M)", ndim=3)
    check_shape("key", key, (memory.shape[0], memory.shape[2]), "(batch, M)")
    dot = torch.einsum("bnm,bm->bn", memory, key)
    row_norm = (memory.pow(2).sum(-1) + eps).sqrt()  # (batch, N)
    key_norm = (key.pow(2).sum(-1, keepdim=True) + eps).sqrt()  # (batch, 1)
    return dot / (row_norm * key_norm)


def content_addressing(
    memory: torch.Tensor, key: torch.Tensor, beta: torch.Tensor
) -> torch.Tensor:
    """Content weighting ``w_c = softmax_i(beta * cos(key, M(i)))``.

    memory ``(batch, N, M)``, key ``(batch, M)``, key strength ``beta (batch,)`` (>=
    0; larger = sharper focus). Returns ``(batch, N)``.
    """
    similarity = cosine_similarity(memory, key)
    _check_per_batch("beta", beta, memory.shape[0])
    return torch.softmax(beta.unsqueeze(-1) * similarity, dim=-1)


# --- 3.3.2 Location addressing: interpolation, shift, sharpening
# ----------------------------------------------


def interpolate(
    w_content: torch.Tensor, w_prev: torch.Tensor, gate: torch.Tensor
) -> torch.Tensor:
    """Gated weighting ``w_g = g w_c + (1 - g) w_prev``: ``(batch, N)``, ``(batch,
    N)``, gate ``(batch,)`` in [0, 1]."""
    _check_weighting("w_content", w_content)
    check_shape("w_prev", w_prev, w_content.shape, "(batch, N) like w_content")
    _check_per_batch("gate", gate, w_content.shape[0])
    g = gate.unsqueeze(-1)
    return g * w_content + (1 - g) * w_prev


def shift(w: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
    """Circular convolution ``w~(i) = sum_j w(j) s(i - j)`` of ``w (batch, N)`` with
    ``kernel (batch, 2k+1)``.

    Kernel entry ``j`` is the weight of a shift by ``j - k`` rows: with ``k = 1`` the
    entries are the shifts (-1, 0, +1), and a kernel (0, 0, 1) moves all weight from
    row i to row i+1 (row N-1 wraps to row 0). The result sums to ``sum(w) *
    sum(kernel)``, so a weighting stays a weighting under a kernel that sums to 1.
    """
    _check_weighting("w", w)
    check_ndim("kernel", kernel, "(batch, 2k+1)", ndim=2)
    if kernel.shape[0] != w.shape[0] or kernel.shape[1] % 2 == 0:
        raise ValueError(
            f"kernel must have shape (batch, 2k+1) with batch = {w.shape[0]} and an"
            f" odd number of shifts, got {shape_of(kernel)}"
        )
    k = kernel.shape[1] // 2
    # Column j of `shifted` is w moved by j - k rows; one roll per shift, none per
    # batch element.
    shifted = torch.stack(
        [torch.roll(w, j - k, dims=-1) for j in range(kernel.shape[1])], dim=-1
    )
    return (shifted * kernel.unsqueeze(1)).sum(-1)


def sharpen(w: torch.Tensor, gamma: torch.Tensor) -> torch.Tensor:
    """Sharpened weighting ``w(i)^gamma / sum_j w(j)^gamma``: ``w (batch, N)`` >= 0,
    ``gamma (batch,)`` > 0.

    ``gamma = 1`` changes nothing; a larger ``gamma`` moves weight to the largest
    entries. Zeros stay zero (``0^gamma = 0``, with a zero, not NaN, gradient). ``w``
    is first divided by its maximum, which changes nothing mathematically but keeps
    ``w^gamma`` from underflowing to all zeros for large ``gamma`` (a uniform
    weighting over 128 rows stays uniform at ``gamma = 50``). An all-zero row stays
    all zero.
    """
    _check_weighting("w", w)
    _check_per_batch("gamma", gamma, w.shape[0])
    tiny = torch.finfo(w.dtype).tiny
    scaled = w / w.amax(-1, keepdim=True).clamp_min(tiny)  # largest entry 1
    powered = scaled.pow(gamma.unsqueeze(-1))
    return powered / powered.sum(-1, keepdim=True).clamp_min(tiny)


# --- 3.3 The whole addressing pipeline on one page
# -------------------------------------------------------------


def address(
    memory: torch.Tensor,
    w_prev: torch.Tensor,
    key: torch.Tensor,
    beta: torch.Tensor,
    gate: torch.Tensor,
    kernel: torch.Tensor,
    gamma: torch.Tensor,
) -> torch.Tensor:
    """One head's new weighting ``(batch, N)``: content focus, interpolation,
    circular shift, sharpening."""
    # where is the content like the key?
    w_content = content_addressing(memory, key, beta)
    w_gated = interpolate(w_content, w_prev, gate)  # ... or stay where the head was?
    w_shifted = shift(w_gated, kernel)  # move (or blur) the focus by a few rows
    return sharpen(w_shifted, gamma)  # and undo the blur


# --- The same pipeline for several heads on one memory, in fewer operations
# ----------------------------------------


def address_heads(
    memory: torch.Tensor,
    w_prev: torch.Tensor,
    key: torch.Tensor,
    beta: torch.Tensor,
    gate: torch.Tensor,
    kernel: torch.Tensor,
    gamma: torch.Tensor,
) -> torch.Tensor:
    """:func:`address` for ``H`` heads that share one memory, as :class:`NTM` runs
    it: memory ``(batch, N, M)``, ``w_prev (batch, H, N)``, ``key (batch, H, M)``,
    ``beta``, ``gate`` and ``gamma (batch, H, 1)``, ``kernel (batch, H, 2k+1)`` ->
    ``(batch, H, N)``.

    The same four steps and the same numbers as :func:`address` on each head, values
    and gradients (up to rounding; tested), as one autograd function with a
    hand-written gradient (:mod:`attnlab.ntm_kernels`): the memory's row norms are
    computed once for all heads, both keys meet the memory in one matrix product,
    and training records one operation per step instead of dozens.
    """
    return ntm_kernels.AddressHeads.apply(
        memory, w_prev, key, beta, gate, kernel, gamma, EPS
    )


# --- 4 The controller's output: each head parameter in its range
# ----------------------------------------------


class HeadParameters(NamedTuple):
    """What a head needs for one addressing step, each ``(batch, ...)`` in its valid
    range."""

    key: torch.Tensor  # (batch, M), any real vector
    beta: torch.Tensor  # (batch,), >= 0
    gate: torch.Tensor  # (batch,), in (0, 1)
    kernel: torch.Tensor  # (batch, 2k+1), a distribution over shifts
    gamma: torch.Tensor  # (batch,), >= 1


def head_parameters(raw: torch.Tensor, memory_width: int) -> HeadParameters:
    """Split the controller's raw output ``(batch, M + 3 + 2k+1)`` into a head's
    parameters.

    Layout: key (M), beta (1), gate (1), gamma (1), shift logits (2k+1). Activations:
    none for the key, softplus for beta, sigmoid for the gate, 1 + softplus for
    gamma, softmax for the shift kernel.
    """
    check_ndim("raw", raw, "(batch, M + 3 + 2k+1)", ndim=2)
    n_shifts = raw.shape[1] - memory_width - 3
    if n_shifts < 1 or n_shifts % 2 == 0:
        raise ValueError(
            f"raw must have shape (batch, M + 3 + 2k+1) with M = {memory_width}, got"
            f" {shape_of(raw)}"
        )
    key, beta, gate, gamma, shifts = raw.split(
        [memory_width, 1, 1, 1, n_shifts], dim=-1
    )
    return HeadParameters(
        key=key,
        beta=F.softplus(beta.squeeze(-1)),
        gate=torch.sigmoid(gate.squeeze(-1)),
        kernel=torch.softmax(shifts, dim=-1),
        gamma=1 + F.softplus(gamma.squeeze(-1)),
    )


def write_vectors(raw: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Split ``raw (batch, 2M)`` into the erase vector (sigmoid, in (0, 1)) and the
    add vector (tanh, in (-1, 1))."""
    check_ndim("raw", raw, "(batch, 2M)", ndim=2)
    if raw.shape[1] % 2:
        raise ValueError(f"raw must have shape (batch, 2M), got {shape_of(raw)}")
    erase, add = raw.chunk(2, dim=-1)
    return torch.sigmoid(erase), torch.tanh(add)


# --- The machine: an LSTM controller with one read and one write head
# ------------------------------------------


class NTMState(NamedTuple):
    """Everything the NTM carries from one time step to the next."""

    memory: torch.Tensor  # (batch, N, M)
    weights: torch.Tensor  # (batch, heads, N); head 0 reads, head 1 writes
    read: torch.Tensor  # (batch, M), the last read vector
    # LSTM (h, c), each (batch, hidden)
    controller: tuple[torch.Tensor, torch.Tensor]


class NTMTrace(NamedTuple):
    """What happened at every step of a run, for plots: ``(batch, T, ...)``."""

    read_weights: torch.Tensor  # (batch, T, N)
    write_weights: torch.Tensor  # (batch, T, N)
    read_vectors: torch.Tensor  # (batch, T, M)
    add_vectors: torch.Tensor  # (batch, T, M)
    # What each head emitted, head 0 reading and head 1 writing: (batch, T, heads)
    betas: torch.Tensor
    gates: torch.Tensor
    gammas: torch.Tensor
    kernels: torch.Tensor  # (batch, T, heads, 2k+1)


class NTM(nn.Module):
    """Neural Turing Machine with an LSTM controller, one read head and one write
    head.

    At each step the controller sees the input and the previous read vector; its
    hidden state emits the parameters of both heads. Both heads are addressed in one
    batched call on the previous memory; the read head reads it, the write head then
    erases and adds. The output is a linear map of the controller state and the new
    read vector. Memory starts as a constant (``memory_init``) and every head starts
    focused on row 0, which breaks the symmetry between rows.
    """

    HEADS = 2

    def __init__(
        self,
        input_size: int,
        output_size: int,
        *,
        hidden_size: int = 100,
        memory_rows: int = 128,
        memory_width: int = 20,
        max_shift: int = 1,
        memory_init: float = 1e-6,
    ) -> None:
        super().__init__()
        self.memory_rows, self.memory_width, self.max_shift = (
            memory_rows,
            memory_width,
            max_shift,
        )
        self.memory_init = memory_init
        self.controller = nn.LSTMCell(input_size + memory_width, hidden_size)
        self.head_layer = nn.Linear(
            hidden_size, self.HEADS * (memory_width + 3 + 2 * max_shift + 1)
        )
        self.write_layer = nn.Linear(hidden_size, 2 * memory_width)
        self.output_layer = nn.Linear(hidden_size + memory_width, output_size)

    def initial_state(self, batch_size: int) -> NTMState:
        """Constant memory, both heads on row 0, read vector of that memory, zero
        controller state."""
        param = self.output_layer.weight
        memory = torch.full(
            (batch_size, self.memory_rows, self.memory_width),
            self.memory_init,
            dtype=param.dtype,
            device=param.device,
        )
        weights = torch.zeros(
            batch_size,
            self.HEADS,
            self.memory_rows,
            dtype=param.dtype,
            device=param.device,
        )
        weights[:, :, 0] = 1.0
        zeros = torch.zeros(
            batch_size,
            self.controller.hidden_size,
            dtype=param.dtype,
            device=param.device,
        )
        return NTMState(
            memory, weights, read(memory, weights[:, 0]), (zeros, zeros.clone())
        )

    def head_parameters(self, h: torch.Tensor) -> HeadParameters:
        """Both heads' parameters from the controller state ``h (batch, hidden)``:
        :func:`head_parameters` of ``head_layer(h)`` for each head, with a
        hand-written gradient; each ``(batch, heads, ...)``, head 0 reads."""
        return HeadParameters(
            *ntm_kernels.head_parameters(
                h, self.head_layer, self.HEADS, self.memory_width
            )
        )

    def step(
        self, x: torch.Tensor, state: NTMState
    ) -> tuple[torch.Tensor, NTMState, torch.Tensor]:
        """One time step: ``x (batch, input_size)`` -> ``(output (batch,
        output_size), new state, add vector)``."""
        # self.controller(...), the LSTM cell, with a hand-written gradient
        controller_input = torch.cat([x, state.read], dim=-1)
        h, c = ntm_kernels.lstm_cell(
            self.controller, controller_input, state.controller
        )
        params = self.head_parameters(h)  # each (batch, heads, ...)
        # Both heads in one call of the four addressing steps, on the old memory.
        weights = address_heads(state.memory, state.weights, *params)
        erase, add = write_vectors(self.write_layer(h))
        # read() with the read head, then write() with the write head, as one
        # operation with a hand-written gradient
        r, memory = ntm_kernels.read_and_write(state.memory, weights, erase, add)
        output = self.output_layer(torch.cat([h, r], dim=-1))
        return output, NTMState(memory, weights, r, (h, c)), add

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        """``inputs (batch, T, input_size)`` -> ``outputs (batch, T, output_size)``,
        from the initial state."""
        return self.run(inputs)[0]

    def run(
        self,
        inputs: torch.Tensor,
        state: NTMState | None = None,
        *,
        trace: bool = False,
    ) -> tuple[torch.Tensor, NTMState, NTMTrace | None]:
        """Run over ``inputs (batch, T, input_size)``; returns ``(outputs (batch, T,
        output_size), state, trace)``.

        ``state`` defaults to :meth:`initial_state`; ``trace=True`` also returns
        every step's weightings and the parameters both heads emitted.
        """
        check_ndim("inputs", inputs, "(batch, T, input_size)", ndim=3)
        if inputs.shape[-1] != self.controller.input_size - self.memory_width:
            raise ValueError(
                "inputs must have shape (batch, T, input_size) with input_size ="
                f" {self.controller.input_size - self.memory_width}, got"
                f" {shape_of(inputs)}"
            )
        if state is None:
            state = self.initial_state(inputs.shape[0])
        outputs, records = [], []
        for t in range(inputs.shape[1]):
            output, state, add = self.step(inputs[:, t], state)
            outputs.append(output)
            if trace:
                batch = inputs.shape[0]
                heads = self.head_parameters(state.controller[0])
                records.append(
                    (
                        state.weights[:, 0],
                        state.weights[:, 1],
                        state.read,
                        add,
                        heads.beta.reshape(batch, -1),
                        heads.gate.reshape(batch, -1),
                        heads.gamma.reshape(batch, -1),
                        heads.kernel.reshape(batch, self.HEADS, -1),
                    )
                )
        steps = (
            NTMTrace(*(torch.stack(r, dim=1) for r in zip(*records, strict=True)))
            if trace
            else None
        )
        return torch.stack(outputs, dim=1), state, steps


class LSTMBaseline(nn.Module):
    """The paper's comparison: a stacked LSTM reading the input and emitting an
    output at every step."""

    def __init__(
        self,
        input_size: int,
        output_size: int,
        *,
        hidden_size: int = 256,
        layers: int = 3,
    ) -> None:
        super().__init__()
        self.lstm = nn.LSTM(
            input_size, hidden_size, num_layers=layers, batch_first=True
        )
        self.output_layer = nn.Linear(hidden_size, output_size)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        """``inputs (batch, T, input_size)`` -> ``(batch, T, output_size)``."""
        check_ndim("inputs", inputs, "(batch, T, input_size)", ndim=3)
        return self.output_layer(self.lstm(inputs)[0])
