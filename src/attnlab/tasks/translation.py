"""A toy translation task whose true word alignment is known.

The source language is a small English; the target language borrows its words from
Spanish but follows an invented grammar. A sentence is a main clause followed by
clauses that start with a connector: ``and`` (another main clause) or a subordinator
(``because``, ``while``, ``when``, ``although``). Each clause body is a noun phrase,
a verb and optionally a second noun phrase; a noun phrase is up to two adjectives and
a plural noun (``big red dogs see cats because old kings love birds``).

The translation rule (:func:`translate`) has three steps, applied clause by clause:

1. **swap**: a noun moves in front of the adjectives directly before it (``big red
   dogs`` -> ``dogs big red``);
2. **map**: every word is replaced through a one-to-one dictionary (``dogs`` ->
   ``perros``);
3. **reverse**: the body of every subordinate clause is written backwards (the
   subordinator stays first).

Every target word comes from exactly one source word, so the true alignment is a
permutation of the source positions: ``alignment[j]`` is the source position of
target word ``j``. Sentences have 5 to 80 words (any length in between can be
generated exactly); the target is as long as the source.

Batches are batch-first and padded with index 0; the target ends with an
end-of-sentence token.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from attnlab._validate import check_positive
from attnlab.attention import Score
from attnlab.metrics import (
    alignment_accuracy,
    exact_match,
    scores_by_bucket,
    token_accuracy,
)
from attnlab.runmode import offset_seed
from attnlab.seq2seq import AttentionDecoder, Decoder, DecoderBase, Encoder, Seq2Seq
from attnlab.train import History, seed_everything, train

__all__ = [
    "DICTIONARY",
    "LENGTH_BUCKETS",
    "LEXICON",
    "SOURCE_VOCAB",
    "TARGET_VOCAB",
    "Example",
    "TrainedModel",
    "TranslationBatch",
    "TranslationComparison",
    "TranslationReport",
    "Vocab",
    "attention_maps",
    "build_model",
    "evaluate_translation",
    "examples_per_length",
    "make_batch",
    "make_example",
    "random_sentence",
    "sample_examples",
    "teacher_forced_accuracy",
    "train_translation",
    "decay_in_second_half",
    "training_batches",
    "translate",
    "translate_examples",
    "translation_loss",
    "translation_model",
    "warmup_cosine",
    "warmup_inverse_sqrt",
]

PAD, BOS, EOS = "<pad>", "<bos>", "<eos>"

#: The dictionary of the rule, by word class (source word -> target word).
LEXICON: dict[str, dict[str, str]] = {
    "noun": {
        "dogs": "perros",
        "cats": "gatos",
        "birds": "pájaros",
        "horses": "caballos",
        "kings": "reyes",
        "boys": "niños",
        "friends": "amigos",
        "wolves": "lobos",
        "bears": "osos",
        "farmers": "granjeros",
        "teachers": "maestros",
        "fish": "peces",
    },
    "adj": {
        "big": "grandes",
        "small": "pequeños",
        "old": "viejos",
        "young": "jóvenes",
        "red": "rojos",
        "black": "negros",
        "white": "blancos",
        "happy": "felices",
    },
    "verb": {
        "see": "ven",
        "love": "aman",
        "follow": "siguen",
        "find": "encuentran",
        "help": "ayudan",
        "call": "llaman",
        "hear": "oyen",
        "know": "conocen",
    },
    "sub": {
        "because": "porque",
        "while": "mientras",
        "when": "cuando",
        "although": "aunque",
    },
    "conj": {"and": "y"},
}
DICTIONARY: dict[str, str] = {
    src: tgt for words in LEXICON.values() for src, tgt in words.items()
}
WORD_CLASS: dict[str, str] = {
    src: cls for cls, words in LEXICON.items() for src in words
}
_WORDS: dict[str, list[str]] = {cls: list(words) for cls, words in LEXICON.items()}
MIN_LENGTH, MAX_LENGTH = 5, 80
#: The source lengths of the paper-style length buckets (inclusive ranges).
LENGTH_BUCKETS: tuple[tuple[int, int], ...] = (
    (5, 10),
    (11, 20),
    (21, 30),
    (31, 40),
    (41, 50),
    (51, 60),
)


class Vocab:
    """Words <-> indices. Index 0 is padding; ``specials`` come first, then ``words``
    in the given order."""

    def __init__(
        self, words: Sequence[str], specials: Sequence[str] = (PAD,)
    ) -> None:
        if not specials or specials[0] != PAD:
            raise ValueError(
                f"the first special token must be {PAD!r} (index 0), got"
                f" {list(specials)}"
            )
        self.itos: list[str] = [*specials, *words]
        if len(set(self.itos)) != len(self.itos):
            raise ValueError("vocabulary entries must be unique")
        self.stoi: dict[str, int] = {w: i for i, w in enumerate(self.itos)}
        self.pad = 0
        self.bos = self.stoi.get(BOS)
        self.eos = self.stoi.get(EOS)

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, words: Sequence[str]) -> list[int]:
        """Indices of ``words``; an unknown word raises ``ValueError``."""
        unknown = [w for w in words if w not in self.stoi]
        if unknown:
            raise ValueError(
                f"unknown words {unknown}; the vocabulary has {len(self)} entries"
            )
        return [self.stoi[w] for w in words]

    def decode(self, ids: Sequence[int] | torch.Tensor) -> list[str]:
        """Words of ``ids``, stopping at the end-of-sentence token and skipping
        padding and ``<bos>``."""
        if isinstance(ids, torch.Tensor):
            ids = ids.tolist()
        words = []
        for i in ids:
            if i == self.eos:
                break
            if i != self.pad and i != self.bos:
                words.append(self.itos[i])
        return words


SOURCE_VOCAB = Vocab(list(DICTIONARY))
TARGET_VOCAB = Vocab(list(DICTIONARY.values()), specials=(PAD, BOS, EOS))


def _clauses(source: Sequence[str]) -> list[tuple[int, int, bool]]:
    """Split a sentence into clause bodies ``(start, end, subordinate)``; connectors
    sit just before ``start``."""
    clauses, start, subordinate = [], 0, False
    for i, word in enumerate(source):
        if WORD_CLASS[word] in ("sub", "conj"):
            clauses.append((start, i, subordinate))
            start, subordinate = i + 1, WORD_CLASS[word] == "sub"
    clauses.append((start, len(source), subordinate))
    return clauses


def translate(source: Sequence[str]) -> tuple[list[str], list[int]]:
    """Apply the rule to a source sentence: returns ``(target words, alignment)``.

    ``alignment[j]`` is the source position that target word ``j`` translates. Any
    sequence of known words is accepted (the rule needs no grammatical parse): swap,
    map and reverse are defined on every sequence.
    """
    unknown = [w for w in source if w not in DICTIONARY]
    if unknown:
        raise ValueError(
            f"unknown source words {unknown}; known words: {sorted(DICTIONARY)}"
        )
    order: list[int] = []
    for start, end, subordinate in _clauses(source):
        if start > 0:
            order.append(start - 1)  # the connector stays in front of its clause
        body: list[int] = []
        adjectives: list[int] = []
        for i in range(start, end):
            cls = WORD_CLASS[source[i]]
            if cls == "adj":
                adjectives.append(i)
                continue
            if cls == "noun":
                # swap: the noun jumps over the adjectives before it
                body += [
                    i,
                    *adjectives,
                ]
            else:
                body += [*adjectives, i]
            adjectives = []
        body += adjectives
        order += body[::-1] if subordinate else body
    return [DICTIONARY[source[i]] for i in order], order


def _noun_phrase(n_words: int, rng: random.Random) -> list[str]:
    return [*rng.sample(_WORDS["adj"], n_words - 1), rng.choice(_WORDS["noun"])]


def _clause_body(n_words: int, rng: random.Random) -> list[str]:
    """A clause body of 2 to 7 words: noun phrase + verb (2-4 words) or noun phrase +
    verb + noun phrase (3-7)."""
    verb = rng.choice(_WORDS["verb"])
    if n_words == 2 or (n_words <= 4 and rng.random() < 0.5):
        return [*_noun_phrase(n_words - 1, rng), verb]
    rest = n_words - 1  # words in the two noun phrases, each of 1 to 3 words
    first = rng.randint(max(1, rest - 3), min(3, rest - 1))
    return [*_noun_phrase(first, rng), verb, *_noun_phrase(rest - first, rng)]


def random_sentence(length: int, rng: random.Random) -> list[str]:
    """A random grammatical source sentence of exactly ``length`` words (5 to 80)."""
    if not MIN_LENGTH <= length <= MAX_LENGTH:
        raise ValueError(
            f"length must be between {MIN_LENGTH} and {MAX_LENGTH}, got {length}"
        )
    # n clause bodies of 2..7 words joined by n - 1 connectors; about 4 to 7 words
    # per body.
    fewest = -(-(length + 1) // 8)
    n = rng.randint(fewest, max(fewest, (length + 1) // 5))
    sizes = [2] * n
    growing = list(range(n))  # the bodies still under 7 words, in order
    for _ in range(length - (n - 1) - 2 * n):
        i = rng.choice(growing)
        sizes[i] += 1
        if sizes[i] == 7:
            growing.remove(i)
    words = _clause_body(sizes[0], rng)
    connectors = _WORDS["sub"] + _WORDS["conj"]
    for size in sizes[1:]:
        words += [rng.choice(connectors), *_clause_body(size, rng)]
    return words


@dataclass(frozen=True)
class Example:
    """One sentence pair: ``alignment[j]`` is the source position of target word
    ``j``."""

    source: tuple[str, ...]
    target: tuple[str, ...]
    alignment: tuple[int, ...]


def make_example(source: Sequence[str]) -> Example:
    """The :class:`Example` of a source sentence under the rule."""
    target, alignment = translate(source)
    return Example(tuple(source), tuple(target), tuple(alignment))


def sample_examples(
    n: int, min_len: int = 5, max_len: int = 40, seed: int = 0
) -> list[Example]:
    """``n`` examples, source lengths drawn uniformly from ``min_len..max_len``."""
    rng = random.Random(offset_seed(seed))
    return [
        make_example(random_sentence(rng.randint(min_len, max_len), rng))
        for _ in range(n)
    ]


def examples_per_length(
    per_length: int, min_len: int = 5, max_len: int = 60, seed: int = 1
) -> list[Example]:
    """A test set with exactly ``per_length`` examples of every source length in
    ``min_len..max_len``."""
    rng = random.Random(offset_seed(seed))
    return [
        make_example(random_sentence(length, rng))
        for length in range(min_len, max_len + 1)
        for _ in range(per_length)
    ]


@dataclass
class TranslationBatch:
    """A padded, batch-first batch.

    src ``(B, S)`` source indices; src_mask ``(B, S)`` True at real words; tgt ``(B,
    T)`` target indices ending with ``<eos>`` (T = longest target + 1); tgt_mask
    ``(B, T)``; alignment ``(B, T)`` source position of each target word, -1 at
    ``<eos>`` and padding.
    """

    src: torch.Tensor
    src_mask: torch.Tensor
    tgt: torch.Tensor
    tgt_mask: torch.Tensor
    alignment: torch.Tensor
    examples: list[Example]

    @property
    def src_lengths(self) -> torch.Tensor:
        """``(B,)`` number of source words per example."""
        return self.src_mask.sum(-1)

    def __len__(self) -> int:
        return self.src.shape[0]


def make_batch(
    examples: Sequence[Example],
    src_vocab: Vocab = SOURCE_VOCAB,
    tgt_vocab: Vocab = TARGET_VOCAB,
) -> TranslationBatch:
    """Pad a list of examples into a :class:`TranslationBatch`."""
    if not examples:
        raise ValueError("make_batch needs at least one example")
    s_len = max(len(e.source) for e in examples)
    t_len = max(len(e.target) for e in examples) + 1
    # one tensor from padded rows of Python ints: far faster than one per example
    src_rows = [
        src_vocab.encode(e.source) + [src_vocab.pad] * (s_len - len(e.source))
        for e in examples
    ]
    tgt_rows = [
        tgt_vocab.encode(e.target)
        + [tgt_vocab.eos]
        + [tgt_vocab.pad] * (t_len - 1 - len(e.target))
        for e in examples
    ]
    alignment_rows = [
        [*e.alignment] + [-1] * (t_len - len(e.alignment)) for e in examples
    ]
    src, tgt, alignment = (
        torch.tensor(rows, dtype=torch.long)
        for rows in (src_rows, tgt_rows, alignment_rows)
    )
    return TranslationBatch(
        src,
        src != src_vocab.pad,
        tgt,
        tgt != tgt_vocab.pad,
        alignment,
        list(examples),
    )


def training_batches(
    batch_size: int,
    min_len: int = 5,
    max_len: int = 40,
    seed: int = 0,
    pool: int = 8,
) -> Callable[[int], TranslationBatch]:
    """``next_batch(step)`` for :func:`attnlab.train.train`: random examples, source
    lengths uniform.

    Batch ``step`` depends only on ``seed`` and ``step``. Every ``pool`` consecutive
    batches are cut from ``pool * batch_size`` examples sorted by length, so the
    words in a batch have similar lengths and little time goes into padding; the
    order of the batches within a pool is shuffled.
    """
    if batch_size < 1 or pool < 1:
        raise ValueError(
            f"batch_size and pool must be >= 1, got {batch_size} and {pool}"
        )
    cache: dict[int, list[list[Example]]] = {}

    def next_batch(step: int) -> TranslationBatch:
        index, within = divmod(step - 1, pool)
        if index not in cache:
            cache.clear()
            rng = random.Random(f"{offset_seed(seed)}-{index}")
            examples = sorted(
                (
                    make_example(random_sentence(rng.randint(min_len, max_len), rng))
                    for _ in range(pool * batch_size)
                ),
                key=lambda e: len(e.source),
            )
            chunks = [
                examples[i * batch_size : (i + 1) * batch_size] for i in range(pool)
            ]
            rng.shuffle(chunks)
            cache[index] = chunks
        return make_batch(cache[index][within])

    return next_batch


# Models, training and evaluation on this task (shared by the chapters on
# encoder-decoders and attention).


def translation_model(
    attention: bool = True,
    *,
    hidden_size: int = 128,
    embed_size: int = 64,
    cell: str = "gru",
    bidirectional: bool = True,
    attention_size: int = 64,
    score: Score | nn.Module | None = None,
) -> Seq2Seq:
    """An encoder-decoder for this task: RNNenc (``attention=False``) or RNNsearch
    (``attention=True``).

    Both models share the encoder: ``hidden_size`` units in total (half per direction
    when bidirectional), and a decoder state of ``hidden_size``; so the two differ
    only in where the decoder's context comes from. The attention decoder scores with
    an additive score of ``attention_size`` hidden units, or with ``score``.
    """
    if bidirectional and hidden_size % 2:
        raise ValueError(
            "a bidirectional encoder splits hidden_size in two halves; got odd"
            f" {hidden_size}"
        )
    encoder = Encoder(
        len(SOURCE_VOCAB),
        embed_size,
        hidden_size // 2 if bidirectional else hidden_size,
        cell=cell,
        bidirectional=bidirectional,
    )
    ids = {
        "pad_id": TARGET_VOCAB.pad,
        "bos_id": TARGET_VOCAB.bos,
        "eos_id": TARGET_VOCAB.eos,
    }
    if attention:
        decoder = AttentionDecoder(
            len(TARGET_VOCAB),
            embed_size,
            hidden_size,
            encoder.output_size,
            score=score,
            attention_size=attention_size,
            cell=cell,
            **ids,
        )
    else:
        if score is not None:
            raise ValueError("score is only used with attention=True")
        decoder = Decoder(
            len(TARGET_VOCAB),
            embed_size,
            hidden_size,
            encoder.output_size,
            cell=cell,
            **ids,
        )
    return Seq2Seq(encoder, decoder)


def build_model(
    decoder_class: type[DecoderBase] | None = None,
    *,
    seed: int = 0,
    embed_size: int = 32,
    hidden_size: int = 64,
    **options: Any,
) -> Seq2Seq:
    """A freshly initialised model for this task, its weights drawn after
    ``seed_everything(seed)``.

    The encoder is a bidirectional GRU with ``hidden_size // 2`` units per direction,
    so its states ``(B, S, hidden_size)`` have the size of the decoder state. The
    decoder is ``decoder_class(vocabulary, embed_size, hidden_size, hidden_size,
    pad_id=..., bos_id=..., eos_id=..., **options)``, e.g. ``LuongDecoder`` with
    ``score="dot", input_feeding=False``, ``LocalAttentionDecoder`` or
    ``HardAttentionDecoder``; ``None`` gives the encoder-decoder without attention
    (:func:`translation_model` with ``attention=False``). The same arguments give the
    same initial weights, so that two chapters can train the same model.
    """
    check_positive("embed_size", embed_size)
    check_positive("hidden_size", hidden_size)
    if hidden_size % 2:
        raise ValueError(
            "hidden_size must be even (the bidirectional encoder splits it into two"
            f" directions), got {hidden_size}"
        )
    if decoder_class is not None and not (
        isinstance(decoder_class, type) and issubclass(decoder_class, DecoderBase)
    ):
        raise ValueError(
            "decoder_class must be a decoder class (a subclass of DecoderBase, such"
            f" as LuongDecoder) or None, got {decoder_class!r}"
        )
    if decoder_class is None and options:
        raise ValueError(
            "the model without attention takes no decoder options, got"
            f" {sorted(options)}"
        )
    seed_everything(seed)
    if decoder_class is None:
        return translation_model(
            attention=False, hidden_size=hidden_size, embed_size=embed_size
        )
    encoder = Encoder(
        len(SOURCE_VOCAB), embed_size, hidden_size // 2, bidirectional=True
    )
    decoder = decoder_class(
        len(TARGET_VOCAB),
        embed_size,
        hidden_size,
        encoder.output_size,
        pad_id=TARGET_VOCAB.pad,
        bos_id=TARGET_VOCAB.bos,
        eos_id=TARGET_VOCAB.eos,
        **options,
    )
    return Seq2Seq(encoder, decoder)


def translation_loss(
    model: Seq2Seq, batch: TranslationBatch, *, label_smoothing: float = 0.0
) -> torch.Tensor:
    """Cross-entropy per target word (``<eos>`` included, padding excluded), with
    teacher forcing; ``label_smoothing`` moves that share of the target's probability
    evenly onto all words (Szegedy et al., 2016; Vaswani et al. use 0.1)."""
    logits = model(batch.src, batch.src_mask, batch.tgt).logits
    return F.cross_entropy(
        logits.flatten(0, 1),
        batch.tgt.flatten(),
        ignore_index=TARGET_VOCAB.pad,
        label_smoothing=label_smoothing,
    )


def teacher_forced_accuracy(model: Seq2Seq, batch: TranslationBatch) -> float:
    """Share of target words (``<eos>`` included) that the model ranks first when fed
    the true previous words."""
    predicted = model(batch.src, batch.src_mask, batch.tgt).tokens
    return (
        (predicted == batch.tgt) & batch.tgt_mask
    ).sum().item() / batch.tgt_mask.sum().item()


def teacher_forced_by_bucket(
    model: Seq2Seq,
    examples: Sequence[Example],
    buckets: Sequence[tuple[int, int]] = LENGTH_BUCKETS,
    *,
    batch_size: int = 128,
) -> dict[str, float]:
    """Teacher-forced word accuracy (``<eos>`` left out) per bucket of source
    lengths: ``{"5-10": share, ...}`` for the buckets that hold an example."""
    hits = [0] * len(buckets)
    counts = [0] * len(buckets)
    model.eval()
    with torch.no_grad():
        for batch in _batches(examples, batch_size):
            tokens = model(batch.src, batch.src_mask, batch.tgt).tokens
            right = ((tokens == batch.tgt) & (batch.alignment >= 0)).sum(-1)
            for n, r, e in zip(
                batch.src_lengths.tolist(),
                right.tolist(),
                batch.examples,
                strict=True,
            ):
                for k, (low, high) in enumerate(buckets):
                    if low <= n <= high:
                        hits[k] += r
                        counts[k] += len(e.target)
    return {
        f"{low}-{high}": h / c
        for (low, high), h, c in zip(buckets, hits, counts, strict=True)
        if c
    }


def decay_in_second_half(steps: int) -> Callable[[int], float]:
    """A learning-rate factor for ``train``: 1 for the first half of ``steps``, then
    linearly down to 0.1."""
    return lambda step: min(1.0, max(0.1, 2.0 * (1.0 - step / steps)))


def warmup_inverse_sqrt(warmup: int) -> Callable[[int], float]:
    """Vaswani et al.'s schedule as a factor of the peak rate: linear warm-up over
    ``warmup`` steps, then ``sqrt(warmup / step)``; 1 at step ``warmup``."""
    check_positive("warmup", warmup)
    return lambda step: min((step + 1) / warmup, math.sqrt(warmup / (step + 1)))


def warmup_cosine(steps: int, warmup: int) -> Callable[[int], float]:
    """Linear warm-up over ``warmup`` steps, then half a cosine from 1 down to 0 at
    ``steps``."""
    check_positive("warmup", warmup)
    if not warmup < steps:
        raise ValueError(f"warmup must be < steps = {steps}, got {warmup}")

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        done = min(1.0, (step - warmup) / (steps - warmup))
        return 0.5 * (1.0 + math.cos(math.pi * done))

    return factor


def train_translation(
    model: Seq2Seq,
    steps: int,
    *,
    batch_size: int = 64,
    lr: float = 2e-3,
    seed: int = 0,
    min_len: int = 5,
    max_len: int = 40,
    eval_every: int = 100,
    desc: str = "training",
    loss_fn: Callable[[Seq2Seq, TranslationBatch], torch.Tensor] = translation_loss,
    lr_factor: Callable[[int], float] | None = None,
    clip: float | None = 1.0,
) -> History:
    """Train ``model`` on random batches of lengths ``min_len..max_len`` with
    :func:`attnlab.train.train`.

    Every ``eval_every`` steps the history records ``val_accuracy``, the
    teacher-forced word accuracy on 128 held-out sentences of length ``max_len - 9 ..
    max_len`` (the hardest training lengths), and at the end the weights with the
    best ``val_accuracy`` are restored, so that a late spike cannot decide what the
    model is reported to do. ``loss_fn(model, batch)`` replaces the
    cross-entropy (e.g. a model with hard attention needs its own loss).
    ``lr_factor`` schedules the learning rate (e.g. :func:`decay_in_second_half`); by
    default it stays at ``lr``. ``clip`` is the gradient-norm clip (``None``: none).
    """
    held_out = make_batch(
        sample_examples(128, max(min_len, max_len - 9), max_len, seed=10_000 + seed)
    )
    return train(
        model,
        training_batches(batch_size, min_len, max_len, seed=seed),
        loss_fn,
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        lr_factor=lr_factor,
        clip=clip,
        eval_every=eval_every,
        desc=desc,
        evaluate=lambda m: {"val_accuracy": teacher_forced_accuracy(m, held_out)},
        best=("val_accuracy", "max"),
    )


def _batches(examples: Sequence[Example], batch_size: int) -> list[TranslationBatch]:
    return [
        make_batch(examples[i : i + batch_size])
        for i in range(0, len(examples), batch_size)
    ]


@torch.no_grad()
def translate_examples(
    model: Seq2Seq,
    examples: Sequence[Example],
    *,
    beam_size: int | None = None,
    batch_size: int = 128,
) -> list[list[str]]:
    """The model's translations (greedy, or beam search of width ``beam_size``) as
    lists of target words."""
    model.eval()
    predictions: list[list[str]] = []
    for batch in _batches(examples, batch_size):
        if beam_size is None:
            tokens = model.greedy(batch.src, batch.src_mask).tokens
        else:
            tokens, _ = model.beam_search(batch.src, batch.src_mask, beam_size)
        predictions += [TARGET_VOCAB.decode(row) for row in tokens]
    return predictions


@torch.no_grad()
def attention_maps(
    model: Seq2Seq, examples: Sequence[Example], *, batch_size: int = 128
) -> tuple[list[torch.Tensor], float]:
    """Teacher-forced attention of an attention model on the true translations.

    Returns one ``(len(target), len(source))`` weight matrix per example (the row of
    ``<eos>`` left out) and the alignment accuracy over all target words
    (:func:`attnlab.metrics.alignment_accuracy`).
    """
    model.eval()
    maps: list[torch.Tensor] = []
    hits = total = 0
    for batch in _batches(examples, batch_size):
        weights = model(batch.src, batch.src_mask, batch.tgt).weights
        if weights is None:
            raise ValueError("the model's decoder has no attention weights")
        counted = int((batch.alignment >= 0).sum())
        hits += alignment_accuracy(weights, batch.alignment) * counted
        total += counted
        maps += [
            w[: len(e.target), : len(e.source)]
            for w, e in zip(weights, batch.examples, strict=True)
        ]
    return maps, hits / total


@dataclass
class TranslationReport:
    """A model's translations of a test set and their scores by source length."""

    lengths: list[int]
    predictions: list[list[str]]
    references: list[list[str]]

    def by_bucket(
        self, buckets: Sequence[tuple[int, int]] = LENGTH_BUCKETS
    ) -> list[dict[str, float | str]]:
        """Token accuracy, exact match and BLEU per bucket of source lengths
        (:func:`scores_by_bucket`)."""
        return scores_by_bucket(
            self.lengths, self.predictions, self.references, buckets
        )

    def by_length(
        self, width: int = 5
    ) -> tuple[list[float], list[float], list[float]]:
        """Word accuracy and exact match in bins of ``width`` source lengths (for a
        curve over length).

        Returns ``(mean source length, word accuracy, exact-match rate)`` of each
        non-empty bin, the bins starting at the shortest sentence.
        """
        check_positive("width", width)
        centres: list[float] = []
        word: list[float] = []
        exact: list[float] = []
        for low in range(min(self.lengths), max(self.lengths) + 1, width):
            chosen = [
                i for i, n in enumerate(self.lengths) if low <= n < low + width
            ]
            if chosen:
                preds = [self.predictions[i] for i in chosen]
                refs = [self.references[i] for i in chosen]
                centres.append(sum(self.lengths[i] for i in chosen) / len(chosen))
                word.append(token_accuracy(preds, refs))
                exact.append(exact_match(preds, refs))
        return centres, word, exact

    def by_position(self, low: int, high: int) -> list[float]:
        """Share of correct words at each target position, over the sentences of
        ``low..high`` source words (position ``j`` counts the sentences that have
        one)."""
        chosen = [i for i, n in enumerate(self.lengths) if low <= n <= high]
        if not chosen:
            raise ValueError(
                f"no test sentence has a source length in {low}..{high}, got lengths"
                f" {min(self.lengths)}..{max(self.lengths)}"
            )
        right = [0] * high
        count = [0] * high
        for i in chosen:
            prediction = self.predictions[i]
            for j, word in enumerate(self.references[i]):
                count[j] += 1
                right[j] += j < len(prediction) and prediction[j] == word
        return [r / c for r, c in zip(right, count, strict=True) if c]

    def row(self, bucket: tuple[int, int]) -> dict[str, float | str]:
        """The scores of one bucket."""
        rows = self.by_bucket([bucket])
        if not rows:
            raise ValueError(f"no test sentence has a source length in {bucket}")
        return rows[0]


