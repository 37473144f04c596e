"""The figures of attnlab.plot: the heat map's weights, colour bar and tick labels, and every figure's text
readable in the book's column (drawn by each figure function, and asked of every figure a notebook draws)."""

import ast
import inspect

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from attnlab import plot  # noqa: E402
from attnlab.plot import COLUMN_INCHES, SMALLEST_PT, heatmap, rendered_points  # noqa: E402
from attnlab.selfattention import sinusoidal_positions  # noqa: E402
from tests.notebook_files import NOTEBOOKS, read  # noqa: E402


def test_heatmap_draws_the_weights_with_a_colour_bar():
    weights = torch.softmax(torch.randn(3, 5, generator=torch.Generator().manual_seed(0)), dim=-1)
    ax = heatmap(weights, x_labels=list("abcde"), y_labels=list("xyz"))
    assert np.allclose(ax.images[0].get_array(), weights.numpy())
    assert [t.get_text() for t in ax.get_xticklabels()] == list("abcde")
    assert ax.figure.axes[-1].get_ylabel() == "attention weight"  # the colour bar says what colour means
    plt.close(ax.figure)
    with pytest.raises(ValueError, match=r"shape \(Tq, Tk\), got \(5,\)"):
        heatmap(np.ones(5))


def test_heatmap_turns_its_labels_upright_only_where_they_fit():
    short = heatmap(np.eye(4), x_labels=["a", "b", "c", "d"])
    assert {t.get_rotation() for t in short.get_xticklabels()} == {0}
    # eight long words under a narrow axis would collide upright
    _, ax = plt.subplots(1, 3, figsize=(7.2, 3))
    words = ["cats", "because", "old", "dogs", "sleep", "whenever", "tired", "mice"]
    long = heatmap(np.eye(8), x_labels=words, ax=ax[0])
    assert {t.get_rotation() for t in long.get_xticklabels()} == {90}
    plt.close("all")


# Each figure function with the data the chapters give it (their shapes, their labels), drawn on its own figure.
def _weights(rows: int, columns: int, seed: int = 0) -> torch.Tensor:
    return torch.softmax(3 * torch.randn(rows, columns, generator=torch.Generator().manual_seed(seed)), dim=-1)


def _seeds(n: int) -> np.ndarray:
    return 1 - np.exp(-np.outer(np.linspace(1, 2, 5), np.linspace(0, 3, n)))


SENTENCE = "big red dogs see cats because old kings love small birds while the young".split()
TWENTY_FOUR = (SENTENCE * 2)[:24]
POINTS = np.random.default_rng(0).random((50, 2))
VALUES = np.random.default_rng(1).random(10)

