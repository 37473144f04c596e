"""Figures shared by the chapters: attention heatmaps, learning curves and runs
against the band of recorded seeds.

Every function draws on a given (or new) ``matplotlib`` axis, labels its axes, adds a
colour bar where colour carries a value, and returns the axis so a notebook can add
to it. A new figure is at most ``COLUMN_INCHES`` wide, with text of at least 9
points, so that the book shows it at full size in its text column:
``rendered_points`` measures a figure's smallest text as the book shows it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.ticker import MaxNLocator

# The book shows a figure as a PNG of 100 dots per inch cut to its tight bounding box
# (0.1 inch of padding each side), scaled down to its 720-pixel text column if
# wider. A point of text is 100/72 pixels there, and a CSS point 96/72 pixels.
DPI, COLUMN_PX, PAD_INCHES = 100, 720, 0.1
COLUMN_INCHES = COLUMN_PX / DPI  # 7.2: the widest figure shown at full size
SMALLEST_PT = 9.0  # the smallest text the book shows, in CSS points


def rendered_points(fig: Figure) -> float:
    """The size of the smallest text drawn in ``fig`` as the book shows it, in CSS
    points: every visible text (titles, labels, tick labels, legends, colour bars,
    annotations), scaled down with the figure where it is wider than the column."""
    fig.set_dpi(DPI)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    sizes: list[float] = []

    def recording(draw: Callable) -> Callable:
        def record(
            gc: object, x: float, y: float, s: str, prop: FontProperties, *args, **kw
        ) -> None:
            if s.strip():
                sizes.append(prop.get_size_in_points())
            draw(gc, x, y, s, prop, *args, **kw)

        return record

    renderer.draw_text = recording(renderer.draw_text)
    renderer.draw_tex = recording(renderer.draw_tex)
    try:
        fig.draw(renderer)
        width = fig.get_tightbbox(renderer).width + 2 * PAD_INCHES
    finally:
        del renderer.draw_text, renderer.draw_tex
    if not sizes:
        raise ValueError("the figure draws no text")
    shown = min(1.0, COLUMN_PX / (width * DPI))
    return min(sizes) * DPI / 72 * shown * 72 / 96


def _columns(n: int, most: int) -> int:
    """Columns for ``n`` panels at most ``most`` to a row, the rows as even as can
    be (4 panels: 2 x 2; 5: 3 + 2)."""
    rows = -(-n // most)
    return -(-n // rows)


def _numpy(x: torch.Tensor | np.ndarray) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def heatmap(
    weights: torch.Tensor | np.ndarray,
    *,
    x_labels: Sequence[str] | None = None,
    y_labels: Sequence[str] | None = None,
    xlabel: str = "key (source position)",
    ylabel: str = "query (target position)",
    title: str | None = None,
    ax: Axes | None = None,
    cbar_label: str = "attention weight",
    vmax: float | None = 1.0,
) -> Axes:
    """Attention weights ``(Tq, Tk)`` as an image: one row per query, one column per
    key."""
    w = _numpy(weights)
    if w.ndim != 2:
        raise ValueError(f"weights must have shape (Tq, Tk), got {w.shape}")
    if ax is None:  # at most the column's width (labels that do not fit are turned)
        _, ax = plt.subplots(
            figsize=(
                min(COLUMN_INCHES, max(3.0, 0.35 * w.shape[1] + 1.5)),
                min(9.0, max(2.5, 0.35 * w.shape[0] + 1.0)),
            )
        )
    image = ax.imshow(
        w,
        cmap="viridis",
        vmin=0.0,
        vmax=vmax,
        aspect="auto",
        interpolation="nearest",
    )
    ax.figure.colorbar(image, ax=ax, label=cbar_label, fraction=0.046, pad=0.04)
    if x_labels is not None:
        # upright while the labels fit side by side (about 0.08 inch a character)
        inches = ax.get_position().width * ax.figure.get_figwidth()
        needed = 0.08 * sum(len(label) + 1 for label in x_labels)
        ax.set_xticks(
            range(len(x_labels)),
            list(x_labels),
            rotation=90 if needed > inches else 0,
        )
    if y_labels is not None:
        ax.set_yticks(range(len(y_labels)), list(y_labels))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    return ax


def learning_curve(
    curves: dict[str, tuple[Sequence[float], Sequence[float]]],
    *,
    xlabel: str = "training step",
    ylabel: str = "loss",
    title: str | None = None,
    logy: bool = False,
    ax: Axes | None = None,
) -> Axes:
    """Several named curves ``{label: (x, y)}`` on one axis (e.g. training loss of
    two models)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    for label, (x, y) in curves.items():
        ax.plot(x, y, label=label)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    return ax


