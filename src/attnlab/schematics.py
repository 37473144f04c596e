"""Schematic diagrams of the course's mechanisms, drawn with matplotlib.

One colour per role in every diagram of the book (Okabe-Ito colours, safe for
colour-blind readers): queries blue, keys orange, values and contexts green,
attention weights purple, memory light blue, outputs red, inputs yellow; recurrent
states are grey. Each function returns a figure; the notebooks caption it.
"""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch, Patch, Rectangle

from attnlab import ntm

ROLE_COLOURS = {
    "query": "#0072B2",
    "key": "#E69F00",
    "value": "#009E73",
    "weight": "#CC79A7",
    "memory": "#56B4E9",
    "output": "#D55E00",
    "state": "#7F7F7F",
    "input": "#F0E442",
}
ROLE_NAMES = {
    "query": "query",
    "key": "keys",
    "value": "values / context",
    "weight": "attention weights",
    "memory": "memory",
    "output": "output",
    "state": "recurrent state",
    "input": "inputs",
}
ARROW = "#333333"


def _canvas(
    width: float, height: float, size: tuple[float, float]
) -> tuple[Figure, Axes]:
    """A figure with one axis in data units ``[0, width] x [0, height]``, no ticks or
    frame."""
    fig, ax = plt.subplots(figsize=size)
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig, ax


def _box(
    ax: Axes,
    x: float,
    y: float,
    text: str,
    role: str,
    *,
    w: float = 1.0,
    h: float = 0.6,
    size: int = 10,
) -> FancyBboxPatch:
    """A rounded box centred at ``(x, y)`` in the colour of ``role``, with ``text``
    inside."""
    colour = ROLE_COLOURS[role]
    patch = FancyBboxPatch(
        (x - w / 2, y - h / 2),
        w,
        h,
        boxstyle="round,pad=0,rounding_size=0.1",
        facecolor=to_rgba(colour, 0.22),
        edgecolor=colour,
        linewidth=1.6,
    )
    patch.set_gid(role)
    ax.add_patch(patch)
    ax.text(x, y, text, ha="center", va="center", fontsize=size)
    return patch


def _arrow(
    ax: Axes,
    start: tuple[float, float],
    end: tuple[float, float],
    *,
    dashed: bool = False,
    bend: float = 0.0,
    colour: str = ARROW,
) -> None:
    """An arrow from ``start`` to ``end`` (data units); ``bend`` curves it."""
    ax.annotate(
        "",
        xy=end,
        xytext=start,
        arrowprops={
            "arrowstyle": "-|>",
            "color": colour,
            "lw": 1.3,
            "shrinkA": 0,
            "shrinkB": 0,
            "linestyle": "--" if dashed else "-",
            "connectionstyle": f"arc3,rad={bend}",
        },
    )


def _note(
    ax: Axes,
    x: float,
    y: float,
    text: str,
    *,
    size: int = 9,
    colour: str = ARROW,
    **kwargs,
) -> None:
    ax.text(x, y, text, fontsize=size, color=colour, **kwargs)


def _legend(
    ax: Axes,
    roles: list[str],
    *,
    x: float = 0.5,
    columns: int | None = None,
    **names: str,
) -> None:
    """A legend below ``ax`` with one patch per role, in ``columns`` columns (one
    row of up to five by default); ``names`` renames a role for this diagram."""
    handles = [
        Patch(
            facecolor=to_rgba(ROLE_COLOURS[r], 0.22),
            edgecolor=ROLE_COLOURS[r],
            label=names.get(r, ROLE_NAMES[r]),
        )
        for r in roles
    ]
    if columns is None:
        columns = len(roles) if len(roles) <= 5 else (len(roles) + 1) // 2
    ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(x, 0.02),
        ncol=columns,
        fontsize=9,
        frameon=False,
    )


def _bars(
    ax: Axes,
    x: float,
    y: float,
    weights: list[float],
    *,
    width: float,
    height: float,
    across: bool = False,
) -> None:
    """Small bars of ``weights`` (each in [0, 1]) standing on ``(x, y)``, spread over
    ``width``, a weight of 1 ``height`` tall. ``across=True`` lays them on their
    side, one per memory row: hanging from ``y`` down over ``height``, first row at
    the top, each growing leftwards from ``x`` (a weight of 1 ``width`` long)."""
    step = (height if across else width) / len(weights)
    colour = ROLE_COLOURS["weight"]
    for i, value in enumerate(weights):
        if across:
            corner, w, h = (
                (x - width * value, y - (i + 0.8) * step),
                width * value,
                0.6 * step,
            )
        else:
            corner, w, h = (x + (i + 0.1) * step, y), 0.8 * step, height * value
        ax.add_patch(Rectangle(corner, w, h, facecolor=colour, edgecolor="none"))
    if across:
        ax.plot([x, x], [y - height, y], color="#555555", lw=0.8)
    else:
        ax.plot([x, x + width], [y, y], color="#555555", lw=0.8)


