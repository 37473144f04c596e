"""The copy task of Graves et al. (2014): see a sequence of random bit vectors, then
write it out again.

An example of length ``L`` has ``2L + 1`` time steps and ``bits + 1`` input channels.
Steps ``0 .. L-1`` carry the random vectors (last channel 0), step ``L`` is the
delimiter (only the last channel is 1), and steps ``L+1 .. 2L`` are blank: during
them the model must output the ``L`` vectors in order. Training uses lengths 1 to 20;
the interesting question is how the model does on longer sequences than it ever saw.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import torch
import torch.nn.functional as F
from torch import nn

from attnlab._validate import check_ndim, check_positive, check_shape
from attnlab.runmode import offset_seed
from attnlab.train import History, train

BITS = 8
VAL_LENGTHS = (5, 10, 15, 20)
TEST_SEED = 2014  # the seed of evaluate_copy's fixed test sequences
EVAL_EVERY = 50  # train_copy's steps between two validation measures


def copy_batch(
    batch_size: int, length: int, *, generator: torch.Generator, bits: int = BITS
) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch_size`` random copy examples of one ``length``.

    Returns ``(inputs (batch, 2L+1, bits+1), targets (batch, L, bits))``; the targets
    are the vectors the model must output during the last ``L`` steps.
    """
    check_positive("batch_size", batch_size)
    check_positive("length", length)
    targets = torch.randint(
        0, 2, (batch_size, length, bits), generator=generator
    ).float()
    inputs = torch.zeros(batch_size, 2 * length + 1, bits + 1)
    inputs[:, :length, :bits] = targets
    inputs[:, length, bits] = 1.0  # the delimiter
    return inputs, targets


