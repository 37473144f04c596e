"""Chapter 2's retrieval task: find the right key from a query related to it.

Each example has ``keys`` random unit vectors; one of them, ``k*``, is the right
one, and the query is made from it by one of three relations, plus a little
Gaussian noise:

- ``"same space"``: ``q = k*``;
- ``"linear map"``: ``q = A k*`` with a fixed random orthogonal matrix ``A``;
- ``"non-linear"``: ``q = A (sqrt(d) |k*| - 0.8)``, which keeps the size of every
  component of the key but loses its sign.

A score is measured by how often the right key gets the largest attention weight;
a trainable score is trained with the cross-entropy of the weights against the
right key (:func:`train_score`, the chapter's recipe and its record's).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from attnlab._validate import check_ndim, check_positive, check_shape, check_size
from attnlab.attention import (
    AdditiveScore,
    GeneralScore,
    LocationScore,
    attend,
    cosine_score,
    dot_score,
    inverse_distance_score,
)
from attnlab.runmode import offset_seed
from attnlab.train import History, train

__all__ = [
    "D",
    "FIXED_SCORES",
    "N_KEYS",
    "NOISE",
    "RELATIONS",
    "TEST_SIZE",
    "TRAINABLE_SCORES",
    "VALIDATION_SIZE",
    "compare_scores",
    "map_alignment",
    "relate",
    "retrieval_accuracy",
    "retrieval_batch",
    "retrieval_loss",
    "retrieval_map",
    "retrieval_set",
    "train_score",
]

D, N_KEYS, NOISE = 8, 16, 0.1  # key size, keys per example, noise of the query
RELATIONS = ("same space", "linear map", "non-linear")
HIDDEN = 64  # the additive score's hidden units
STEPS, BATCH, LR, EVAL_EVERY = 600, 128, 1e-2, 50
TEST_SIZE, VALIDATION_SIZE = 4000, 1000

Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
Score = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

# : The scores without parameters, compared as they are.
FIXED_SCORES: dict[str, Score] = {
    "dot": dot_score,
    "cosine": cosine_score,
    "inverse distance": inverse_distance_score,
}
# : The trainable scores, each made fresh by its function.
TRAINABLE_SCORES: dict[str, Callable[[], nn.Module]] = {
    "location": lambda: LocationScore(D, N_KEYS),
    "general": lambda: GeneralScore(D, D),
    "additive": lambda: AdditiveScore(D, D, HIDDEN),
}


def retrieval_map(d: int = D, *, seed: int = 10) -> torch.Tensor:
    """The fixed map ``A``: a random orthogonal ``(d, d)`` matrix (``seed`` is
    shifted by ``ATTNLAB_SEED_OFFSET``)."""
    check_positive("d", d)
    generator = torch.Generator().manual_seed(offset_seed(seed))
    return torch.linalg.qr(torch.randn(d, d, generator=generator)).Q


def relate(
    keys: torch.Tensor, relation: str, rotation: torch.Tensor
) -> torch.Tensor:
    """The noiseless query of each key ``(..., d)`` under ``relation``, with the map
    ``rotation`` ``(d, d)``."""
    check_ndim("keys", keys, "(..., d)", min_ndim=1)
    d = keys.shape[-1]
    check_shape("rotation", rotation, (d, d), "(d, d)")
    if relation == "same space":
        return keys
    if relation == "linear map":
        return keys @ rotation.T
    if relation == "non-linear":
        return (d**0.5 * keys.abs() - 0.8) @ rotation.T
    raise ValueError(f"relation must be one of {list(RELATIONS)}, got {relation!r}")


def retrieval_batch(
    n: int,
    relation: str,
    rotation: torch.Tensor,
    generator: torch.Generator,
    *,
    n_keys: int = N_KEYS,
    noise: float = NOISE,
) -> Batch:
    """``n`` examples: queries ``(n, 1, d)``, unit keys ``(n, n_keys, d)`` and the
    index of the right key ``(n,)``, drawn from ``generator``."""
    check_positive("n", n)
    check_positive("n_keys", n_keys)
    check_ndim("rotation", rotation, "(d, d)", ndim=2)
    d = rotation.shape[-1]
    if relation not in RELATIONS:
        raise ValueError(
            f"relation must be one of {list(RELATIONS)}, got {relation!r}"
        )
    keys = F.normalize(torch.randn(n, n_keys, d, generator=generator), dim=-1)
    target = torch.randint(n_keys, (n,), generator=generator)
    right_key = keys[torch.arange(n), target]
    query = relate(right_key, relation, rotation)
    query = query + noise * torch.randn(n, d, generator=generator)
    return query[:, None], keys, target


def retrieval_set(
    n: int, relation: str, rotation: torch.Tensor, *, seed: int
) -> Batch:
    """A fixed set of ``n`` examples (validation or test) drawn from its own
    ``seed`` (shifted by ``ATTNLAB_SEED_OFFSET``)."""
    generator = torch.Generator().manual_seed(offset_seed(seed))
    return retrieval_batch(n, relation, rotation, generator)


def _check_batch(batch: Batch) -> Batch:
    query, keys, target = batch
    check_ndim("query", query, "(batch, 1, d)", ndim=3)
    n, _, d = query.shape
    check_size("query", query, 1, 1, "(batch, 1, d)")
    check_ndim("keys", keys, "(batch, keys, d)", ndim=3)
    check_size("keys", keys, 0, n, "(batch, keys, d)")
    check_size("keys", keys, 2, d, "(batch, keys, d)")
    check_shape("target", target, (n,), "(batch,)")
    return query, keys, target


def retrieval_accuracy(score: Score | nn.Module, data: Batch) -> float:
    """How often the right key gets the largest weight: ``data`` is ``(query
    (n, 1, d), keys (n, keys, d), target (n,))``."""
    query, keys, target = _check_batch(data)
    with torch.no_grad():
        _, weights = attend(query, keys, keys, score=score)
    return (weights[:, 0].argmax(-1) == target).float().mean().item()


def retrieval_loss(model: Score | nn.Module, batch: Batch) -> torch.Tensor:
    """The cross-entropy ``-log alpha_{j*}`` of the weights against the right key,
    averaged over the batch."""
    query, keys, target = _check_batch(batch)
    _, weights = attend(query, keys, keys, score=model)
    return F.nll_loss(weights[:, 0].clamp_min(1e-30).log(), target)


def train_score(
    make: Callable[[], nn.Module],
    relation: str,
    rotation: torch.Tensor,
    validation: Batch | None = None,
    *,
    steps: int = STEPS,
    eval_every: int = EVAL_EVERY,
    seed: int = 0,
    desc: str = "training",
) -> tuple[nn.Module, History]:
    """Train the score ``make()`` on ``relation`` from ``seed`` (its data from
    ``seed + 2``), batches of 128 at learning rate 1e-2; with ``validation``,
    measured every ``eval_every`` steps and its best weights kept."""
    torch.manual_seed(offset_seed(seed))
    model = make()
    data = torch.Generator().manual_seed(offset_seed(2 + seed))
    evaluate = (
        None
        if validation is None
        else lambda m: {"val_accuracy": retrieval_accuracy(m, validation)}
    )
    history = train(
        model,
        lambda step: retrieval_batch(BATCH, relation, rotation, data),
        retrieval_loss,
        steps=steps,
        batch_size=BATCH,
        lr=LR,
        evaluate=evaluate,
        eval_every=eval_every,
        best=("val_accuracy", "max") if validation is not None else None,
        desc=desc,
    )
    return model, history


def compare_scores(
    rotation: torch.Tensor, *, steps: int = STEPS, eval_every: int = EVAL_EVERY
) -> tuple[dict[str, dict[str, float]], dict[tuple[str, str], nn.Module]]:
    """Every score on every relation: the test accuracy ``accuracy[score][relation]``
    and the trained models ``models[score, relation]``, each trained from seed 0
    and kept at its best validation accuracy."""
    accuracy: dict[str, dict[str, float]] = {
        name: {} for name in [*FIXED_SCORES, *TRAINABLE_SCORES]
    }
    models = {}
    for relation in RELATIONS:
        test_set = retrieval_set(TEST_SIZE, relation, rotation, seed=1)
        val_set = retrieval_set(VALIDATION_SIZE, relation, rotation, seed=3)
        for name, score in FIXED_SCORES.items():
            accuracy[name][relation] = retrieval_accuracy(score, test_set)
        for name, make in TRAINABLE_SCORES.items():
            model, _ = train_score(
                make,
                relation,
                rotation,
                val_set,
                steps=steps,
                eval_every=eval_every,
                desc=f"{name}, {relation}",
            )
            accuracy[name][relation] = retrieval_accuracy(model, test_set)
            models[name, relation] = model
    return accuracy, models


def map_alignment(weight: torch.Tensor, rotation: torch.Tensor) -> float:
    """The cosine similarity between a learned matrix and the map ``A``, both
    ``(d, d)``, as vectors of ``d * d`` numbers (1: a positive multiple of ``A``)."""
    check_ndim("rotation", rotation, "(d, d)", ndim=2)
    check_shape("weight", weight, tuple(rotation.shape), "(d, d)")
    return F.cosine_similarity(
        weight.detach().flatten(), rotation.flatten(), dim=0
    ).item()