def soft_dictionary(
    n_keys: int = 4, *, score: str = r"$\mathbf{q}^\top \mathbf{k}_t$"
) -> Figure:
    """The soft dictionary lookup: the query is scored against every key, the softmax
    of the scores weights the values, their weighted sum is the context.

    ``score`` is the label of the score boxes (the scoring chapter passes a generic
    ``score(q, k_t)``).
    """
    fig, ax = _canvas(11.0, 5.6, (7.0, 3.6))
    ys = [4.6 - 1.15 * t for t in range(n_keys)]
    weights = [0.1, 0.6, 0.2, 0.1][:n_keys]
    _box(ax, 0.8, (ys[0] + ys[-1]) / 2, r"$\mathbf{q}$", "query", w=0.8)
    for t, (y, a) in enumerate(zip(ys, weights, strict=True), start=1):
        _arrow(
            ax, (1.2, (ys[0] + ys[-1]) / 2), (2.75, y), colour=ROLE_COLOURS["query"]
        )
        _box(ax, 3.3, y, rf"$\mathbf{{k}}_{t}$", "key", w=0.9)
        _arrow(ax, (3.75, y), (4.35, y))
        _box(ax, 5.0, y, score, "key", w=1.2, size=9)
        _arrow(ax, (5.6, y), (6.15, y))
        _bars(ax, 6.2, y - 0.35, [a], width=0.7, height=0.8)
        _note(ax, 6.95, y - 0.1, rf"$\alpha_{t}$", size=9)
        _box(ax, 8.0, y, rf"$\alpha_{t} \mathbf{{v}}_{t}$", "value", w=1.0)
        _arrow(
            ax, (8.5, y), (9.45, (ys[0] + ys[-1]) / 2), colour=ROLE_COLOURS["value"]
        )
    _box(ax, 10.0, (ys[0] + ys[-1]) / 2, r"$\mathbf{c}$", "value", w=0.8)
    _note(ax, 5.0, 5.0, "scores", ha="center", va="bottom", size=9)
    _note(ax, 6.55, 5.0, "softmax", ha="center", va="bottom", size=9)
    _note(ax, 8.0, 5.0, "weighted\nvalues", ha="center", va="bottom", size=9)
    _note(
        ax,
        10.0,
        (ys[0] + ys[-1]) / 2 - 0.6,
        r"$\mathbf{c} = \sum_t \alpha_t \mathbf{v}_t$",
        ha="center",
        va="top",
        size=9,
    )
    _legend(ax, ["query", "key", "weight", "value"], key="keys and scores")
    fig.tight_layout()
    return fig


def encoder_decoder(n_source: int = 4, n_target: int = 3) -> Figure:
    """The plain encoder-decoder: every source word passes through one context vector
    c."""
    width = 2.0 + 1.4 * (n_source + n_target) + 1.2
    fig, ax = _canvas(width, 4.6, (7.0, 7.0 * 4.6 / width))
    xs = [0.9 + 1.4 * j for j in range(n_source)]
    for j, x in enumerate(xs, start=1):
        _box(ax, x, 0.6, f"$x_{j}$", "input", w=0.8, h=0.5)
        _arrow(ax, (x, 0.85), (x, 1.7))
        _box(ax, x, 2.0, rf"$\mathbf{{h}}_{j}$", "state", w=0.9)
        if j > 1:
            _arrow(ax, (x - 0.95, 2.0), (x - 0.45, 2.0))
    cx = xs[-1] + 1.6
    _box(ax, cx, 2.0, r"$\mathbf{c}$", "value", w=0.8)
    _arrow(ax, (xs[-1] + 0.45, 2.0), (cx - 0.4, 2.0))
    ds = [cx + 1.5 + 1.4 * t for t in range(n_target)]
    for t, x in enumerate(ds, start=1):
        previous = r"\langle bos \rangle" if t == 1 else f"y_{t - 1}"
        _box(ax, x, 0.6, f"${previous}$", "input", w=0.9, h=0.5)
        _arrow(ax, (x, 0.85), (x, 1.7))
        _box(ax, x, 2.0, rf"$\mathbf{{s}}_{t}$", "state", w=0.9)
        _arrow(ax, (x, 2.3), (x, 3.25))
        _box(ax, x, 3.5, f"$y_{t}$", "output", w=0.8, h=0.5)
        _arrow(ax, (cx + 0.2, 2.3), (x - 0.2, 2.3), bend=-0.25)
        if t > 1:
            _arrow(ax, (x - 0.95, 2.0), (x - 0.45, 2.0))
    _arrow(ax, (cx + 0.4, 2.0), (ds[0] - 0.45, 2.0))
    _note(ax, (xs[0] + xs[-1]) / 2, 4.25, "encoder", ha="center", size=10)
    _note(ax, (ds[0] + ds[-1]) / 2, 4.25, "decoder", ha="center", size=10)
    _note(
        ax,
        cx,
        1.15,
        "one vector\nfor the\nwhole source",
        ha="center",
        va="top",
        size=9,
    )
    _legend(
        ax,
        ["input", "state", "value", "output"],
        input="words read",
        value="context",
    )
    fig.tight_layout()
    return fig


