"""``python -m attnlab.experiments transformer-vs-rnn``: RNNenc, RNNsearch and the
Transformer, each with a recipe chosen on validation data, over seeds; and three
kinds of positions tested beyond the training lengths.

Everything below is fixed before any model is trained:

* **Data.** Batches of 64 sentences of 5 to 40 words (the run's seed); validation:
  8 sentences of every length from 5 to 40 (seed 3); test: the chapter's 16
  sentences of every length from 5 to 60 (seed 1) and 16 of every length from 61 to
  80 (seed 11), translated greedily.
* **Budget.** ``--steps`` (2,000) steps for every model, the teacher-forced
  accuracy on held-out sentences of 31-40 words every 100 steps, the best
  evaluation's weights kept. Each model's gain over the last fifth of its run says
  whether it was still improving.
* **Recipes** (:data:`CANDIDATES`), chosen on seed 0 by the share of validation
  sentences translated exactly (greedy; ties: the first declared), a measure that
  does not saturate where word accuracy does: two peak learning rates for each
  recurrent model (constant, then decay); for the Transformer (pre-norm, the order
  practitioners train), two peak rates times two warm-up lengths, then cosine
  decay. No dropout: every batch is new, so there is nothing to over-fit. The
  choice is reported as a tie when its margin over the runner-up is not larger
  than the chosen recipe's range over the seeds.
* **Seeds** ``0 .. --seeds - 1`` train the chosen recipes, and the chosen
  Transformer recipe with learned positions and with ALiBi (in the encoder half the
  heads look back and half ahead, :func:`attnlab.alibi.alibi_encoder_bias`).

``--jobs N`` trains N runs at a time, each in its own process on one thread (the
results do not depend on N). ``--json PATH`` writes the record from which
:func:`markdown` makes the tables of the reproducing page and the chapter; a record
already there, made with the same settings and candidates, keeps its recipes and
runs, and only the missing seeds are trained.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import torch

from attnlab.experiments.record import load, provenance, record, save
from attnlab.metrics import exact_match
from attnlab.tasks.translation import (
    LENGTH_BUCKETS,
    SOURCE_VOCAB,
    TARGET_VOCAB,
    decay_in_second_half,
    evaluate_translation,
    examples_per_length,
    train_translation,
    translation_loss,
    translation_model,
    warmup_cosine,
    warmup_inverse_sqrt,
)
from attnlab.train import History, seed_everything
from attnlab.transformer import Transformer

BUCKETS = (*LENGTH_BUCKETS, (61, 70), (71, 80))
MODELS = ("RNNenc", "RNNsearch", "Transformer")
POSITIONS = ("sinusoidal", "learned", "alibi")
# the chapter's Transformer: 2 + 2 layers, width 96, 2 heads
D_MODEL, HEADS, LAYERS, D_FF = 96, 2, 2, 192


@dataclass(frozen=True)
class Recipe:
    """How a model is trained: the peak learning rate, its schedule (``"decay"``:
    constant, then linearly down to a tenth over the second half; ``"inverse-sqrt"``
    and ``"cosine"``: a linear warm-up over the share ``warmup`` of the run first),
    the layer-norm order (Transformer) and label smoothing."""

    name: str
    lr: float
    schedule: str = "decay"
    norm_first: bool = False
    label_smoothing: float = 0.0
    warmup: float = 0.1

    def lr_factor(self, steps: int):
        warmup = max(1, round(steps * self.warmup))
        return {
            "decay": lambda: decay_in_second_half(steps),
            "inverse-sqrt": lambda: warmup_inverse_sqrt(warmup),
            "cosine": lambda: warmup_cosine(steps, warmup),
        }[self.schedule]()

    def train(
        self,
        model: torch.nn.Module,
        steps: int,
        *,
        eval_every: int,
        desc: str,
        seed: int = 0,
    ) -> History:
        """Train ``model`` for ``steps`` on batches drawn from ``seed`` with this
        recipe's rate, schedule and label smoothing, the best evaluation kept
        (:func:`~attnlab.tasks.translation.train_translation`)."""
        return train_translation(
            model,
            steps,
            lr=self.lr,
            seed=seed,
            eval_every=eval_every,
            desc=desc,
            loss_fn=partial(translation_loss, label_smoothing=self.label_smoothing),
            lr_factor=self.lr_factor(steps),
        )


CANDIDATES: dict[str, tuple[Recipe, ...]] = {
    "RNNenc": (Recipe("rate 0.002", 2e-3), Recipe("rate 0.004", 4e-3)),
    "RNNsearch": (Recipe("rate 0.002", 2e-3), Recipe("rate 0.004", 4e-3)),
    "Transformer": tuple(
        Recipe(f"rate {lr}, warm-up {warmup:.0%}", lr, "cosine", True, warmup=warmup)
        for lr in (2e-3, 4e-3)
        for warmup in (0.05, 0.2)
    ),
}


@dataclass(frozen=True)
class Run:
    model: str
    recipe: Recipe
    seed: int
    positions: str = "sinusoidal"


def build(run: Run) -> torch.nn.Module:
    if run.model == "Transformer":
        return Transformer(
            len(SOURCE_VOCAB),
            len(TARGET_VOCAB),
            d_model=D_MODEL,
            n_heads=HEADS,
            n_layers=LAYERS,
            d_ff=D_FF,
            norm_first=run.recipe.norm_first,
            positions=run.positions,
            pad_id=TARGET_VOCAB.pad,
            bos_id=TARGET_VOCAB.bos,
            eos_id=TARGET_VOCAB.eos,
        )
    return translation_model(attention=run.model == "RNNsearch")


def word_accuracy(report) -> float:
    """The share of reference words translated right, over all sentences."""
    right = sum(
        sum(p == r for p, r in zip(prediction, reference, strict=False))
        for prediction, reference in zip(
            report.predictions, report.references, strict=True
        )
    )
    return right / sum(len(r) for r in report.references)


def train_and_score(run: Run, steps: int, per_length: int, validation: int) -> dict:
    """Train one run and score it on the validation and test sentences."""
    torch.set_num_threads(1)
    seed_everything(run.seed)
    model = build(run)
    history = run.recipe.train(
        model,
        steps,
        eval_every=max(1, min(100, steps // 10)),
        desc=f"{run.model} {run.positions} {run.recipe.name} seed {run.seed}",
        seed=run.seed,
    )
    model.eval()
    validation_set = examples_per_length(validation, 5, 40, seed=3)
    checked = evaluate_translation(model, validation_set)
    test = examples_per_length(per_length, 5, 60, seed=1)
    test += examples_per_length(per_length, 61, 80, seed=11)
    _, curve = history.metric("val_accuracy")
    cut = len(curve) - max(1, len(curve) // 5)
    return {
        **asdict(run),
        "validation_exact": exact_match(checked.predictions, checked.references),
        "validation_accuracy": word_accuracy(checked),
        "buckets": evaluate_translation(model, test).by_bucket(BUCKETS),
        "last_fifth_gain": max(curve[cut:]) - max(curve[:cut]) if cut else 0.0,
        "seconds": history.seconds,
    }


def run_all(runs: list[Run], jobs: int, **settings) -> list[dict]:
    work = partial(train_and_score, **settings)
    if jobs == 1:
        return [work(run) for run in runs]
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(work, runs))


def _earlier(path: str | None, settings: dict) -> dict | None:
    """The results of an earlier record at ``path`` made with the same settings and
    candidates, whose recipes and runs a command with more seeds keeps."""
    if not path or not Path(path).is_file():
        return None
    results = load(path)["results"]
    same = {k: results["settings"].get(k) for k in settings} == settings
    candidates = {m: [asdict(r) for r in rs] for m, rs in CANDIDATES.items()}
    return results if same and results["candidates"] == candidates else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m attnlab.experiments transformer-vs-rnn",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0 .. N-1 (5)")
    parser.add_argument("--steps", type=int, default=2000, help="steps per model")
    parser.add_argument(
        "--sentences-per-length", type=int, default=16, help="test sentences (16)"
    )
    parser.add_argument(
        "--validation-per-length", type=int, default=8, help="validation (8)"
    )
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time (1)")
    parser.add_argument("--json", metavar="PATH", help="write the results to PATH")
    args = parser.parse_args(argv)
    if min(args.seeds, args.steps, args.jobs, args.sentences_per_length) < 1:
        parser.error("--seeds, --steps, --jobs and the sentence counts must be >= 1")
    torch.set_num_threads(1)  # as in every run; the record states it
    settings = {
        "steps": args.steps,
        "per_length": args.sentences_per_length,
        "validation": args.validation_per_length,
    }
    earlier = _earlier(args.json, settings)
    if earlier is None:
        # 1. the recipes, chosen on seed 0 by validation exact match
        trials = [Run(m, r, 0) for m, recipes in CANDIDATES.items() for r in recipes]
        tried = run_all(trials, args.jobs, **settings)
        chosen = {}
        for model in MODELS:
            scored = [s for s in tried if s["model"] == model]
            # the first of ties
            best = max(scored, key=lambda s: s["validation_exact"])
            chosen[model] = Recipe(**best["recipe"])
        # seed 0's runs of the chosen recipes are those of the selection
        kept = [s for s in tried if Recipe(**s["recipe"]) == chosen[s["model"]]]
        keys = ("model", "recipe", "validation_exact", "validation_accuracy")
        selection = [{k: s[k] for k in (*keys, "seconds")} for s in tried]
    else:  # the selection and the runs of an earlier record, which is extended
        selection = earlier["selection"]
        chosen = {m: Recipe(**r) for m, r in earlier["chosen"].items()}
        kept = [r for r in earlier["runs"] if r["seed"] < args.seeds]
    for s in selection:
        mark = "  <- chosen" if Recipe(**s["recipe"]) == chosen[s["model"]] else ""
        print(
            f"{s['model']:>11}, {s['recipe']['name']}: validation exact match"
            f" {s['validation_exact']:.3f}{mark}"
        )
    # 2. the chosen recipes over seeds, and the Transformer's with other positions
    wanted = [Run(m, chosen[m], seed) for m in MODELS for seed in range(args.seeds)]
    wanted += [
        Run("Transformer", chosen["Transformer"], seed, positions)
        for positions in POSITIONS[1:]
        for seed in range(args.seeds)
    ]
    have = {(r["model"], r["positions"], r["seed"]) for r in kept}
    missing = [r for r in wanted if (r.model, r.positions, r.seed) not in have]
    done = kept + run_all(missing, args.jobs, **settings)
    done.sort(key=lambda s: (s["model"], POSITIONS.index(s["positions"]), s["seed"]))
    results = {
        "settings": {**settings, "seeds": args.seeds, "buckets": BUCKETS},
        "candidates": {m: [asdict(r) for r in rs] for m, rs in CANDIDATES.items()},
        "selection": selection,
        "chosen": {m: asdict(r) for m, r in chosen.items()},
        "runs": done,
    }
    print(markdown({"results": results}, with_provenance=False))
    if args.json:
        save(args.json, record("transformer-vs-rnn", argv or [], results))
    failed = [claim for claim, holds in conclusions(results).items() if not holds]
    if failed:
        sys.exit(
            "the record contradicts what the chapter states over seeds:\n- "
            + "\n- ".join(failed)
        )


def scores(
    runs: list[dict], bucket: str, key: str = "token_accuracy"
) -> list[float]:
    """One bucket's score in each of ``runs``, in their order."""
    return [
        row[key] for run in runs for row in run["buckets"] if row["bucket"] == bucket
    ]


