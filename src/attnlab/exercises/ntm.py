"""Checks for the chapter "Neural Turing Machines": the erase/add write, cosine
similarity with a zero row, the key strength of content addressing, the circular
shift and sharpening."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from attnlab import ntm
from attnlab.exercises._checking import (
    ExerciseError,
    as_tensor,
    call,
    exercise_check,
    expect_close,
    expect_tensor,
    generator,
    passed,
)


def _weightings(batch: int, n: int, gen: torch.Generator) -> torch.Tensor:
    return torch.softmax(2 * torch.randn(batch, n, generator=gen), dim=-1)


# --- write: erase, then add
# -----------------------------------------------------------------------------------


def _reference_write(
    memory: torch.Tensor, w: torch.Tensor, erase: torch.Tensor, add: torch.Tensor
) -> torch.Tensor:
    weights = w[:, :, None]
    return memory * (1 - weights * erase[:, None, :]) + weights * add[:, None, :]


@exercise_check(ntm.write)
def check_write(write: Callable, seed: int | None = 0) -> None:
    """Check ``write(memory (batch, N, M), w (batch, N), erase (batch, M), add
    (batch, M)) -> (batch, N, M)``."""
    name = "write"
    gen = generator(seed)
    memory = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]])
    w, erase, add = (
        torch.tensor([[0.5, 0.5, 0.0]]),
        torch.tensor([[1.0, 0.0]]),
        torch.tensor([[2.0, 2.0]]),
    )
    out = expect_tensor(name, call(write, name, memory, w, erase, add), (1, 3, 2))
    weights = w[..., None]
    if torch.allclose(
        out, (memory + weights * add[:, None]) * (1 - weights * erase[:, None])
    ):
        raise ExerciseError(
            "you add before you erase: erase first, so that the new content is not"
            " erased at once"
        )
    if torch.allclose(out, memory * (1 - erase[:, None]) + weights * add[:, None]):
        raise ExerciseError(
            "the erase ignores the weighting: row i is erased by w(i) * e, not by e"
            " alone (a row with weight 0 must not change)"
        )
    if torch.allclose(out, memory * (1 - weights * erase[:, None]) + add[:, None]):
        raise ExerciseError(
            "the add ignores the weighting: row i receives w(i) * a, not a "
            "(a row with weight 0 must not change)"
        )
    if torch.allclose(
        out, memory * (weights * erase[:, None]) + weights * add[:, None]
    ):
        raise ExerciseError(
            "the erase keeps the part w(i) * e of each entry: it must keep 1 -"
            " w(i) * e"
        )
    expect_close(
        name,
        out,
        _reference_write(memory, w, erase, add),
        "on the worked example of the chapter",
    )
    memory, w = torch.randn(3, 6, 4, generator=gen), _weightings(3, 6, gen)
    erase, add = torch.rand(3, 4, generator=gen), torch.randn(3, 4, generator=gen)
    out = expect_tensor(name, call(write, name, memory, w, erase, add), (3, 6, 4))
    expect_close(
        name,
        out,
        _reference_write(memory, w, erase, add),
        "for a random memory (batch 3, N 6, M 4), weighting, erase and add",
    )
    passed(name, 2)


# --- cosine similarity that survives a zero row
# --------------------------------------------------------------------


def _reference_cosine(
    memory: torch.Tensor, key: torch.Tensor, eps: float = 1e-8
) -> torch.Tensor:
    dot = (memory * key[:, None, :]).sum(-1)
    return dot / (
        (memory.pow(2).sum(-1) + eps).sqrt()
        * (key.pow(2).sum(-1, keepdim=True) + eps).sqrt()
    )


@exercise_check(ntm.cosine_similarity)
def check_cosine_similarity(
    cosine_similarity: Callable, seed: int | None = 0
) -> None:
    """Check ``cosine_similarity(memory (batch, N, M), key (batch, M)) -> (batch,
    N)``, finite for zero vectors."""
    name = "cosine_similarity"
    gen = generator(seed)
    memory, key = (
        torch.randn(2, 5, 3, generator=gen),
        torch.randn(2, 3, generator=gen),
    )
    out = expect_tensor(name, call(cosine_similarity, name, memory, key), (2, 5))
    if torch.allclose(out, (memory * key[:, None]).sum(-1), atol=1e-4):
        raise ExerciseError(
            "you return the dot product: divide it by the norm of the row and the"
            " norm of the key"
        )
    if (out.abs() > 1 + 1e-4).any():
        raise ExerciseError(
            "some similarities lie outside [-1, 1]: divide by both norms, the row's"
            " and the key's"
        )
    expect_close(
        name,
        out,
        _reference_cosine(memory, key),
        "for random memories and keys (no zero vectors)",
        atol=1e-4,
    )
    zero_row = memory.clone()
    zero_row[0, 2] = 0.0
    raw = call(cosine_similarity, name, zero_row, key)
    if isinstance(raw, torch.Tensor) and not torch.isfinite(raw).all():
        raise ExerciseError(
            "a memory row of zeros still gives NaN: its norm is 0, and 0 / 0 is NaN."
            " Keep the norm away from 0, e.g. with sqrt(||x||^2 + eps) for a small"
            " eps such as 1e-8"
        )
    out = expect_tensor(name, raw, (2, 5))
    if out[0, 2].abs() > 1e-4:
        raise ExerciseError(
            "a memory row of zeros must have similarity 0 with any key (it has no"
            " direction)"
        )
    expect_close(
        name,
        out,
        _reference_cosine(zero_row, key),
        "for a memory with one row of zeros",
        atol=1e-4,
    )
    zero_key = key.clone()
    zero_key[1] = 0.0
    raw = call(cosine_similarity, name, memory, zero_key)
    if isinstance(raw, torch.Tensor) and not torch.isfinite(raw).all():
        raise ExerciseError(
            "a key of zeros gives NaN: the key's norm needs the same protection as"
            " the rows' norms"
        )
    out = expect_tensor(name, raw, (2, 5))
    expect_close(
        name,
        out,
        _reference_cosine(memory, zero_key),
        "for a key of zeros (every similarity must be 0)",
        atol=1e-4,
    )
    fresh = torch.zeros(1, 4, 3, dtype=torch.float64, requires_grad=True)
    probe = torch.randn(1, 3, generator=gen, dtype=torch.float64, requires_grad=True)
    out = call(cosine_similarity, name, fresh, probe)
    if not isinstance(out, torch.Tensor) or not out.requires_grad:
        raise ExerciseError(
            "the result does not depend on memory and key through autograd: compute"
            " it with torch operations on the tensors themselves (no .detach(), no"
            " torch.no_grad())"
        )
    memory_grad, key_grad = torch.autograd.grad(
        out.sum(), (fresh, probe), allow_unused=True
    )
    if any(
        g is not None and not torch.isfinite(g).all()
        for g in (memory_grad, key_grad)
    ):
        raise ExerciseError(
            "the value is fine, but the gradient at a memory of zeros is NaN: the"
            " square root of 0 has an infinite slope, so put eps inside the square"
            " root, sqrt(||x||^2 + eps), not on the norm after the square root"
        )
    passed(name, 4)


# --- key strength: how beta focuses content addressing (experiment)
# -----------------------------------------------


def _entropy(w: torch.Tensor) -> torch.Tensor:
    return -torch.special.xlogy(w, w).sum(-1)


def _measured_focus(
    name: str, out: object
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The experiment's ``(betas, entropies, top_weights)``, each as a float64
    vector, checked for form."""
    if not (isinstance(out, tuple | list) and len(out) == 3):
        length = f" of length {len(out)}" if isinstance(out, tuple | list) else ""
        raise ExerciseError(
            f"{name} must return three things, (betas, entropies, top_weights), got "
            f"{type(out).__name__}{length}"
        )
    betas = as_tensor(f"{name}'s betas", out[0], torch.float64).flatten()
    count = betas.numel()
    if count < 6:
        raise ExerciseError(f"measure at least 6 key strengths, got {count}")
    if not (betas[1:] > betas[:-1]).all():
        raise ExerciseError(
            "return the key strengths in increasing order, each once"
        )
    if betas[0] != 0 or betas[-1] < 200:
        raise ExerciseError(
            "the key strengths must run from 0 to at least 200, to see both ends of"
            " the range"
        )
    measured = []
    for what, raw in [("entropies", out[1]), ("top_weights", out[2])]:
        values = as_tensor(f"{name}'s {what}", raw, torch.float64).flatten()
        if values.numel() != count:
            raise ExerciseError(
                f"{name} returned {values.numel()} {what} for {count} key strengths:"
                " one per beta"
            )
        measured.append(values)
    entropies, top = measured
    if torch.isnan(entropies).any():
        raise ExerciseError(
            "some entropies are NaN: at a large beta some weights are exactly 0, and"
            " 0 * log(0) is NaN in floating point. Count such terms as 0"
            " (torch.special.xlogy(w, w) does)"
        )
    if not torch.isfinite(entropies).all() or not torch.isfinite(top).all():
        raise ExerciseError(f"{name} returned NaN or infinite values")
    return betas, entropies, top