def bahdanau_step(n_source: int = 5) -> Figure:
    """One step of Bahdanau's decoder: s_{t-1} scores every h_j, softmax, context
    c_t, then the GRU gives s_t."""
    fig, ax = _canvas(11.0, 5.6, (7.2, 3.7))
    xs = [0.8 + 1.05 * j for j in range(n_source)]
    weights = [0.05, 0.1, 0.6, 0.2, 0.05][:n_source]
    for j, (x, a) in enumerate(zip(xs, weights, strict=True), start=1):
        _box(ax, x, 0.6, rf"$\mathbf{{h}}_{j}$", "key", w=0.8)
        _arrow(ax, (x, 0.9), (x, 1.55))
        _box(ax, x, 1.85, f"$e_{{t{j}}}$", "weight", w=0.8, h=0.55, size=9)
        _bars(ax, x - 0.4, 2.55, [a], width=0.8, height=1.2)
        _arrow(ax, (x, 2.6 + 1.2 * a), (3.0 + 0.3 * (x - 3.0) / 3, 4.3))
    _note(
        ax, xs[-1] + 0.55, 2.3, "scores (the alignment model)", va="center", size=9
    )
    _note(
        ax,
        xs[-1] + 0.55,
        3.0,
        r"softmax: weights $\alpha_{tj}$",
        va="center",
        size=9,
    )
    query_x = xs[-1] + 3.9
    _box(ax, query_x, 0.6, r"$\mathbf{s}_{t-1}$", "query", w=1.0)
    _arrow(
        ax,
        (query_x - 0.5, 0.75),
        (xs[-1] + 0.4, 1.85),
        bend=0.1,
        colour=ROLE_COLOURS["query"],
    )
    _box(
        ax,
        3.0,
        4.6,
        r"$\mathbf{c}_t = \sum_j \alpha_{tj}\,\mathbf{h}_j$",
        "value",
        w=3.2,
    )
    _box(ax, query_x, 3.0, "GRU", "state", w=1.0)
    _arrow(ax, (query_x, 0.9), (query_x, 2.7))
    _arrow(ax, (4.6, 4.6), (query_x - 0.5, 3.2), bend=-0.15)
    _box(ax, query_x + 1.6, 2.0, r"$y_{t-1}$", "input", w=0.8, h=0.5)
    _arrow(ax, (query_x + 1.2, 2.2), (query_x + 0.5, 2.85))
    _box(ax, query_x, 4.6, r"$\mathbf{s}_t \to y_t$", "output", w=1.3)
    _arrow(ax, (query_x, 3.3), (query_x, 4.3))
    for number, (x, y) in enumerate(
        [
            (query_x - 1.6, 1.45),
            (xs[2] + 0.55, 2.45),
            (1.6, 4.1),
            (query_x + 0.3, 3.65),
        ],
        start=1,
    ):
        ax.text(
            x,
            y,
            str(number),
            fontsize=9,
            ha="center",
            va="center",
            color="white",
            bbox={
                "boxstyle": "circle,pad=0.2",
                "facecolor": ARROW,
                "edgecolor": "none",
            },
        )
    _legend(
        ax,
        ["query", "key", "weight", "value", "state", "input", "output"],
        key="keys = values (annotations)",
    )
    fig.tight_layout()
    return fig


def luong_step(
    n_source: int = 7, centre: int = 3, half_width: int | None = 1
) -> Figure:
    """Luong's step: the RNN first, then attention from s_t over every encoder state
    (global, ``half_width=None``) or over the window ``centre`` +- ``half_width``
    (local), then the attentional state."""
    fig, ax = _canvas(12.6, 6.0, (7.2, 3.4))
    xs = [0.8 + 0.95 * s for s in range(n_source)]
    if half_width is None:  # global: every position, weights falling off the centre
        lo, hi = xs[0] - 0.45, xs[-1] + 0.45
        raw = [0.45 ** abs(s - centre) for s in range(n_source)]
        weights = [w / sum(raw) for w in raw]
        _note(
            ax,
            (lo + hi) / 2,
            3.45,
            "softmax over every source position",
            ha="center",
            size=9,
        )
    else:
        lo, hi = xs[centre - half_width] - 0.45, xs[centre + half_width] + 0.45
        ax.add_patch(
            Rectangle(
                (lo, 0.15),
                hi - lo,
                3.2,
                facecolor=to_rgba(ROLE_COLOURS["weight"], 0.08),
                edgecolor=ROLE_COLOURS["weight"],
                linestyle="--",
                linewidth=1.0,
            )
        )
        _note(
            ax,
            (lo + hi) / 2,
            3.45,
            r"window $[p_t - D,\ p_t + D]$",
            ha="center",
            size=9,
        )
        weights = [0.0] * n_source
        weights[centre - half_width : centre + half_width + 1] = [0.25, 0.55, 0.2][
            : 2 * half_width + 1
        ]
    for s, (x, a) in enumerate(zip(xs, weights, strict=True), start=1):
        _box(ax, x, 0.6, rf"$\mathbf{{h}}_{s}$", "key", w=0.75)
        if a > 0:
            _arrow(ax, (x, 0.9), (x, 1.6))
            _bars(ax, x - 0.35, 1.7, [a], width=0.7, height=1.3)
    rnn_x = xs[-1] + 2.2
    _box(ax, rnn_x, 0.6, "RNN", "state", w=1.0)
    _box(
        ax,
        rnn_x + 2.4,
        0.6,
        r"$[\mathbf{E}' y_{t-1};\ \tilde{\mathbf{s}}_{t-1}]$",
        "input",
        w=2.1,
        h=0.55,
        size=9,
    )
    _arrow(ax, (rnn_x + 1.35, 0.6), (rnn_x + 0.5, 0.6))
    _box(ax, rnn_x, 2.1, r"$\mathbf{s}_t$", "query", w=0.9)
    _arrow(ax, (rnn_x, 0.9), (rnn_x, 1.8))
    _arrow(ax, (rnn_x - 0.45, 2.1), (hi + 0.1, 2.1), colour=ROLE_COLOURS["query"])
    _note(
        ax,
        (hi + rnn_x) / 2 - 0.3,
        2.25,
        r"score$(\mathbf{s}_t, \mathbf{h}_j)$",
        ha="center",
        size=9,
    )
    _box(ax, (lo + hi) / 2, 4.35, r"$\mathbf{c}_t$", "value", w=0.9)
    _arrow(ax, ((lo + hi) / 2, 3.3), ((lo + hi) / 2, 4.05))
    _box(
        ax,
        rnn_x,
        4.35,
        r"$\tilde{\mathbf{s}}_t = \tanh(\mathbf{W}_c[\mathbf{c}_t; \mathbf{s}_t])$",
        "state",
        w=3.4,
        size=9,
    )
    _arrow(ax, ((lo + hi) / 2 + 0.45, 4.35), (rnn_x - 1.7, 4.35))
    _arrow(ax, (rnn_x, 2.4), (rnn_x, 4.05))
    _box(ax, rnn_x, 5.5, r"$y_t$", "output", w=0.8, h=0.5)
    _arrow(ax, (rnn_x, 4.65), (rnn_x, 5.25))
    _arrow(ax, (rnn_x + 1.7, 4.35), (rnn_x + 2.4, 0.9), dashed=True, bend=-0.3)
    _note(ax, rnn_x + 2.45, 2.9, "input feeding:\nto the next step", size=9)
    _legend(
        ax,
        ["query", "key", "weight", "value", "state", "input", "output"],
        key="keys = values (encoder states)",
    )
    fig.tight_layout()
    return fig


