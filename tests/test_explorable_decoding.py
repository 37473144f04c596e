"""The explorable decoder steps (attnlab.explorable.decoding, chapter 3): the next-word probabilities of an
encoder-decoder without attention, under teacher forcing and greedy inference. Their data equal the model's, and
every control moves the drawn chart in headless Chromium."""

import pytest
import torch

from attnlab import explorable
from attnlab.explorable.decoding import READS, step_probabilities
from attnlab.tasks.translation import (
    TARGET_VOCAB,
    examples_per_length,
    make_batch,
    translation_model,
)
from tests.browser import (
    after,
    check_local_and_ready,
    choose,
    explorable_page,
    pick,
    rows_of,
    signal,
    slide,
)

TOP = 4


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return translation_model(attention=False, hidden_size=16, embed_size=8).eval()


@pytest.fixture(scope="module")
def examples():
    return [examples_per_length(1, n, n, seed=4)[0] for n in (6, 9)]


@pytest.fixture(scope="module")
def chart(model, examples):
    return explorable.decoder_steps(model, examples, top=TOP)


def expected(model, example, reads: str, step: int) -> tuple[list[str], list[float], str]:
    """The ``TOP`` most likely words at ``step`` (from 1), their probabilities (softmax of the logits, padding
    and <bos> at 0), and the reference word there."""
    batch = make_batch([example])
    with torch.no_grad():
        if reads == "forced":
            logits = model(batch.src, batch.src_mask, batch.tgt).logits[0]
        else:
            logits = model.decoder.decode(model.encode(batch.src, batch.src_mask),
                                          max_len=2 * len(example.source) + 10).logits[0]
    probabilities = torch.softmax(logits, -1)
    probabilities[:, [TARGET_VOCAB.pad, TARGET_VOCAB.bos]] = 0.0
    values, words = probabilities[step - 1].topk(TOP)
    reference = [*example.target, "<eos>"]
    return ([TARGET_VOCAB.itos[w] for w in words.tolist()], values.tolist(),
            reference[step - 1] if step <= len(reference) else "")


@pytest.mark.parametrize(("which", "reads", "step"), [(0, "forced", 1), (1, "forced", 10), (1, "greedy", 3),
                                                      (0, "greedy", 7)])
def test_data_are_the_models_probabilities(chart, model, examples, which, reads, step):
    example = examples[which]
    (row,) = pick(rows_of(chart, "top_words"), sentence=f"{len(example.source)} words", reads=READS[reads],
                  step=step)
    words, values, right = expected(model, example, reads, step)
    assert row["word"] == words
    assert row["p"] == pytest.approx(values, abs=1e-6)
    assert row["kind"] == ["the reference word" if w == right else "another word" for w in words]


def test_greedy_runs_as_long_as_the_models_greedy_translation(chart, model, examples):
    rows = rows_of(chart, "top_words")
    for example in examples:
        batch = make_batch([example])
        with torch.no_grad():
            steps = model.greedy(batch.src, batch.src_mask).logits.shape[1]
        mine = pick(rows, sentence=f"{len(example.source)} words", reads=READS["greedy"])
        assert [r["step"] for r in mine] == list(range(1, steps + 1)) and {r["last"] for r in mine} == {steps}
        forced = pick(rows, sentence=f"{len(example.source)} words", reads=READS["forced"])
        assert len(forced) == len(example.target) + 1  # every word and <eos>


def test_bad_arguments(model, examples):
    with pytest.raises(ValueError, match="names"):
        explorable.decoder_steps(model, examples, names=["a", "a"])
    with pytest.raises(ValueError, match="reads"):
        explorable.decoding.step_probabilities(model, examples[0], "sampled")


def test_every_control_has_a_visible_label(chart):
    params = chart.to_dict()["params"]
    assert len(params) == 3 and all(param["bind"]["name"].strip() for param in params)


def test_html_size_with_the_chapters_arguments(model):
    """Chapter 3 shows sentences of 10, 20, 30 and 40 words with the 5 most likely words: at most 300 KB (an
    untrained model never writes <eos>, so its greedy runs are the longest possible)."""
    sentences = [examples_per_length(1, n, n, seed=1)[0] for n in (10, 20, 30, 40)]
    chart = explorable.decoder_steps(model, sentences)
    assert len(explorable.html(chart, "decoder-steps", "d").data) < 300_000


# ---- in the browser -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def page(chart):
    with explorable_page({"decoder-steps": chart}) as opened:
        yield opened


def test_page_is_local_and_quiet(page):
    check_local_and_ready(page, charts=1)


def test_controls(page, model, examples):
    tab = page[0]
    short, long = (f"{len(e.source)} words" for e in examples)
    for action, (name, reads, step) in [
        (slide(tab, "decoder-steps", "output step", "ArrowRight"), (short, "forced", 2)),
        (choose(tab, "decoder-steps", "the decoder reads", READS["greedy"]), (short, "greedy", 2)),
        (choose(tab, "decoder-steps", "sentence", long), (long, "greedy", 2)),
        (slide(tab, "decoder-steps", "output step", "ArrowRight"), (long, "greedy", 3)),
        (choose(tab, "decoder-steps", "the decoder reads", READS["forced"]), (long, "forced", 3)),
    ]:
        drawn = after(tab, action, "decoder-steps", "top_words_marks")
        assert [signal(tab, "decoder-steps", n) for n in ("sentence", "reads", "step")] == [name, READS[reads], step]
        example = examples[[short, long].index(name)]
        words, values, _ = expected(model, example, reads, step)
        got = {d["word"]: d["p"] for d in drawn}
        assert sorted(got) == sorted(words)
        assert [got[w] for w in words] == pytest.approx(values, abs=1e-6)


def test_the_step_slider_ends_where_the_sentence_does(page, model, examples):
    """In the book the slider's range follows the sentence and the reading: picking a shorter translation pulls the
    step back to its last step."""
    tab = page[0]
    short, long = (f"{len(e.source)} words" for e in examples)
    slider = tab.locator("#decoder-steps input[name='step']")
    for name, example in [(long, examples[1]), (short, examples[0])]:
        for reads, label in READS.items():
            choose(tab, "decoder-steps", "sentence", name)()
            choose(tab, "decoder-steps", "the decoder reads", label)()
            steps = len(step_probabilities(model, example, reads)[0])
            tab.wait_for_function("([el, most]) => el.max == most", arg=[slider.element_handle(), steps])
            slider.focus()
            tab.keyboard.press("End")
            tab.wait_for_function(f"window.attnlabViews['decoder-steps'].signal('step') === {steps}")
    choose(tab, "decoder-steps", "the decoder reads", READS["forced"])()
    choose(tab, "decoder-steps", "sentence", long)()
    slider.focus()
    tab.keyboard.press("End")
    longest = len(step_probabilities(model, examples[1], "forced")[0])
    tab.wait_for_function(f"window.attnlabViews['decoder-steps'].signal('step') === {longest}")
    choose(tab, "decoder-steps", "sentence", short)()  # shorter: the step comes back to its end
    shortest = len(step_probabilities(model, examples[0], "forced")[0])
    tab.wait_for_function(f"window.attnlabViews['decoder-steps'].signal('step') === {shortest}")