FIGURES = {
    "heatmap": {
        "padding mask, 4 x 7 (chapter 2)": lambda: heatmap(
            _weights(4, 7), y_labels=[f"length {n}" for n in (7, 4, 6, 2)], xlabel="key position",
            ylabel="sequence", title="attention weights (x: masked)"),
        "14 words both ways (chapter 7)": lambda: heatmap(
            _weights(14, 14), x_labels=SENTENCE, y_labels=SENTENCE[::-1], xlabel="source word", ylabel="target word"),
        "24-word alignment (chapter 3)": lambda: heatmap(
            _weights(24, 24), x_labels=TWENTY_FOUR, y_labels=TWENTY_FOUR, cbar_label="aligned (1) or not (0)"),
        "36 x 36 without labels (chapter 5)": lambda: heatmap(_weights(36, 36), title="local-m, D = 5"),
    },
    "learning_curve": {
        "two runs, log scale": lambda: plot.learning_curve(
            {name: (range(1, 3001), np.exp(-np.linspace(0, k, 3000))) for k, name in ((2, "simple"), (3, "parameterized"))},
            ylabel="cross-entropy per word (your run)", logy=True),
    },
    "seed_band": {
        "12 evaluations": lambda: plot.seed_band(
            [250 * (i + 1) for i in range(12)], _seeds(12), _seeds(12)[0], label="greedy decoding"),
        "length buckets": lambda: plot.seed_band(
            ["5-10", "11-20", "21-30", "31-40"], _seeds(4), _seeds(4)[2], label="local-m, D = 5"),
    },
    "weighting_panels": {
        "four key strengths (chapter 10)": lambda: plot.weighting_panels(
            {f"β = {beta:g}": _weights(1, 16, beta)[0] for beta in (0, 2, 10, 50)}),
        "five addressing stages (chapter 10)": lambda: plot.weighting_panels(
            {name: _weights(1, 16, k)[0] for k, name in enumerate(
                ["previous w (t-1)", "1. content w^c", "2. gated w^g", "3. shifted", "4. sharpened w (t)"])}),
        "five in one row, asked for": lambda: plot.weighting_panels(
            {f"g = {g:g}": _weights(1, 16, k)[0] for k, g in enumerate((0, 0.25, 0.5, 0.75, 1))}, ncols=5),
    },
    "sequence_images": {
        "copy targets and outputs, 20 and 50 steps (chapter 10)": lambda: plot.sequence_images(
            {f"{kind}, length {n}": torch.rand(n, 8) for n in (20, 50) for kind in ("target", "output")},
            ylabel="bit", xlabel="output step", cbar_label="bit value / P(bit = 1)", height=1.3),
        "write and read weightings side by side (chapter 10)": lambda: plot.sequence_images(
            {name: _weights(41, 17) for name in ("write weighting", "read weighting")},
            ylabel="memory row (from row 0)", cbar_label="weight", side_by_side=True, height=3.5, y_start=-8),
        "four side by side": lambda: plot.sequence_images(
            {f"head {h}": _weights(41, 17, h) for h in range(4)}, side_by_side=True),
    },
    "clock_hands": {
        "three pairs, six positions (chapter 9)": lambda: plot.clock_hands(
            sinusoidal_positions(6, 128), pairs=[0, 8, 16], positions=range(6)),
    },
    "tours": {
        "10 cities, two tours (chapter 12)": lambda: plot.tours(
            POINTS[:10], {"optimal": list(range(10)), "pointer net, greedy": [0, 2, 1, 3, 4, 5, 6, 7, 9, 8]},
            title="test instance 123: greedy +12.3%"),
    },
    "held_karp_step": {
        "S = {1, 2, 3, 4}, j = 3 (chapter 12)": lambda: plot.held_karp_step(POINTS[:6], [1, 2, 3, 4], 3),
        "five predecessors": lambda: plot.held_karp_step(POINTS[:8], [1, 2, 3, 4, 5, 6], 6),
    },
    "hulls": {
        "50 points (chapter 11)": lambda: plot.hulls(
            POINTS, {"true hull": [0, 1, 2, 3, 4, 5], "predicted": [0, 2, 1, 3, 4]}, title="n = 50"),
    },
    "pointer_distributions": {
        "sorting 10 values (chapter 11)": lambda: plot.pointer_distributions(
            _weights(10, 10), chosen=np.argsort(VALUES), x_labels=[f"{v:.2f}" for v in VALUES],
            xlabel="input (its value)"),
        "50 inputs": lambda: plot.pointer_distributions(_weights(20, 50), chosen=list(range(20))),
    },
}
CASES = [(function, case) for function, cases in FIGURES.items() for case in cases]


def figure_of(drawn) -> plt.Figure:
    return drawn if isinstance(drawn, plt.Figure) else drawn.figure


@pytest.mark.parametrize(("function", "case"), CASES)
def test_every_figure_function_is_readable_in_the_column(function, case):
    fig = figure_of(FIGURES[function][case]())
    assert fig.get_figwidth() <= COLUMN_INCHES + 1e-9, f"{function} draws {fig.get_figwidth():.2f} inches wide"
    assert rendered_points(fig) >= SMALLEST_PT
    plt.close(fig)


def test_every_figure_function_of_the_module_is_drawn():
    public = {
        name
        for name, value in vars(plot).items()
        if not name.startswith("_") and inspect.isfunction(value) and value.__module__ == plot.__name__
    }
    assert public - {"rendered_points"} == set(FIGURES)


