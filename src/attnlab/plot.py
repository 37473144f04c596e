"""Figures shared by the chapters: attention heatmaps and learning curves.

Every function draws on a given (or new) ``matplotlib`` axis, labels its axes, adds a colour bar where colour
carries a value, and returns the axis so a notebook can add to it.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes


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
    """Attention weights ``(Tq, Tk)`` as an image: one row per query, one column per key."""
    w = _numpy(weights)
    if w.ndim != 2:
        raise ValueError(f"weights must have shape (Tq, Tk), got {w.shape}")
    if ax is None:
        _, ax = plt.subplots(figsize=(max(3.0, 0.35 * w.shape[1] + 1.5), max(2.5, 0.35 * w.shape[0] + 1.0)))
    image = ax.imshow(w, cmap="viridis", vmin=0.0, vmax=vmax, aspect="auto", interpolation="nearest")
    ax.figure.colorbar(image, ax=ax, label=cbar_label, fraction=0.046, pad=0.04)
    if x_labels is not None:
        ax.set_xticks(range(len(x_labels)), list(x_labels), rotation=90 if len(x_labels) > 12 else 0)
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
    """Several named curves ``{label: (x, y)}`` on one axis (e.g. training loss of two models)."""
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


def weighting_panels(
    panels: dict[str, torch.Tensor | np.ndarray],
    *,
    xlabel: str = "memory row",
    ylabel: str = "weight",
    ncols: int | None = None,
    ymax: float | None = 1.0,
    title: str | None = None,
) -> plt.Figure:
    """Weightings over memory rows ``{label: (N,)}`` as small bar charts side by side, sharing the y axis.

    Made for before/after pictures of an addressing step (e.g. one panel per value of a parameter).
    """
    ncols = ncols or len(panels)
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(2.6 * ncols, 2.1 * nrows + 0.4), sharey=True, squeeze=False)
    for ax, (label, w) in zip(axes.flat, panels.items(), strict=False):
        values = _numpy(w)
        if values.ndim != 1:
            raise ValueError(f"panel {label!r} must be a weighting of shape (N,), got {values.shape}")
        ax.bar(np.arange(len(values)), values, width=0.8, color="C0")
        ax.set_title(label, fontsize=10)
        ax.set_xlabel(xlabel)
        if ymax is not None:
            ax.set_ylim(0, ymax)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel(ylabel)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
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
) -> plt.Figure:
    """Sequences ``{label: (T, channels)}`` as images with time to the right, sharing one colour bar.

    Used for the bits of a copy-task sequence (input, target, output) and for a head's weighting over the
    memory rows at every time step. Panels are stacked (or placed ``side_by_side``).
    """
    arrays = {label: _numpy(x) for label, x in panels.items()}
    for label, x in arrays.items():
        if x.ndim != 2:
            raise ValueError(f"panel {label!r} must have shape (T, channels), got {x.shape}")
    n = len(arrays)
    longest = max(x.shape[0] for x in arrays.values())
    width = min(13.0, max(5.0, 0.12 * longest + 2.5))
    if side_by_side:
        fig, axes = plt.subplots(1, n, figsize=(min(13.0, width * n * 0.6), height + 1.0), squeeze=False)
    else:
        fig, axes = plt.subplots(n, 1, figsize=(width, height * n + 0.6), squeeze=False)
    for ax, (label, x) in zip(axes.flat, arrays.items(), strict=True):
        image = ax.imshow(x.T, cmap="viridis", vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest",
                          origin="lower")
        ax.set_title(label, fontsize=10)
        ax.set_ylabel(ylabel)
        ax.set_xlabel(xlabel)
    fig.tight_layout()
    fig.colorbar(image, ax=list(axes.flat), label=cbar_label, fraction=0.03, pad=0.02)
    if title:
        fig.suptitle(title)
    return fig
