"""Results over seeds: bands of a record, the checks of a reader's run against them,
the shared figure and the shared experiment command (resumable, conclusions
checked)."""

import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from attnlab.plot import seed_band  # noqa: E402
from attnlab.seedband import SEEDS, Band, band, curves, expect_ahead, expect_within  # noqa: E402

RUNS = [
    {"seed": s, "models": {"a": {"acc": 0.8 + 0.01 * s}, "b": {"acc": 0.5 - 0.01 * s}},
     "curve": [0.1 * s, 0.2 * s]}
    for s in SEEDS
]


def test_band_reads_one_value_per_seed_and_summarises_it():
    a = band(RUNS, "models", "a", "acc")
    assert a.seeds == SEEDS and a.values == pytest.approx([0.80, 0.81, 0.82, 0.83, 0.84])
    assert (a.mean, a.low, a.high, a.width) == pytest.approx((0.82, 0.80, 0.84, 0.04))
    assert a.text() == "0.820 (0.800 to 0.840)"
    assert a.widened() == pytest.approx((0.76, 0.88))
    # the least widening: one seed, or seeds that agree exactly
    assert Band((0.5,), (0,)).widened(floor=0.02) == pytest.approx((0.48, 0.52))
    assert curves(RUNS, "curve")[2] == pytest.approx([0.2, 0.4])


def test_band_of_a_gap_is_taken_seed_by_seed():
    gap = band(RUNS, "models", "a", "acc") - band(RUNS, "models", "b", "acc")
    assert gap.values == pytest.approx([0.3, 0.32, 0.34, 0.36, 0.38])
    with pytest.raises(ValueError, match="different seeds"):
        _ = gap - Band((1.0,), (0,))


def test_a_gap_ranks_only_beyond_its_spread_and_disagrees_only_across_zero():
    clear = band(RUNS, "models", "a", "acc") - band(RUNS, "models", "b", "acc")
    assert clear.ranks() and not clear.disagrees
    close = Band((0.02, 0.01, 0.03, 0.01, 0.005), SEEDS)  # every seed ahead, by less than the spread
    assert not close.ranks() and not close.disagrees
    crossing = Band((0.02, -0.01, 0.03), (0, 1, 2))
    assert not crossing.ranks() and crossing.disagrees


def test_bad_input_names_what_was_expected():
    with pytest.raises(KeyError, match="models/c"):
        band(RUNS, "models", "c", "acc")
    with pytest.raises(ValueError, match="at least one run"):
        band([], "x")
    with pytest.raises(ValueError, match="one value per seed"):
        Band((1.0, 2.0), (0,))


def test_expect_within_passes_inside_the_widened_band_and_fails_outside(monkeypatch, capsys):
    a = band(RUNS, "models", "a", "acc")
    monkeypatch.setenv("ATTNLAB_STRICT", "1")
    expect_within(0.77, a, "the accuracy")  # below every seed, inside the widened band
    with pytest.raises(AssertionError, match=r"between 0\.760 and 0\.880.*0\.700"):
        expect_within(0.70, a, "the accuracy")
    monkeypatch.setenv("ATTNLAB_STRICT", "0")
    expect_within(0.70, a, "the accuracy")
    assert "differs from what the chapter describes" in capsys.readouterr().out


def test_expect_ahead_refuses_a_ranking_the_record_does_not_hold(monkeypatch):
    monkeypatch.setenv("ATTNLAB_STRICT", "1")
    clear = band(RUNS, "models", "a", "acc") - band(RUNS, "models", "b", "acc")
    expect_ahead(0.05, clear, "a over b")
    with pytest.raises(AssertionError, match="a over b"):
        expect_ahead(-0.01, clear, "a over b")
    close = Band((0.02, -0.01, 0.03, 0.01, 0.0), SEEDS)
    with pytest.raises(ValueError, match="does not rank"):
        expect_ahead(0.5, close, "a over b")