def copy_sampler(
    batch_size: int,
    *,
    seed: int,
    min_length: int = 1,
    max_length: int = 20,
    bits: int = BITS,
    zero_vectors: float = 0.0,
    curriculum: int = 0,
) -> Callable[[int], tuple[torch.Tensor, torch.Tensor]]:
    """``next_batch(step)`` for :func:`attnlab.train.train`: a batch of one random
    length in [min, max].

    ``zero_vectors`` is the probability with which each vector is replaced by all
    zeros (0, the default, leaves the batches of the task as they are). With a
    ``curriculum`` of ``c`` steps, the longest length grows linearly over the first
    ``c`` steps, from ``min_length + 1`` at step 0 to ``max_length`` at step
    ``c - 1`` (0, the default, draws from the whole range from the start). The batch
    of a step depends only on ``(seed, step)``, so a run is reproducible however it
    is interrupted.
    """
    if not 1 <= min_length <= max_length:
        raise ValueError(
            f"need 1 <= min_length <= max_length, got {min_length} and {max_length}"
        )
    if not 0 <= zero_vectors < 1:
        raise ValueError(f"need 0 <= zero_vectors < 1, got {zero_vectors}")
    if curriculum < 0:
        raise ValueError(f"need curriculum >= 0 steps, got {curriculum}")

    def longest(step: int) -> int:
        if step >= curriculum:
            return max_length
        grown = math.ceil((max_length - min_length) * (step + 1) / curriculum)
        return min_length + grown

    def next_batch(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        generator = torch.Generator().manual_seed(
            offset_seed(seed) * 1_000_003 + step
        )
        length = int(
            torch.randint(min_length, longest(step) + 1, (1,), generator=generator)
        )
        inputs, targets = copy_batch(
            batch_size, length, generator=generator, bits=bits
        )
        if zero_vectors:
            draws = torch.rand(batch_size, length, generator=generator)
            targets = targets * (draws >= zero_vectors).unsqueeze(-1)
            inputs[:, :length, :bits] = targets
        return inputs, targets

    return next_batch


def copy_outputs(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The last ``L`` steps of ``outputs (batch, 2L+1, bits)``, which must equal
    ``targets (batch, L, bits)``."""
    check_ndim("targets", targets, "(batch, L, bits)", ndim=3)
    batch, length, bits = targets.shape
    check_shape(
        "outputs", outputs, (batch, 2 * length + 1, bits), "(batch, 2L+1, bits)"
    )
    return outputs[:, -length:]


def sequence_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy summed over the bits of a sequence (nats per sequence),
    averaged over the batch."""
    return (
        F.binary_cross_entropy_with_logits(logits, targets, reduction="sum")
        / targets.shape[0]
    )


def copy_loss(
    model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]
) -> torch.Tensor:
    """:func:`sequence_loss` of the copied part of ``model(inputs)`` (logits
    ``(batch, 2L+1, bits)``)."""
    inputs, targets = batch
    return sequence_loss(copy_outputs(model(inputs), targets), targets)


def bits_per_sequence(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Wrong bits per sequence ``(batch,)`` when each bit is predicted as ``logit >
    0``; a NaN logit counts as wrong.

    logits and targets ``(batch, L, bits)``.
    """
    check_ndim("targets", targets, "(batch, L, bits)", ndim=3)
    check_shape("logits", logits, targets.shape, "(batch, L, bits) like targets")
    wrong = ((logits > 0).float() != targets) | torch.isnan(logits)
    return wrong.flatten(1).sum(-1).float()


def cost_per_sequence(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The paper's "cost per sequence": binary cross-entropy in bits, summed over a
    sequence's bits, ``(batch,)``.

    logits and targets ``(batch, L, bits)``. Unlike :func:`bits_per_sequence` it also
    charges a right bit predicted without confidence.
    """
    check_ndim("targets", targets, "(batch, L, bits)", ndim=3)
    check_shape("logits", logits, targets.shape, "(batch, L, bits) like targets")
    nats = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
    return nats.flatten(1).sum(-1) / math.log(2)


@torch.no_grad()
def evaluate_copy(
    model: nn.Module, lengths: Iterable[int], *, n: int = 32, seed: int = TEST_SEED
) -> dict[str, dict[int, float]]:
    """Three measures on ``n`` fixed random sequences of each length (the same
    sequences every call), from one run of the model per length: ``{"bits": ...,
    "cost": ..., "perfect": ...}``, each ``{length: value}``.

    ``bits`` is the mean :func:`bits_per_sequence`, ``cost`` the mean
    :func:`cost_per_sequence`, and ``perfect`` the share of the sequences that come
    out without a single wrong bit.
    """
    was_training = model.training
    model.eval()
    result: dict[str, dict[int, float]] = {"bits": {}, "cost": {}, "perfect": {}}
    for length in lengths:
        inputs, targets = copy_batch(
            n,
            length,
            generator=torch.Generator().manual_seed(
                offset_seed(seed) * 1000 + length
            ),
        )
        logits = copy_outputs(model(inputs), targets)
        bits = bits_per_sequence(logits, targets)
        result["bits"][length] = bits.mean().item()
        result["cost"][length] = cost_per_sequence(logits, targets).mean().item()
        result["perfect"][length] = (bits == 0).float().mean().item()
    model.train(was_training)
    return result


def evaluate_lengths(
    model: nn.Module, lengths: Iterable[int], *, n: int = 32, seed: int = TEST_SEED
) -> dict[int, float]:
    """Mean wrong bits per sequence for ``n`` fixed random sequences of each length
    (same sequences every call)."""
    return evaluate_copy(model, lengths, n=n, seed=seed)["bits"]


def train_copy(
    model: nn.Module,
    *,
    steps: int,
    seed: int,
    batch_size: int = 32,
    lr: float = 1e-3,
    clip: float = 10.0,
    lr_drop: float = 1.0,
    lr_drop_bits: float = 1.0,
    zero_vectors: float = 0.0,
    curriculum: int = 0,
    eval_every: int = EVAL_EVERY,
    desc: str = "copy task",
) -> History:
    """Train ``model`` on copy sequences of lengths 1-20 with Adam and gradient
    clipping.

    The loss is in nats per sequence, so the gradient-norm ``clip`` acts on a
    per-sequence scale. Every ``eval_every`` steps it measures ``val_bits`` (wrong
    bits per sequence) and ``val_loss`` on 128 fixed validation sequences, 32 each of
    the lengths 5, 10, 15 and 20. At the end the weights with the lowest
    ``val_loss`` are restored, so a late blow-up, which NTM training is prone to,
    cannot undo a solution that was found. The learning rate stays constant unless
    ``lr_drop`` is below 1: then, once ``val_bits`` falls below ``lr_drop_bits``, it
    is multiplied by ``lr_drop`` for the rest of the run. ``zero_vectors`` and
    ``curriculum`` go to :func:`copy_sampler` (training batches only; validation
    keeps the task as it is).
    """
    val_generator = torch.Generator().manual_seed(offset_seed(seed) + 10_000)
    val_batches = [
        copy_batch(32, length, generator=val_generator) for length in VAL_LENGTHS
    ]
    dropped = False  # set by `evaluate`, read by the learning-rate factor

    def evaluate(m: nn.Module) -> dict[str, float]:
        nonlocal dropped
        bits, loss = 0.0, 0.0
        for inputs, targets in val_batches:
            logits = copy_outputs(m(inputs), targets)
            bits += bits_per_sequence(logits, targets).mean().item() / len(
                val_batches
            )
            loss += sequence_loss(logits, targets).item() / len(val_batches)
        dropped = dropped or bits < lr_drop_bits
        return {"val_bits": bits, "val_loss": loss}

    return train(
        model,
        copy_sampler(
            batch_size, seed=seed, zero_vectors=zero_vectors, curriculum=curriculum
        ),
        copy_loss,
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        clip=clip,
        lr_factor=lambda step: lr_drop if dropped else 1.0,
        evaluate=evaluate,
        eval_every=eval_every,
        best=("val_loss", "min"),
        desc=desc,
    )
