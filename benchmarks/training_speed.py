"""How long does a student wait for the models each chapter trains, in this tree and in a baseline release?

    python benchmarks/training_speed.py [--baseline REF] [--rounds 3] [--steps 20] [--only CHAPTER ...]
        [--out results/timing/training-speed.json]

``ENTRIES`` lists every training run a reader executes when running a chapter in full (the full values of
``scaled(full, quick)``): the runs of the main flow and those of the exercise cells and checks that train with a
chapter-sized budget (the checks' runs of 1 to 30 steps in chapters 2 to 4 are left out; chapter 1 learns a query
with a loop of its own and the appendix trains nothing). Each entry builds the model and calls the chapter's
training function with the chapter's settings; a model trained several times on one configuration (several seeds,
several relations) is one entry with its count of ``runs``.

Training the whole budget would take the chapters' minutes per version and round. Instead a chapter's entries run one
after the other in a worker process (``--worker``: one torch thread, ``OMP_NUM_THREADS=1``, the source tree under test first on
``PYTHONPATH``), where ``attnlab.train.train`` is replaced by a wrapper that notes the run's ``steps``,
``eval_every`` and ``evaluate``, then runs the real loop (optimizer, clipping, schedule) for 3 untimed warm-up
steps and for K timed steps on the same model, with the batches after the warm-up's and without evaluation, and
times two calls of ``evaluate`` under ``model.eval()`` and ``torch.no_grad()`` (the faster counts). A run's
estimated seconds are ``steps * step_s + evals * eval_s``, with ``evals`` the evaluations of the real loop (every
``eval_every`` steps and at the end); data set up before training is not counted.

With ``--baseline REF`` the ``src/`` and ``results/`` of that git commit are exported to a temporary folder and
both versions are measured, the two taking turns chapter by chapter and round by round; each keeps its fastest round
(other programs can only slow a round down). The JSON holds the machine, the versions, the settings, every
entry's times and the chapters' totals; the book's reproducing page renders it with the ``training-speed``
directive (``book/_ext/training_speed.py``). Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import inspect
import json
import os
import platform
import random
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

import attnlab.train
from attnlab.attention import AdditiveScore, GeneralScore, LocationScore, attend
from attnlab.experiments import transformer_vs_rnn
from attnlab.experiments.record import processor, published
from attnlab.hard_attention import HardAttentionDecoder, hard_attention_loss
from attnlab.luong import LocalAttentionDecoder, LuongDecoder
from attnlab.ntm import NTM, LSTMBaseline
from attnlab.pointer import PointerNet
from attnlab.selfattention import SelfAttentionEncoder
from attnlab.simple_attention import slide_attention_model
from attnlab.tasks import (
    convex_hull_data,
    sorting_data,
    square_symmetry,
    tour_length,
    tsp_data,
)
from attnlab.tasks.copy import BITS, train_copy
from attnlab.tasks.reversal import reversal_batches, sample_reversals
from attnlab.tasks.translation import (
    DICTIONARY,
    SOURCE_VOCAB,
    TARGET_VOCAB,
    TranslationComparison,
    build_model,
    decay_in_second_half,
    examples_per_length,
    make_batch,
    make_example,
    random_sentence,
    teacher_forced_accuracy,
    train_translation,
    translation_loss,
    translation_model,
)
from attnlab.train import seed_everything, train
from attnlab.transformer import Transformer

ROOT = Path(__file__).resolve().parents[1]
WARMUP = 3  # untimed steps before the timed ones
EVAL_CALLS = 2  # timed calls of evaluate; the fastest counts


@dataclasses.dataclass(frozen=True)
class Entry:
    """One model a chapter trains: ``setup()`` builds it and calls the chapter's training function, ``runs``
    times in the chapter."""

    chapter: str
    model: str
    runs: int
    setup: Callable[[], Any]

    @property
    def key(self) -> str:
        return f"{self.chapter}/{self.model}"


# Chapter 2: the retrieval task and its three trainable scores (D = 8, 16 keys, noise 0.1, batches of 128).
D, N_KEYS, NOISE, RETRIEVAL_BATCH = 8, 16, 0.1, 128
ROTATION = torch.linalg.qr(torch.randn(D, D, generator=torch.Generator().manual_seed(0))).Q
RELATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "same space": lambda k: k,
    "linear map": lambda k: k @ ROTATION.T,
    "non-linear": lambda k: (D**0.5 * k.abs() - 0.8) @ ROTATION.T,
}
SCORES: dict[str, Callable[[], nn.Module]] = {
    "location": lambda: LocationScore(D, N_KEYS),
    "general": lambda: GeneralScore(D, D),
    "additive": lambda: AdditiveScore(D, D, 64),
}


def retrieval_batch(n: int, relation: str, gen: torch.Generator) -> tuple[torch.Tensor, ...]:
    """n examples: queries (n, 1, D), keys (n, N_KEYS, D), index of the right key (n,)."""
    keys = F.normalize(torch.randn(n, N_KEYS, D, generator=gen), dim=-1)
    target = torch.randint(N_KEYS, (n,), generator=gen)
    query = RELATIONS[relation](keys[torch.arange(n), target]) + NOISE * torch.randn(n, D, generator=gen)
    return query[:, None], keys, target


def retrieval_accuracy(score: nn.Module, data: tuple[torch.Tensor, ...]) -> float:
    query, keys, target = data
    with torch.no_grad():
        _, weights = attend(query, keys, keys, score=score)
    return (weights[:, 0].argmax(-1) == target).float().mean().item()


def retrieval_loss(model: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
    query, keys, target = batch
    _, weights = attend(query, keys, keys, score=model)
    return F.nll_loss(weights[:, 0].clamp_min(1e-30).log(), target)


def scoring_run(name: str, relation: str = "linear map") -> None:
    """A trainable score on one relation, 600 steps, evaluated every 50 (the chapter runs each on three)."""
    val_set = retrieval_batch(1000, relation, torch.Generator().manual_seed(3))
    torch.manual_seed(0)
    model = SCORES[name]()
    data_gen = torch.Generator().manual_seed(2)
    train(
        model,
        lambda step: retrieval_batch(RETRIEVAL_BATCH, relation, data_gen),
        retrieval_loss,
        steps=600,
        batch_size=RETRIEVAL_BATCH,
        lr=1e-2,
        evaluate=lambda m: {"val_accuracy": retrieval_accuracy(m, val_set)},
        eval_every=50,
        best=("val_accuracy", "max"),
        desc=f"{name}, {relation}",
    )


def hidden_units_run(d_hidden: int) -> None:
    """The exercise's additive score with d_hidden units on the non-linear relation, 600 steps."""
    torch.manual_seed(0)
    model = AdditiveScore(D, D, d_hidden)
    data_gen = torch.Generator().manual_seed(2)
    train(
        model,
        lambda step: retrieval_batch(RETRIEVAL_BATCH, "non-linear", data_gen),
        retrieval_loss,
        steps=600,
        batch_size=RETRIEVAL_BATCH,
        lr=1e-2,
        desc=f"additive, h = {d_hidden}",
    )