def _simple_panel(ax: Axes) -> None:
    """Simple attention on ``ax``: the decoder state is the query, the encoder
    states are both keys and values."""
    _box(ax, 1.2, 0.6, r"$\mathbf{y}_d(t)$", "query", w=1.2)
    _box(ax, 4.4, 0.6, r"$Y_e$", "key", w=1.0)
    _box(
        ax,
        2.8,
        2.2,
        r"$\mathbf{a}(t) = \mathrm{softmax}(Y_e^\top \mathbf{y}_d(t))$",
        "weight",
        w=4.6,
        size=9,
    )
    _arrow(ax, (1.2, 0.9), (1.6, 1.9))
    _arrow(ax, (4.4, 0.9), (4.0, 1.9))
    _box(ax, 2.3, 3.9, r"$\mathbf{y}_a(t) = Y_e\, \mathbf{a}(t)$", "value", w=2.8)
    _arrow(ax, (2.3, 2.5), (2.3, 3.6))
    _arrow(ax, (4.8, 0.9), (3.7, 3.6), bend=0.35, colour=ROLE_COLOURS["value"])
    _note(ax, 4.3, 3.0, r"$Y_e$ again," + "\nas values", size=9)


def _parameterized_panel(ax: Axes) -> None:
    """Parameterized attention on ``ax``: queries, keys and values from three
    learned projections of the states."""
    _box(ax, 1.2, 0.6, r"$\mathbf{y}_d(t)$", "state", w=1.2)
    _box(ax, 4.3, 0.6, r"$Y_e$", "state", w=1.0)
    _box(ax, 1.05, 1.9, r"$\mathbf{q} = W^Q\mathbf{y}_d(t)$", "query", w=2.0, size=9)
    _box(ax, 3.2, 1.9, r"$K = W^K Y_e$", "key", w=1.6, size=9)
    _box(ax, 5.0, 1.9, r"$V = W^V Y_e$", "value", w=1.6, size=9)
    _arrow(ax, (1.2, 0.9), (1.2, 1.6))
    _arrow(ax, (4.1, 0.9), (3.5, 1.6))
    _arrow(ax, (4.5, 0.9), (4.9, 1.6))
    score = r"$\mathbf{a}(t) = \mathrm{softmax}(K^\top \mathbf{q})$"
    _box(ax, 2.2, 3.2, score, "weight", w=3.0, size=9)
    _arrow(ax, (1.1, 2.2), (1.5, 2.9))
    _arrow(ax, (3.3, 2.2), (2.9, 2.9))
    _box(ax, 4.2, 4.5, r"$\mathbf{y}_a(t) = V\mathbf{a}(t)$", "value", w=2.4, size=9)
    _arrow(ax, (2.4, 3.5), (3.4, 4.2))
    _arrow(ax, (5.0, 2.2), (4.9, 4.2))


def simple_vs_parameterized(*, parameterized: bool = True) -> Figure:
    """Left: simple attention, a(t) = softmax(Y_e^T y_d(t)); right: queries, keys and
    values from projections. ``parameterized=False`` draws simple attention alone."""
    panels = [(_simple_panel, "simple attention")]
    if parameterized:
        panels.append((_parameterized_panel, "parameterized attention"))
    fig, axes = plt.subplots(
        1, len(panels), figsize=(3.6 * len(panels), 3.4), squeeze=False
    )
    for ax, (draw, title) in zip(axes[0], panels, strict=True):
        ax.set_xlim(0, 6.0)
        ax.set_ylim(0, 5.2)
        ax.set_aspect("equal")
        ax.axis("off")
        ax.set_title(title, fontsize=11)
        draw(ax)
    if parameterized:
        roles = ["query", "key", "weight", "value", "state"]
        _legend(axes[0, 1], roles, x=-0.1, columns=3)
    else:
        _legend(axes[0, 0], ["query", "key", "weight", "value"], columns=2)
    fig.tight_layout()
    return fig