def spread(runs: list[dict], bucket: str, key: str = "token_accuracy") -> tuple:
    """``(mean, lowest, highest)`` of one bucket's score over ``runs``."""
    values = scores(runs, bucket, key)
    return statistics.mean(values), min(values), max(values)


def group(results: dict, model: str, positions: str = "sinusoidal") -> list[dict]:
    """The runs of one model (and kind of positions), one per seed."""
    return [
        r
        for r in results["runs"]
        if r["model"] == model and r["positions"] == positions
    ]


def _table(rows: list[tuple[str, list[dict]]], buckets) -> list[str]:
    lines = [
        "| source words | " + " | ".join(name for name, _ in rows) + " |",
        "|---|" + "---:|" * len(rows),
    ]
    for low, high in buckets:
        cells = []
        for _, runs in rows:
            mean, low_, high_ = spread(runs, f"{low}-{high}")
            cells.append(f"{mean:.3f} ({low_:.3f}-{high_:.3f})")
        lines.append(f"| {low}-{high} | " + " | ".join(cells) + " |")
    return lines


def last_fifth_gains(results: dict) -> dict[str, float]:
    """Each model's gain of held-out accuracy over the last fifth of its run, mean
    over the seeds (near 0: it had stopped improving)."""
    return {
        m: statistics.mean(r["last_fifth_gain"] for r in group(results, m))
        for m in MODELS
    }


