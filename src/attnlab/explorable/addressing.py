"""Explorable addressing of a Neural Turing Machine's head (chapter 10)."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import torch

from attnlab.explorable.controls import select, slider, where
from attnlab.explorable.page import OKABE_ITO
from attnlab.ntm import content_addressing, interpolate, sharpen, shift


def ntm_addressing(
    memory: torch.Tensor,
    key: torch.Tensor,
    w_prev: torch.Tensor,
    betas: Sequence[float],
    gates: Sequence[float],
    kernels: dict[str, Sequence[float]],
    gammas: Sequence[float],
) -> alt.HConcatChart:
    """Chapter 10: the four steps of one head's addressing side by side, with a
    control for each parameter.

    memory ``(N, M)``, key ``(M,)``, previous weighting ``w_prev (N,)``. Every
    combination of the key strengths ``betas``, gates ``gates``, shift kernels
    ``kernels`` (a name for each, the weights of the shifts -1, 0, +1) and
    sharpenings ``gammas`` goes through ``content_addressing``, ``interpolate``,
    ``shift`` and ``sharpen`` in one batch.
    """
    grid = [
        (b, g, s, y) for b in betas for g in gates for s in kernels for y in gammas
    ]
    batch = len(grid)

    def column(i: int) -> torch.Tensor:
        return torch.tensor([float(row[i]) for row in grid])

    w_content = content_addressing(
        memory.expand(batch, -1, -1), key.expand(batch, -1), column(0)
    )
    w_gated = interpolate(w_content, w_prev.expand(batch, -1), column(1))
    kernel = torch.tensor([list(kernels[row[2]]) for row in grid])
    w_shifted = shift(w_gated, kernel)
    w_sharp = sharpen(w_shifted, column(3))
    # Each step keeps only the controls it depends on, to keep the page small.
    steps: list[tuple[str, torch.Tensor, tuple[str, ...]]] = [
        ("1. content", w_content, ("beta",)),
        ("2. interpolation", w_gated, ("beta", "g")),
        ("3. shift", w_shifted, ("beta", "g", "shift")),
        ("4. sharpening", w_sharp, ("beta", "g", "shift", "gamma")),
    ]
    rows_axis = alt.Axis(labelAngle=0, values=list(range(0, len(w_prev), 3)))
    charts = []
    for title, weights, controls in steps:
        # one row per setting, its weighting as a list: flattened in the browser
        rows = {}
        for (b, g, s, y), w in zip(grid, weights.tolist(), strict=True):
            setting = {"beta": b, "g": g, "shift": s, "gamma": y}
            kept = {c: setting[c] for c in controls}
            rows[tuple(kept.values())] = {
                **kept,
                "row": list(range(len(w))),
                "weight": [round(v, 8) for v in w],
            }
        condition = where({c: c for c in controls if c != "shift"})
        if "shift" in controls:
            condition += " && datum.shift == shift"
        charts.append(
            alt.Chart(
                alt.Data(values=list(rows.values())),
                name=f"step{len(charts) + 1}",
                title=title,
            )
            .mark_bar(color=OKABE_ITO[5])
            .encode(
                x=alt.X("row:O", title="memory row", axis=rows_axis),
                y=alt.Y("weight:Q", scale=alt.Scale(domain=[0, 1]), title="weight"),
            )
            .transform_filter(condition)
            .transform_flatten(["row", "weight"])
            .properties(width=150, height=160)
        )
    previous = (
        alt.Chart(
            alt.Data(
                values=[
                    {"row": i, "weight": v} for i, v in enumerate(w_prev.tolist())
                ]
            ),
            title="previous weighting",
        )
        .mark_bar(color="grey")
        .encode(
            x=alt.X("row:O", title="memory row", axis=rows_axis),
            y=alt.Y("weight:Q", scale=alt.Scale(domain=[0, 1]), title="weight"),
        )
        .properties(width=150, height=160)
    )
    controls = [
        select("beta", "key strength beta", betas),
        slider("g", "gate g", gates, gates[len(gates) // 2]),
        alt.param(
            name="shift",
            value=next(iter(kernels)),
            bind=alt.binding_select(options=list(kernels), name="shift weights "),
        ),
        select("gamma", "sharpening gamma", gammas),
    ]
    return alt.vconcat(
        alt.hconcat(*charts[:2], previous), alt.hconcat(*charts[2:])
    ).add_params(*controls)