def test_seed_band_draws_the_seeds_as_a_band_and_the_run_on_top():
    fig, ax = plt.subplots()
    recorded = [[0.1, 0.5, 0.9], [0.3, 0.6, 0.7]]
    seed_band(["5-10", "11-20", "21-30"], recorded, [0.2, 0.55, 0.8], label="dot", ax=ax)
    labels = ax.get_legend_handles_labels()[1]
    assert labels == ["dot: 2 recorded seeds", "dot: your run"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["5-10", "11-20", "21-30"]
    band_patch = ax.collections[0].get_paths()[0].vertices
    assert band_patch[:, 1].min() == pytest.approx(0.1) and band_patch[:, 1].max() == pytest.approx(0.9)
    assert len(ax.lines) == 3  # two seeds, thin, and the run
    with pytest.raises(ValueError, match=r"shape \(seeds, 3\)"):
        seed_band([1, 2, 3], [[0.1, 0.2]], label="x", ax=ax)
    with pytest.raises(ValueError, match="3 values"):
        seed_band([1, 2, 3], recorded, [0.1], label="x", ax=ax)
    plt.close(fig)


def _toy_experiment(calls, holds=True):
    from attnlab.experiments import over_seeds

    def run_seed(seed):
        import os

        # each seed runs as the chapter does under that offset
        assert os.environ["ATTNLAB_SEED_OFFSET"] == str(seed)
        calls.append(seed)
        return {"value": float(seed)}

    def main(argv):
        return over_seeds.main(
            "toy",
            argv,
            description="a toy",
            settings={"steps": 3, "sizes": (1, 2)},
            run_seed=run_seed,
            conclusions=lambda results: {"the mean is 1": holds},
            markdown=lambda data: "table",
        )

    return main


def test_the_command_writes_a_record_resumes_it_and_checks_its_conclusions(tmp_path):
    from attnlab.experiments import record

    path = tmp_path / "toy.json"
    calls = []
    main = _toy_experiment(calls)
    main(["--seeds", "2", "--json", str(path)])
    assert "ATTNLAB_SEED_OFFSET" not in os.environ  # restored
    data = record.load(path)
    assert [r["seed"] for r in data["results"]["runs"]] == [0, 1] and calls == [0, 1]
    assert data["results"]["settings"] == {"steps": 3, "sizes": [1, 2]}
    assert all(r["seconds"] >= 0 for r in data["results"]["runs"])
    # resumed: only the missing seeds are trained
    main(["--seeds", "3", "--json", str(path)])
    assert calls == [0, 1, 2]
    assert [r["value"] for r in record.load(path)["results"]["runs"]] == [0.0, 1.0, 2.0]
    # every seed kept: nothing is trained, and the record keeps its own command
    written = path.read_text()
    assert main(["--seeds", "3", "--json", str(path), "--jobs", "1"])["command"] == (
        record.load(path)["command"]
    )
    assert calls == [0, 1, 2] and path.read_text() == written
    # other settings: nothing is kept
    text = json.loads(path.read_text())
    text["results"]["settings"]["steps"] = 4
    path.write_text(json.dumps(text))
    main(["--seeds", "1", "--json", str(path)])
    assert calls == [0, 1, 2, 0]
    # a record that contradicts the chapter fails the command
    failing = _toy_experiment([], holds=False)
    with pytest.raises(SystemExit, match="(?s)contradicts.*the mean is 1"):
        failing(["--seeds", "1", "--json", str(tmp_path / "other.json")])


def test_band_table_puts_one_band_per_cell():
    from attnlab.experiments.over_seeds import band_table

    a, b = Band((0.5, 0.7), (0, 1)), Band((0.25, 0.75), (0, 1))
    assert band_table("model", ["x", "y"], {"m": [a, b], 10: [b, a]}, digits=2) == [
        "| model | x | y |",
        "|---|---|---|",
        "| m | 0.60 (0.50 to 0.70) | 0.50 (0.25 to 0.75) |",
        "| 10 | 0.50 (0.25 to 0.75) | 0.60 (0.50 to 0.70) |",
    ]


def test_page_names_the_seeds_and_budget_then_the_tables_and_the_verdicts():
    from attnlab.experiments import record
    from attnlab.experiments.over_seeds import footer, page

    data = record.record("toy", ["--seeds", "2"], {"settings": {}, "runs": [{"seed": 0, "seconds": 1.0},
                                                                             {"seed": 1, "seconds": 2.0}]})

    def verdicts(results):
        return {"two seeds": len(results["runs"]) == 2}

    text = page(data, verdicts, "3 steps", ["| a |", "|---|"])
    assert text == "Seeds 0, 1; 3 steps.\n\n| a |\n|---|" + footer(data, verdicts)
    assert "- holds: two seeds" in text and "seed 1 2 s" in text


def test_every_seed_asks_a_relation_of_each_seed_not_of_the_means():
    from attnlab.seedband import every_seed

    a, b = Band((1.0, 4.0), (0, 1)), Band((3.0, 1.0), (0, 1))
    assert (a.mean > b.mean) and not every_seed(lambda x, y: x > y, a, b)
    assert every_seed(lambda x, y: x + y < 6, a, b)
    with pytest.raises(ValueError, match=r"bands over different seeds: \[\[0, 1\], \[0, 2\]\]"):
        every_seed(lambda x, y: True, a, Band((1.0, 2.0), (0, 2)))