def conclusions(results: dict) -> dict[str, bool]:
    """What chapters 8 and 9 state of the study over seeds, each checked seed by
    seed."""

    def per_seed(model: str, bucket: str, positions: str = "sinusoidal") -> list:
        runs = sorted(group(results, model, positions), key=lambda r: r["seed"])
        return scores(runs, bucket)

    gains = last_fifth_gains(results)
    alibi = group(results, "Transformer", "alibi")
    beyond = [f"{a}-{b}" for a, b in results["settings"]["buckets"] if a > 40]
    return {
        "trained to the end, RNNsearch and the Transformer above 0.99 on 31-40 words"
        " on every seed, and no longer improving (gain over the last fifth under"
        " 0.01)": all(
            min(per_seed(m, "31-40")) > 0.99 and abs(gains[m]) < 0.01
            for m in ("RNNsearch", "Transformer")
        ),
        "RNNenc under 0.5 on 31-40 words on every seed, and still improving (gain"
        " over the last fifth above 0.02)": max(per_seed("RNNenc", "31-40")) < 0.5
        and gains["RNNenc"] > 0.02,
        "beyond the training lengths (41-60 words), RNNsearch more than 0.05 above"
        " the Transformer's best seed on its worst": all(
            min(per_seed("RNNsearch", b)) > max(per_seed("Transformer", b)) + 0.05
            for b in ("41-50", "51-60")
        ),
        "beyond the training lengths, learned positions below sinusoids, seed by"
        " seed": all(
            s > lo
            for b in beyond
            for s, lo in zip(
                per_seed("Transformer", b),
                per_seed("Transformer", b, "learned"),
                strict=True,
            )
        ),
        "ALiBi (half the heads looking back, half ahead) learned the training"
        " lengths and had stopped: above 0.95 on 31-40 words and a gain over the"
        " last fifth under 0.01, on every seed": min(
            per_seed("Transformer", "31-40", "alibi")
        )
        > 0.95
        and max(abs(r["last_fifth_gain"]) for r in alibi) < 0.01,
        "ALiBi below the sinusoids on 31-40 words and from 61 words on: its best"
        " seed under their worst": all(
            max(per_seed("Transformer", b, "alibi"))
            < min(per_seed("Transformer", b))
            for b in ("31-40", "61-70", "71-80")
        ),
    }