def _compare_focus(
    name: str, memory: torch.Tensor, key: torch.Tensor, out: object, what: str
) -> None:
    """Recompute the content weighting for every measured beta and compare entropy
    and largest weight."""
    betas, entropies, top = _measured_focus(name, out)
    weights = torch.stack(
        [ntm.content_addressing(memory, key, beta.reshape(1))[0] for beta in betas]
    )
    expected_entropy, expected_top = _entropy(weights), weights.amax(-1)
    if (entropies < -1e-6).any():
        raise ExerciseError(
            "some entropies are negative: the entropy is -sum_i w(i) log w(i), with"
            " the minus sign"
        )
    if torch.allclose(
        entropies, expected_entropy / math.log(2), atol=1e-3, rtol=1e-3
    ):
        raise ExerciseError(
            "the entropies are in bits: measure them in nats, with the natural"
            " logarithm"
        )
    if torch.allclose(top, weights.argmax(-1).double()) and not torch.allclose(
        top, expected_top, atol=1e-3
    ):
        raise ExerciseError(
            "top_weights holds the index of the best row: return its weight, the"
            " largest weight"
        )
    if torch.allclose(top, weights.amin(-1), atol=1e-3) and not torch.allclose(
        top, expected_top, atol=1e-3
    ):
        raise ExerciseError(
            "top_weights holds the smallest weight: return the largest one"
        )
    expect_close(f"{name}'s entropies", entropies, expected_entropy, what, atol=1e-3)
    expect_close(f"{name}'s top_weights", top, expected_top, what, atol=1e-3)


