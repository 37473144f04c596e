"""The explorable figures fit their column, read at draw time (attnlab.explorable.html): side-by-side panels are
stacked and fixed widths narrowed where the column is narrower than the chart, on a phone and in the book's
720-pixel column, every control still moves the chart, everything drawn lies inside the figure (a slider's value
beside its slider) and no text is below 12 pixels."""

import pytest
import torch

from attnlab import explorable
from attnlab.memory import SoftDict
from attnlab.tasks.translation import (
    SOURCE_VOCAB,
    TARGET_VOCAB,
    examples_per_length,
    make_example,
    translation_model,
)
from attnlab.train import seed_everything
from attnlab.transformer import Transformer
from tests.browser import (
    CUT_TEXT,
    OUTSIDE,
    SMALL_TEXT,
    TOO_WIDE,
    after,
    check_local_and_ready,
    explorable_page,
    slide,
)
from tests.test_explorable_pointing import sorter_and_lists, tsp_model_and_instances

# A phone (390 x 844: the book's numbered figure leaves a chart 326 pixels, the test page's figure has 8 pixels of
# padding each side) and the book's column at 1280 pixels.
LAYOUTS = {"phone": ((390, 844), 342), "desktop": ((1280, 900), 720)}


def _weights(steps: int, words: int) -> torch.Tensor:
    return torch.softmax(3 * torch.randn(steps, words, generator=torch.Generator().manual_seed(0)), -1)


@pytest.fixture(scope="module")
def charts():
    torch.manual_seed(0)
    model = translation_model(attention=False, hidden_size=16, embed_size=8).eval()
    examples = [examples_per_length(1, n, n, seed=4)[0] for n in (6, 9)]
    gen = torch.Generator().manual_seed(1)
    memory, w_prev = torch.randn(8, 5, generator=gen), torch.softmax(torch.randn(8, generator=gen), -1)
    seed_everything(0)
    transformer = Transformer(len(SOURCE_VOCAB), len(TARGET_VOCAB), d_model=16, n_heads=2, n_layers=2, d_ff=32,
                              pad_id=TARGET_VOCAB.pad, bos_id=TARGET_VOCAB.bos, eos_id=TARGET_VOCAB.eos).eval()
    sentences = ["big red dogs see cats because old kings love small birds", "young wolves follow horses"]
    tsp, points, tours = tsp_model_and_instances(n=10, count=3)
    words = "the old king saw the young wolves follow small birds at night".split()
    keys = torch.linalg.qr(torch.randn(16, 4, generator=gen)).Q.T
    theta = torch.tensor([0.5, -0.3, 1.2, 0.0, -1.0], dtype=torch.float64, requires_grad=True)
    rewards = torch.tensor([9.0, 10.5, 10.0, 8.5, 11.0], dtype=torch.float64)
    sorter, lists = sorter_and_lists(n=10, count=4)
    attention = translation_model(attention=True, hidden_size=16, embed_size=8).eval()
    return {
        # chapter 1's long slider label; chapter 4's and 9's square heatmaps, up to 44 words; chapter 6's two-line
        # caption inside the chart; chapter 11's two-line title
        "lookup": explorable.soft_dictionary(SoftDict(keys, torch.arange(4.0)[:, None]), keys[1], keys[3],
                                             ["France", "Japan", "Kenya", "Peru"],
                                             ["Lima", "Nairobi", "Paris", "Tokyo"], end_name="Peru's key"),
        "alignment": explorable.alignment_heatmaps(attention, [examples_per_length(1, n, n, seed=4)[0]
                                                               for n in (11, 36, 44)]),
        "reinforce": explorable.reinforce_draws(theta, rewards, {"no baseline": None, "b = E[r]": 10.0},
                                                torch.Generator().manual_seed(6)),
        "pointer": explorable.pointer_steps(sorter, lists, [f"test list {i}" for i in range(4)]),
        # chapter 5's sliders, one with a long label; chapter 12's map, its axis ending at the right edge
        "window": explorable.local_window_weights(_weights(11, 12), words, half_widths=(1, 2, 3, 4, 5)),
        "tour": explorable.tour_steps(tsp, points, ["test instance 1", "test instance 2", "test instance 3"], tours, {
            "greedy decoding": tsp.greedy(points).indices,
            "the shortest of a beam of 10": tsp.beam_search(points, 10)[0][:, 0]}),
        # a square heatmap under a long caption, four menus, one with a whole sentence as an option
        "heads": explorable.transformer_heads(transformer, [make_example(s.split()) for s in sentences]),
        "decoder": explorable.decoder_steps(model, examples),  # two panels, 904 pixels side by side
        "ntm": explorable.ntm_addressing(memory, memory[2], w_prev, [1.0, 5.0], [0.0, 1.0],
                                         {"stay": (0.0, 1.0, 0.0), "one row on": (0.0, 0.0, 1.0)}, [1.0, 5.0]),
    }


def test_a_chart_wider_than_its_column_is_found(charts):
    with explorable_page({"decoder": charts["decoder"]}, viewport=(1280, 900)) as opened:
        tab = opened[0]
        tab.evaluate("document.querySelector('#decoder-figure').style.width = '200px'")
        assert [row[0] for row in tab.evaluate(TOO_WIDE)] == ["decoder-figure"]


def test_text_outside_its_figure_a_slider_value_apart_and_small_text_are_found(charts):
    with explorable_page({"window": charts["window"]}, viewport=(390, 844), column=358) as opened:
        tab = opened[0]
        assert not tab.evaluate(OUTSIDE) and not tab.evaluate(SMALL_TEXT) and not tab.evaluate(CUT_TEXT)
        tab.evaluate("document.querySelector('#window svg text').textContent = 'times the Gau\u2026'")
        assert [row[1] for row in tab.evaluate(CUT_TEXT)] == ["times the Gau\u2026"]
        tab.evaluate("document.querySelector('#window-figure').style.width = '250px'")  # the chart overflows it
        assert {row[1] for row in tab.evaluate(OUTSIDE)} == {"chart text"}
        tab.evaluate("document.querySelector('#window-figure').style.width = ''")
        tab.evaluate("document.querySelector('#window .attnlab-slider').style.flexWrap = 'wrap'")
        tab.evaluate("document.querySelector('#window input[type=range]').nextElementSibling.style.flex = '0 0 100%'")
        assert [row[1:] for row in tab.evaluate(OUTSIDE)] == [["slider value not beside its slider", "step"]]
        tab.evaluate("document.querySelector('#window svg').style.width = '200px'")  # a picture scaled down
        assert tab.evaluate(SMALL_TEXT)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_chart_fits_its_column_and_still_moves(charts, layout):
    viewport, column = LAYOUTS[layout]
    with explorable_page(charts, viewport=viewport, column=column) as opened:
        check_local_and_ready(opened, charts=len(charts))
        tab = opened[0]
        assert not tab.evaluate(TOO_WIDE)
        assert not tab.evaluate(OUTSIDE)
        assert not tab.evaluate(SMALL_TEXT)
        assert not tab.evaluate(CUT_TEXT)
        assert tab.evaluate("document.documentElement.scrollWidth") <= viewport[0]
        drawn = after(tab, slide(tab, "decoder", "output step", "ArrowRight"), "decoder", "top_words_marks")
        assert drawn