def evaluate_translation(
    model: Seq2Seq, examples: Sequence[Example], *, beam_size: int | None = None
) -> TranslationReport:
    """Translate ``examples`` (greedy or beam search) and keep what is needed to
    score them by length."""
    predictions = translate_examples(model, examples, beam_size=beam_size)
    return TranslationReport(
        [len(e.source) for e in examples],
        predictions,
        [list(e.target) for e in examples],
    )


@dataclass
class TrainedModel:
    """One model of a :class:`TranslationComparison`, trained and scored.

    ``accuracy`` maps a bucket's name (``"31-40"``) to the word accuracy of the
    model's greedy translations of the test sentences of those source lengths;
    ``ms_per_step`` is the training time per step in milliseconds, the periodic
    validation included.
    """

    model: Seq2Seq
    history: History
    ms_per_step: float
    accuracy: dict[str, float]

    def summary(self, name: str) -> str:
        """One line: the word accuracy of every bucket (what the lesson discusses;
        the time per step is ``ms_per_step``, for the benchmarks)."""
        accuracy = "  ".join(f"{b}: {a:.3f}" for b, a in self.accuracy.items())
        return f"{name:>24}: word accuracy {accuracy}"


class TranslationComparison:
    """Train several models on one budget and score them on one test set.

    Every :meth:`run` trains with :func:`train_translation` for ``steps`` steps on
    batches of ``batch_size`` sentences of ``train_lengths`` (inclusive) words,
    learning rate ``lr``, then translates ``test_set`` greedily and keeps the word
    accuracy per bucket of ``buckets`` in :attr:`results`, under the run's name.
    Runs with the same model, seed and options give the same numbers.
    """

    def __init__(
        self,
        test_set: Sequence[Example],
        *,
        steps: int,
        batch_size: int = 32,
        lr: float = 4e-3,
        train_lengths: tuple[int, int] = (5, 30),
        buckets: Sequence[tuple[int, int]] = LENGTH_BUCKETS,
        eval_every: int = 100,
    ) -> None:
        if not test_set:
            raise ValueError("test_set must hold at least one example, got none")
        for name, value in [
            ("steps", steps),
            ("batch_size", batch_size),
            ("lr", lr),
            ("eval_every", eval_every),
        ]:
            check_positive(name, value)
        if (
            len(train_lengths) != 2
            or not MIN_LENGTH <= train_lengths[0] <= train_lengths[1] <= MAX_LENGTH
        ):
            raise ValueError(
                "train_lengths must be (shortest, longest) with"
                f" {MIN_LENGTH} <= shortest <= longest <= {MAX_LENGTH}, got"
                f" {train_lengths}"
            )
        if not buckets or any(len(b) != 2 or b[0] > b[1] for b in buckets):
            raise ValueError(
                "buckets must be a non-empty list of (shortest, longest) source"
                f" lengths, got {list(buckets)}"
            )
        self.test_set = list(test_set)
        self.steps, self.batch_size, self.lr = steps, batch_size, lr
        self.train_lengths = tuple(train_lengths)
        self.buckets = [tuple(b) for b in buckets]
        self.eval_every = eval_every
        self.results: dict[str, TrainedModel] = {}

    def run(
        self,
        name: str,
        model: Seq2Seq,
        *,
        seed: int = 0,
        loss_fn: Callable[
            [Seq2Seq, TranslationBatch], torch.Tensor
        ] = translation_loss,
        eval_every: int | None = None,
        clip: float | None = 1.0,
        report: bool = True,
    ) -> TrainedModel:
        """Train ``model`` (``seed``: the batches; the model's own seed is that of
        :func:`build_model`), score it and keep it under ``name``.

        ``loss_fn`` replaces the cross-entropy (hard attention needs its own loss),
        ``eval_every`` the comparison's validation interval, ``clip`` the
        gradient-norm clip (``None``: none). With ``report`` the run's
        :meth:`TrainedModel.summary` is printed.
        """
        history = train_translation(
            model,
            self.steps,
            batch_size=self.batch_size,
            lr=self.lr,
            seed=seed,
            min_len=self.train_lengths[0],
            max_len=self.train_lengths[1],
            eval_every=self.eval_every if eval_every is None else eval_every,
            desc=name,
            loss_fn=loss_fn,
            clip=clip,
        )
        rows = evaluate_translation(model, self.test_set).by_bucket(self.buckets)
        result = TrainedModel(
            model,
            history,
            1000 * history.seconds / self.steps,
            {str(row["bucket"]): float(row["token_accuracy"]) for row in rows},
        )
        self.results[name] = result
        if report:
            print(result.summary(name))
        return result