# Chapters 3 and 4: the translation models of the Bahdanau chapters, and their small exercise models.
def encoder_decoder_run(steps: int, eval_every: int, **options: Any) -> None:
    seed_everything(0)
    model = translation_model(**options)
    train_translation(model, steps, eval_every=eval_every, lr_factor=decay_in_second_half(steps))


def reversed_sources(batch: Any) -> Any:
    """The batch with the real words of every source backwards (chapter 3's reversal exercise)."""
    lengths = batch.src_mask.sum(-1, keepdim=True)
    index = (lengths - 1 - torch.arange(batch.src.shape[1])).clamp(min=0)
    backwards = batch.src.gather(1, index)
    return dataclasses.replace(batch, src=torch.where(batch.src_mask, backwards, batch.src))


def reversal_run(reverse: bool) -> None:
    """Chapter 3's exercise: a small one-direction model, 150 steps on 5-15 words, the source backwards or not."""
    seed_everything(0)
    model = translation_model(attention=False, bidirectional=False, hidden_size=64, embed_size=32)
    prepare = reversed_sources if reverse else (lambda batch: batch)
    train_translation(model, 150, max_len=15, eval_every=150, loss_fn=lambda m, b: translation_loss(m, prepare(b)))


def alignment_run(bidirectional: bool) -> None:
    """Chapter 4's exercise: a small attention model, 150 steps on 5-15 words."""
    seed_everything(0)
    model = translation_model(
        attention=True, bidirectional=bidirectional, hidden_size=64, embed_size=32, attention_size=32
    )
    train_translation(model, 150, max_len=15, eval_every=150)


