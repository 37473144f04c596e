"""The explorable figures fit their column, read at draw time (attnlab.explorable.html): side-by-side panels are
stacked and fixed widths narrowed where the column is narrower than the chart, on a phone and in the book's
720-pixel column, and every control still moves the chart."""

import pytest
import torch

from attnlab import explorable
from attnlab.tasks.translation import examples_per_length, translation_model
from tests.browser import (
    TOO_WIDE,
    after,
    check_local_and_ready,
    explorable_page,
    slide,
)

# A phone (390 x 844, a 358-pixel column as in the book) and the book's column at 1280 pixels.
LAYOUTS = {"phone": ((390, 844), 358), "desktop": ((1280, 900), 720)}


@pytest.fixture(scope="module")
def charts():
    torch.manual_seed(0)
    model = translation_model(attention=False, hidden_size=16, embed_size=8).eval()
    examples = [examples_per_length(1, n, n, seed=4)[0] for n in (6, 9)]
    gen = torch.Generator().manual_seed(1)
    memory, w_prev = torch.randn(8, 5, generator=gen), torch.softmax(torch.randn(8, generator=gen), -1)
    return {
        "decoder": explorable.decoder_steps(model, examples, top=4),  # two panels, 904 pixels side by side
        "ntm": explorable.ntm_addressing(memory, memory[2], w_prev, [1.0, 5.0], [0.0, 1.0],
                                         {"stay": (0.0, 1.0, 0.0), "one row on": (0.0, 0.0, 1.0)}, [1.0, 5.0]),
    }


def test_a_chart_wider_than_its_column_is_found(charts):
    with explorable_page({"decoder": charts["decoder"]}, viewport=(1280, 900)) as opened:
        tab = opened[0]
        tab.evaluate("document.querySelector('#decoder-figure').style.width = '200px'")
        assert [row[0] for row in tab.evaluate(TOO_WIDE)] == ["decoder-figure"]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_chart_fits_its_column_and_still_moves(charts, layout):
    viewport, column = LAYOUTS[layout]
    with explorable_page(charts, viewport=viewport, column=column) as opened:
        check_local_and_ready(opened, charts=2)
        tab = opened[0]
        assert not tab.evaluate(TOO_WIDE)
        assert tab.evaluate("document.documentElement.scrollWidth") <= viewport[0]
        drawn, _ = after(tab, slide(tab, "decoder", "output step", "ArrowRight"), "decoder", "top_words_marks")
        assert drawn