def seed_band(
    x: Sequence[float] | Sequence[str],
    recorded: Sequence[Sequence[float]],
    reader: Sequence[float] | None = None,
    *,
    label: str,
    color: str = "C0",
    ax: Axes | None = None,
) -> Axes:
    """One measure over the recorded seeds, ``recorded`` ``(seeds, len(x))``, as a
    shaded band (their range) with every seed a thin line, and the reader's run
    ``(len(x),)`` as one bold line with markers on top. String ``x`` (length
    buckets) are spaced evenly."""
    values = np.asarray(recorded, dtype=float)
    if values.ndim != 2 or values.shape[1] != len(x) or len(values) == 0:
        raise ValueError(
            f"recorded must have shape (seeds, {len(x)}) for {len(x)} x values, got"
            f" {values.shape}"
        )
    if reader is not None and len(reader) != len(x):
        raise ValueError(
            f"reader must have {len(x)} values, one per x, got {len(reader)}"
        )
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    categorical = any(isinstance(v, str) for v in x)
    position = np.arange(len(x)) if categorical else np.asarray(x, dtype=float)
    ax.fill_between(
        position,
        values.min(axis=0),
        values.max(axis=0),
        color=color,
        alpha=0.2,
        lw=0,
        label=f"{label}: {len(values)} recorded seeds",
    )
    for run in values:
        ax.plot(position, run, color=color, lw=0.7, alpha=0.6)
    if reader is not None:
        ax.plot(
            position,
            np.asarray(reader, dtype=float),
            color=color,
            lw=2.2,
            marker="o",
            markersize=4,
            label=f"{label}: your run",
        )
    if categorical:
        ax.set_xticks(position, [str(v) for v in x])
    ax.grid(alpha=0.3)
    return ax