def recipe_table(results: dict) -> str:
    """The candidates' validation scores on seed 0, the chosen in bold."""
    lines = [
        "| model | recipe | validation exact match | validation word accuracy |",
        "|---|---|---:|---:|",
    ]
    for s in results["selection"]:
        name = s["recipe"]["name"]
        if s["recipe"] == results["chosen"][s["model"]]:
            name = f"**{name}**"
        lines.append(
            f"| {s['model']} | {name} | {s['validation_exact']:.3f}"
            f" | {s['validation_accuracy']:.3f} |"
        )
    return "\n".join(lines)


def selection_margins(results: dict) -> dict[str, tuple[float, float]]:
    """For each model, ``(margin, seed range)``: how far the chosen recipe's
    validation exact match on seed 0 lies above the runner-up's, and the range of
    the chosen recipe's over the seeds. A margin within the range is a tie."""
    margins = {}
    for model in MODELS:
        tried = sorted(
            (
                s["validation_exact"]
                for s in results["selection"]
                if s["model"] == model
            ),
            reverse=True,
        )
        over_seeds = [r["validation_exact"] for r in group(results, model)]
        margins[model] = (tried[0] - tried[1], max(over_seeds) - min(over_seeds))
    return margins


def selection_verdicts(results: dict) -> str:
    """One sentence per model: the choice exceeds the seed spread, or is a tie."""
    return " ".join(
        f"{model}: margin {margin:.3f} over the runner-up, range over the seeds"
        f" {spread_:.3f}, "
        + ("the choice exceeds the seed spread." if margin > spread_ else "a tie.")
        for model, (margin, spread_) in selection_margins(results).items()
    )