def self_attention() -> Figure:
    """Left: one row of self-attention, position 2's query weighing the values of
    all four positions of its own sequence; right: two heads, each attending on its
    own slice of the projections, concatenated and mixed by ``W^O``."""
    fig, ax = _canvas(14.0, 7.0, (7.2, 3.6))
    _note(ax, 3.3, 6.75, "self-attention: row 2", ha="center", va="center", size=10)
    _note(ax, 3.3, 6.3, "queries, keys, values from one X", ha="center", size=9)
    xs = [0.9, 2.3, 3.7, 5.1]
    weights = [0.15, 0.2, 0.5, 0.15]
    for j, (x, a) in enumerate(zip(xs, weights, strict=True), start=1):
        _box(ax, x, 0.6, rf"$\mathbf{{x}}_{j}$", "input", w=0.9, h=0.5)
        _arrow(ax, (x, 0.85), (x, 1.25))
        # one position's three projections, framed together
        ax.add_patch(
            Rectangle(
                (x - 0.6, 1.25),
                1.2,
                2.3,
                facecolor="none",
                edgecolor="#999999",
                linestyle="--",
                lw=0.8,
            )
        )
        _box(ax, x, 1.65, rf"$\mathbf{{k}}_{j}$", "key", w=0.9, h=0.5)
        _box(ax, x, 2.4, rf"$\mathbf{{v}}_{j}$", "value", w=0.9, h=0.5)
        role = "query" if j == 2 else "state"
        _box(ax, x, 3.15, rf"$\mathbf{{q}}_{j}$", role, w=0.9, h=0.5)
        _bars(ax, x - 0.4, 3.75, [a], width=0.8, height=1.4)
        label = rf"$\alpha_{{2{j}}}$"
        _note(ax, x, 3.85 + 1.4 * a, label, ha="center", va="bottom", size=9)
    output = r"$\mathbf{o}_2 = \Sigma_j\, \alpha_{2j} \mathbf{v}_j$"
    _box(ax, 3.0, 5.75, output, "output", w=2.4, h=0.55, size=9)
    _arrow(ax, (3.0, 5.0), (3.0, 5.47))
    for y, name in [(1.65, "K"), (2.4, "V"), (3.15, "Q")]:
        _note(ax, 5.8, y, rf"$XW^{name}$", va="center", size=9)

    _note(ax, 10.6, 6.75, "two heads", ha="center", va="center", size=10)
    _note(ax, 10.6, 6.3, r"each on a $d/h$ slice", ha="center", size=9)
    _box(ax, 10.6, 0.6, r"$X$", "input", w=1.2, h=0.5)
    for j, centre in enumerate([9.0, 12.2], start=1):
        for dx, role, letter in [
            (-1.05, "query", "Q"),
            (0, "key", "K"),
            (1.05, "value", "V"),
        ]:
            _box(ax, centre + dx, 1.8, rf"${letter}_{j}$", role, w=0.8, h=0.5)
            _arrow(ax, (10.6 + 0.3 * dx, 0.85), (centre + dx, 1.55))
        scores = rf"\dfrac{{Q_{j} K_{j}^\top}}{{\sqrt{{d_k}}}}"
        softmax = rf"$\mathrm{{softmax}}\left({scores}\right)$"
        _box(ax, centre - 0.35, 3.15, softmax, "weight", w=2.2, h=1.0, size=9)
        _arrow(ax, (centre - 1.05, 2.05), (centre - 0.95, 2.65))
        _arrow(ax, (centre, 2.05), (centre - 0.1, 2.65))
        _box(ax, centre, 4.5, rf"$\mathrm{{head}}_{j}$", "value", w=1.3, h=0.5)
        _arrow(ax, (centre - 0.35, 3.65), (centre - 0.2, 4.25))
        _arrow(ax, (centre + 1.05, 2.05), (centre + 0.55, 4.25))
        _arrow(ax, (centre, 4.75), (10.6 + 0.4 * (centre - 10.6), 5.47))
    mixed = r"$[\mathrm{head}_1, \mathrm{head}_2]\, W^O$"
    _box(ax, 10.6, 5.75, mixed, "output", w=3.2, h=0.55, size=9)
    _legend(
        ax,
        ["input", "query", "key", "value", "weight", "output", "state"],
        columns=4,
        input="inputs X",
        value="values / head outputs",
        state="other rows' queries",
    )
    fig.tight_layout()
    return fig


GRID_CELL = (0.75, 0.6)  # width and height of a cell of _grid


def _grid(
    ax: Axes,
    x: float,
    top: float,
    values: torch.Tensor,
    role: str,
    *,
    cell: tuple[float, float] = GRID_CELL,
) -> None:
    """The matrix ``values (rows, columns)`` as cells in the colour of ``role``, each
    with its value to one decimal, row 0 at the top and its top-left corner at ``(x,
    top)``."""
    colour = ROLE_COLOURS[role]
    w, h = cell
    for i, j in itertools.product(range(values.shape[0]), range(values.shape[1])):
        value = float(values[i, j])
        ax.add_patch(
            Rectangle(
                (x + j * w, top - (i + 1) * h),
                w,
                h,
                facecolor=to_rgba(colour, 0.22),
                edgecolor=colour,
                linewidth=1.0,
            )
        )
        ax.text(
            x + (j + 0.5) * w,
            top - (i + 0.5) * h,
            f"{value:.1f}",
            ha="center",
            va="center",
            fontsize=9,
        )