def weighting_panels(
    panels: dict[str, torch.Tensor | np.ndarray],
    *,
    xlabel: str = "memory row",
    ylabel: str = "weight",
    ncols: int | None = None,
    ymax: float | None = 1.0,
    title: str | None = None,
) -> plt.Figure:
    """Weightings over memory rows ``{label: (N,)}`` as small bar charts side by
    side, sharing the y axis: at most three to a row unless ``ncols`` says otherwise
    (four panels make a 2 x 2 grid, five a row of three and one of two), the figure
    never wider than the book's column.

    Made for before/after pictures of an addressing step (e.g. one panel per value of
    a parameter).
    """
    ncols = ncols or _columns(len(panels), most=3)
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(min(COLUMN_INCHES, 2.3 * ncols + 0.4), 2.1 * nrows + 0.4),
        sharey=True,
        squeeze=False,
    )
    for ax, (label, w) in zip(axes.flat, panels.items(), strict=False):
        values = _numpy(w)
        if values.ndim != 1:
            raise ValueError(
                f"panel {label!r} must be a weighting of shape (N,), got"
                f" {values.shape}"
            )
        ax.bar(np.arange(len(values)), values, width=0.8, color="C0")
        ax.set_title(label, fontsize=10)
        ax.set_xlabel(xlabel)
        if ymax is not None:
            ax.set_ylim(0, ymax)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel(ylabel)
    for ax in list(axes.flat)[len(panels) :]:
        ax.remove()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def sequence_images(
    panels: dict[str, torch.Tensor | np.ndarray],
    *,
    ylabel: str = "channel",
    xlabel: str = "time step",
    cbar_label: str = "value",
    vmin: float = 0.0,
    vmax: float | None = 1.0,
    side_by_side: bool = False,
    height: float = 1.6,
    title: str | None = None,
    y_start: int = 0,
) -> plt.Figure:
    """Sequences ``{label: (T, channels)}`` as images with time to the right, sharing
    one colour bar.

    Used for the bits of a copy-task sequence (input, target, output) and for a
    head's weighting over the memory rows at every time step. Panels are stacked (or
    placed ``side_by_side``, two to a row: more wrap into further rows, so the
    figure stays within the book's column); the channels are numbered from
    ``y_start`` on the y axis (e.g. negative for memory rows counted backwards from
    row 0).
    """
    arrays = {label: _numpy(x) for label, x in panels.items()}
    for label, x in arrays.items():
        if x.ndim != 2:
            raise ValueError(
                f"panel {label!r} must have shape (T, channels), got {x.shape}"
            )
    n = len(arrays)
    longest = max(x.shape[0] for x in arrays.values())
    width = min(COLUMN_INCHES, max(5.0, 0.12 * longest + 2.5))
    if side_by_side:
        ncols = _columns(n, most=2)
        nrows = -(-n // ncols)
        fig, axes = plt.subplots(
            nrows,
            ncols,
            figsize=(
                min(COLUMN_INCHES, width * ncols * 0.6),
                (height + 1.0) * nrows,
            ),
            squeeze=False,
            layout="constrained",  # the colour bar inside the figure's width
        )
    else:
        fig, axes = plt.subplots(
            n,
            1,
            figsize=(width, height * n + 0.6),
            squeeze=False,
            layout="constrained",
        )
    for ax in list(axes.flat)[n:]:  # the empty end of the last row
        ax.remove()
    axes = list(axes.flat)[:n]
    for ax, (label, x) in zip(axes, arrays.items(), strict=True):
        image = ax.imshow(
            x.T,
            cmap="viridis",
            vmin=vmin,
            vmax=vmax,
            aspect="auto",
            interpolation="nearest",
            origin="lower",
            extent=(
                -0.5,
                x.shape[0] - 0.5,
                y_start - 0.5,
                y_start + x.shape[1] - 0.5,
            ),
        )
        ax.set_title(label, fontsize=10)
        ax.set_ylabel(ylabel)
        ax.set_xlabel(xlabel)
        # as many whole-number ticks as fit the axis at the labels' size
        ax.xaxis.set_major_locator(MaxNLocator(nbins="auto", integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(nbins="auto", integer=True))
    fig.colorbar(image, ax=axes, label=cbar_label, fraction=0.03, pad=0.02)
    if title:
        fig.suptitle(title)
    return fig


def clock_hands(
    table: torch.Tensor | np.ndarray,
    pairs: Sequence[int],
    positions: Sequence[int],
) -> Figure:
    """Feature pairs of a positional encoding ``table (T, d)`` as clock hands: the
    hand of pair ``i`` at position ``t`` points to ``(table[t, 2i + 1], table[t,
    2i])``, the cosine across and the sine up. One row per pair, one column per
    position; a dotted grey line marks the hand of the first position shown."""
    values = _numpy(table).astype(float)
    if values.ndim != 2:
        raise ValueError(f"table must have shape (T, d), got {values.shape}")
    for i in pairs:
        if not 0 <= 2 * i + 1 < values.shape[1]:
            raise ValueError(
                f"pair {i} needs features {2 * i} and {2 * i + 1}, but the table"
                f" has {values.shape[1]} features"
            )
    for t in positions:
        if not 0 <= t < values.shape[0]:
            raise ValueError(
                f"position {t} is outside the table's {values.shape[0]} positions"
            )
    positions, size = list(positions), 1.0
    fig, axes = plt.subplots(
        len(pairs),
        len(positions),
        figsize=(size * len(positions) + 1.0, size * len(pairs) + 0.4),
        squeeze=False,
    )
    circle = np.linspace(0, 2 * np.pi, 120)
    for row, i in enumerate(pairs):
        start = values[positions[0], [2 * i + 1, 2 * i]]
        for column, t in enumerate(positions):
            ax = axes[row, column]
            x, y = values[t, 2 * i + 1], values[t, 2 * i]
            ax.plot(np.cos(circle), np.sin(circle), color="#BBBBBB", lw=1)
            ax.plot([0, start[0]], [0, start[1]], color="#999999", lw=1, ls=":")
            ax.plot([0, x], [0, y], color="#0072B2", lw=2.5, solid_capstyle="round")
            ax.plot([x], [y], "o", color="#0072B2", ms=4)
            ax.set_xlim(-1.15, 1.15)
            ax.set_ylim(-1.15, 1.15)
            ax.set_aspect("equal")
            ax.set_xticks([])
            ax.set_yticks([])
            for spine in ax.spines.values():
                spine.set_visible(False)
            if row == 0:
                ax.set_title(f"t = {t}", fontsize=10)
            if column == 0:
                ax.set_ylabel(f"features\n{2 * i}, {2 * i + 1}", fontsize=10)
    fig.tight_layout()
    return fig


def _closed_paths(
    points: np.ndarray, paths: dict[str, Sequence[int]], ax: Axes, legend: Callable
) -> None:
    """Draw each index sequence of ``paths`` as a closed polygon through ``points``;
    label it ``legend``."""
    styles = [
        ("tab:blue", "-"),
        ("tab:red", "--"),
        ("tab:green", ":"),
        ("tab:orange", "-."),
    ]
    for k, (label, path) in enumerate(paths.items()):
        path = [int(i) for i in _numpy(path)]
        color, style = styles[k % len(styles)]
        if path:
            closed = points[path + path[:1]]
            ax.plot(
                closed[:, 0],
                closed[:, 1],
                color=color,
                linestyle=style,
                linewidth=2.2 - 0.5 * k,
                label=legend(label, points[path]),
            )
    ax.scatter(points[:, 0], points[:, 1], s=22, color="black", zorder=3)
    ax.set_aspect("equal")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.legend(
        fontsize=9,
        loc="upper left",
        bbox_to_anchor=(0.0, -0.18),
        ncol=1,
        frameon=False,
    )


def tours(
    points: torch.Tensor | np.ndarray,
    named_tours: dict[str, Sequence[int]],
    *,
    ax: Axes | None = None,
    title: str | None = None,
    number_cities: bool = True,
) -> Axes:
    """Closed tours through the cities ``points (n, 2)``: ``{label: tour (n,)}``; the
    legend gives each length."""
    xy = _numpy(points).astype(float)
    if xy.ndim != 2 or xy.shape[1] != 2:
        raise ValueError(f"points must have shape (n, 2), got {xy.shape}")
    if ax is None:
        _, ax = plt.subplots(figsize=(4, 4.6))

    def legend(label: str, ordered: np.ndarray) -> str:
        length = np.linalg.norm(ordered - np.roll(ordered, -1, axis=0), axis=1).sum()
        return f"{label} (length {length:.3f})"

    _closed_paths(xy, named_tours, ax, legend)
    if number_cities:
        for i, (x, y) in enumerate(xy):
            ax.annotate(
                str(i), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=9
            )
    if title:
        ax.set_title(title)
    return ax


def held_karp_step(
    points: torch.Tensor | np.ndarray, subset: Sequence[int], end: int
) -> Figure:
    """One entry of the Held-Karp recurrence, drawn: ``cost(S, j)`` for the cities
    ``subset`` = S of ``points (n, 2)`` and ``end`` = j.

    One panel per candidate predecessor ``k`` in S - {j}: the shortest path from city
    0 through S - {j} that ends at ``k`` (solid; its length is ``cost(S - {j}, k)``),
    then the edge from ``k`` to ``j`` (dashed); the title adds the two lengths. The
    smallest sum, ``cost(S, j)``, is marked. The sub-paths come from
    :func:`attnlab.tasks.geometry.shortest_path`."""
    # here: importing plot needs no tasks
    from attnlab.tasks.geometry import distance_matrices, shortest_path

    xy = _numpy(points).astype(float)
    if xy.ndim != 2 or xy.shape[1] != 2:
        raise ValueError(f"points must have shape (n, 2), got {xy.shape}")
    cities = sorted({int(c) for c in subset})
    if end not in cities or len(cities) < 2:
        raise ValueError(
            "subset must hold end and at least one other city (a predecessor), got"
            f" subset {cities} and end {end}"
        )
    before = [k for k in cities if k != end]
    dist = distance_matrices(xy[None])[0]
    rows = []
    for k in before:
        path, length = shortest_path(xy, before, k)
        rows.append((k, path, length, float(dist[k, end])))
    best = min(range(len(rows)), key=lambda i: rows[i][2] + rows[i][3])
    outside = [c for c in range(len(xy)) if c != 0 and c not in cities]
    fig, axes = plt.subplots(
        1,
        len(rows),
        figsize=(min(COLUMN_INCHES, 2.4 * len(rows)), 3.6),
        squeeze=False,
    )
    for i, (ax, (k, path, length, edge)) in enumerate(
        zip(axes[0], rows, strict=True)
    ):
        ax.scatter(*xy[outside].T, s=18, color="#BBBBBB", zorder=3)
        ax.scatter(*xy[[0, *cities]].T, s=24, color="black", zorder=3)
        ax.plot(*xy[path].T, color="#0072B2", lw=2.2, label="shortest path 0 … k")
        ax.plot(
            *xy[[k, end]].T, color="#E69F00", lw=2.2, ls="--", label="edge k → j"
        )
        for c, (x, y) in enumerate(xy):
            ax.annotate(
                str(c),
                (x, y),
                textcoords="offset points",
                xytext=(4, 4),
                fontsize=9,
                color="black" if c == 0 or c in cities else "#888888",
            )
        total = length + edge
        title = f"k = {k}\n{length:.2f} + {edge:.2f} = {total:.2f}"
        if i == best:
            title += "\nminimum: cost(S, j)"
            for spine in ax.spines.values():
                spine.set_color("#009E73")
                spine.set_linewidth(2.5)
        ax.set_title(title, fontsize=10)
        ax.margins(0.12)
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_xlabel("x")
        if i == 0:
            ax.set_ylabel("y")
    fig.suptitle(
        f"cost(S, j) for S = {{{', '.join(map(str, cities))}}}, j = {end}: the"
        " best of the ways into j",
        fontsize=10,
    )
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(
        handles, labels, fontsize=9, loc="lower center", ncol=2, frameon=False
    )
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def hulls(
    points: torch.Tensor | np.ndarray,
    named_hulls: dict[str, Sequence[int]],
    *,
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    """Polygons through ``points (n, 2)``, e.g. a predicted and the true convex hull:
    ``{label: indices}``.

    The legend gives each polygon's number of vertices and its area, or says that it
    crosses itself.
    """
    # here: importing plot needs no tasks
    from attnlab.tasks.geometry import (
        is_simple_polygon,
        polygon_area,
    )

    xy = _numpy(points).astype(float)
    if xy.ndim != 2 or xy.shape[1] != 2:
        raise ValueError(f"points must have shape (n, 2), got {xy.shape}")
    if ax is None:
        _, ax = plt.subplots(figsize=(4, 4.6))

    def legend(label: str, ordered: np.ndarray) -> str:
        if not is_simple_polygon(ordered):
            return f"{label} ({len(ordered)} vertices, crosses itself)"
        return f"{label} ({len(ordered)} vertices, area {polygon_area(ordered):.3f})"

    _closed_paths(xy, named_hulls, ax, legend)
    if title:
        ax.set_title(title)
    return ax


def pointer_distributions(
    probs: torch.Tensor | np.ndarray,
    *,
    chosen: Sequence[int] | None = None,
    x_labels: Sequence[str] | None = None,
    xlabel: str = "input position j",
    ylabel: str = "output step t",
    title: str | None = None,
    ax: Axes | None = None,
) -> Axes:
    """The pointer distribution of every decoder step ``probs (T, N)`` as a heatmap
    (one row per step).

    ``chosen (T,)`` marks the input each step pointed at (positions outside
    ``0..N-1``, padding, are skipped).
    """
    p = _numpy(probs)
    ax = heatmap(
        p,
        x_labels=x_labels,
        y_labels=[str(t + 1) for t in range(p.shape[0])] if p.ndim == 2 else None,
        xlabel=xlabel,
        ylabel=ylabel,
        title=title,
        ax=ax,
        cbar_label="pointer probability",
    )
    if chosen is not None:
        steps = [
            (t, int(j))
            for t, j in enumerate(_numpy(chosen))
            if 0 <= int(j) < p.shape[1]
        ]
        ax.scatter(
            [j for _, j in steps],
            [t for t, _ in steps],
            marker="o",
            s=60,
            facecolors="none",
            edgecolors="red",
            linewidths=1.5,
            label="pointed at",
        )
        ax.legend(
            loc="upper left",
            bbox_to_anchor=(
                0.0,
                -0.2 if x_labels is None or len(x_labels) <= 12 else -0.35,
            ),
            fontsize=9,
            frameon=False,
        )
    return ax
