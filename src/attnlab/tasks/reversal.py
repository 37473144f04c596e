"""A variant of the toy translation task in which only *positions* say where to look:
reverse a random word list.

The source is a sequence of words drawn uniformly and independently from ``words`` (a
subset of the translation dictionary; no grammar, so no word hints at its position);
the target is the dictionary translation of every word, in reverse order. The
alignment is therefore ``alignment[j] = S - 1 - j``: to emit target word ``j`` the
decoder must find source position ``S - 1 - j`` (a feature neither the decoder state
nor the words share directly; each RNN has to count for itself) and hand over the
word stored there (not the feature it was found by). The examples are
:class:`~attnlab.tasks.translation.Example` objects, so the batches, losses and
metrics of :mod:`attnlab.tasks.translation` apply unchanged.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from attnlab.runmode import offset_seed
from attnlab.tasks.translation import (
    DICTIONARY,
    LEXICON,
    Example,
    TranslationBatch,
    make_batch,
)

__all__ = [
    "REVERSAL_WORDS",
    "reversal_batches",
    "reversal_example",
    "sample_reversals",
]

# : The default source words: the first eight nouns of the lexicon (their
# translations are the target words).
REVERSAL_WORDS: tuple[str, ...] = tuple(LEXICON["noun"])[:8]


def reversal_example(source: Sequence[str]) -> Example:
    """The :class:`Example` of a source word list: the translations in reverse order,
    ``alignment[j] = S-1-j``."""
    unknown = [w for w in source if w not in DICTIONARY]
    if unknown:
        raise ValueError(
            f"unknown source words {unknown}; known words: {sorted(DICTIONARY)}"
        )
    n = len(source)
    return Example(
        tuple(source),
        tuple(DICTIONARY[w] for w in reversed(source)),
        tuple(range(n - 1, -1, -1)),
    )


def _random_example(
    rng: random.Random, min_len: int, max_len: int, words: Sequence[str]
) -> Example:
    return reversal_example(
        [rng.choice(words) for _ in range(rng.randint(min_len, max_len))]
    )


def _check(min_len: int, max_len: int, words: Sequence[str]) -> None:
    if not 1 <= min_len <= max_len:
        raise ValueError(
            f"need 1 <= min_len <= max_len, got {min_len} and {max_len}"
        )
    if not words:
        raise ValueError("words must name at least one source word")


def sample_reversals(
    n: int,
    min_len: int = 10,
    max_len: int = 30,
    seed: int = 0,
    words: Sequence[str] = REVERSAL_WORDS,
) -> list[Example]:
    """``n`` reversal examples, source lengths uniform in ``min_len..max_len``."""
    _check(min_len, max_len, words)
    rng = random.Random(offset_seed(seed))
    return [_random_example(rng, min_len, max_len, words) for _ in range(n)]


def reversal_batches(
    batch_size: int,
    min_len: int = 10,
    max_len: int = 30,
    seed: int = 0,
    words: Sequence[str] = REVERSAL_WORDS,
) -> Callable[[int], TranslationBatch]:
    """``next_batch(step)`` for :func:`attnlab.train.train`; batch ``step`` depends
    only on ``seed`` and ``step``."""
    _check(min_len, max_len, words)
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")

    def next_batch(step: int) -> TranslationBatch:
        rng = random.Random(f"reversal-{offset_seed(seed)}-{step}")
        return make_batch(
            [
                _random_example(rng, min_len, max_len, words)
                for _ in range(batch_size)
            ]
        )

    return next_batch
