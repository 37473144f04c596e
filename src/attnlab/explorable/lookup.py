"""Explorable lookups: the soft dictionary (chapter 1) and the score functions
(chapter 2)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import altair as alt
import torch

from attnlab.attention import Score, attend
from attnlab.explorable.controls import grid, key_colours, slider, weight_bars, where
from attnlab.explorable.page import OKABE_ITO
from attnlab.memory import SoftDict


def soft_dictionary(
    memory: SoftDict,
    start: torch.Tensor,
    end: torch.Tensor,
    key_names: Sequence[str],
    value_names: Sequence[str],
    end_name: str,
    mixes: int = 21,
    log_temperatures: tuple[float, float, int] = (-2.0, 1.0, 13),
) -> alt.HConcatChart:
    """Chapter 1: the query slides from ``start`` to ``end`` (both ``(d_k,)``) while
    the temperature changes; the chart shows the weights over the keys and the
    returned value.

    ``memory`` holds one-number values ``(n, 1)``: 0, 1, ... name ``value_names``.
    Every lookup is ``memory.lookup`` on a grid of ``mixes`` shares of ``end`` and
    ``log_temperatures = (lowest, highest, count)`` values of log10 temperature.
    """
    shares = grid(0.0, 1.0, mixes)
    logs = grid(*log_temperatures)
    share = torch.tensor(shares)[:, None]
    queries = (1 - share) * start + share * end  # (mixes, d_k)
    weight_rows, value_rows = [], []
    for log_tau in logs:
        values, weights = memory.lookup(queries, temperature=10.0**log_tau)
        for i, mix in enumerate(shares):
            value_rows.append(
                {"mix": mix, "log_tau": log_tau, "value": values[i, 0].item()}
            )
            weight_rows += [
                {"mix": mix, "log_tau": log_tau, "key": key, "weight": w}
                for key, w in zip(key_names, weights[i].tolist(), strict=True)
            ]
    mix = slider("mix", f"share of {end_name} in the query", shares, 0.5)
    log_tau = slider("log_tau", "log10 temperature", logs, logs[len(logs) // 2])
    at = where({"mix": "mix", "log_tau": "log_tau"})
    weights = weight_bars(weight_rows, key_names, key_colours(key_names), at)
    names = json.dumps(list(value_names))
    axis = alt.Axis(
        values=list(range(len(value_names))), labelExpr=f"{names}[datum.value]"
    )
    value = (
        alt.Chart(alt.Data(values=value_rows), name="value", title="returned value")
        .mark_point(filled=True, size=200, color=OKABE_ITO[4])
        .encode(
            x=alt.value(40),  # the middle of the panel
            y=alt.Y(
                "value:Q",
                scale=alt.Scale(domain=[0, len(value_names) - 1]),
                axis=axis,
                title="returned value",
            ),
        )
        .transform_filter(at)
    )
    return (
        alt.hconcat(weights.properties(width=260), value.properties(width=80))
        .add_params(mix, log_tau)
        .properties(title="soft lookup")
    )


def score_menu(
    scores: dict[str, Score],
    keys: torch.Tensor,
    key_names: Sequence[str],
    angles: int = 24,
    lengths: Sequence[float] = (0.5, 1.0, 2.0, 4.0),
) -> alt.HConcatChart:
    """Chapter 2: a query ``r (cos a, sin a)`` in the plane, its angle and length on
    sliders, the score chosen from a menu; the chart shows the keys ``(n, 2)`` with
    the query, and the weights ``attend`` gives each key.

    ``angles`` angles from 0 to 360 degrees (exclusive), ``lengths`` the lengths.
    """
    degrees = [360 * i / angles for i in range(angles)]
    rows, queries = [], []
    for length in lengths:
        for angle in degrees:
            radians = math.radians(angle)
            point = [length * math.cos(radians), length * math.sin(radians)]
            x, y = point
            queries.append({"angle": angle, "length": length, "x": x, "y": y})
            query = torch.tensor([point], dtype=keys.dtype)  # (Tq=1, 2)
            for score_name, score in scores.items():
                _, weights = attend(query, keys, keys, score=score)
                rows += [
                    {
                        "score": score_name,
                        "angle": angle,
                        "length": length,
                        "key": key,
                        "weight": w,
                    }
                    for key, w in zip(key_names, weights[0].tolist(), strict=True)
                ]
    score = alt.param(
        name="score",
        value=next(iter(scores)),
        bind=alt.binding_select(options=list(scores), name="score "),
    )
    angle = slider("angle", "angle of the query (degrees)", degrees, 0.0)
    length = alt.param(
        name="length",
        value=lengths[1],
        bind=alt.binding_select(options=list(lengths), name="length of the query "),
    )
    colour = key_colours(key_names)
    weights = weight_bars(
        rows,
        key_names,
        colour,
        f"datum.score == score && {where({'angle': 'angle', 'length': 'length'})}",
    )
    extent = max(max(lengths), keys.abs().max().item()) * 1.1
    plane = alt.Scale(domain=[-extent, extent])
    key_points = alt.Chart(
        alt.Data(
            values=[
                {"key": key, "x": x, "y": y}
                for key, (x, y) in zip(key_names, keys.tolist(), strict=True)
            ]
        )
    ).encode(
        x=alt.X("x:Q", scale=plane, title="first coordinate"),
        y=alt.Y("y:Q", scale=plane, title="second coordinate"),
    )
    query_point = (
        alt.Chart(alt.Data(values=queries), name="query")
        .mark_point(shape="cross", size=250, filled=True, color="black")
        .encode(x="x:Q", y="y:Q")
        .transform_filter(where({"angle": "angle", "length": "length"}))
    )
    keys_and_query = alt.layer(
        key_points.mark_point(filled=True, size=120).encode(
            color=alt.Color("key:N", scale=colour, legend=None)
        ),
        key_points.mark_text(dx=8, dy=-10, align="left").encode(text="key:N"),
        query_point,
        title="keys and query (cross)",
    ).properties(width=240, height=240)
    return alt.hconcat(keys_and_query, weights.properties(width=220)).add_params(
        score, angle, length
    )