@exercise_check()
def check_key_strength(
    measure: Callable, memory: torch.Tensor, key: torch.Tensor, seed: int | None = 0
) -> None:
    """Check the experiment ``measure(memory (1, N, M), key (1, M)) -> (betas,
    entropies, top_weights)``.

    The check recomputes the content weighting for every beta the experiment
    returned, on the chapter's memory and key and on a random one, and compares the
    entropy (in nats) and the largest weight with the measured ones.
    """
    name = "measure_focus"
    # the chapter's stay intact
    memory, key = (
        as_tensor("memory", memory).clone(),
        as_tensor("key", key).clone(),
    )
    if (
        memory.ndim != 3
        or memory.shape[0] != 1
        or tuple(key.shape) != (1, memory.shape[2])
    ):
        raise ExerciseError(
            "pass the check your function, then the memory (1, N, M) and the key (1,"
            " M) that the experiment measures"
        )
    out = call(measure, name, memory, key)
    _compare_focus(
        name,
        memory,
        key,
        out,
        "on the chapter's memory and key (the check recomputes the content "
        "weighting for each of your betas)",
    )
    gen = generator(seed)
    other = torch.randn(1, 10, 4, generator=gen)
    probe = other[:, 3] + 0.5 * torch.randn(1, 4, generator=gen)
    out = call(measure, name, other, probe)
    _compare_focus(
        name,
        other,
        probe,
        out,
        "on another memory (1, 10, 4) and key: measure on the memory and key "
        "you are given, not on the chapter's variables",
    )
    passed(name, 2)


# --- circular shift
# -----------------------------------------------------------------------------------


