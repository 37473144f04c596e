"""The neighbour task: labels, batches, loss and accuracy against loops over words."""

import torch
import torch.nn.functional as F

from attnlab.tasks.neighbours import (
    VOCAB,
    NeighbourTagger,
    neighbour_accuracy,
    neighbour_labels,
    neighbour_loss,
    sentence_batch,
)


def loop_labels(src, src_mask):
    """Previous and next word of every real word, 0 at the ends, -100 at padding."""
    labels = torch.full((*src.shape, 2), -100)
    for b in range(src.shape[0]):
        length = int(src_mask[b].sum())
        for t in range(length):
            labels[b, t, 0] = src[b, t - 1] if t > 0 else 0
            labels[b, t, 1] = src[b, t + 1] if t + 1 < length else 0
    return labels


class Oracle(torch.nn.Module):
    """Logits that name the true neighbours, except the next word of ``wrong``
    words."""

    def __init__(self, wrong: int = 0) -> None:
        super().__init__()
        self.wrong = wrong

    def forward(self, src, src_mask):
        labels = neighbour_labels(src, src_mask).clamp(min=0)
        labels[:, : self.wrong, 1] = (labels[:, : self.wrong, 1] + 1) % VOCAB
        return F.one_hot(labels, VOCAB).float()


def test_labels_are_the_neighbours_of_the_real_words():
    batch = sentence_batch(3, 16)
    assert not batch.src_mask.all()  # sentences of several lengths, padded
    assert torch.equal(
        neighbour_labels(batch.src, batch.src_mask),
        loop_labels(batch.src, batch.src_mask),
    )


def test_batches_are_fixed_by_their_step():
    a, b = sentence_batch(7), sentence_batch(7)
    assert torch.equal(a.src, b.src) and a.src.shape[0] == 64
    assert not torch.equal(sentence_batch(8).src[:, :5], a.src[:, :5])
    lengths = a.src_mask.sum(-1)
    assert lengths.min() >= 5 and lengths.max() <= 12


def test_accuracy_counts_both_neighbours_of_the_real_words_only():
    batch = sentence_batch(0, 8)
    assert neighbour_accuracy(Oracle(), batch) == 1.0
    words = int(batch.src_mask.sum())
    # the next word of the first two words of every sentence is wrong
    expected = 1 - (2 * len(batch.src)) / (2 * words)
    assert abs(neighbour_accuracy(Oracle(wrong=2), batch) - expected) < 1e-6


def test_loss_is_the_cross_entropy_over_the_real_words():
    torch.manual_seed(0)
    model = NeighbourTagger(positions=True, n_heads=2)
    batch = sentence_batch(1, 4)
    logits = model(batch.src, batch.src_mask)
    assert logits.shape == (*batch.src.shape, 2, VOCAB)
    labels = loop_labels(batch.src, batch.src_mask)
    real = labels >= 0
    by_hand = (
        -torch.log_softmax(logits, -1)[real].gather(-1, labels[real][:, None]).mean()
    )
    assert torch.allclose(neighbour_loss(model, batch), by_hand, atol=1e-6)
