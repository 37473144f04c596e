"""The measures the records of chapters 8 to 10 take, on hand-made cases: words right by target position, alignment
before and after a target position, the cross-attention head chosen on validation data, and the models built."""

from types import SimpleNamespace

import pytest
import torch

from attnlab.experiments import ntm_copy, transformer_translation
from attnlab.experiments.transformer_translation import (
    alignment_by_position,
    by_target_position,
    choose_head,
)
from attnlab.tasks.translation import TranslationReport


def _example(source_len: int, target: list[str], alignment: list[int] | None = None):
    return SimpleNamespace(source=["w"] * source_len, target=target, alignment=alignment or [])


def test_words_right_by_target_position_count_the_long_sentences_only():
    long = _example(41, ["a"] * 45)
    short = _example(10, ["a"] * 10)
    report = TranslationReport(
        lengths=[41, 10],
        predictions=[["a"] * 30 + ["b"] * 12, ["b"] * 10],
        references=[long.target, short.target],
    )
    # positions 0-19: 20 of 20; 20-39: 10 of 20; 40-44: the prediction is 42 words long and wrong there
    assert by_target_position(report, [long, short]) == {"0-19": 1.0, "20-39": 0.5, "40-59": 0.0}
    # with every sentence counted, the short one's 10 wrong words join the first span
    assert by_target_position(report, [long, short], low=1)["0-19"] == pytest.approx(20 / 30)


def test_alignment_before_and_from_a_target_position(monkeypatch):
    # target words 0-3 attend most to source words 0, 0, 1, 2; word 2 has no source word (-1)
    maps = [torch.tensor([[0.9, 0.1, 0.0], [0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.1, 0.2, 0.7]])]
    monkeypatch.setattr(transformer_translation, "attention_maps", lambda model, examples: (maps, None))
    example = _example(3, ["x"] * 4, alignment=[0, 1, -1, 2])
    assert alignment_by_position(None, [example], split=2) == (0.5, 1.0)
    assert alignment_by_position(None, [example], split=10) == (2 / 3, 0.0)  # nothing from position 10 on


def test_the_head_chosen_is_the_first_best_on_validation_and_is_left_shown(monkeypatch):
    decoder = SimpleNamespace(layers=[None, None], n_heads=2, shown_head=None)
    model = SimpleNamespace(decoder=decoder)
    scores = {(0, 0): 0.2, (0, 1): 0.7, (1, 0): 0.7, (1, 1): 0.1}
    monkeypatch.setattr(
        transformer_translation, "attention_maps", lambda m, examples: (None, scores[m.decoder.shown_head])
    )
    chosen, found = choose_head(model, [])
    assert chosen == (0, 1) and found == scores and decoder.shown_head == (0, 1)


def test_the_copy_models_are_the_chapters_and_a_wrong_kind_is_named():
    ntm, lstm = ntm_copy.build("ntm"), ntm_copy.build("lstm")
    assert (ntm.memory_rows, ntm.memory_width, ntm.controller.hidden_size) == (128, 20, 100)
    assert (lstm.lstm.hidden_size, lstm.lstm.num_layers) == (128, 1)
    with pytest.raises(ValueError, match="kind must be 'ntm' or 'lstm', got 'gru'"):
        ntm_copy.build("gru")


def test_transformer_vs_rnn_conclusions_fail_when_one_seed_breaks_them():
    import copy

    from attnlab.experiments import record, transformer_vs_rnn

    found = record.published("transformer-vs-rnn")["results"]
    assert all(transformer_vs_rnn.conclusions(found).values())
    broken = copy.deepcopy(found)
    learned = next(r for r in broken["runs"] if r["positions"] == "learned" and r["seed"] == 3)
    next(row for row in learned["buckets"] if row["bucket"] == "61-70")["token_accuracy"] = 1.0
    verdicts = transformer_vs_rnn.conclusions(broken)
    assert [claim for claim, holds in verdicts.items() if not holds] == [
        "beyond the training lengths, learned positions below sinusoids, seed by seed"
    ]


def test_lstm_copy_longer_concludes_only_what_every_seed_bears():
    from attnlab.experiments import lstm_copy_longer

    def run(seed, bits_10, bits_20):
        return {"seed": seed, "models": {"LSTM": {"bits": {"10": bits_10, "20": bits_20}}}}

    assert all(lstm_copy_longer.conclusions({"runs": [run(0, 6.0, 40.0), run(1, 5.0, 38.0)]}).values())
    verdicts = lstm_copy_longer.conclusions({"runs": [run(0, 6.0, 40.0), run(1, 0.5, 9.0)]})
    assert not any(verdicts.values())  # one seed that copies the training lengths breaks both


def test_lstm_copy_longer_trains_the_chapters_baseline_at_a_toy_size(tmp_path, monkeypatch, capsys):
    from attnlab.experiments import lstm_copy_longer, record

    monkeypatch.setitem(lstm_copy_longer.SETTINGS, "steps", 3)
    monkeypatch.setitem(lstm_copy_longer.SETTINGS, "test_sequences", 2)
    lstm_copy_longer.main(["--seeds", "2", "--json", str(tmp_path / "lstm.json")])  # three steps copy nothing
    runs = record.load(tmp_path / "lstm.json")["results"]["runs"]
    assert [r["seed"] for r in runs] == [0, 1] and runs[0]["models"] != runs[1]["models"]
    assert set(runs[0]["models"]["LSTM"]) == {"bits", "cost", "perfect", "val_bits"}
    assert "holds: the LSTM above 10 wrong bits per sequence at length 20" in capsys.readouterr().out