def _weighted_memory(
    ax: Axes, x: float, top: float, memory: torch.Tensor, w: torch.Tensor
) -> None:
    """The memory ``(rows, columns)`` as a grid from ``(x, top)``, with the weighting
    ``w (rows,)`` as bars beside its rows."""
    rows_height = GRID_CELL[1] * len(w)
    _bars(ax, x - 0.15, top, w.tolist(), width=0.9, height=rows_height, across=True)
    _note(ax, x - 0.6, top + 0.1, r"$w_t(i)$", ha="center", va="bottom", size=9)
    _grid(ax, x, top, memory, "memory")


def ntm_read_write() -> Figure:
    """Reading and writing a small memory of 4 rows of width 3 with one weighting,
    every number computed by :func:`attnlab.ntm.read` and :func:`attnlab.ntm.write`.

    Left: the read vector is the weighted sum of the rows. Right: each row is erased
    in proportion to its weight, then receives the add vector in proportion to it.
    """
    memory = torch.tensor(
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.5, 0.5, 0.0]]
    )[None]
    w = torch.tensor([[0.0, 0.5, 0.5, 0.0]])
    erase = torch.tensor([[1.0, 1.0, 0.0]])
    add = torch.tensor([[0.6, 0.0, 0.2]])
    read_vector = ntm.read(memory, w)
    written = ntm.write(memory, w, erase, add)
    fig, ax = _canvas(16.6, 4.7, (7.2, 2.3))
    top, label = 3.7, 4.3
    # reading
    _weighted_memory(ax, 1.5, top, memory[0], w[0])
    _box(
        ax, 2.6, label, r"memory $\mathbf{M}_{t-1}$", "memory", w=2.3, h=0.6, size=9
    )
    _arrow(ax, (3.9, 2.5), (4.6, 2.5))
    _grid(ax, 4.7, 2.8, read_vector, "output")
    _box(ax, 5.8, 3.55, r"read $\mathbf{r}_t$", "output", w=1.5, h=0.6, size=9)
    _note(
        ax,
        5.8,
        2.0,
        r"$\sum_i w_t(i)\,\mathbf{M}_{t-1}(i)$",
        ha="center",
        va="top",
        size=9,
    )
    # writing
    _weighted_memory(ax, 9.0, top, memory[0], w[0])
    _box(ax, 10.1, label, r"$\mathbf{M}_{t-1}$", "memory", w=1.6, h=0.6, size=9)
    for y, vector, name in (
        (3.5, erase, r"erase $\mathbf{e}_t$"),
        (2.2, add, r"add $\mathbf{a}_t$"),
    ):
        _grid(ax, 11.6, y, vector, "input", cell=(0.65, 0.5))
        _note(ax, 12.575, y + 0.05, name, ha="center", va="bottom", size=9)
    _arrow(ax, (11.4, 1.2), (13.8, 1.2))
    _box(ax, 15.1, label, r"$\mathbf{M}_t$", "memory", w=1.3, h=0.6, size=9)
    _grid(ax, 14.0, top, written[0], "memory")
    _legend(
        ax,
        ["memory", "weight", "output", "input"],
        weight="weighting over rows",
        output="read vector",
        input="erase and add vectors",
    )
    fig.tight_layout()
    return fig


def ntm_addressing(rows: int = 8) -> Figure:
    """The NTM's addressing pipeline on a small example, every weighting computed by
    :mod:`attnlab.ntm`.

    Content (key against memory, strength beta) -> interpolation with the previous
    weighting (gate g) -> circular shift (kernel s) -> sharpening (gamma).
    """
    memory = torch.eye(rows, 4)[None] + 0.1
    # two rows match the key: content alone cannot decide
    memory[0, 5] = memory[0, 1]
    key = memory[0, 1][None]
    w_prev = torch.zeros(1, rows)
    w_prev[0, 4] = 1.0
    w_content = ntm.content_addressing(memory, key, torch.tensor([8.0]))
    w_gated = ntm.interpolate(w_content, w_prev, torch.tensor([0.5]))
    w_shifted = ntm.shift(w_gated, torch.tensor([[0.05, 0.1, 0.85]]))
    w_final = ntm.sharpen(w_shifted, torch.tensor([4.0]))
    stages = [
        (
            r"content $\mathbf{w}^c_t$",
            "key $\\mathbf{k}_t$,\n" r"strength $\beta_t$",
            w_content,
        ),
        (
            r"interpolated $\mathbf{w}^g_t$",
            "gate $g_t$\n" r"with $\mathbf{w}_{t-1}$",
            w_gated,
        ),
        (
            r"shifted $\tilde{\mathbf{w}}_t$",
            r"shift kernel $\mathbf{s}_t$",
            w_shifted,
        ),
        (r"sharpened $\mathbf{w}_t$", r"exponent $\gamma_t$", w_final),
    ]
    fig, ax = _canvas(16.0, 5.8, (7.2, 2.61))
    _box(
        ax,
        1.0,
        3.4,
        r"memory" + "\n" + r"$\mathbf{M}_{t-1}$",
        "memory",
        w=1.8,
        h=1.4,
    )
    for i, (name, parameter, weights) in enumerate(stages):
        x = 3.0 + 3.3 * i
        _bars(ax, x, 2.6, weights[0].tolist(), width=2.4, height=1.8)
        _note(ax, x + 1.2, 4.7, name, ha="center", size=9)
        _note(
            ax, x + 1.2, 2.3, f"rows 0 to {rows - 1}", ha="center", va="top", size=9
        )
        _note(
            ax,
            x + 1.2,
            1.5,
            parameter,
            ha="center",
            va="top",
            size=9,
            colour=ROLE_COLOURS["query"],
        )
        _arrow(ax, (x - 0.8, 3.4), (x - 0.1, 3.4))
    _arrow(ax, (3.0 + 3.3 * 3 + 2.5, 3.4), (15.8, 3.4))
    _note(ax, 15.9, 3.4, "read or\nwrite", va="center", size=9)
    _legend(ax, ["memory", "weight"], weight="weighting over rows")
    fig.tight_layout()
    return fig