def test_the_held_karp_step_marks_the_smallest_way_into_j():
    from attnlab.tasks import shortest_path

    subset, end = [1, 2, 4, 5, 7], 4
    fig = plot.held_karp_step(POINTS[:8], subset, end)
    titles = [ax.get_title() for ax in fig.axes]
    assert [t.splitlines()[0] for t in titles] == [f"k = {k}" for k in (1, 2, 5, 7)]
    totals = [float(t.splitlines()[1].split(" = ")[1]) for t in titles]
    marked = [i for i, t in enumerate(titles) if "minimum" in t]
    assert marked == [int(np.argmin(totals))]
    assert totals[marked[0]] == pytest.approx(shortest_path(POINTS[:8], subset, end)[1], abs=0.006)
    plt.close(fig)
    with pytest.raises(ValueError, match="at least one other city"):
        plot.held_karp_step(POINTS[:8], [3], 3)


def test_each_clock_hand_points_to_its_pair_of_features():
    table = torch.tensor([[0.0, 1.0, 0.6, 0.8], [1.0, 0.0, -0.8, 0.6], [0.0, -1.0, 1.0, 0.0]])
    fig = plot.clock_hands(table, pairs=[0, 1], positions=[0, 2])
    for (row, column), ax in np.ndenumerate(np.array(fig.axes).reshape(2, 2)):
        i, t = (0, 1)[row], (0, 2)[column]
        hand = ax.lines[2].get_xydata()  # circle, the first position's hand, this hand
        assert hand[0] == pytest.approx([0, 0]) and hand[1] == pytest.approx(table[t, [2 * i + 1, 2 * i]].tolist())
        assert ax.lines[1].get_xydata()[1] == pytest.approx(table[0, [2 * i + 1, 2 * i]].tolist())
    assert [ax.get_title() for ax in fig.axes[:2]] == ["t = 0", "t = 2"]
    plt.close(fig)


@pytest.mark.parametrize(("pairs", "positions", "message"), [
    ([2], [0], "pair 2 needs features 4 and 5"),
    ([0], [3], "position 3 is outside"),
])
def test_clock_hands_name_what_the_table_lacks(pairs, positions, message):
    with pytest.raises(ValueError, match=message):
        plot.clock_hands(torch.zeros(3, 4), pairs, positions)


def test_the_readability_measure_finds_small_text():
    ax = heatmap(_weights(4, 7), y_labels=["a", "b", "c", "d"])
    assert rendered_points(ax.figure) >= SMALLEST_PT
    ax.get_yticklabels()[2].set_fontsize(7)  # one tick label too small
    assert rendered_points(ax.figure) < SMALLEST_PT
    plt.close(ax.figure)
    # default 10-point text on a 13-inch row of three panels (10.5 inches once cut to its text) shows at 7 points
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for ax in axes:
        plot.learning_curve({"run": ([0, 1, 2], [3.0, 2.0, 1.0])}, ax=ax)
    assert rendered_points(fig) == pytest.approx(10 * 100 / 96 * 720 / 100 / (fig.get_tightbbox().width + 0.2))
    assert rendered_points(fig) < 7.5
    plt.close(fig)
    # a legend at 7 points in a narrow figure; a colour bar's label at 8
    ax = plot.seed_band([1, 2, 3], _seeds(3), label="x")
    ax.legend(fontsize=7)
    assert rendered_points(ax.figure) < SMALLEST_PT
    plt.close(ax.figure)
    ax = heatmap(_weights(4, 7))
    ax.figure.axes[-1].yaxis.label.set_fontsize(8)
    assert rendered_points(ax.figure) < SMALLEST_PT
    plt.close(ax.figure)
    # text left out of the figure does not count: a hidden title
    ax = heatmap(_weights(4, 7), title="tiny")
    ax.title.set_fontsize(5)
    ax.title.set_visible(False)
    assert rendered_points(ax.figure) >= SMALLEST_PT
    plt.close(ax.figure)


