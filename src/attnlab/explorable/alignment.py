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
    menu ``menu`` shows (``words``: sentence name -> its words)."""
    return alt.Axis(
        title=title,
        labelAngle=0 if title.startswith("target") else -45,
        labelExpr=f"{json.dumps(words)}[{menu}][datum.value]",
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


def local_window_weights(
    weights: torch.Tensor,
    source: Sequence[str],
    centres: Sequence[float] | None = None,
    half_widths: Sequence[int] = (1, 2, 3, 4),
) -> alt.HConcatChart:
    """Chapter 5: Luong's local-p window laid over the weights of a global attention
    model, with sliders for the output step ``t``, the centre ``p_t`` and the
    half-width ``D``.

    ``weights (T, S)`` are a global model's weights over the ``S`` words of
    ``source``, one row per output step (e.g. one matrix of
    :func:`~attnlab.tasks.translation.attention_maps`). Softmax ignores a constant
    added to every score, so ``log weights`` are the model's scores for
    :func:`~attnlab.luong.local_window`, which keeps the window
    ``round(p_t) - D .. round(p_t) + D`` (:func:`~attnlab.luong.window_positions`)
    and multiplies by the Gaussian of ``sigma = D / 2``. ``centres``: the values of
    ``p_t`` (default ``0, 0.5, ..., S - 1``).
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
    centre = torch.tensor(p_values, dtype=torch.float64)  # (P,)
    scores = weights.detach().to(torch.float64).log()  # (T, S), -inf where 0
    real = weights[:, None, :].expand(-1, len(p_values), -1) > 0  # (T, P, S)
    flat = torch.zeros(len(p_values), length, dtype=torch.float64)
    global_rows = [
        {"step": t + 1, "s": list(range(length)), "weight": _rounded(row)}
        for t, row in enumerate(weights.tolist())
    ]
    local_rows, gauss_rows = [], []
    for d in half_widths:
        local = local_window(
            scores[:, None, :].expand(-1, len(p_values), -1),
            centre.expand(steps, -1),
            d,
            mask=real,
        )  # (T, P, S)
        # the Gaussian factor inside the window: local-p over local-m of equal scores
        with_gauss = local_window(flat, centre, d)
        without = local_window(flat, centre, d, gaussian=False)
        gauss = torch.where(without > 0, with_gauss / without, 0.0)  # (P, S)
        window = window_positions(centre, d).clamp(0, length - 1)  # (P, 2D + 1)
        for i, p in enumerate(p_values):
            inside = list(range(window[i, 0].item(), window[i, -1].item() + 1))
            gauss_rows.append(
                {
                    "p": p,
                    "D": d,
                    "low": inside[0] - 0.5,
                    "high": inside[-1] + 0.5,
                    "s": inside,
                    "gauss": _rounded(gauss[i, inside].tolist()),
                }
            )
            for t in range(steps):
                kept = local[t, i, inside]
                local_rows.append(
                    {
                        "step": t + 1,
                        "p": p,
                        "D": d,
                        "s": inside,
                        "weight": _rounded(kept.tolist()),
                        "total": round(kept.sum().item(), DIGITS),
                    }
                )
    step = slider("step", "output step", list(range(1, steps + 1)), 1)
    p_t = slider("p", "window centre p_t", p_values, p_values[len(p_values) // 2])
    half_width = slider(
        "D", "half-width D", list(half_widths), half_widths[len(half_widths) // 2]
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
    x = alt.X("s:Q", scale=positions, axis=words)
    y = alt.Y("weight:Q", scale=alt.Scale(domain=[0, 1]), title="weight")
    width = 28 * length
    bar_width = 0.7 * width / length
    at_window = where({"p": "p", "D": "D"})
    shade = (
        alt.Chart(alt.NamedData("window"))
        .transform_filter(at_window)
        .mark_rect(color=OKABE_ITO[0], opacity=0.15)
        .encode(x=alt.X("low:Q", scale=positions, axis=words), x2="high:Q")
    )
    centre_rule = (
        alt.Chart(alt.Data(values=[{}]))
        .transform_calculate(centre="p")
        .mark_rule(color=OKABE_ITO[4], strokeWidth=2)
        .encode(x=alt.X("centre:Q", scale=positions, axis=words))
    )
    global_bars = (
        alt.Chart(alt.Data(values=global_rows))
        .transform_filter("datum.step == step")
        .transform_flatten(["s", "weight"])
        .mark_bar(color="grey", size=bar_width)
        .encode(x=x, y=y, tooltip=["weight:Q"])
    )
    gaussian = (
        alt.Chart(alt.NamedData("window"), name="gaussian")
        .transform_filter(at_window)
        .transform_flatten(["s", "gauss"])
        .mark_line(
            color="black",
            strokeDash=[4, 3],
            point=alt.OverlayMarkDef(color="black"),
        )
        .encode(
            x=alt.X("s:Q", scale=positions, axis=words),
            y=alt.Y("gauss:Q", scale=alt.Scale(domain=[0, 1]), title="weight"),
        )
    )
    left = alt.layer(
        shade,
        global_bars,
        gaussian,
        centre_rule,
        title="global weights, window and Gaussian (dashed)",
    ).properties(width=width, height=200)
    local_bars = (
        alt.Chart(alt.NamedData("local"), name="local_weights")
        .transform_filter(f"datum.step == step && {at_window}")
        .transform_flatten(["s", "weight"])
        .mark_bar(color=OKABE_ITO[3], size=bar_width)
        .encode(x=x, y=y, tooltip=["weight:Q"])
    )
    total = (
        alt.Chart(alt.NamedData("local"))
        .transform_filter(f"datum.step == step && {at_window}")
        .transform_calculate(
            text="'sum of the weights: ' + format(datum.total, '.3f')"
        )
        .mark_text(align="right", baseline="top", dx=-4, dy=4)
        .encode(text="text:N", x=alt.value(width), y=alt.value(0))
    )
    right = alt.layer(
        shade, local_bars, centre_rule, total, title="local-p weights"
    ).properties(width=width, height=200)
    # hconcat appends the panel's index to a layer's name: the spec names these two
    # "gaussian_0" and "local_weights_1" (their marks "local_weights_1_marks", ...)
    return (
        alt.hconcat(left, right)
        .add_params(step, p_t, half_width)
        .properties(datasets={"window": gauss_rows, "local": local_rows})
    )