def pointer_step(
    n_inputs: int = 5, chosen: int = 3, visited: tuple[int, ...] = ()
) -> Figure:
    """A pointer network's decoder step: the attention weights over the inputs are
    the output distribution. Inputs in ``visited`` (0-based), chosen at earlier
    steps, are masked: grey, with weight 0."""
    if chosen in visited:
        raise ValueError(
            f"the chosen input {chosen} cannot be among the visited ones"
        )
    fig, ax = _canvas(10.0, 5.2, (7.0, 3.6))
    xs = [0.9 + 1.1 * j for j in range(n_inputs)]
    weights = [0.05, 0.1, 0.15, 0.6, 0.1][:n_inputs]
    weights = [0.0 if j in visited else a for j, a in enumerate(weights)]
    weights = [a / sum(weights) for a in weights]
    for j, (x, a) in enumerate(zip(xs, weights, strict=True), start=1):
        role = "output" if j == chosen + 1 else "input"
        _box(
            ax,
            x,
            0.5,
            f"$x_{j}$",
            "state" if j - 1 in visited else role,
            w=0.7,
            h=0.5,
        )
        if j - 1 in visited:
            _note(ax, x, 2.55, "masked", ha="center", size=9)
        _arrow(ax, (x, 0.75), (x, 1.35))
        _box(ax, x, 1.65, f"$h_{j}$", "key", w=0.7)
        _arrow(ax, (x, 1.95), (x, 2.45))
        _bars(ax, x - 0.4, 2.5, [a], width=0.8, height=1.6)
    _note(
        ax,
        xs[0] - 0.5,
        4.5,
        r"$p(C_t = j) = \mathrm{softmax}_j(u^t_j)$, $u^t_j = v^\top\tanh(W_1 h_j +"
        r" W_2 s_t)$",
        size=9,
    )
    sx = xs[-1] + 2.4
    _box(ax, sx, 1.65, r"$s_t$", "query", w=0.8)
    _arrow(
        ax,
        (sx - 0.4, 1.75),
        (xs[-1] + 0.45, 2.7),
        colour=ROLE_COLOURS["query"],
        bend=0.15,
    )
    _box(ax, sx, 0.5, r"$x_{C_{t-1}}$", "input", w=1.0, h=0.5)
    _arrow(ax, (sx, 0.75), (sx, 1.35))
    top = 2.5 + 1.6 * weights[chosen]
    _arrow(
        ax,
        (xs[chosen] + 0.45, top - 0.2),
        (sx + 0.3, 0.8),
        dashed=True,
        bend=-0.5,
        colour=ROLE_COLOURS["output"],
    )
    _note(
        ax,
        sx + 0.6,
        3.2,
        "output: input " + str(chosen + 1) + "\n(next step reads it)",
        size=9,
    )
    roles = ["query", "key", "weight", "output", "input"] + (
        ["state"] if visited else []
    )
    _legend(
        ax,
        roles,
        key="encoder states",
        output="the input pointed to",
        state="chosen before (masked)",
    )
    fig.tight_layout()
    return fig


