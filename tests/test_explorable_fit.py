"""The explorable figures fit their column, read at draw time (attnlab.explorable.html): side-by-side panels are
stacked and fixed widths narrowed where the column is narrower than the chart, on a phone and in the book's
720-pixel column, and every control still moves the chart."""

import pytest
import torch

from attnlab import explorable
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
    seed_everything(0)
    transformer = Transformer(len(SOURCE_VOCAB), len(TARGET_VOCAB), d_model=16, n_heads=2, n_layers=2, d_ff=32,
                              pad_id=TARGET_VOCAB.pad, bos_id=TARGET_VOCAB.bos, eos_id=TARGET_VOCAB.eos).eval()
    sentences = ["big red dogs see cats because old kings love small birds", "young wolves follow horses"]
    return {
        # a square heatmap under a long caption, four menus, one with a whole sentence as an option
        "heads": explorable.transformer_heads(transformer, [make_example(s.split()) for s in sentences]),
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
        check_local_and_ready(opened, charts=3)
        tab = opened[0]
        assert not tab.evaluate(TOO_WIDE)
        assert tab.evaluate("document.documentElement.scrollWidth") <= viewport[0]
        drawn, _ = after(tab, slide(tab, "decoder", "output step", "ArrowRight"), "decoder", "top_words_marks")
        assert drawn
