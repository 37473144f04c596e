"""The training-speed benchmark: its inventory names every chapter that trains, its measurement runs the real loop,
and the book's directive renders its record. No time is asserted."""

import importlib.util
import re
import sys
from types import ModuleType

import torch

from tests.notebook_files import CHAPTERS, NOTEBOOKS, ROOT, code_cells, read

# A call of a training function: attnlab's, an experiment module's (the recipe a chapter shares with its
# record), or TranslationComparison's runs.
TRAINS = re.compile(
    r"(?<![\w.])(train|train_translation|train_copy|train_sorter|train_hull|train_tsp|train_model"
    r"|train_score|compare_scores|TranslationComparison)\("
)


def _load(name: str, path: str) -> ModuleType:
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # the benchmark finds itself there when it rebinds `train`
        spec.loader.exec_module(module)
    return sys.modules[name]


def _benchmark() -> ModuleType:
    return _load("training_speed_benchmark", "benchmarks/training_speed.py")


def _trains(path) -> bool:
    return any(TRAINS.search(cell.source) for cell in code_cells(read(path)))


def test_the_inventory_names_every_chapter_that_trains_and_no_other():
    training = {path.name[:2] for path in CHAPTERS if _trains(path)}
    assert len(training) >= 10, training
    assert {entry.chapter for entry in _benchmark().ENTRIES} == training
    assert not any(_trains(path) for path in NOTEBOOKS if path not in CHAPTERS)  # the appendix trains nothing


def test_every_entry_has_its_own_key_and_at_least_one_run():
    entries = _benchmark().ENTRIES
    assert len({entry.key for entry in entries}) == len(entries)
    assert all(entry.runs >= 1 for entry in entries)


def test_measure_runs_the_real_loop_and_counts_the_loops_evaluations():
    import attnlab.tasks.translation
    import attnlab.train

    original = attnlab.train.train
    model = torch.nn.Linear(2, 1)
    seen = []

    def setup() -> None:
        seen.append(attnlab.tasks.translation.train is not original)  # rebound where it was imported by name
        attnlab.train.train(model, lambda step: torch.randn(4, 2), lambda m, x: m(x).pow(2).mean(), steps=250,
                            batch_size=4, evaluate=lambda m: {"zero": 0.0}, eval_every=100)

    before = model.weight.detach().clone()
    result = _benchmark().measure(setup, 2)
    assert seen == [True] and attnlab.train.train is original and attnlab.tasks.translation.train is original
    assert not torch.equal(model.weight, before)  # the loop trained
    assert (result["steps"], result["eval_every"], result["evals"]) == (250, 100, 3)
    assert result["step_s"] > 0 and result["eval_s"] > 0
    assert [_benchmark().evaluations(s, 50) for s in (1, 50, 51, 3000)] == [1, 1, 2, 60]


def _record(baseline: bool) -> dict:
    def entry(chapter: str, model: str, runs: int, current: float) -> dict:
        row = {"chapter": chapter, "model": model, "runs": runs, "steps": 1200, "eval_every": 250, "evals": 5,
               "current": {"step_s": 0.01, "eval_s": 0.1, "seconds": current}}
        if baseline:
            row["baseline"] = {"step_s": 0.0125, "eval_s": 0.1, "seconds": 1.25 * current}
            row["ratio"] = 1.25
        return row

    entries = [entry("09", "NTM", 1, 250.0), entry("09", "LSTM", 1, 30.0), entry("10", "sorting, mask on", 3, 40.0)]
    chapters = [{"chapter": "09", "runs": 2, "current_s": 280.0}, {"chapter": "10", "runs": 3, "current_s": 40.0}]
    for total in chapters if baseline else []:
        total.update(baseline_s=1.25 * total["current_s"], ratio=1.25)
    return {
        "benchmark": "training-speed", "command": "python benchmarks/training_speed.py --only 09 10",
        "date": "2026-01-02", "machine": {"processor": "Some CPU", "cores": 2, "system": "Linux"},
        "torch": "2.5.0", "python": "3.11.7", "torch_threads": 1, "rounds": 3, "steps_timed": 20,
        "warmup_steps": 3, "eval_calls": 2,
        "baseline": {"ref": "v0.7.0", "commit": "9d5205f" + "0" * 33} if baseline else None,
        "current": {"commit": "1234567" + "0" * 33 + " + uncommitted changes"},
        "entries": entries, "chapters": chapters,
    }


def test_the_directive_renders_a_row_per_model_and_a_total_per_chapter():
    markdown = _load("training_speed_directive", "book/_ext/training_speed.py").markdown
    text = markdown(_record(baseline=True))
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert table[0] == "| chapter | model | runs | steps (evaluations) | baseline (s) | current (s) | baseline / current |"
    assert table[2] == "| 9 | NTM | 1 | 1,200 (5) | 312 | 250 | 1.25x |"
    assert table[4].startswith("| **9** | **the chapter's training** | **2** |  | **350** | **280** | **1.25x** |")
    assert table[5].startswith("| 10 | sorting, mask on | 3 |") and table[6].startswith("| **10** |")
    assert len(table) == 7
    assert "baseline v0.7.0 (`9d5205f`), current `1234567` + uncommitted changes" in text
    assert text.endswith("by `python benchmarks/training_speed.py --only 09 10`.") and "2026-01-02" in text
    alone = [line for line in markdown(_record(baseline=False)).splitlines() if line.startswith("|")]
    assert alone[0] == "| chapter | model | runs | steps (evaluations) | current (s) |"
    assert alone[2] == "| 9 | NTM | 1 | 1,200 (5) | 250 |"