# Chapters 5 and 6: chapter 5's budget, run by TranslationComparison (400 steps of 32 sentences of 5-30 words).
def comparison_run(decoder: type | None = None, *, run: dict[str, Any] | None = None, **options: Any) -> None:
    comparison = TranslationComparison(
        examples_per_length(16, 5, 40, seed=1),
        steps=400,
        batch_size=32,
        lr=4e-3,
        train_lengths=(5, 30),
        buckets=((5, 10), (11, 20), (21, 30), (31, 40)),
        eval_every=100,
    )
    model = build_model(decoder, embed_size=32, hidden_size=64, **options)
    comparison.run("benchmark", model, **(run or {}))


# Chapter 7: simple and parameterized attention on reversal, and the neighbour tagger.
def slide_run(parameterized: bool) -> None:
    words = tuple(DICTIONARY)
    held_out = make_batch(sample_reversals(512, 5, 20, seed=1_000, words=words))
    seed_everything(0)
    model = slide_attention_model(parameterized, hidden_size=16, embed_size=16)
    train(
        model,
        reversal_batches(64, 5, 20, seed=0, words=words),
        translation_loss,
        steps=600,
        batch_size=64,
        lr=5e-3,
        evaluate=lambda m: {"accuracy": teacher_forced_accuracy(m, held_out)},
        eval_every=60,
        best=("accuracy", "max"),
    )


class NeighbourTagger(nn.Module):
    """Chapter 7's tagger: one self-attention encoder layer and a linear layer naming the neighbours."""

    def __init__(self, positions: bool, n_heads: int = 2) -> None:
        super().__init__()
        vocab = len(SOURCE_VOCAB)
        self.encoder = SelfAttentionEncoder(vocab, 32, n_heads, d_ff=64, positions=positions)
        self.readout = nn.Linear(32, 2 * vocab)

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """Logits (B, S, 2, vocabulary): the previous and the next word of each word."""
        return self.readout(self.encoder(src, src_mask).states).unflatten(-1, (2, len(SOURCE_VOCAB)))


