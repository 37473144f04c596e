"""The records the chapters conclude from: each chapter experiment run over seeds by
``python -m attnlab.experiments NAME``, committed in results/, read by its chapter,
and bearing out every statement the chapter makes over seeds."""

import re

import pytest

from attnlab.experiments import record
from attnlab.seedband import SEEDS
from tests.notebook_files import NOTEBOOKS, ROOT, code_cells, read

# chapter -> the records of its experiments over seeds (the comparisons it draws lessons from)
OVER_SEEDS = {
    "02_scoring_functions": {
        "scoring-retrieval": "every score on the three relations between queries and keys; the general score's"
        " learned W against the map A"
    },
    "03_encoder_decoder": {
        "encoder-decoder": "teacher forcing vs inference by length, one vs two directions, beam search,"
        " accuracy by position, the reversed source"
    },
    "04_bahdanau_attention": {
        "bahdanau-attention": "RNNenc vs RNNsearch by length, BLEU kept, one vs two directions for alignment"
    },
    "05_luong_attention": {
        "luong-attention": "the global scores, local-m and local-p, the window D, input feeding"
    },
    "06_soft_and_hard_attention": {
        "soft-vs-hard": "soft vs hard attention, with and without a baseline and gradient clipping"
    },
    "07_parameterized_attention": {
        "parameterized-attention": "simple vs parameterized attention on reversal: word accuracy,"
        " alignment accuracy, mean largest weight"
    },
    "08_transformer": {
        "transformer-translation": "RNNenc, RNNsearch and the Transformer by length on the training lengths;"
        " the cross-attention's alignment"
    },
    "09_positions_and_cost": {
        "transformer-translation": "the Transformer beyond the training lengths: words right by target position,"
        " the cross-attention's alignment; sinusoidal, learned and ALiBi positions"
    },
    "10_neural_turing_machines": {
        "neural-turing-machines": "the NTM vs the LSTM on the copy task, by sequence length"
    },
    "11_pointer_networks": {
        "pointer-networks": "sorters trained with and without the mask; the convex hull by number"
        " of points"
    },
    "12_pointer_networks_tsp": {
        "pointer-networks-tsp": "greedy decoding, beam search, nearest neighbour and 2-opt at 10 cities;"
        " the same by number of cities, 5 to 15"
    },
}
# a record two chapters read is made and checked once
RECORDS = list(dict.fromkeys(name for records in OVER_SEEDS.values() for name in records))
# chapter -> the longer studies its prose concludes from, whose tables are on the reproducing page
LONG_RUNS = {
    "04_bahdanau_attention": {"rnnenc-plateau": "RNNenc trained thirty times as long, seeds 0-2"},
    "08_transformer": {"transformer-vs-rnn": "recipes chosen on validation data, then five seeds at 2,000 steps"},
    "09_positions_and_cost": {"transformer-vs-rnn": "the chosen recipes with three kinds of positions, five seeds at"
                              " 2,000 steps, up to 80 words"},
    "10_neural_turing_machines": {"lstm-copy-longer": "the LSTM baseline trained 10,000 steps, seeds 0-4"},
    "11_pointer_networks": {"pointer-hull-longer": "the hull model trained five times as long, seeds 0-4",
                            "pointer-hull-wider": "the hull model with 256 units, seeds 0-4",
                            "pointer-hull-sizes": "the hull model trained on 5 to 50 points, seeds 0-4"},
    "12_pointer_networks_tsp": {"pointer-tsp": "the model trained ten times as long, seeds 0-4"},
}
# chapters whose experiments are small enough to run over their seeds inside the chapter
IN_CHAPTER = {
    "01_context_sensitive_memory": "a query learned at three temperatures: its checks keep the margin that the"
    " starting queries of the seed offsets 0 to 4 showed",
    "02_scoring_functions": "the additive score with 2 to 64 hidden units, trained from the seeds 0 to 4 in"
    " the chapter",
}


def _source(stem: str) -> str:
    return "\n".join(cell.source for cell in code_cells(read(ROOT / "notebooks" / f"{stem}.ipynb")))


def _module(name: str):
    return __import__(f"attnlab.experiments.{name.replace('-', '_')}", fromlist=["conclusions"])


