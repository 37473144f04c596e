"""The schematic diagrams: every one draws, uses only the course's role colours, and labels what it shows."""

import matplotlib
import pytest
from matplotlib.colors import to_rgba
from matplotlib.patches import FancyBboxPatch

from attnlab import schematics
from attnlab.plot import SMALLEST_PT, rendered_points

matplotlib.use("Agg")

DIAGRAMS = {
    "encoder_decoder": [r"$\mathbf{c}$", "encoder", "decoder"],
    "bahdanau_step": [r"$\mathbf{s}_{t-1}$", "GRU", "scores (the alignment model)"],
    "luong_step": [
        r"$\mathbf{s}_t$",
        r"score$(\mathbf{s}_t, \mathbf{h}_j)$",
        "RNN",
        "input feeding:\nto the next step",
    ],
    "simple_vs_parameterized": [r"$\mathbf{q} = W^Q\mathbf{y}_d(t)$", r"$K = W^K Y_e$", r"$V = W^V Y_e$"],
    "ntm_addressing": [
        r"sharpened $\mathbf{w}_t$",
        "gate $g_t$\n" r"with $\mathbf{w}_{t-1}$",
    ],
    "pointer_step": [r"$s_t$", "output: input 4\n(next step reads it)"],
    "soft_vs_hard": [
        "soft: a weighted sum",
        "hard: one sampled position",
        r"draw $j_t \sim \alpha_t$",
        r"$\mathbf{c}_t = \mathbf{h}_{j_t} = \mathbf{h}_3$",
    ],
    "soft_dictionary": [
        r"$\mathbf{q}$",
        r"$\mathbf{k}_2$",
        r"$\alpha_2 \mathbf{v}_2$",
        "softmax",
        r"$\mathbf{c} = \sum_t \alpha_t \mathbf{v}_t$",
    ],
    "ntm_read_write": [
        r"read $\mathbf{r}_t$",
        r"erase $\mathbf{e}_t$",
        r"add $\mathbf{a}_t$",
        r"$\mathbf{M}_{t-1}$",
    ],
    "self_attention": [
        "self-attention: row 2",
        r"$\mathbf{q}_2$",
        r"$\alpha_{23}$",
        r"$\mathrm{head}_2$",
        r"$[\mathrm{head}_1, \mathrm{head}_2]\, W^O$",
    ],
    "key_value_cache": [
        "without a cache",
        "with a key/value cache",
        "cache: kept from earlier steps",
        r"$\mathbf{q}_{t}$",
        r"$\mathbf{k}_{t-1}$",
    ],
}


def texts(fig):
    return {t.get_text() for ax in fig.axes for t in ax.texts}


@pytest.mark.parametrize("name", sorted(DIAGRAMS))
def test_each_diagram_draws_its_labels_in_the_role_colours(name):
    fig = getattr(schematics, name)()
    assert set(DIAGRAMS[name]) <= texts(fig)
    boxes = [
        p for ax in fig.axes for p in ax.patches if isinstance(p, FancyBboxPatch)
    ]
    assert boxes
    for box in boxes:  # every box is drawn in the colour of the role it was given
        assert box.get_gid() in schematics.ROLE_COLOURS
        assert box.get_edgecolor() == pytest.approx(
            to_rgba(schematics.ROLE_COLOURS[box.get_gid()])
        )
    legend_names = {
        t.get_text()
        for ax in fig.axes
        if ax.get_legend()
        for t in ax.get_legend().get_texts()
    }
    assert len(legend_names) >= 2
    matplotlib.pyplot.close(fig)


@pytest.mark.parametrize("name", sorted(DIAGRAMS))
def test_each_diagram_is_readable_in_the_column(name):
    fig = getattr(schematics, name)()
    assert rendered_points(fig) >= SMALLEST_PT
    matplotlib.pyplot.close(fig)


def test_the_readability_check_finds_small_text():
    fig = schematics.soft_dictionary()
    fig.axes[0].texts[0].set_fontsize(6)
    assert rendered_points(fig) < SMALLEST_PT
    fig.set_size_inches(28, 14)  # shown at about a third of its size
    fig.axes[0].texts[0].set_fontsize(10)
    assert rendered_points(fig) < SMALLEST_PT
    matplotlib.pyplot.close(fig)


def test_every_diagram_of_the_module_is_tested():
    public = {
        n
        for n in dir(schematics)
        if not n.startswith("_")
        and callable(getattr(schematics, n))
        and getattr(getattr(schematics, n), "__module__", "") == schematics.__name__
    }
    assert public == set(DIAGRAMS)


def test_ntm_diagram_shows_the_focus_moving_from_the_previous_row_by_the_shift():
    fig = schematics.ntm_addressing(rows=8)
    bars = [
        p for p in fig.axes[0].patches if p.get_gid() is None and p.get_height() > 0
    ]
    heights = [p.get_height() for p in bars]
    stages = [heights[i : i + 8] for i in range(0, 32, 8)]
    content, gated, shifted, sharpened = stages
    assert content[1] == pytest.approx(content[5])  # two rows match the key equally
    assert (
        max(range(8), key=gated.__getitem__) == 4
    )  # the gate keeps the previous focus on row 4
    assert (
        max(range(8), key=sharpened.__getitem__) == 5
    )  # shifted by one row and sharpened
    assert sharpened[5] > shifted[5]
    matplotlib.pyplot.close(fig)


