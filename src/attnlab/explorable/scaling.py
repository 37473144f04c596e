"""Explorable scaling of the dot product: why self-attention divides the scores by
sqrt(d_k) (chapter 7)."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import torch

from attnlab.attention import Score, attend, dot_score, scaled_dot_score
from attnlab.explorable.page import OKABE_ITO

#: The two scores the chart compares, by the names its menu shows.
SCORES: dict[str, Score] = {
    "scaled, q.k / sqrt(d_k)": scaled_dot_score,
    "unscaled, q.k": dot_score,
}


def dk_scaling(
    generator: torch.Generator,
    exponents: Sequence[int] = tuple(range(10)),
    keys: int = 32,
    queries: int = 256,
    shown: int = 8,
) -> alt.HConcatChart:
    """Chapter 7: the weights that a random query gives ``keys`` random keys, scaled
    or not, as ``d_k`` grows; beside them, the mean largest weight over ``queries``
    queries for every ``d_k``.

    For each ``d_k = 2**e``, ``e`` in ``exponents`` (in that order), the chapter's
    draw: queries ``(queries, 1, d_k)`` then keys ``(queries, keys, d_k)``, entries
    standard normal from ``generator``; the weights are those of
    ``attend(q, k, k, score)`` for both :data:`SCORES`. The bars show the first
    ``shown`` queries (a slider picks one), rounded to 7 decimals.
    """
    bars, summary = [], []
    for e in exponents:
        d_k = 2**e
        q = torch.randn(queries, 1, d_k, generator=generator)
        k = torch.randn(queries, keys, d_k, generator=generator)
        for name, score in SCORES.items():
            _, weights = attend(q, k, k, score=score)  # (queries, 1, keys)
            weights = weights[:, 0]
            spread = score(q, k).std().item()
            summary.append(
                {
                    "e": e,
                    "d_k": d_k,
                    "score": name,
                    "peak": round(weights.max(-1).values.mean().item(), 7),
                    "label": f"d_k = {d_k}: the scores' standard deviation"
                    f" is {spread:.2f}",
                }
            )
            bars += [
                {
                    "e": e,
                    "score": name,
                    "query": i + 1,
                    "weight": [round(w, 7) for w in weights[i].tolist()],
                }
                for i in range(shown)
            ]
    exponent = alt.param(
        name="e",
        value=exponents[len(exponents) // 2],
        bind=alt.binding_range(
            min=exponents[0], max=exponents[-1], step=1, name="log2 of d_k "
        ),
    )
    score = alt.param(
        name="score",
        value=next(iter(SCORES)),
        bind=alt.binding_select(options=list(SCORES), name="score "),
    )
    query = alt.param(
        name="query",
        value=1,
        bind=alt.binding_range(min=1, max=shown, step=1, name="query "),
    )
    current = "datum.e == e && datum.score == score"
    weights_chart = (
        alt.Chart(alt.Data(values=bars), name="weights")
        .mark_bar(color=OKABE_ITO[5])
        .encode(
            x=alt.X(
                "key:O",
                title=f"key (the {keys} keys of the query)",
                axis=alt.Axis(labelAngle=0, values=list(range(1, keys + 1, 4))),
            ),
            y=alt.Y(
                "weight:Q",
                scale=alt.Scale(domain=[0, 1]),
                title="attention weight",
            ),
            tooltip=[
                alt.Tooltip("key:O", title="key"),
                alt.Tooltip("weight:Q", title="weight", format=".3f"),
            ],
        )
        .transform_filter(f"{current} && datum.query == query")
        .transform_calculate(key="sequence(1, length(datum.weight) + 1)")
        .transform_flatten(["weight", "key"])
    )
    caption = (
        alt.Chart(alt.Data(values=summary), name="spread")
        .mark_text(align="left", baseline="top")
        .encode(x=alt.value(4), y=alt.value(4), text="label:N")
        .transform_filter(current)
    )
    colour = alt.Scale(domain=list(SCORES), range=[OKABE_ITO[3], OKABE_ITO[4]])
    d_k_axis = alt.X(
        "d_k:Q",
        scale=alt.Scale(type="log", base=2),
        axis=alt.Axis(values=[2**e for e in exponents], format="d"),
        title="d_k (log scale)",
    )
    peak = alt.Y(
        "peak:Q",
        scale=alt.Scale(domain=[0, 1]),
        title=f"mean largest weight ({queries} queries)",
    )
    peaks = (
        alt.Chart(alt.Data(values=summary), name="peaks")
        .mark_point(filled=True)
        .encode(
            x=d_k_axis,
            y=peak,
            color=alt.Color(
                "score:N", scale=colour, legend=alt.Legend(orient="bottom")
            ),
            # the current setting: a large point with a black ring
            size=alt.condition(current, alt.value(260), alt.value(50)),
            stroke=alt.condition(current, alt.value("black"), alt.value(None)),
            tooltip=[
                alt.Tooltip("d_k:Q", title="d_k"),
                alt.Tooltip("score:N", title="score"),
                alt.Tooltip("peak:Q", title="mean largest weight", format=".3f"),
            ],
        )
        .properties(width=220, height=240, title="how peaked, on average")
    )
    return alt.hconcat(
        alt.vconcat(
            caption.properties(
                width=330, height=16, view=alt.ViewBackground(stroke=None)
            ),
            weights_chart.properties(
                width=330, height=240, title="weights of one query over its keys"
            ),
            spacing=4,
        ),
        peaks,
    ).add_params(exponent, score, query)