def soft_vs_hard(n_source: int = 5, chosen: int = 2) -> Figure:
    """Soft attention (left) reads the weighted sum of all encoder states; hard
    attention (right) draws one position ``j_t`` from the same weights and reads only
    that state. ``chosen`` (0-based) is the position drawn."""
    if not 0 <= chosen < n_source:
        raise ValueError(
            f"chosen must be a position 0 .. {n_source - 1} of the {n_source}"
            f" encoder states, got {chosen}"
        )
    fig, ax = _canvas(13.6, 6.6, (7.2, 3.5))
    base = [0.1, 0.2, 0.45, 0.15, 0.1, 0.05, 0.05, 0.05]
    weights = base[:n_source] + [0.05] * max(0, n_source - len(base))
    weights = [a / sum(weights) for a in weights]
    step = 5.4 / n_source
    bar_y, bar_h = 1.25, 3.0
    panels = [
        (0.6, "soft: a weighted sum", r"every $\alpha_{tj}$ gets an exact gradient"),
        (
            7.6,
            "hard: one sampled position",
            "no gradient through the draw: REINFORCE",
        ),
    ]
    for panel, (left, title, remark) in enumerate(panels):
        xs = [left + step * (j + 0.5) for j in range(n_source)]
        centre = (xs[0] + xs[-1]) / 2
        _note(ax, centre, 6.3, title, ha="center", size=10)
        _note(ax, centre, 5.9, remark, ha="center", size=9)
        _box(ax, left + 0.1, 4.9, r"$\mathbf{s}_t$", "query", w=0.7, h=0.5)
        _arrow(
            ax,
            (left + 0.1, 4.65),
            (xs[0], bar_y + bar_h * weights[0] + 0.15),
            colour=ROLE_COLOURS["query"],
        )
        for j, (x, a) in enumerate(zip(xs, weights, strict=True), start=1):
            _box(ax, x, 0.75, rf"$\mathbf{{h}}_{j}$", "key", w=0.7 * step, h=0.5)
            _bars(ax, x - 0.4 * step, bar_y, [a], width=0.8 * step, height=bar_h)
            if panel == 0:
                _arrow(
                    ax,
                    (x, bar_y + bar_h * a + 0.05),
                    (centre + 0.25 * (x - centre), 4.6),
                    colour=ROLE_COLOURS["value"],
                )
        _note(
            ax,
            centre,
            0.05,
            r"$\alpha_{tj} = \mathrm{softmax}_j\,\mathrm{score}(\mathbf{s}_t,"
            r" \mathbf{h}_j)$",
            ha="center",
            size=9,
        )
        if panel == 0:
            _box(
                ax,
                centre,
                4.9,
                r"$\mathbf{c}_t = \sum_j \alpha_{tj}\, \mathbf{h}_j$",
                "value",
                w=2.2,
                h=0.55,
                size=9,
            )
            continue
        x = xs[chosen]
        top = bar_y + bar_h * weights[chosen]
        ax.add_patch(
            Rectangle(
                (x - 0.45 * step, 0.4),
                0.9 * step,
                top + 0.1 - 0.4,
                facecolor="none",
                edgecolor=ARROW,
                linestyle="--",
                linewidth=1.0,
            )
        )
        _arrow(
            ax, (x, top + 0.1), (x, 4.6), colour=ROLE_COLOURS["value"], dashed=True
        )
        _note(ax, x + 0.15, (top + 4.6) / 2, r"draw $j_t \sim \alpha_t$", size=9)
        _box(
            ax,
            x,
            4.9,
            rf"$\mathbf{{c}}_t = \mathbf{{h}}_{{j_t}} = \mathbf{{h}}_{chosen + 1}$",
            "value",
            w=2.2,
            h=0.55,
            size=9,
        )
    _legend(
        ax,
        ["query", "key", "weight", "value"],
        key="encoder states",
        value="context",
    )
    fig.tight_layout()
    return fig


def key_value_cache() -> Figure:
    """One decoder step writing word ``t``, in one layer's self-attention: without a
    cache (left) it computes the keys, values and queries of all ``t`` positions
    again and keeps the last position's output; with a key/value cache (right) it
    projects the one new position, adds its key and value to the cache and attends
    over the ``t`` keys."""
    fig, ax = _canvas(14.0, 7.0, (7.0, 3.5))
    columns = ["1", "2", "t-1", "t"]
    panels = [
        (0.2, "without a cache", "all $t$ positions computed again"),
        (7.2, "with a key/value cache", "one new position, $t$ keys read"),
    ]
    for left, title, remark in panels:
        cached = left > 1.0
        xs = [left + x for x in (0.8, 2.1, 3.9, 5.7)]
        _note(ax, left + 3.3, 6.75, title, ha="center", va="center", size=10)
        _note(ax, left + 3.3, 6.3, remark, ha="center", va="center", size=9)
        _note(ax, (xs[1] + xs[2]) / 2, 1.9, r"$\cdots$", ha="center", size=10)
        if cached:  # the keys and values of the earlier positions, kept
            _box(ax, left + 2.35, 2.0, "", "memory", w=4.3, h=1.7)
            _note(
                ax,
                left + 2.35,
                0.6,
                "cache: kept from earlier steps",
                ha="center",
                va="center",
            )
            _arrow(ax, (xs[3] - 0.5, 2.0), (left + 4.5, 2.0), dashed=True)
        for i, (x, j) in enumerate(zip(xs, columns, strict=True)):
            new = i == len(columns) - 1
            if new or not cached:  # the positions this step computes
                _box(ax, x, 0.6, rf"$\mathbf{{x}}_{{{j}}}$", "input", h=0.5)
                _arrow(ax, (x, 0.85), (x, 1.35))
                role = "query" if new else "state"
                _box(ax, x, 3.45, rf"$\mathbf{{q}}_{{{j}}}$", role, h=0.5)
            _box(ax, x, 1.6, rf"$\mathbf{{k}}_{{{j}}}$", "key", h=0.5)
            _box(ax, x, 2.4, rf"$\mathbf{{v}}_{{{j}}}$", "value", h=0.5)
            _bars(
                ax, x - 0.4, 3.95, [(0.15, 0.2, 0.25, 0.4)[i]], width=0.8, height=2.0
            )
        output = r"$\mathbf{o}_t = \Sigma_j\, \alpha_{tj} \mathbf{v}_j$"
        _box(ax, xs[3] - 0.7, 5.55, output, "output", w=2.4, h=0.55, size=9)
        _arrow(ax, (xs[3], 3.7), (xs[3], 5.27))
    _legend(
        ax,
        ["input", "query", "key", "value", "weight", "output", "memory", "state"],
        columns=4,
        input="layer inputs",
        value="values",
        weight=r"weights of $\mathbf{q}_t$",
        memory="cache",
        state="computed, discarded",
    )
    fig.tight_layout()
    return fig