@pytest.mark.parametrize("name", RECORDS)
def test_every_record_holds_the_declared_seeds_and_bears_out_its_chapter(name):
    data = record.load(ROOT / "results" / f"{name}.json")
    results = data["results"]
    assert [run["seed"] for run in results["runs"]] == list(SEEDS)
    failed = [claim for claim, holds in _module(name).conclusions(results).items() if not holds]
    assert not failed, f"{name}: the record contradicts {failed}"


@pytest.mark.parametrize("name", list(dict.fromkeys(name for runs in LONG_RUNS.values() for name in runs)))
def test_every_longer_study_bears_out_its_chapter_on_every_seed_it_declares(name):
    results = record.load(ROOT / "results" / f"{name}.json")["results"]
    module = _module(name)
    if hasattr(module, "run_seed"):  # made by the shared command, over its declared seeds
        assert [run["seed"] for run in results["runs"]] == list(range(getattr(module, "SEED_COUNT", len(SEEDS))))
    failed = [claim for claim, holds in module.conclusions(results).items() if not holds]
    assert not failed, f"{name}: the record contradicts {failed}"


@pytest.mark.parametrize("stem", sorted(OVER_SEEDS))
def test_each_chapter_reads_its_records_and_draws_its_run_among_the_seeds(stem):
    source = _source(stem)
    for name in OVER_SEEDS[stem]:
        assert f'published("{name}")' in source, f"{stem} does not read {name}"
    assert "seed_band(" in source, f"{stem} draws no run inside the band of its seeds"


def test_every_record_a_chapter_reads_is_committed_and_listed():
    read_by = {
        name: path.stem
        for path in NOTEBOOKS
        for name in re.findall(r'published\("([\w-]+)"\)', _source(path.stem))
    }
    for name, stem in read_by.items():
        assert (ROOT / "results" / f"{name}.json").is_file(), (stem, name)
        listed = {**OVER_SEEDS.get(stem, {}), **LONG_RUNS.get(stem, {})}
        assert name in listed, f"{stem} reads {name}, not listed here"


def test_the_settings_of_a_record_are_the_chapters_budget():
    """Chapters 5 and 6 train with the budget their records were made with."""
    from attnlab.experiments.luong_attention import SETTINGS

    for stem in ("05_luong_attention", "06_soft_and_hard_attention"):
        source = _source(stem)
        assert f"STEPS = scaled({SETTINGS['steps']}, " in source
        batch, lr, lengths = SETTINGS["batch_size"], SETTINGS["lr"], tuple(SETTINGS["train_lengths"])
        assert f"BATCH, LR, TRAIN_LENGTHS = {batch}, {lr:g}, {lengths}".replace("0.004", "4e-3") in source
        assert f"examples_per_length(scaled({SETTINGS['test_per_length']}, 1), 5, 40, seed=1)" in source


def test_the_weekly_workflow_makes_every_record_again():
    """`make records` and the weekly workflow re-make exactly the records the chapters conclude from."""
    made = RECORDS + list(dict.fromkeys(name for runs in LONG_RUNS.values() for name in runs))
    makefile = (ROOT / "Makefile").read_text()
    listed = re.search(r"^RECORDS \?= ((?:.*\\\n)*.*)$", makefile, re.M).group(1)
    assert sorted(listed.replace("\\\n", " ").split()) == sorted(made)
    workflow = (ROOT / ".github" / "workflows" / "records.yml").read_text()
    matrix = re.findall(r"^ {10}- ([\w-]+)$", workflow, re.M)
    assert sorted(matrix) == sorted(made)
    assert 'make records RECORDS="$RECORD"' in workflow and "cron:" in workflow


def test_every_chapter_lists_the_experiments_it_concludes_from():
    chapters = {path.stem for path in NOTEBOOKS if path.stem[:2].isdigit()}
    assert chapters == set(OVER_SEEDS) | set(IN_CHAPTER), chapters ^ (set(OVER_SEEDS) | set(IN_CHAPTER))
    # chapter 2 has both: its comparison of scores in a record, its hidden units over seeds in the chapter
    assert set(OVER_SEEDS) & set(IN_CHAPTER) <= {"02_scoring_functions"}
    assert "HIDDEN_SIZES, SEEDS = [2, 4, 8, 16, 64], range(5)" in _source("02_scoring_functions")