def _reference_shift(w: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
    k = kernel.shape[1] // 2
    n = w.shape[1]
    out = torch.zeros_like(w)
    for i in range(n):
        for j in range(kernel.shape[1]):
            out[:, (i + j - k) % n] += w[:, i] * kernel[:, j]
    return out


@exercise_check(ntm.shift)
def check_shift(shift: Callable, seed: int | None = 0) -> None:
    """Check ``shift(w (batch, N), kernel (batch, 2k+1)) -> (batch, N)``: circular
    convolution, entry j = shift j-k."""
    name = "shift"
    gen = generator(seed)
    w = _weightings(2, 7, gen)
    plus_one = torch.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    out = expect_tensor(name, call(shift, name, w, plus_one), (2, 7))
    if torch.allclose(out, torch.roll(w, -1, dims=-1), atol=1e-6):
        raise ExerciseError(
            "the kernel (0, 0, 1) moved the weight from row i to row i-1: it must"
            " move it to row i+1 (entry j of the kernel is the weight of a shift by"
            " j - k)"
        )
    if torch.allclose(out, torch.roll(w, 2, dims=-1), atol=1e-6):
        raise ExerciseError(
            "the kernel (0, 0, 1) moved the weight by 2 rows: entry j of a kernel of"
            " length 2k+1 is a shift by j - k, not by j"
        )
    if torch.allclose(out[:, 1:], w[:, :-1], atol=1e-6) and not torch.allclose(
        out[:, 0], w[:, -1], atol=1e-6
    ):
        raise ExerciseError(
            "the weight of the last row does not come back to row 0: the shift must"
            " be circular"
        )
    expect_close(
        name, out, _reference_shift(w, plus_one), "for the pure +1 kernel (0, 0, 1)"
    )
    focused = torch.zeros(1, 5)
    focused[0, 0] = 1.0
    lopsided = torch.tensor([[0.2, 0.5, 0.3]])
    out = expect_tensor(name, call(shift, name, focused, lopsided), (1, 5))
    if torch.allclose(out, _reference_shift(focused, lopsided.flip(-1)), atol=1e-6):
        raise ExerciseError(
            "the kernel is applied the wrong way round: with the kernel (0.2, 0.5,"
            " 0.3) over the shifts (-1, 0, +1), 0.3 of the weight must move one"
            " row on"
        )
    expect_close(
        name,
        out,
        _reference_shift(focused, lopsided),
        "for all weight on row 0 and the kernel (0.2, 0.5, 0.3) over the shifts (-1,"
        " 0, +1)",
    )
    w = _weightings(3, 7, gen)
    kernel = torch.softmax(torch.randn(3, 5, generator=gen), dim=-1)
    out = expect_tensor(name, call(shift, name, w, kernel), (3, 7))
    if torch.allclose(out, _reference_shift(w, kernel[:1].expand(3, -1)), atol=1e-6):
        raise ExerciseError(
            "every weighting was shifted with the kernel of the first batch element:"
            " each weighting has its own kernel"
        )
    expect_close(
        name,
        out,
        _reference_shift(w, kernel),
        "for random kernels over the shifts -2..2 (k = 2)",
    )
    passed(name, 3)


# --- sharpening
# -----------------------------------------------------------------------------------


def _reference_sharpen(w: torch.Tensor, gamma: torch.Tensor) -> torch.Tensor:
    w = w.double()
    powered = (w / w.amax(-1, keepdim=True)).pow(gamma.double()[:, None])
    return powered / powered.sum(-1, keepdim=True)


@exercise_check(ntm.sharpen)
def check_sharpen(sharpen: Callable, seed: int | None = 0) -> None:
    """Check ``sharpen(w (batch, N), gamma (batch,)) -> (batch, N)``: ``w^gamma``
    renormalised per row."""
    name = "sharpen"
    gen = generator(seed)
    w = _weightings(3, 6, gen)
    # the last row keeps gamma = 1
    gamma = torch.cat([1 + 5 * torch.rand(2, generator=gen), torch.ones(1)])
    out = expect_tensor(name, call(sharpen, name, w, gamma), (3, 6))
    if not torch.allclose(out.sum(-1), torch.ones(3), atol=1e-5):
        raise ExerciseError(
            "the rows of the result sum to"
            f" {[round(s, 4) for s in out.sum(-1).tolist()]}, not to 1: divide"
            " w**gamma by its sum over the memory rows"
        )
    if torch.allclose(out, w, atol=1e-5):
        raise ExerciseError(
            "the result equals w although gamma is not 1 in every row: raise w to"
            " the power gamma (multiplying a row by gamma and renormalising gives w"
            " back)"
        )
    if torch.allclose(out, torch.softmax(gamma[:, None] * w, -1), atol=1e-5):
        raise ExerciseError(
            "you apply a softmax to gamma * w: sharpening raises w to the power"
            " gamma and divides by the sum, with no exponential"
        )
    if torch.allclose(
        out, _reference_sharpen(w, gamma[:1].expand(3)).float(), atol=1e-5
    ):
        raise ExerciseError(
            "every row was raised to the gamma of the first row: gamma[b] belongs to"
            " row b of w"
        )
    expect_close(name, out[2], w[2], "for gamma = 1, which must return w unchanged")
    expect_close(
        name,
        out,
        _reference_sharpen(w, gamma),
        "for random weightings and gamma between 1 and 6",
    )
    zeros = torch.tensor([[0.0, 0.5, 0.5, 0.0], [0.1, 0.0, 0.6, 0.3]])
    out = expect_tensor(
        name, call(sharpen, name, zeros, torch.tensor([3.0, 2.0])), (2, 4)
    )
    expect_close(
        name,
        out,
        _reference_sharpen(zeros, torch.tensor([3.0, 2.0])),
        "for weightings that contain zeros (a zero weight must stay 0)",
    )
    flat = torch.full((2, 128), 1 / 128)
    raw = call(sharpen, name, flat, torch.tensor([50.0, 1.0]))
    if isinstance(raw, torch.Tensor) and not torch.isfinite(raw).all():
        raise ExerciseError(
            "a flat weighting over 128 rows with gamma = 50 gives NaN: (1/128)**50"
            " underflows to 0 in float32, and 0 / 0 is NaN. Divide w by its largest"
            " entry before taking the power (this changes nothing mathematically)"
        )
    out = expect_tensor(name, raw, (2, 128))
    expect_close(
        name,
        out,
        flat,
        "for a flat weighting over 128 rows (it must stay flat for every gamma)",
    )
    passed(name, 4)
