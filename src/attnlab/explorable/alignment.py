"""Explorable alignments: the attention of a trained RNNsearch over several test
sentences (chapter 4), and Luong's local window laid over a global model's weights
(chapter 5)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import altair as alt
import torch

from attnlab.explorable.controls import (
    example_names,
    grid,
    slider,
    slider_ranges,
    where,
)
from attnlab.explorable.page import OKABE_ITO
from attnlab.luong import local_window, window_positions
from attnlab.seq2seq import Seq2Seq
from attnlab.tasks.translation import Example, attention_maps

DIGITS = 7  # weights rounded to 7 decimals: a small page, an error below 1e-7


def _rounded(values: Sequence[float]) -> list[float]:
    return [round(v, DIGITS) for v in values]


def _word_axis(words: dict[str, list[str]], menu: str, title: str) -> alt.Axis:
    """An axis of positions 0, 1, ... labelled with the words of the sentence the
    menu ``menu`` shows (``words``: sentence name -> its words); where the chart is
    narrowed (a phone), words that would overlap are left out, the tooltip has
    them all."""
    return alt.Axis(
        title=title,
        labelAngle=0 if title.startswith("target") else -45,
        labelExpr=f"{json.dumps(words)}[{menu}][datum.value]",
        labelOverlap="greedy",
    )


def alignment_heatmaps(
    model: Seq2Seq,
    examples: Sequence[Example],
    names: Sequence[str] | None = None,
) -> alt.VConcatChart:
    """Chapter 4: the teacher-forced attention of ``model`` on each of ``examples``,
    a heatmap (target word x source word) chosen from a menu, and the weights of one
    output step, chosen with a slider, as bars.

    The weights are :func:`~attnlab.tasks.translation.attention_maps`' ``(T, S)``
    matrix per example (the ``<eos>`` row left out). ``names`` labels the sentences
    in the menu (default: ``"<S> words"``); squares mark the true alignment.
    """
    maps, _ = attention_maps(model, examples)
    names = example_names(examples, names)
    rows = []
    for name, weights, example in zip(names, maps, examples, strict=True):
        for t, row in enumerate(weights.tolist()):
            rows.append(
                {
                    "sentence": name,
                    "step": t + 1,
                    "last": len(example.target),
                    "target": example.target[t],
                    "true": example.alignment[t],
                    "s": list(range(len(row))),
                    "weight": _rounded(row),
                }
            )
    sources = {n: list(e.source) for n, e in zip(names, examples, strict=True)}
    targets = {n: ["", *e.target] for n, e in zip(names, examples, strict=True)}
    sentence = alt.param(
        name="sentence",
        value=names[0],
        bind=alt.binding_select(options=names, name="sentence "),
    )
    longest = max(len(e.target) for e in examples)
    # one size for every sentence, so that the page does not jump when it changes
    size = 14 * max(longest, max(len(e.source) for e in examples))
    step = slider("step", "output step", list(range(1, longest + 1)), 1)
    this_sentence = "datum.sentence == sentence"
    this_step = f"{this_sentence} && datum.step == min(step, datum.last)"
    source_word = f"{json.dumps(sources)}[datum.sentence][datum.s]"
    x = alt.X("s:O", axis=_word_axis(sources, "sentence", "source word"))
    base = alt.Chart(alt.NamedData("alignment"))
    cells = (
        base.transform_filter(this_sentence)
        .transform_flatten(["s", "weight"])
        .transform_calculate(source=source_word)
        .mark_rect()
        .encode(
            x=x,
            y=alt.Y("step:O", axis=_word_axis(targets, "sentence", "target word")),
            color=alt.Color(
                "weight:Q",
                scale=alt.Scale(scheme="viridis", domain=[0, 1]),
                title="attention weight",
            ),
            tooltip=[
                alt.Tooltip("target:N", title="target word"),
                alt.Tooltip("source:N", title="source word"),
                alt.Tooltip("weight:Q", title="weight", format=".3f"),
            ],
        )
    )
    truth = (
        base.transform_filter(this_sentence)
        .mark_point(shape="square", size=70, color=OKABE_ITO[4], strokeWidth=1.5)
        .encode(
            x=alt.X("true:O", title="source word"),
            y=alt.Y("step:O", title="target word"),
        )
    )
    current = (
        base.transform_filter(this_step)
        .mark_rect(filled=False, stroke="white", strokeWidth=2)
        .encode(y=alt.Y("step:O", title="target word"))
    )
    heatmap = alt.layer(
        cells,
        truth,
        current,
        title="attention weights (squares: the true alignment)",
    ).properties(width=size, height=size)
    colour = alt.Scale(
        domain=["the true source word", "another source word"],
        range=[OKABE_ITO[4], OKABE_ITO[1]],
    )
    bars = (
        alt.Chart(
            alt.NamedData("alignment"),
            name="step_weights",
            title="the weights of the output step",
        )
        .transform_filter(this_step)
        .transform_flatten(["s", "weight"])
        .transform_calculate(
            source=source_word,
            word="datum.s == datum.true ? 'the true source word'"
            " : 'another source word'",
        )
        .mark_bar()
        .encode(
            x=x,
            y=alt.Y(
                "weight:Q", scale=alt.Scale(domain=[0, 1]), title="attention weight"
            ),
            color=alt.Color("word:N", scale=colour, title=None),
            tooltip=[
                alt.Tooltip("target:N", title="target word"),
                alt.Tooltip("source:N", title="source word"),
                alt.Tooltip("weight:Q", title="weight", format=".3f"),
            ],
        )
        .properties(width=size, height=140)
    )
    chart = (
        alt.vconcat(heatmap, bars)
        .add_params(sentence, step)
        .resolve_scale(color="independent")
        .properties(datasets={"alignment": rows})  # once, for every layer
    )
    last = {n: len(e.target) for n, e in zip(names, examples, strict=True)}
    return slider_ranges(chart, "step", ["sentence"], last)


# The three weights of a source word in the chapter 5 chart, and their colours.
SERIES = {
    "global weight": "#999999",
    "softmax inside the window": OKABE_ITO[0],
    "times the Gaussian: local-p weight": OKABE_ITO[3],
}
WINDOW_DIGITS = 5  # the window's weights: 5 decimals keep the page under 300 KB


def _five(values: Sequence[float]) -> list[float]:
    return [round(v, WINDOW_DIGITS) for v in values]


def _window_rows(
    weights: torch.Tensor, p_values: list[float], half_widths: Sequence[int]
) -> tuple[list[dict], list[dict]]:
    """The rows of :func:`local_window_weights`, each over the window's positions
    ``s`` inside the sentence, with one list per output step: per rounded centre
    ``m`` and ``D``, the softmax of the scores inside the window and the global
    weight it keeps; per centre ``p`` and ``D``, the Gaussian factor, the local-p
    weights and their sum."""
    steps, length = weights.shape
    scores = weights.detach().to(torch.float64).log()  # (T, S), -inf where 0
    real = weights > 0  # (T, S)
    centre = torch.tensor(p_values, dtype=torch.float64)  # (P,)
    middles = torch.arange(length, dtype=torch.float64)  # the rounded centres (M,)
    flat = torch.zeros(len(p_values), length, dtype=torch.float64)
    window_rows, local_rows = [], []
    for d in half_widths:
        # the softmax over the window around each rounded centre m: (T, M, S)
        softmax = local_window(
            scores[:, None].expand(-1, length, -1),
            middles.expand(steps, -1),
            d,
            mask=real[:, None].expand(-1, length, -1),
            gaussian=False,
        )
        cut = window_positions(middles, d).clamp(0, length - 1)  # (M, 2D + 1)
        for m in range(length):
            inside = list(range(cut[m, 0].item(), cut[m, -1].item() + 1))
            window_rows.append(
                {
                    "m": m,
                    "D": d,
                    "s": inside,
                    "weight": [_five(row) for row in softmax[:, m, inside].tolist()],
                    "kept": _five(weights[:, inside].sum(-1).tolist()),
                }
            )
        # (T, P, S)
        local = local_window(
            scores[:, None].expand(-1, len(p_values), -1),
            centre.expand(steps, -1),
            d,
            mask=real[:, None].expand(-1, len(p_values), -1),
        )
        # the Gaussian factor inside the window: local-p over local-m of equal scores
        with_gauss = local_window(flat, centre, d)
        without = local_window(flat, centre, d, gaussian=False)
        gauss = torch.where(without > 0, with_gauss / without, 0.0)  # (P, S)
        window = window_positions(centre, d).clamp(0, length - 1)  # (P, 2D + 1)
        for i, p in enumerate(p_values):
            inside = list(range(window[i, 0].item(), window[i, -1].item() + 1))
            local_p = local[:, i, inside]  # (T, W)
            local_rows.append(
                {
                    "p": p,
                    "D": d,
                    "low": inside[0] - 0.5,
                    "high": inside[-1] + 0.5,
                    "s": inside,
                    "gauss": _five(gauss[i, inside].tolist()),
                    "weight": [_five(row) for row in local_p.tolist()],
                    "total": _five(local_p.sum(-1).tolist()),
                }
            )
    return window_rows, local_rows


def local_window_weights(
    weights: torch.Tensor,
    source: Sequence[str],
    centres: Sequence[float] | None = None,
    half_widths: Sequence[int] = (1, 2, 3, 4),
    step: int | None = None,
) -> alt.HConcatChart:
    """Chapter 5: Luong's local-p attention worked on a global model's weights, with
    sliders for the output step ``t`` (starting at ``step``, the middle one by
    default), the centre ``p_t`` and the half-width ``D`` (the Gaussian's ``sigma =
    D / 2`` follows it).

    ``weights (T, S)`` are a global model's weights over the ``S`` words of
    ``source``, one row per output step (e.g. one matrix of
    :func:`~attnlab.tasks.translation.attention_maps`). Softmax ignores a constant
    added to every score, so ``log weights`` are the model's scores for
    :func:`~attnlab.luong.local_window`. The left panel shows the global weights,
    the window ``round(p_t) - D .. round(p_t) + D``
    (:func:`~attnlab.luong.window_positions`) and the Gaussian; the right one the
    softmax of the scores inside the window (``gaussian=False``: the window cuts,
    the softmax scales up what is left) beside the local-p weights (the softmax
    times the Gaussian); under each, the global weight the window keeps and the sum
    of the local-p weights. ``centres``: the values of ``p_t`` (default ``0, 0.5,
    ..., S - 1``).
    """
    if weights.ndim != 2 or weights.shape[1] != len(source):
        raise ValueError(
            f"weights must have shape (T, {len(source)}) (one column per source"
            f" word), got {tuple(weights.shape)}"
        )
    steps, length = weights.shape
    p_values = (
        grid(0.0, length - 1.0, 2 * length - 1) if centres is None else list(centres)
    )
    window_rows, local_rows = _window_rows(weights, p_values, half_widths)
    global_rows = [
        {
            "s": list(range(length)),
            "weight": [_five(row) for row in weights.tolist()],
        }
    ]
    start = (steps + 1) // 2 if step is None else step
    step_t = slider("step", "output step t", list(range(1, steps + 1)), start)
    p_t = slider("p", "window centre p_t", p_values, p_values[len(p_values) // 2])
    half_width = slider(
        "D",
        "half-width D (σ = D/2)",
        list(half_widths),
        half_widths[len(half_widths) // 2],
    )
    labels = json.dumps(list(source))
    positions = alt.Scale(domain=[-0.5, length - 0.5], nice=False, zero=False)
    words = alt.Axis(
        values=list(range(length)),
        labelExpr=f"{labels}[datum.value]",
        labelAngle=-45,
        labelOverlap=False,
        title="source word",
    )
    x = alt.X("x:Q", scale=positions, axis=words)
    unit = alt.Scale(domain=[0, 1])
    colour = alt.Color(
        "series:N",
        scale=alt.Scale(domain=list(SERIES), range=list(SERIES.values())),
        title=None,
    )
    width = 22 * length  # the two panels side by side in the book's column
    at_window = where({"p": "p", "D": "D"})
    # the softmax depends on the window only, that is on the rounded centre
    at_cut = "datum.D == D && datum.m == floor(p + 0.5)"

    def bars(data: str, keep: str, series: str, shift: float) -> alt.Chart:
        """Bars of ``series`` at the output step, from the row of ``data`` that
        ``keep`` lets through, ``shift`` word from the word's position."""
        return (
            alt.Chart(alt.NamedData(data), name=f"{data}_weights")
            .transform_filter(keep)
            .transform_calculate(w="datum.weight[step - 1]")
            .transform_flatten(["s", "w"])
            .transform_calculate(
                x=f"datum.s + {shift}",
                series=json.dumps(series),
                word=f"{labels}[datum.s]",
            )
            .mark_bar(size=(0.8 if shift == 0 else 0.38) * width / length)
            .encode(
                x=x,
                y=alt.Y("w:Q", scale=unit, title="weight"),
                color=colour,
                tooltip=[
                    alt.Tooltip("word:N", title="source word"),
                    alt.Tooltip("series:N", title="weight"),
                    alt.Tooltip("w:Q", title="value", format=".3f"),
                ],
            )
        )

    shade = (
        alt.Chart(alt.NamedData("local"))
        .transform_filter(at_window)
        .mark_rect(color=OKABE_ITO[0], opacity=0.15)
        .encode(x=alt.X("low:Q", scale=positions, axis=words), x2="high:Q")
    )
    centre_rule = (
        alt.Chart(alt.Data(values=[{}]))
        .transform_calculate(x="p")
        .mark_rule(color=OKABE_ITO[4], strokeWidth=2)
        .encode(x=x)
    )
    gaussian = (
        alt.Chart(alt.NamedData("local"), name="gaussian")
        .transform_filter(at_window)
        .transform_flatten(["s", "gauss"])
        .transform_calculate(x="datum.s")
        .mark_line(
            color="black",
            strokeDash=[4, 3],
            point=alt.OverlayMarkDef(color="black"),
        )
        .encode(
            x=x,
            y=alt.Y("gauss:Q", scale=unit, title="weight"),
            tooltip=[alt.Tooltip("gauss:Q", title="Gaussian", format=".3f")],
        )
    )
    left = alt.layer(
        shade,
        bars("global", "true", "global weight", 0),
        gaussian,
        centre_rule,
        title="global weights, window, Gaussian (dashed)",
    ).properties(width=width, height=200)
    right = alt.layer(
        shade,
        bars("window", at_cut, "softmax inside the window", -0.2),
        bars("local", at_window, "times the Gaussian: local-p weight", 0.2),
        centre_rule,
        title="softmax in the window, times the Gaussian",
    ).properties(width=width, height=200)

    def gauge(data: str, keep: str, field: str, text: str) -> alt.LayerChart:
        """A bar from 0 to the output step's ``field`` in the row of ``data`` that
        ``keep`` lets through, labelled ``text`` and the value."""
        base = (
            alt.Chart(alt.NamedData(data))
            .transform_filter(keep)
            .transform_calculate(
                value=f"datum.{field}[step - 1]",
                label=f"{json.dumps(text)} + format(datum.{field}[step - 1], '.3f')",
            )
        )
        return alt.layer(
            base.mark_bar(color="#DDDDDD", height=18).encode(
                x=alt.X("value:Q", scale=unit, axis=None)
            ),
            base.mark_text(align="left", dx=4)
            .encode(x=alt.value(0), text="label:N")
            .properties(name=f"{field}_text"),
        ).properties(width=width, height=20)

    kept = gauge("window", at_cut, "kept", "global weight inside the window: ")
    total = gauge("local", at_window, "total", "sum of the local-p weights: ")
    return (
        alt.hconcat(
            alt.vconcat(left, kept, spacing=4), alt.vconcat(right, total, spacing=4)
        )
        .add_params(step_t, p_t, half_width)
        .properties(
            datasets={
                "global": global_rows,
                "window": window_rows,
                "local": local_rows,
            }
        )
        # labelLimit 0: the longest label is shown whole, not cut at 160 px
        .configure_legend(orient="bottom", direction="vertical", labelLimit=0)
    )
