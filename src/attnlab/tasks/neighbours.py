"""The neighbour task of the self-attention chapter: for every word of a sentence of
the translation task, name the word before it and the word after it (index 0,
"none", at the ends of the sentence).

A word cannot know its neighbours without looking at them, and it cannot find them
without knowing where it stands: the task needs attention and positions together.
"""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F
from torch import nn

from attnlab.runmode import offset_seed
from attnlab.selfattention import SelfAttentionEncoder
from attnlab.tasks.translation import (
    SOURCE_VOCAB,
    TranslationBatch,
    make_batch,
    make_example,
    random_sentence,
)
from attnlab.train import seed_everything, train

__all__ = [
    "NeighbourTagger",
    "neighbour_accuracy",
    "neighbour_labels",
    "neighbour_loss",
    "sentence_batch",
    "train_tagger",
]

VOCAB = len(SOURCE_VOCAB)


class NeighbourTagger(nn.Module):
    """One self-attention encoder layer and a linear layer naming the neighbours."""

    def __init__(self, positions: bool, n_heads: int = 2) -> None:
        super().__init__()
        self.encoder = SelfAttentionEncoder(
            VOCAB, 32, n_heads, d_ff=64, positions=positions
        )
        self.readout = nn.Linear(32, 2 * VOCAB)

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, S, 2, VOCAB)``: for each word, the previous and the next word
        (index 0 = none)."""
        states = self.encoder(src, src_mask).states
        return self.readout(states).unflatten(-1, (2, VOCAB))


def neighbour_labels(src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
    """``(B, S, 2)``: the previous and the next word of every word (0 at the ends,
    -100 at padding)."""
    previous, following = F.pad(src[:, :-1], (1, 0)), F.pad(src[:, 1:], (0, 1))
    labels = torch.stack([previous, following], -1)
    return labels.masked_fill(~src_mask[..., None], -100)


def sentence_batch(step: int, size: int = 64) -> TranslationBatch:
    """A batch of ``size`` random sentences of 5 to 12 words; batch ``step`` is
    always the same."""
    rng = random.Random(offset_seed(f"neighbours-{step}"))
    return make_batch(
        [make_example(random_sentence(rng.randint(5, 12), rng)) for _ in range(size)]
    )


def neighbour_loss(model: nn.Module, batch: TranslationBatch) -> torch.Tensor:
    """The cross-entropy of both neighbours of every real word."""
    logits = model(batch.src, batch.src_mask)
    labels = neighbour_labels(batch.src, batch.src_mask)
    return F.cross_entropy(logits.flatten(0, 2), labels.flatten())


@torch.no_grad()
def neighbour_accuracy(model: nn.Module, batch: TranslationBatch) -> float:
    """The share of both neighbours of the real words that ``model`` names (nothing
    is learned here: no gradient is kept)."""
    labels = neighbour_labels(batch.src, batch.src_mask)
    hits = model(batch.src, batch.src_mask).argmax(-1) == labels
    return hits[labels >= 0].float().mean().item()


def train_tagger(
    n_heads: int, steps: int, test: TranslationBatch, seed: int = 1
) -> tuple[NeighbourTagger, float]:
    """A tagger with positions and ``n_heads`` heads, trained for ``steps`` steps
    (batches of 64, Adam at 3e-3, the chapter's seed), and its neighbour accuracy
    on ``test``."""
    seed_everything(seed)
    model = NeighbourTagger(True, n_heads=n_heads)
    train(
        model,
        sentence_batch,
        neighbour_loss,
        steps=steps,
        batch_size=64,
        lr=3e-3,
        desc=f"{n_heads} head(s)",
    )
    return model, neighbour_accuracy(model, test)