def seed_table(results: dict) -> str:
    """The three models' word accuracy by source length: mean (lowest-highest)."""
    rows = [(m, group(results, m)) for m in MODELS]
    return "\n".join(_table(rows, LENGTH_BUCKETS))


def positions_table(results: dict) -> str:
    """The Transformer's word accuracy by source length with each kind of
    positions, from 21 words on."""
    rows = [(p, group(results, "Transformer", p)) for p in POSITIONS]
    buckets = [b for b in map(tuple, results["settings"]["buckets"]) if b[0] > 20]
    return "\n".join(_table(rows, buckets))


def markdown(data: dict, *, with_provenance: bool = True) -> str:
    """The tables of a record written with ``--json``: the recipes and their
    validation accuracy, the three models' word accuracy by source length (mean and
    range over the seeds), and the Transformer with three kinds of positions."""
    found = data["results"]
    settings = found["settings"]
    seeds = settings["seeds"]
    models = [(m, group(found, m)) for m in MODELS]
    lines = [
        f"**Recipes** (seed 0, {settings['steps']:,} steps; the share of validation"
        " sentences of 5-40 words translated exactly, greedy, chooses; the chosen"
        " one in bold):",
        "",
        recipe_table(found),
        "",
        selection_verdicts(found),
        "",
        f"**Word accuracy by source length**, greedy decoding, mean over {seeds}"
        " seeds (lowest-highest in brackets); training covered 5-40 words:",
        "",
        seed_table(found),
        "",
        "Gain of the teacher-forced held-out accuracy over the last fifth of the run"
        " (mean over the seeds; near 0: the model had stopped improving): "
        + ", ".join(f"{m} {g:+.3f}" for m, g in last_fifth_gains(found).items())
        + ". Minutes of training per run: "
        + ", ".join(
            f"{m} {statistics.mean(r['seconds'] for r in runs) / 60:.0f}"
            for m, runs in models
        )
        + ".",
        "",
        "**The Transformer's positions beyond the training lengths** (the chosen"
        f" recipe, {seeds} seeds; the learned table's rows beyond the longest"
        " training sentence were never trained):",
        "",
        positions_table(found),
        "",
        *(
            f"- {'holds' if holds else 'does not hold'}: {claim}"
            for claim, holds in conclusions(found).items()
        ),
    ]
    if with_provenance:
        lines += ["", provenance(data)]
    return "\n".join(lines)


def band(
    results: dict, model: str, positions: str = "sinusoidal"
) -> tuple[list[str], list[float], list[float], list[float]]:
    """For plotting one model (and kind of positions) over the seeds: the buckets'
    names and the word accuracy's mean, lowest and highest per bucket."""
    runs = group(results, model, positions)
    names = [f"{low}-{high}" for low, high in results["settings"]["buckets"]]
    mean, lowest, highest = zip(*(spread(runs, n) for n in names), strict=True)
    return names, list(mean), list(lowest), list(highest)