def neighbour_labels(src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
    previous, following = F.pad(src[:, :-1], (1, 0)), F.pad(src[:, 1:], (0, 1))
    return torch.stack([previous, following], -1).masked_fill(~src_mask[..., None], -100)


def sentence_batch(step: int, size: int = 64) -> Any:
    """Chapter 7's batch ``step`` of ``size`` random sentences of 5 to 12 words."""
    rng = random.Random(f"neighbours-{step}")
    return make_batch([make_example(random_sentence(rng.randint(5, 12), rng)) for _ in range(size)])


def neighbour_loss(model: nn.Module, batch: Any) -> torch.Tensor:
    logits = model(batch.src, batch.src_mask)
    return F.cross_entropy(logits.flatten(0, 2), neighbour_labels(batch.src, batch.src_mask).flatten())


def neighbour_accuracy(model: nn.Module, batch: Any) -> float:
    labels = neighbour_labels(batch.src, batch.src_mask)
    hits = model(batch.src, batch.src_mask).argmax(-1) == labels
    return hits[labels >= 0].float().mean().item()


def tagger_run(positions: bool) -> None:
    """The tagger with or without positions: 500 steps, evaluated every 50."""
    validation = sentence_batch(2 * 10**6, 512)
    seed_everything(1)
    train(
        NeighbourTagger(positions),
        sentence_batch,
        neighbour_loss,
        steps=500,
        batch_size=64,
        lr=3e-3,
        evaluate=lambda m: {"accuracy": neighbour_accuracy(m, validation)},
        eval_every=50,
        best=("accuracy", "max"),
    )


def one_head_run() -> None:
    """The check of chapter 7's head exercise: a tagger with one head, 250 steps, no evaluation."""
    seed_everything(1)
    train(NeighbourTagger(True, n_heads=1), sentence_batch, neighbour_loss, steps=250, batch_size=64, lr=3e-3)


# Chapters 8 and 9: the models with the recipes of the committed record, 300 steps (chapter 8: RNNenc, RNNsearch and
# the Transformer, and the exercise's two small ones; chapter 9: the Transformer with each kind of positions).
IDS = {"pad_id": TARGET_VOCAB.pad, "bos_id": TARGET_VOCAB.bos, "eos_id": TARGET_VOCAB.eos}


def transformer_model(norm_first: bool = False, positions: str = "sinusoidal") -> Transformer:
    return Transformer(len(SOURCE_VOCAB), len(TARGET_VOCAB), d_model=96, n_heads=2, n_layers=2, d_ff=192,
                       norm_first=norm_first, positions=positions, **IDS)


def transformer_chapter_run(name: str, positions: str = "sinusoidal") -> None:
    recipe = transformer_vs_rnn.Recipe(**published("transformer-vs-rnn")["results"]["chosen"][name])
    seed_everything(0)
    if name == "Transformer":
        model = transformer_model(recipe.norm_first, positions)
    else:
        model = translation_model(attention=name == "RNNsearch")
    train_translation(
        model,
        300,
        lr=recipe.lr,
        eval_every=50,
        lr_factor=recipe.lr_factor(300),
        loss_fn=partial(translation_loss, label_smoothing=recipe.label_smoothing),
    )


def norm_run(norm_first: bool) -> None:
    """The check of chapter 8's norm exercise: a small Transformer, 100 steps of 32 sentences of 5-20 words."""
    seed_everything(0)
    model = Transformer(
        len(SOURCE_VOCAB), len(TARGET_VOCAB), d_model=32, n_heads=4, n_layers=2, norm_first=norm_first, **IDS
    )
    train_translation(model, 100, batch_size=32, max_len=20, lr=5e-3, eval_every=100)


# Chapter 10: the NTM and the LSTM baseline on the copy task, 3,000 steps.
def copy_run(name: str) -> None:
    seed_everything(0)
    if name == "NTM":
        model = NTM(BITS + 1, BITS, hidden_size=100, memory_rows=128, memory_width=20)
    else:
        model = LSTMBaseline(BITS + 1, BITS, hidden_size=128, layers=1)
    train_copy(model, steps=3000, seed=0)


# Chapter 11: attnlab.experiments.pointer_networks.train_sorter (1,200 steps, evaluated every 250) and
# the convex hull, as the benchmark's own copies so that a baseline release without them is measured too.
SORT_N, SORT_STEPS = 10, 1200


def train_sorter(seed: int, mask_chosen: bool) -> None:
    """Chapter 11's ``train_sorter``, with its validation lists."""
    val_values, val_order = sorting_data(2000, SORT_N, torch.Generator().manual_seed(20))

    def sort_validation(model: PointerNet) -> dict[str, float]:
        decoded = model.greedy(val_values)
        return {"exact": (decoded.indices == val_order).all(dim=1).float().mean().item()}

    data = seed_everything(seed)
    train(
        PointerNet(d_input=1, d_hidden=64),
        lambda step: sorting_data(128, SORT_N, data),
        lambda model, batch: model.loss(*batch, mask_chosen=mask_chosen),
        steps=SORT_STEPS,
        batch_size=128,
        lr=3e-3,
        lr_factor=lambda step: 1.0 if step < 0.6 * SORT_STEPS else 0.1,
        evaluate=sort_validation,
        eval_every=250,
        best=("exact", "max"),
    )


def hull_run() -> None:
    """The convex-hull pointer network: 1,600 steps on 5 to 10 points, evaluated every 100."""
    steps, sizes = 1600, list(range(5, 11))
    val_points, val_targets = convex_hull_data(1000, max(sizes), torch.Generator().manual_seed(200))

    def hull_validation(model: PointerNet) -> dict[str, float]:
        indices = model.greedy(val_points).indices
        return {"accuracy": (indices == val_targets).all(dim=1).float().mean().item()}

    data = seed_everything(0)
    train(
        PointerNet(d_input=2, d_hidden=64, end_token=True),
        lambda step: convex_hull_data(128, sizes[step % len(sizes)], data),
        lambda model, batch: model.loss(*batch),
        steps=steps,
        batch_size=128,
        lr=3e-3,
        lr_factor=lambda step: 1.0 if step < 0.6 * steps else 0.1,
        evaluate=hull_validation,
        eval_every=100,
        best=("accuracy", "max"),
    )


# Chapter 12: the TSP pointer network, 2,400 steps on 20,000 labelled instances, evaluated every 300.
def tsp_run() -> None:
    steps = 2400
    generator = seed_everything(0)
    train_points, train_tours = tsp_data(20_000, 10, generator)
    val_points, val_tours = tsp_data(500, 10, torch.Generator().manual_seed(2))
    val_optimal = tour_length(val_points, val_tours).mean().item()

    def next_tsp_batch(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        index = torch.randint(0, len(train_points), (128,), generator=generator)
        which = torch.randint(0, 8, (128,), generator=generator)
        return square_symmetry(train_points[index], which), train_tours[index]

    def tsp_gap(model: PointerNet) -> dict[str, float]:
        val_length = tour_length(val_points, model.greedy(val_points).indices).mean().item()
        return {"greedy_gap": val_length / val_optimal - 1}

    seed_everything(0)
    train(
        PointerNet(d_input=2, d_hidden=128),
        next_tsp_batch,
        lambda model, batch: model.loss(*batch),
        steps=steps,
        batch_size=128,
        lr=1e-3,
        lr_factor=lambda step: 1.0 if step < 0.6 * steps else 0.1,
        evaluate=tsp_gap,
        eval_every=300,
        best=("greedy_gap", "min"),
    )


ENTRIES: list[Entry] = [
    *(Entry("02", name, 3, partial(scoring_run, name)) for name in SCORES),  # one run per relation
    *(Entry("02", f"additive, h = {h} (exercise)", 1, partial(hidden_units_run, h)) for h in (2, 4, 8, 16)),
    Entry("03", "one direction", 1, partial(encoder_decoder_run, 600, 50, attention=False, bidirectional=False)),
    Entry("03", "bidirectional", 1, partial(encoder_decoder_run, 600, 50, attention=False, bidirectional=True)),
    Entry("03", "source as given (exercise)", 1, partial(reversal_run, False)),
    Entry("03", "source backwards (exercise)", 1, partial(reversal_run, True)),
    Entry("04", "RNNenc", 1, partial(encoder_decoder_run, 1000, 100, attention=False)),
    Entry("04", "RNNsearch", 1, partial(encoder_decoder_run, 1000, 100, attention=True)),
    Entry("04", "both directions (exercise)", 1, partial(alignment_run, True)),
    Entry("04", "one direction (exercise)", 1, partial(alignment_run, False)),
    Entry("05", "no attention", 1, comparison_run),
    *(
        Entry("05", f"global {score}", 1,
              partial(comparison_run, LuongDecoder, score=score, input_feeding=False, max_source_len=40))
        for score in ("dot", "general", "concat", "location")
    ),
    *(
        Entry("05", f"local-{centre[0]}, D = {d}", 1,
              partial(comparison_run, LocalAttentionDecoder, half_width=d, centre=centre, score="general",
                      input_feeding=False))
        for d, centre in ((5, "monotonic"), (8, "predictive"), (1, "monotonic"), (3, "monotonic"))
    ),
    Entry("05", "global dot, input feeding", 1,
          partial(comparison_run, LuongDecoder, score="dot", input_feeding=True, max_source_len=40)),
    Entry("06", "no attention", 1, comparison_run),
    Entry("06", "soft (global dot)", 1,
          partial(comparison_run, LuongDecoder, score="dot", input_feeding=False, run={"eval_every": 25})),
    Entry("06", "hard", 1,
          partial(comparison_run, HardAttentionDecoder, score="dot", baseline="average",
                  run={"loss_fn": hard_attention_loss, "eval_every": 25})),
    *(
        Entry("06", name, 1,
              partial(comparison_run, HardAttentionDecoder, score="dot", baseline="none",
                      run={"loss_fn": hard_attention_loss, "eval_every": 25, "clip": clip}))
        for name, clip in (("hard, no baseline", 1.0), ("hard, no baseline, no clipping", None))
    ),
    Entry("07", "simple", 1, partial(slide_run, False)),
    Entry("07", "parameterized", 1, partial(slide_run, True)),
    Entry("07", "neighbour tagger, with positions", 1, partial(tagger_run, True)),
    Entry("07", "neighbour tagger, without positions", 1, partial(tagger_run, False)),
    Entry("07", "neighbour tagger, one head (exercise check)", 1, one_head_run),
    *(Entry("08", name, 1, partial(transformer_chapter_run, name)) for name in ("RNNenc", "RNNsearch", "Transformer")),
    Entry("08", "post-norm (exercise check)", 1, partial(norm_run, False)),
    Entry("08", "pre-norm (exercise check)", 1, partial(norm_run, True)),
    *(
        Entry("09", "Transformer" if positions == "sinusoidal" else f"Transformer, {positions}", 1,
              partial(transformer_chapter_run, "Transformer", positions))
        for positions in ("sinusoidal", "learned", "alibi")
    ),
    *(Entry("10", name, 1, partial(copy_run, name)) for name in ("NTM", "LSTM")),
    Entry("11", "sorting, mask on", 1, partial(train_sorter, 0, True)),
    Entry("11", "sorting, mask off", 1, partial(train_sorter, 0, False)),
    Entry("11", "convex hull", 1, hull_run),
    Entry("12", "TSP", 1, tsp_run),
]


def evaluations(steps: int, eval_every: int) -> int:
    """How many times ``attnlab.train.train`` evaluates: every ``eval_every`` steps and at the end."""
    return steps // eval_every + (1 if steps % eval_every else 0)


class _Measured(BaseException):
    """Raised by the measuring wrapper to stop the entry's set-up once its training run is timed."""

    def __init__(self, result: dict[str, float]) -> None:
        super().__init__(result)
        self.result = result


def _rebind(old: object, new: object) -> None:
    """Replace ``old`` by ``new`` in attnlab's loaded modules and in this one (names imported with ``from``)."""
    this = sys.modules[__name__]
    for name, module in list(sys.modules.items()):
        if module is this or name == "attnlab" or name.startswith("attnlab."):
            for attribute, value in list(vars(module).items()):
                if value is old:
                    setattr(module, attribute, new)


def _eval_seconds(model: nn.Module, evaluate: Callable[[nn.Module], Any]) -> float:
    """The fastest of ``EVAL_CALLS`` calls of ``evaluate(model)``, in eval mode and without gradients."""
    model.eval()
    times = []
    with torch.no_grad():
        for _ in range(EVAL_CALLS):
            start = time.perf_counter()
            evaluate(model)
            times.append(time.perf_counter() - start)
    return min(times)


def measure(setup: Callable[[], Any], steps: int) -> dict[str, float]:
    """Seconds per training step and per evaluation of the first run ``setup()`` trains with
    ``attnlab.train.train``, timed over ``steps`` steps after ``WARMUP`` (see the module's docstring), with the
    run's own number of steps and evaluations."""
    original = attnlab.train.train
    default_every = inspect.signature(original).parameters["eval_every"].default

    def measuring(model: nn.Module, next_batch: Callable, loss_fn: Callable, **options: Any) -> None:
        evaluate, every = options.get("evaluate"), options.get("eval_every", default_every)
        plain = {**options, "evaluate": None, "best": None}
        original(model, next_batch, loss_fn, **{**plain, "steps": WARMUP})
        start = time.perf_counter()
        original(model, lambda step: next_batch(step + WARMUP), loss_fn, **{**plain, "steps": steps})
        step_s = (time.perf_counter() - start) / steps
        raise _Measured({
            "step_s": step_s,
            "eval_s": 0.0 if evaluate is None else _eval_seconds(model, evaluate),
            "steps": options["steps"],
            "eval_every": every,
            "evals": 0 if evaluate is None else evaluations(options["steps"], every),
        })

    _rebind(original, measuring)
    try:
        setup()
    except _Measured as done:
        return done.result
    finally:
        _rebind(measuring, original)
    raise RuntimeError(f"{setup} returned without training through attnlab.train.train")


def worker(keys: list[str], src: Path, steps: int) -> None:
    """Print the measurement of each entry of ``keys`` as a JSON line (attnlab imported from ``src``)."""
    if not Path(attnlab.train.__file__).resolve().is_relative_to(src.resolve()):
        raise RuntimeError(f"attnlab comes from {attnlab.train.__file__}, not from {src}: set PYTHONPATH={src}")
    torch.set_num_threads(1)
    for key in keys:
        entry = next(e for e in ENTRIES if e.key == key)
        seed_everything(0)
        print(json.dumps({"key": key, **measure(entry.setup, steps)}), flush=True)


def run_worker(entries: list[Entry], src: Path, steps: int) -> dict[str, dict[str, float]]:
    """Measure ``entries`` one after the other in a fresh process with the attnlab of ``src`` on one thread."""
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "ATTNLAB_PROGRESS": "lines"}
    for name in ("ATTNLAB_QUICK", "ATTNLAB_SEED_OFFSET"):  # the full run, with the chapters' own seeds
        env.pop(name, None)
    command = [sys.executable, __file__, "--src", str(src), "--steps", str(steps), "--worker",
               *(entry.key for entry in entries)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{[e.key for e in entries]} failed with {src}:\n{done.stderr[-3000:]}")
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"key"')]
    return {line.pop("key"): line for line in lines}


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def current_commit() -> str:
    """HEAD, marked when ``src/`` has changes that are not committed."""
    head = git("rev-parse", "HEAD")
    return head + (" + uncommitted changes" if git("status", "--porcelain", "src") else "")


def export(commit: str, folder: Path) -> Path:
    """Write ``src/`` and ``results/`` (attnlab/results links to it) of ``commit`` into ``folder``; return its src."""
    archive = subprocess.run(["git", "archive", commit, "src", "results"], cwd=ROOT, capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder / "src"


def estimate(entry: Entry, times: dict[str, float]) -> dict[str, float]:
    """One version's fastest times of an entry and the seconds of all its runs."""
    seconds = entry.runs * (times["steps"] * times["step_s"] + times["evals"] * times["eval_s"])
    return {"step_s": round(times["step_s"], 6), "eval_s": round(times["eval_s"], 6), "seconds": round(seconds, 2)}


def benchmark(entries: list[Entry], sources: dict[str, Path], rounds: int, steps: int) -> list[dict[str, Any]]:
    """Measure every entry with every source, ``rounds`` times, a chapter's entries in one process per version,
    the versions taking turns chapter by chapter; keep the fastest."""
    best: dict[tuple[str, str], dict[str, float]] = {}
    names = list(sources)
    chapters = sorted({entry.chapter for entry in entries})
    for round_ in range(rounds):
        for i, chapter in enumerate(chapters):
            group = [entry for entry in entries if entry.chapter == chapter]
            for version in names if (round_ + i) % 2 == 0 else names[::-1]:
                measured = run_worker(group, sources[version], steps)
                for entry in group:
                    times = measured[entry.key]
                    print(f"round {round_ + 1}/{rounds}  {entry.key:<50} {version:>8}: {1e3 * times['step_s']:8.2f}"
                          f" ms per step, {1e3 * times['eval_s']:8.2f} ms per evaluation", flush=True)
                    kept = best.setdefault((entry.key, version), times)
                    for field in ("step_s", "eval_s"):
                        kept[field] = min(kept[field], times[field])
    rows = []
    for entry in entries:
        found = {version: best[entry.key, version] for version in names}
        current = found["current"]
        row = {"chapter": entry.chapter, "model": entry.model, "runs": entry.runs, "steps": current["steps"],
               "eval_every": current["eval_every"], "evals": current["evals"]}
        row.update({version: estimate(entry, times) for version, times in found.items()})
        if "baseline" in found:
            row["ratio"] = round(row["baseline"]["seconds"] / row["current"]["seconds"], 4)
        rows.append(row)
    return rows


def chapter_totals(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per chapter, the runs and the estimated seconds of each version, and their ratio."""
    totals: dict[str, dict[str, Any]] = {}
    for row in rows:
        total = totals.setdefault(row["chapter"], {"chapter": row["chapter"], "runs": 0})
        total["runs"] += row["runs"]
        for version in ("baseline", "current"):
            if version in row:
                total[f"{version}_s"] = round(total.get(f"{version}_s", 0.0) + row[version]["seconds"], 2)
    for total in totals.values():
        if "baseline_s" in total:
            total["ratio"] = round(total["baseline_s"] / total["current_s"], 4)
    return list(totals.values())


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="git ref of the version to compare with (default: none)")
    parser.add_argument("--rounds", type=int, default=3, help="measurements per entry and version; the fastest counts")
    parser.add_argument("--steps", type=int, default=20, help="timed training steps per measurement")
    parser.add_argument("--only", nargs="+", metavar="CHAPTER", help="chapter numbers to measure (default: all)")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "timing" / "training-speed.json")
    parser.add_argument("--worker", nargs="+", metavar="ENTRY", help=argparse.SUPPRESS)
    parser.add_argument("--src", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.src, args.steps)
        return
    only = {c.zfill(2) for c in args.only} if args.only else None
    entries = [e for e in ENTRIES if only is None or e.chapter in only]
    if not entries:
        parser.error(f"no chapter among {sorted(only)} trains a model")
    sources, current = {"current": ROOT / "src"}, {"commit": current_commit()}
    baseline = None
    with tempfile.TemporaryDirectory(prefix="training-speed-") as folder:
        if args.baseline:
            baseline = {"ref": args.baseline, "commit": git("rev-parse", "--verify", f"{args.baseline}^{{commit}}")}
            sources = {"baseline": export(baseline["commit"], Path(folder)), **sources}
        rows = benchmark(entries, sources, args.rounds, args.steps)
    data = {
        "benchmark": "training-speed",
        "command": shlex.join(["python", "benchmarks/training_speed.py", *argv]),
        "date": datetime.date.today().isoformat(),
        "machine": {"processor": processor(), "cores": os.cpu_count(), "system": platform.system()},
        "torch": torch.__version__,
        "python": platform.python_version(),
        "torch_threads": 1,
        "rounds": args.rounds,
        "steps_timed": args.steps,
        "warmup_steps": WARMUP,
        "eval_calls": EVAL_CALLS,
        "baseline": baseline,
        "current": current,
        "entries": rows,
        "chapters": chapter_totals(rows),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    for total in data["chapters"]:
        versus = f", baseline {total['baseline_s']:.0f} s ({total['ratio']:.2f}x)" if baseline else ""
        print(f"chapter {total['chapter']}: {total['runs']} runs, current {total['current_s']:.0f} s{versus}")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