def test_ntm_read_write_shows_the_weighted_sum_and_erase_then_add():
    fig = schematics.ntm_read_write()
    numbers = sorted(t.get_text() for t in fig.axes[0].texts if t.get_text().replace(".", "").isdigit())
    memory = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.5, 0.5, 0.0]]
    w, erase, add = [0.0, 0.5, 0.5, 0.0], [1.0, 1.0, 0.0], [0.6, 0.0, 0.2]
    read = [sum(w[i] * memory[i][j] for i in range(4)) for j in range(3)]
    written = [[memory[i][j] * (1 - w[i] * erase[j]) + w[i] * add[j] for j in range(3)] for i in range(4)]
    cells = [v for row in memory for v in row]
    shown = [*cells, *cells, *read, *erase, *add, *(v for row in written for v in row)]
    assert numbers == sorted(f"{v:.1f}" for v in shown)
    matplotlib.pyplot.close(fig)


def test_simple_attention_can_be_drawn_alone_before_its_parameterized_form():
    both = schematics.simple_vs_parameterized()
    alone = schematics.simple_vs_parameterized(parameterized=False)
    assert [ax.get_title() for ax in both.axes] == ["simple attention", "parameterized attention"]
    assert [ax.get_title() for ax in alone.axes] == ["simple attention"]
    assert texts(alone) == {t.get_text() for t in both.axes[0].texts}
    assert not any("W^Q" in t for t in texts(alone))
    assert rendered_points(alone) >= SMALLEST_PT
    matplotlib.pyplot.close(both)
    matplotlib.pyplot.close(alone)


def test_self_attention_weighs_every_position_of_one_sequence_for_the_highlighted_query():
    fig = schematics.self_attention()
    bars = weight_bars(fig)
    assert len(bars) == 4 and sum(bars) / 1.4 == pytest.approx(1.0)  # bar height 1.4 is weight 1
    queries = [p for p in fig.axes[0].patches if isinstance(p, FancyBboxPatch) and p.get_gid() == "query"]
    assert len(queries) == 3  # q_2 on the left, Q_1 and Q_2 of the two heads on the right
    assert {rf"$\alpha_{{2{j}}}$" for j in range(1, 5)} <= texts(fig)
    matplotlib.pyplot.close(fig)


def weight_bars(fig):
    """Heights of the purple weight bars, left to right (bottom to top where stacked)."""
    purple = to_rgba(schematics.ROLE_COLOURS["weight"])
    return [
        p.get_height()
        for p in fig.axes[0].patches
        if not isinstance(p, FancyBboxPatch)
        and p.get_facecolor() == pytest.approx(purple)
    ]


def test_soft_dictionary_weights_sum_to_one_and_the_score_label_is_a_parameter():
    fig = schematics.soft_dictionary(score="score$(q, k_t)$")
    bars = weight_bars(fig)
    assert len(bars) == 4 and sum(bars) / 0.8 == pytest.approx(
        1.0
    )  # bar height 0.8 is weight 1
    assert "score$(q, k_t)$" in texts(fig)
    matplotlib.pyplot.close(fig)


def test_pointer_step_masks_the_inputs_chosen_before():
    fig = schematics.pointer_step(visited=(0, 2))
    bars = weight_bars(fig)
    assert (
        bars[0] == 0 and bars[2] == 0 and sum(bars) / 1.6 == pytest.approx(1.0)
    )  # renormalised
    assert max(range(5), key=bars.__getitem__) == 3
    assert sum(t.get_text() == "masked" for t in fig.axes[0].texts) == 2
    assert "chosen before (masked)" in {
        t.get_text() for t in fig.axes[0].get_legend().get_texts()
    }
    matplotlib.pyplot.close(fig)
    with pytest.raises(
        ValueError, match="chosen input 3 cannot be among the visited"
    ):
        schematics.pointer_step(visited=(3,))


def test_soft_vs_hard_draws_the_same_weights_twice_and_marks_the_drawn_position():
    fig = schematics.soft_vs_hard(n_source=5, chosen=1)
    bars = weight_bars(fig)
    assert len(bars) == 10 and bars[:5] == pytest.approx(bars[5:])
    assert sum(bars[:5]) / 3.0 == pytest.approx(1.0)  # bar height 3 is weight 1
    assert r"$\mathbf{c}_t = \mathbf{h}_{j_t} = \mathbf{h}_2$" in texts(fig)
    matplotlib.pyplot.close(fig)
    with pytest.raises(ValueError, match="chosen must be a position 0 .. 4"):
        schematics.soft_vs_hard(n_source=5, chosen=5)


def test_luong_step_draws_a_global_step_without_a_window():
    local, whole = schematics.luong_step(), schematics.luong_step(half_width=None)
    assert r"window $[p_t - D,\ p_t + D]$" in texts(local)
    assert "softmax over every source position" in texts(whole)
    assert not any("window" in t for t in texts(whole))
    # a bar of attention weight over every encoder state of the global step, over 3 of the local one
    colour = to_rgba(schematics.ROLE_COLOURS["weight"])
    bars = [[p for p in fig.axes[0].patches if p.get_facecolor() == colour] for fig in (local, whole)]
    assert len(bars[0]) == 3 and len(bars[1]) == 7
    matplotlib.pyplot.close(local)
    matplotlib.pyplot.close(whole)
