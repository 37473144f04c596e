"""The explorable alignments (attnlab.explorable.alignment): the heatmaps of an attention model (chapter 4) and
Luong's local window over a global model's weights (chapter 5). Their data equal attnlab's, and every control
moves the drawn chart in headless Chromium."""

import math

import pytest
import torch

from attnlab import explorable
from attnlab.luong import LuongDecoder, local_window
from attnlab.tasks.translation import (
    build_model,
    examples_per_length,
    make_batch,
    make_example,
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
from tests.browser import drawn as drawn_now

SENTENCE = "big red dogs see cats because old kings love small birds".split()
SOURCE = "dogs see small cats because old kings love birds".split()  # 9 words
HALF_WIDTHS = (1, 2, 3)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return translation_model(attention=True, hidden_size=16, embed_size=8, attention_size=8).eval()


@pytest.fixture(scope="module")
def examples():
    return [make_example(SENTENCE), *examples_per_length(1, 14, 14, seed=3)]


@pytest.fixture(scope="module")
def scores():
    """A global model's scores (T = 7 steps, S = 9 source words); its weights are their softmax."""
    return 4 * torch.randn(7, len(SOURCE), generator=torch.Generator().manual_seed(2), dtype=torch.float64)


@pytest.fixture(scope="module")
def charts(model, examples, scores):
    return {
        "heatmaps": explorable.alignment_heatmaps(model, examples),
        "window": explorable.local_window_weights(torch.softmax(scores, -1).float(), SOURCE,
                                                  half_widths=HALF_WIDTHS),
    }


def heatmap_expected(model, example, step: int) -> list[float]:
    """The weights of output step ``step`` (from 1), from the model's teacher-forced forward pass."""
    batch = make_batch([example])
    with torch.no_grad():
        weights = model(batch.src, batch.src_mask, batch.tgt).weights
    return weights[0, step - 1].tolist()


def window_expected(scores, step: int, p: float, d: int) -> tuple[list[int], list[float]]:
    """Local-p weights from the scores themselves (not their softmax): positions inside the window, weights."""
    weights = local_window(scores[step - 1], torch.tensor(p, dtype=torch.float64), d)
    middle = math.floor(p + 0.5)
    inside = [s for s in range(len(SOURCE)) if abs(s - middle) <= d]
    return inside, weights[inside].tolist()


def softmax_expected(scores, step: int, p: float, d: int) -> tuple[list[int], list[float]]:
    """The softmax of the scores inside the window (local_window without the Gaussian)."""
    weights = local_window(scores[step - 1], torch.tensor(p, dtype=torch.float64), d, gaussian=False)
    inside, _ = window_expected(scores, step, p, d)
    return inside, weights[inside].tolist()


def test_heatmap_data_are_the_models_attention(charts, model, examples):
    rows = rows_of(charts["heatmaps"], "step_weights")
    for example, step in [(examples[0], 1), (examples[0], 7), (examples[1], 14)]:
        (row,) = pick(rows, sentence=f"{len(example.source)} words", step=step)
        assert row["s"] == list(range(len(example.source)))
        assert row["target"] == example.target[step - 1] and row["true"] == example.alignment[step - 1]
        assert row["weight"] == pytest.approx(heatmap_expected(model, example, step), abs=1e-6)


@pytest.mark.parametrize(("step", "p", "d"), [(1, 4.0, 2), (3, 0.5, 1), (7, 7.5, 3), (5, 8.0, 3), (2, 4.5, 2)])
def test_window_data_are_local_window_of_the_scores(charts, scores, step, p, d):
    """Per (p_t, D) the chart holds the local-p weights of every step; per (round(p_t), D) the softmax inside the
    window and the global weight it keeps: all as attnlab.luong.local_window computes them (5 decimals)."""
    (row,) = pick(rows_of(charts["window"], "local_weights_0"), p=p, D=d)
    inside, weights = window_expected(scores, step, p, d)
    assert row["s"] == inside and row["low"] == inside[0] - 0.5 and row["high"] == inside[-1] + 0.5
    assert row["weight"][step - 1] == pytest.approx(weights, abs=1e-5)
    assert row["total"][step - 1] == pytest.approx(sum(weights), abs=1e-5)
    # the same weights written out: softmax inside the window times the Gaussian of sigma = D / 2
    inside_scores = scores[step - 1, inside]
    gauss = torch.exp(-((torch.tensor(inside) - p) ** 2) / (2 * (d / 2) ** 2))
    assert row["weight"][step - 1] == pytest.approx((torch.softmax(inside_scores, -1) * gauss).tolist(), abs=1e-5)
    assert row["gauss"] == pytest.approx(gauss.tolist(), abs=1e-5)
    (cut,) = pick(rows_of(charts["window"], "window_weights_0"), m=math.floor(p + 0.5), D=d)
    assert cut["s"] == inside
    assert cut["weight"][step - 1] == pytest.approx(softmax_expected(scores, step, p, d)[1], abs=1e-5)
    assert cut["weight"][step - 1] == pytest.approx(torch.softmax(inside_scores, -1).tolist(), abs=1e-5)
    assert cut["kept"][step - 1] == pytest.approx(torch.softmax(scores[step - 1], -1)[inside].sum().item(), abs=1e-5)
    (whole,) = rows_of(charts["window"], "global_weights_0")
    assert whole["weight"][step - 1] == pytest.approx(torch.softmax(scores[step - 1], -1).tolist(), abs=1e-5)


def test_window_of_a_trained_shape_model():
    """The weights of a real global model (attention_maps of a Luong decoder) go in as they come."""
    model = build_model(LuongDecoder, score="dot", input_feeding=False, embed_size=8, hidden_size=16).eval()
    example = examples_per_length(1, 6, 6, seed=1)[0]
    batch = make_batch([example])
    with torch.no_grad():
        weights = model(batch.src, batch.src_mask, batch.tgt).weights[0, :-1]
    chart = explorable.local_window_weights(weights, example.source, half_widths=(1, 2))
    (row,) = pick(rows_of(chart, "local_weights_0"), p=2.5, D=2)
    expected = local_window(weights[1].double().log(), torch.tensor(2.5, dtype=torch.float64), 2)
    assert row["s"] == [1, 2, 3, 4, 5] and row["weight"][1] == pytest.approx(expected[1:].tolist(), abs=1e-5)
    with pytest.raises(ValueError, match="weights"):
        explorable.local_window_weights(weights, example.source[:-1])


def test_names_must_differ(model, examples):
    with pytest.raises(ValueError, match="names"):
        explorable.alignment_heatmaps(model, examples, names=["a", "a"])


def test_every_control_has_a_visible_label(charts):
    for chart in charts.values():
        params = chart.to_dict()["params"]
        assert params and all(param["bind"]["name"].strip() for param in params)


def test_html_size_with_the_chapters_arguments(model):
    """Chapter 4 shows sentences of 11, 20, 30 and 36 words, chapter 5 one of 12 words with D up to 5: at most
    300 KB per page (an untrained model's weights have as many digits as any)."""
    sentences = [make_example(SENTENCE), *(examples_per_length(1, n, n, seed=7)[0] for n in (20, 30, 36))]
    chart = explorable.alignment_heatmaps(model, sentences)
    assert len(explorable.html(chart, "alignment-heatmap", "d").data) < 300_000
    weights = torch.softmax(torch.randn(12, 12, generator=torch.Generator().manual_seed(0)), -1)
    chart = explorable.local_window_weights(weights, [f"w{i}" for i in range(12)], half_widths=(1, 2, 3, 4, 5))
    assert len(explorable.html(chart, "local-window", "d").data) < 300_000


# ---- in the browser -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def page(charts):
    with explorable_page({"alignment-heatmap": charts["heatmaps"], "local-window": charts["window"]}) as opened:
        yield opened


def test_page_is_local_and_quiet(page):
    check_local_and_ready(page, charts=2)


def test_heatmap_controls(page, model, examples):
    tab = page[0]
    long_name = f"{len(examples[1].source)} words"
    for action, (name, step) in [(slide(tab, "alignment-heatmap", "output step", "ArrowRight"), ("11 words", 2)),
                                 (choose(tab, "alignment-heatmap", "sentence", long_name), (long_name, 2)),
                                 (slide(tab, "alignment-heatmap", "output step", "End"), (long_name, 14))]:
        drawn = after(tab, action, "alignment-heatmap", "step_weights_marks")
        assert (signal(tab, "alignment-heatmap", "sentence"), signal(tab, "alignment-heatmap", "step")) == (name, step)
        example = next(e for e in examples if f"{len(e.source)} words" == name)
        assert [d["s"] for d in drawn] == list(range(len(example.source)))
        assert [d["weight"] for d in drawn] == pytest.approx(heatmap_expected(model, example, step), abs=1e-6)
        assert [d["word"] for d in drawn].count("the true source word") == 1


def test_short_sentence_shows_its_last_step_past_its_end(page, model, examples):
    tab = page[0]  # after test_heatmap_controls: the step is 14, past the 11-word sentence's end
    drawn = after(tab, choose(tab, "alignment-heatmap", "sentence", "11 words"), "alignment-heatmap",
                     "step_weights_marks")
    assert [d["weight"] for d in drawn] == pytest.approx(heatmap_expected(model, examples[0], 11), abs=1e-6)


def test_window_controls(page, scores):
    tab = page[0]
    start = (4, 4.0, 2)  # the sliders' first values: the middle step, centre and half-width
    assert [signal(tab, "local-window", n) for n in ("step", "p", "D")] == list(start)
    for action, setting in [(slide(tab, "local-window", "output step", "ArrowRight"), (5, 4.0, 2)),
                            (slide(tab, "local-window", "window centre", "ArrowRight"), (5, 4.5, 2)),
                            (slide(tab, "local-window", "half-width", "ArrowLeft"), (5, 4.5, 1)),
                            (slide(tab, "local-window", "window centre", "Home"), (5, 0.0, 1))]:
        drawn = after(tab, action, "local-window", "local_weights_0_marks")
        assert [signal(tab, "local-window", n) for n in ("step", "p", "D")] == pytest.approx(list(setting))
        inside, weights = window_expected(scores, *setting)
        assert [d["s"] for d in drawn] == inside
        assert [d["w"] for d in drawn] == pytest.approx(weights, abs=1e-5)
        softmax = drawn_now(tab, "local-window", "window_weights_0_marks")
        assert [d["s"] for d in softmax] == inside
        assert [d["w"] for d in softmax] == pytest.approx(softmax_expected(scores, *setting)[1], abs=1e-5)
        (total,) = drawn_now(tab, "local-window", "total_text_1_marks")
        assert total["label"].startswith("sum of the local-p weights: ")
        assert float(total["label"].rsplit(": ", 1)[1]) == pytest.approx(sum(weights), abs=6e-4)
        (kept,) = drawn_now(tab, "local-window", "kept_text_1_marks")
        step = setting[0]
        share = torch.softmax(scores[step - 1], -1)[inside].sum().item()
        assert kept["label"].startswith("global weight inside the window: ")
        assert float(kept["label"].rsplit(": ", 1)[1]) == pytest.approx(share, abs=6e-4)
