"""Every number on the "Reproducing the results" page is glued by the notebook it names."""

import re

from tests.notebook_files import ROOT, code_cells, read

PAGE = (ROOT / "book" / "reproducing.md").read_text()
REFERENCES = re.findall(r"\{glue:text\}`\.\./(notebooks/[\w.]+\.ipynb)::(\w+):[^`]+`", PAGE)


def glued_keys(source: str) -> set[str]:
    """Keys passed to glue(...), with f-string loops over known names expanded by pattern."""
    return set(re.findall(r'glue\(f?"([\w{}]+)"', source))


def test_the_page_pastes_numbers():
    assert len(REFERENCES) >= 10


def test_every_pasted_key_is_glued_by_its_notebook():
    for notebook, key in REFERENCES:
        source = "\n".join(cell.source for cell in code_cells(read(ROOT / notebook)))
        patterns = [re.sub(r"\\\{\w+\\\}", r"\\w+", re.escape(k)) for k in glued_keys(source)]
        assert any(re.fullmatch(p, key) for p in patterns), f"{notebook} never glues {key!r}"


RECORDS = re.findall(r"```\{experiment-results\} \.\./(results/[\w.-]+\.json)", PAGE)


def test_long_runs_are_tables_made_from_the_records_their_commands_wrote():
    from attnlab.experiments import record

    assert len(RECORDS) >= 4
    for path in RECORDS:
        data = record.load(ROOT / path)
        module = __import__(f"attnlab.experiments.{data['experiment'].replace('-', '_')}", fromlist=["markdown"])
        text = module.markdown(data)
        # the page names the command that wrote the file, and the table ends with where it ran
        default = "--json" not in data["command"] and path == f"results/{data['experiment']}.json"
        assert f"--json {path}" in data["command"] or default, (path, data["command"])
        assert data["command"].removeprefix("python ") in " ".join(PAGE.split()), data["command"]
        assert text.endswith(record.provenance(data)) and data["date"] in text


def test_no_output_is_pasted_by_hand():
    # a long run's output was once pasted with its date; dates now come only from the records
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", PAGE)


def _results(name):
    from attnlab.experiments import record

    return record.load(ROOT / "results" / f"{name}.json")["results"]


def test_the_recorded_long_runs_support_what_the_chapters_say_of_them():
    """Chapters 10 and 12 state the long runs' conclusions in words; the committed records must bear them out on
    every seed (the conclusions the long runs' modules state: tests/test_experiment_records.py)."""
    from attnlab.experiments.ntm_copy import met_target

    # chapter 10: most seeds of the chapter's recipe copy
    seeds = _results("ntm-copy")["seeds"].values()
    copies = [met_target({int(n): b for n, b in s["test"]["bits"].items()}) for s in seeds]
    assert len(copies) == 5 and sum(copies) >= 3
    # chapter 12: nearest neighbour is far from the optimum on every seed
    assert all(run["methods"]["nearest neighbour"]["low"] > 0.05 for run in _results("pointer-tsp")["runs"])


def test_every_record_ships_with_the_package():
    """Chapters read records with `published` (in Colab and in grading too): the package carries results/."""
    from attnlab.experiments import record

    files = sorted((ROOT / "results").glob("*.json"))
    assert len(files) >= 5
    for path in files:
        assert record.published(path.stem) == record.load(path), path.name


def test_an_unknown_record_is_named_with_the_known_ones():
    import pytest

    from attnlab.experiments import record

    with pytest.raises(ValueError, match=r"no committed record named 'nope'; there are \['bahdanau-attention', 'encoder-decoder'"):
        record.published("nope")


def test_the_transformer_record_supports_what_chapters_8_and_9_say_of_it():
    """Chapters 8 and 9 state the recipes chosen (glued) and what held over the five seeds; the record bears out
    the margins of the choice that the reproducing page reports."""
    from attnlab.experiments import transformer_vs_rnn as study

    found = _results("transformer-vs-rnn")
    assert found["settings"]["seeds"] == 5 and found["settings"]["steps"] == 2000
    chosen = {model: recipe["name"] for model, recipe in found["chosen"].items()}
    assert chosen == {"RNNenc": "rate 0.004", "RNNsearch": "rate 0.002", "Transformer": "rate 0.002, warm-up 5%"}
    source = " ".join(" ".join(cell.source for cell in read(ROOT / "notebooks" / "08_transformer.ipynb").cells).split())
    # the rates and the warm-up are glued from the record; the verdicts are in words
    assert ("a rate of {glue:text}`tf_lr_transformer` with a warm-up over {glue:text}`tf_warmup:.0%` of the run"
            in source)
    # how the recipes were chosen (the margins, the tie) is told on the reproducing page, not in the lesson
    assert "choice stands" not in source and "it is a tie" not in source
    assert "reproduce-transformer" in source
    margins = study.selection_margins(found)
    assert all(margins[m][0] > margins[m][1] for m in ("RNNenc", "RNNsearch"))
    assert margins["Transformer"][0] <= margins["Transformer"][1]

    # what the chapter states over the five seeds, each checked seed by seed (the weekly workflow re-makes it)
    failed = [claim for claim, holds in study.conclusions(found).items() if not holds]
    assert not failed, failed