def test_many_panels_wrap_into_rows_within_the_column():
    fig = plot.sequence_images({f"head {h}": _weights(41, 17, h) for h in range(5)}, side_by_side=True)
    images = [ax for ax in fig.axes if ax.images and ax.get_title()]
    assert len(images) == 5 and len({round(ax.get_position().y0, 3) for ax in images}) == 3  # 2 + 2 + 1
    assert fig.get_figwidth() <= COLUMN_INCHES and fig.axes[-1].get_ylabel() == "value"  # the colour bar last
    plt.close(fig)
    fig = plot.weighting_panels({f"stage {k}": _weights(1, 16, k)[0] for k in range(5)})
    assert len(fig.axes) == 5 and len({round(ax.get_position().y0, 3) for ax in fig.axes}) == 2  # 3 + 2
    assert fig.get_figwidth() <= COLUMN_INCHES
    plt.close(fig)


# Every figure a notebook draws: at most the column's width, and no text asked for below 9 points. A wider
# figure is shrunk to the column and its text with it; its size must be written as numbers so that it can be read.
SMALL_NAMES = {"xx-small", "x-small", "small", "smaller"}


def _code(source: str) -> str:
    """A cell's code with its IPython lines (``%pip``, ``!ls``) replaced by ``pass``."""
    return "\n".join(
        line[: len(line) - len(line.lstrip())] + "pass" if line.lstrip().startswith(("%", "!")) else line
        for line in source.splitlines()
    )


def figure_problems(source: str) -> list[str]:
    """What in one cell's code draws a figure wider than the column or asks for text below 9 points."""
    problems = []
    for node in ast.walk(ast.parse(_code(source))):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        sizes = [kw.value for kw in node.keywords if kw.arg == "figsize"]
        if name == "set_size_inches" and node.args:
            sizes.append(node.args[0] if len(node.args) == 1 else ast.Tuple(elts=node.args[:2]))
        for size in sizes:
            try:
                width = float(ast.literal_eval(size)[0])
            except (ValueError, TypeError, IndexError, SyntaxError):
                problems.append(f"line {node.lineno}: a figure size not written as numbers: {ast.unparse(size)}")
                continue
            if width > COLUMN_INCHES:
                problems.append(f"line {node.lineno}: a figure {width:g} inches wide (the column: {COLUMN_INCHES:g})")
        for kw in node.keywords:
            if kw.arg in {"fontsize", "labelsize", "title_fontsize"} and isinstance(kw.value, ast.Constant):
                value = kw.value.value
                small = value in SMALL_NAMES if isinstance(value, str) else value < SMALLEST_PT
                if small:
                    problems.append(f"line {node.lineno}: {kw.arg}={value!r}, below {SMALLEST_PT:g} points")
    return problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_notebook_figure_fits_the_column_with_readable_text(path):
    found = []
    for index, cell in enumerate(read(path).cells):
        if cell.cell_type == "code":
            figure = cell.metadata.get("mystnb", {}).get("figure", {}).get("name", "")
            found += [f"cell {index} {figure}: {problem}" for problem in figure_problems(cell.source)]
    assert not found, "\n".join(found)


def test_the_notebook_check_finds_wide_figures_and_small_text():
    assert figure_problems("fig, ax = plt.subplots(figsize=(7.2, 3))\nax.legend(fontsize=9)") == []
    assert figure_problems("%matplotlib inline\nfig = plt.figure()") == []
    wide = figure_problems("fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))")
    assert wide == ["line 1: a figure 13 inches wide (the column: 7.2)"]
    assert len(figure_problems("fig.set_size_inches(9, 4)")) == 1
    assert len(figure_problems("fig, ax = plt.subplots(figsize=(width, 3))")) == 1  # cannot be read
    small = figure_problems('ax.legend(fontsize=7)\nax.text(0, 0, "a", fontsize="small")\nax.tick_params(labelsize=8)')
    assert [p.split(":")[0] for p in small] == ["line 1", "line 2", "line 3"]
