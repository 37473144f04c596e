"""Chapter 7's explorable scaling (attnlab.explorable.dk_scaling): the weights and the mean largest weight equal a
softmax of the library's scores for the same draws, and every control moves the drawn bars in headless Chromium."""

import pytest
import torch

from attnlab import explorable
from attnlab.attention import dot_score, scaled_dot_score
from attnlab.explorable.scaling import SCORES
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

# the d_k of the points drawn with a black ring
RING = """view => Array.from(document.querySelectorAll(`#${view} .mark-symbol path[stroke="black"]`)).map(
  p => p.__data__.datum.d_k)"""
EXPONENTS = (0, 1, 2, 3, 4, 5, 6)
KEYS, QUERIES, SHOWN = 16, 64, 4
SCALED, UNSCALED = list(SCORES)


@pytest.fixture(scope="module")
def chart():
    return explorable.dk_scaling(torch.Generator().manual_seed(5), EXPONENTS, KEYS, QUERIES, SHOWN)


@pytest.fixture(scope="module")
def draws() -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
    """The same draws, in the documented order: for each d_k, the queries, then the keys."""
    generator = torch.Generator().manual_seed(5)
    out = {}
    for e in EXPONENTS:
        q = torch.randn(QUERIES, 1, 2**e, generator=generator)
        out[e] = q, torch.randn(QUERIES, KEYS, 2**e, generator=generator)
    return out


def weights(draws, e: int, score: str) -> torch.Tensor:
    """(queries, keys): the softmax of the library's score over each query's keys."""
    q, k = draws[e]
    return torch.softmax({SCALED: scaled_dot_score, UNSCALED: dot_score}[score](q, k)[:, 0], -1)


@pytest.mark.parametrize(("e", "score", "query"), [(3, SCALED, 1), (6, UNSCALED, 4), (0, UNSCALED, 2)])
def test_bars_are_the_softmax_of_the_scores(chart, draws, e, score, query):
    (row,) = pick(rows_of(chart, "weights"), e=e, score=score, query=query)
    assert row["weight"] == pytest.approx(weights(draws, e, score)[query - 1].tolist(), abs=1e-6)


@pytest.mark.parametrize(("e", "score"), [(2, SCALED), (6, UNSCALED), (6, SCALED)])
def test_peak_is_the_mean_largest_weight(chart, draws, e, score):
    (row,) = pick(rows_of(chart, "peaks"), e=e, score=score)
    assert row["d_k"] == 2**e
    assert row["peak"] == pytest.approx(weights(draws, e, score).max(-1).values.mean().item(), abs=1e-6)


def test_unscaled_weights_peak_more(chart):
    summary = rows_of(chart, "peaks")
    top = max(EXPONENTS)
    (unscaled,) = pick(summary, e=top, score=UNSCALED)
    (scaled,) = pick(summary, e=top, score=SCALED)
    assert unscaled["peak"] > scaled["peak"]  # softmax(s) peaks more than softmax(s / 8), for any s


def test_every_control_has_a_visible_label_and_the_page_is_small(chart):
    for param in chart.to_dict()["params"]:
        assert param["bind"]["name"].strip(), param
    assert len(explorable.html(chart, "dk-scaling", "d").data) < 300_000


# ---- in the browser -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def page(chart):
    with explorable_page({"dk-scaling": chart}) as opened:
        yield opened


def test_page_is_local_and_ready(page):
    check_local_and_ready(page, charts=1)


def test_every_control_moves_the_bars(page, draws):
    tab = page[0]
    names = ("e", "score", "query")
    assert [signal(tab, "dk-scaling", n) for n in names] == [3, SCALED, 1]
    for action, setting in [(slide(tab, "dk-scaling", "log2 of d_k", "ArrowRight"), (4, SCALED, 1)),
                            (choose(tab, "dk-scaling", "score", UNSCALED), (4, UNSCALED, 1)),
                            (slide(tab, "dk-scaling", "query", "ArrowRight"), (4, UNSCALED, 2)),
                            (slide(tab, "dk-scaling", "log2 of d_k", "ArrowLeft"), (3, UNSCALED, 2))]:
        drawn = after(tab, action, "dk-scaling", "weights_marks")
        assert [signal(tab, "dk-scaling", n) for n in names] == list(setting)
        e, score, query = setting
        assert [d["key"] for d in drawn] == list(range(1, KEYS + 1))
        assert [d["weight"] for d in drawn] == pytest.approx(weights(draws, e, score)[query - 1].tolist(), abs=1e-6)
        big = [d for d in drawn_now(tab, "dk-scaling", "peaks_marks") if (d["e"], d["score"]) == (e, score)]
        assert len(big) == 1 and tab.evaluate(RING, "dk-scaling") == [2**e], "the current setting is not ringed"
        (caption,) = drawn_now(tab, "dk-scaling", "spread_marks")
        assert caption["label"].startswith(f"d_k = {2**e}:")
