"""Checks for the chapter "Neural Turing Machines": sharpening, the circular shift, the erase/add write."""

from __future__ import annotations

from collections.abc import Callable

import torch

from attnlab import ntm
from attnlab.exercises._checking import ExerciseError, call, exercise_check, expect_close, expect_tensor, passed


def _weightings(batch: int, n: int, gen: torch.Generator) -> torch.Tensor:
    return torch.softmax(2 * torch.randn(batch, n, generator=gen), dim=-1)


@exercise_check(ntm.sharpen)
def check_sharpen(sharpen: Callable, seed: int | None = 0) -> None:
    """Check ``sharpen(w (batch, N), gamma (batch,)) -> (batch, N)``: ``w^gamma`` renormalised per row."""
    name = "sharpen"
    gen = torch.Generator().manual_seed(0)
    w, gamma = _weightings(3, 6, gen), torch.tensor([1.0, 2.0, 5.0])
    out = expect_tensor(name, call(sharpen, name, w, gamma), (3, 6))
    if not torch.allclose(out.sum(-1), torch.ones(3), atol=1e-5):
        raise ExerciseError(f"the rows of the result sum to {out.sum(-1).tolist()}, not 1: divide w**gamma by its "
                            "sum over the memory rows")
    if torch.allclose(out, w * gamma[:, None] / (w * gamma[:, None]).sum(-1, keepdim=True), atol=1e-5):
        raise ExerciseError("you multiply w by gamma; sharpening raises it to the power gamma")
    expect_close(name, out[0], w[0], "for gamma = 1, which must return w unchanged")
    expect_close(name, out, ntm.sharpen(w, gamma), "for gamma = (1, 2, 5)")
    zeros = torch.tensor([[0.0, 0.5, 0.5, 0.0]])
    out = expect_tensor(name, call(sharpen, name, zeros, torch.tensor([3.0])), (1, 4))
    expect_close(name, out, torch.tensor([[0.0, 0.5, 0.5, 0.0]]), "for a weighting with zeros (they must stay 0)")
    passed(name, 4)


@exercise_check(ntm.shift)
def check_shift(shift: Callable, seed: int | None = 0) -> None:
    """Check ``shift(w (batch, N), kernel (batch, 2k+1)) -> (batch, N)``: circular convolution, entry j = shift j-k."""
    name = "shift"
    gen = torch.Generator().manual_seed(1)
    w = _weightings(2, 7, gen)
    plus_one = torch.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    out = expect_tensor(name, call(shift, name, w, plus_one), (2, 7))
    if torch.allclose(out, torch.roll(w, -1, dims=-1), atol=1e-6):
        raise ExerciseError("the kernel (0, 0, 1) moved the weight from row i to row i-1: it must move it to row "
                            "i+1 (entry j of the kernel is the weight of a shift by j - k)")
    if torch.allclose(out[:, 1:], w[:, :-1], atol=1e-6) and not torch.allclose(out[:, 0], w[:, -1], atol=1e-6):
        raise ExerciseError("the weight of the last row does not come back to row 0: the shift must be circular")
    expect_close(name, out, torch.roll(w, 1, dims=-1), "for the pure +1 kernel (0, 0, 1)")
    focused = torch.zeros(1, 5)
    focused[0, 0] = 1.0
    out = expect_tensor(name, call(shift, name, focused, torch.tensor([[0.2, 0.5, 0.3]])), (1, 5))
    expect_close(name, out, torch.tensor([[0.5, 0.3, 0.0, 0.0, 0.2]]),
                 "for all weight on row 0 and the kernel (0.2, 0.5, 0.3) over the shifts (-1, 0, +1)")
    kernel = torch.softmax(torch.randn(2, 5, generator=gen), dim=-1)
    out = expect_tensor(name, call(shift, name, w, kernel), (2, 7))
    expect_close(name, out, ntm.shift(w, kernel), "for random kernels over the shifts -2..2")
    passed(name, 3)


@exercise_check(ntm.write)
def check_write(write: Callable, seed: int | None = 0) -> None:
    """Check ``write(memory (batch, N, M), w (batch, N), erase (batch, M), add (batch, M)) -> (batch, N, M)``."""
    name = "write"
    memory = torch.tensor([[[1.0, 2.0], [3.0, 4.0]]])
    w, erase, add = torch.tensor([[0.5, 0.5]]), torch.tensor([[1.0, 0.0]]), torch.tensor([[2.0, 2.0]])
    out = expect_tensor(name, call(write, name, memory.clone(), w, erase, add), (1, 2, 2))
    if torch.allclose(out, (memory + w[..., None] * add[:, None]) * (1 - w[..., None] * erase[:, None])):
        raise ExerciseError("you add before you erase: erase first, so the new content is not erased at once")
    if torch.allclose(out, memory * (1 - erase[:, None]) + w[..., None] * add[:, None]):
        raise ExerciseError("the erase ignores the weighting: row i is erased by w(i) * e, not by e")
    expect_close(name, out, torch.tensor([[[1.5, 3.0], [2.5, 5.0]]]), "on the worked example of the chapter")
    gen = torch.Generator().manual_seed(2)
    memory, w = torch.randn(3, 6, 4, generator=gen), _weightings(3, 6, gen)
    erase, add = torch.rand(3, 4, generator=gen), torch.randn(3, 4, generator=gen)
    before = memory.clone()
    out = expect_tensor(name, call(write, name, memory, w, erase, add), (3, 6, 4))
    if not torch.equal(memory, before):
        raise ExerciseError("write changed the memory it was given: return a new tensor instead (no in-place ops)")
    expect_close(name, out, ntm.write(memory, w, erase, add), "for a random memory, weighting, erase and add")
    passed(name, 2)
