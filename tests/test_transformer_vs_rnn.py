"""The experiment behind chapter 8's comparison: recipes chosen on validation data, the chosen ones over seeds,
three kinds of positions; a tiny run of the real command."""

import pytest

from attnlab.experiments import record, transformer_vs_rnn
from attnlab.experiments.transformer_vs_rnn import (
    CANDIDATES,
    MODELS,
    POSITIONS,
    Recipe,
)
from attnlab.tasks.translation import (
    decay_in_second_half,
    warmup_cosine,
    warmup_inverse_sqrt,
)


def test_recipes_give_their_schedules():
    steps = 200
    assert Recipe("a", 1e-3).lr_factor(steps)(150) == decay_in_second_half(steps)(150)
    assert Recipe("b", 1e-3, "inverse-sqrt").lr_factor(steps)(60) == warmup_inverse_sqrt(20)(60)
    assert Recipe("c", 1e-3, "cosine").lr_factor(steps)(60) == warmup_cosine(steps, 20)(60)
    assert Recipe("e", 1e-3, "cosine", warmup=0.05).lr_factor(steps)(60) == warmup_cosine(steps, 10)(60)
    assert Recipe("f", 1e-3, "cosine", warmup=0.2).lr_factor(steps)(30) == pytest.approx(31 / 40)
    with pytest.raises(KeyError):
        Recipe("d", 1e-3, "linear").lr_factor(steps)


def test_every_model_gets_two_peak_rates_and_the_transformer_two_warm_ups():
    for model in MODELS:
        assert len({r.lr for r in CANDIDATES[model]}) >= 2
    warm_ups = {(r.lr, r.warmup) for r in CANDIDATES["Transformer"]}
    assert len(warm_ups) == len(CANDIDATES["Transformer"]) == 4
    assert all(r.norm_first and r.schedule == "cosine" for r in CANDIDATES["Transformer"])


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("tvr") / "tvr.json"
    with pytest.raises(SystemExit, match="contradicts what the chapter states"):  # two steps learn nothing
        transformer_vs_rnn.main(["--steps", "2", "--seeds", "2", "--sentences-per-length", "1",
                                 "--validation-per-length", "1", "--json", str(path)])
    return record.load(path)


def test_the_choice_is_the_best_validation_score_of_the_declared_candidates(tiny):
    found = tiny["results"]
    assert [s["recipe"]["name"] for s in found["selection"]] == [r.name for m in MODELS for r in CANDIDATES[m]]
    for model in MODELS:
        scored = [s for s in found["selection"] if s["model"] == model]
        best = max(s["validation_exact"] for s in scored)
        first_best = next(s for s in scored if s["validation_exact"] == best)
        assert found["chosen"][model] == first_best["recipe"]


def test_a_choice_within_the_seed_spread_is_called_a_tie(tiny):
    found = tiny["results"]
    margins = transformer_vs_rnn.selection_margins(found)
    assert set(margins) == set(MODELS) and all(m >= 0 and r >= 0 for m, r in margins.values())
    fake = {
        "selection": [{"model": m, "validation_exact": v} for m in MODELS for v in (0.9, 0.8)],
        "runs": [{"model": m, "positions": "sinusoidal", "validation_exact": v} for m in MODELS for v in (0.9, 0.85)],
    }
    assert transformer_vs_rnn.selection_margins(fake)["RNNenc"] == pytest.approx((0.1, 0.05))
    assert "exceeds the seed spread" in transformer_vs_rnn.selection_verdicts(fake)
    for run in fake["runs"]:
        run["validation_exact"] = 0.7 if run["validation_exact"] == 0.85 else 0.9
    assert transformer_vs_rnn.selection_verdicts(fake).count("a tie.") == len(MODELS)


def test_every_model_and_kind_of_positions_runs_on_every_seed(tiny):
    found = tiny["results"]
    runs = {(r["model"], r["positions"], r["seed"]) for r in found["runs"]}
    expected = {(m, "sinusoidal", s) for m in MODELS for s in (0, 1)}
    expected |= {("Transformer", p, s) for p in POSITIONS for s in (0, 1)}
    assert runs == expected and len(found["runs"]) == len(expected)
    for run in found["runs"]:
        assert run["recipe"] == found["chosen"][run["model"]]
        assert [row["bucket"] for row in run["buckets"]] == [f"{a}-{b}" for a, b in transformer_vs_rnn.BUCKETS]
    # seed 0's runs of the chosen recipes are those of the selection, not trained twice
    selected = {s["model"]: (s["validation_exact"], s["validation_accuracy"]) for s in found["selection"]
                if s["recipe"] == found["chosen"][s["model"]]}
    for run in found["runs"]:
        if run["seed"] == 0 and run["positions"] == "sinusoidal":
            assert (run["validation_exact"], run["validation_accuracy"]) == selected[run["model"]]


def test_the_tables_and_bands_come_from_the_runs(tiny):
    found = tiny["results"]
    text = transformer_vs_rnn.markdown(tiny)
    assert text.endswith(record.provenance(tiny)) and "| 51-60 |" in text and "| 71-80 |" in text
    runs = transformer_vs_rnn.group(found, "RNNsearch")
    values = [next(r["token_accuracy"] for r in run["buckets"] if r["bucket"] == "5-10") for run in runs]
    mean, low, high = transformer_vs_rnn.spread(runs, "5-10")
    assert mean == pytest.approx(sum(values) / len(values)) and (low, high) == (min(values), max(values))
    names, means, lows, highs = transformer_vs_rnn.band(found, "Transformer", "alibi")
    assert names[0] == "5-10" and names[-1] == "71-80" and all(lo <= m <= hi for m, lo, hi in zip(means, lows, highs, strict=True))


def test_more_seeds_extend_a_record_without_training_its_runs_again(tiny, tmp_path, monkeypatch):
    path = tmp_path / "tvr.json"
    record.save(path, tiny)
    trained = []
    real = transformer_vs_rnn.train_and_score
    monkeypatch.setattr(transformer_vs_rnn, "train_and_score", lambda run, **kw: trained.append(run) or real(run, **kw))
    with pytest.raises(SystemExit, match="contradicts"):
        transformer_vs_rnn.main(["--steps", "2", "--seeds", "3", "--sentences-per-length", "1",
                                 "--validation-per-length", "1", "--json", str(path)])
    found, before = record.load(path)["results"], tiny["results"]
    assert {(r.model, r.positions, r.seed) for r in trained} == (
        {(m, "sinusoidal", 2) for m in MODELS} | {("Transformer", p, 2) for p in POSITIONS[1:]})
    assert found["selection"] == before["selection"] and found["chosen"] == before["chosen"]
    assert [r for r in found["runs"] if r["seed"] < 2] == before["runs"]
    assert found["settings"]["seeds"] == 3
