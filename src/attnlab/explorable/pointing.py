"""Explorable pointing, step by step: a pointer network sorting numbers (chapter 10)
and the tour it decodes greedily through the cities of a travelling salesman
instance (chapter 11)."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import torch

from attnlab._validate import check_last_dim, check_ndim, check_shape
from attnlab.explorable.controls import slider
from attnlab.explorable.page import OKABE_ITO
from attnlab.pointer import PointerNet

# What an input is at a decoding step, and its colour.
STATUS = {
    "chosen at this step": OKABE_ITO[4],
    "chosen before": "#999999",
    "not chosen yet": OKABE_ITO[3],
}
MASKS = {"on": True, "off": False}  # the menu's options: greedy's mask_chosen


def _decode(
    model: PointerNet, inputs: torch.Tensor, mask_chosen: bool = True
) -> tuple[list[list[int]], list[list[list[float]]]]:
    """Greedy decoding of ``inputs (L, n, d)`` by ``model`` (no end token): the
    positions chosen ``(L, n)`` and every step's pointer distribution ``(L, n, n)``,
    rounded to 8 decimals."""
    if model.end_token:
        raise ValueError("the step-by-step charts take a model without an end token")
    with torch.no_grad():
        decoded = model.greedy(inputs, mask_chosen=mask_chosen)
    probs = [
        [[round(p, 8) for p in step] for step in steps]
        for steps in decoded.probs.tolist()
    ]
    return decoded.indices.tolist(), probs


def _check_names(names: Sequence[str], count: int) -> None:
    """One distinct menu entry per input."""
    if len(names) != count or len(set(names)) != count:
        raise ValueError(f"names must be {count} distinct names, got {list(names)}")


def _which(names: Sequence[str], label: str) -> alt.Parameter:
    """A menu over the inputs' ``names``, starting at the first."""
    return alt.param(
        name="which",
        value=names[0],
        bind=alt.binding_select(options=list(names), name=f"{label} "),
    )


def _unique(labels: Sequence[str]) -> list[str]:
    """``labels``, each one that repeats given its position: ``"0.5 #3"``."""
    return [
        f"{label} #{j}" if list(labels).count(label) > 1 else label
        for j, label in enumerate(labels)
    ]


def pointer_steps(
    model: PointerNet,
    inputs: torch.Tensor,
    names: Sequence[str],
    step: int | None = None,
) -> alt.VConcatChart:
    """Chapter 10: a sorter's greedy decoding, step by step.

    ``inputs (L, n, 1)``: ``L`` lists of numbers, named ``names`` in a menu. Each
    is decoded by ``model.greedy`` with the mask on and off (a second menu); a
    slider picks the step ``t`` (starting at ``step``, the middle one by
    default). The upper panel shows step ``t``'s pointer distribution over the
    inputs (labelled by their values, in input order), the inputs chosen before
    it shaded; the lower one the values output by steps ``1..t``.
    """
    check_ndim("inputs", inputs, "(lists, n, 1)", ndim=3)
    check_last_dim("inputs", inputs, 1, "(lists, n, 1)")
    _check_names(names, len(inputs))
    n = inputs.shape[1]
    values = inputs[..., 0].tolist()
    labels = [_unique([f"{v:.3f}" for v in row]) for row in values]
    pointer_rows, output_rows = [], []
    for mask, mask_chosen in MASKS.items():
        chosen, probs = _decode(model, inputs, mask_chosen)
        for name, order, steps, row, label in zip(
            names, chosen, probs, values, labels, strict=True
        ):
            for t in range(1, n + 1):
                before = set(order[: t - 1])
                status = [
                    "chosen at this step"
                    if j == order[t - 1]
                    else "chosen before"
                    if j in before
                    else "not chosen yet"
                    for j in range(n)
                ]
                pointer_rows.append(
                    {
                        "which": name,
                        "mask": mask,
                        "step": t,
                        "position": list(range(n)),
                        "input": label,
                        "p": steps[t - 1],
                        "status": status,
                        "before": [int(j in before) for j in range(n)],
                    }
                )
                output_rows.append(
                    {
                        "which": name,
                        "mask": mask,
                        "k": t,
                        "value": round(row[order[t - 1]], 8),
                        "input": label[order[t - 1]],
                    }
                )
    at = "datum.which == which && datum.mask == mask"
    colour = alt.Scale(domain=list(STATUS), range=list(STATUS.values()))
    x = alt.X(
        "input:N",
        sort=alt.EncodingSortField(field="position", op="min"),
        title="input (its value, in input order)",
        axis=alt.Axis(labelAngle=-45),
    )
    probability = alt.Scale(domain=[0, 1])
    shade = (
        alt.Chart()
        .mark_bar(color="#E5E5E5")
        .encode(
            x=x, y=alt.Y("before:Q", scale=probability, title="pointer probability")
        )
    )
    bars = (
        alt.Chart()
        .mark_bar()
        .encode(
            x=x,
            y=alt.Y("p:Q", scale=probability, title="pointer probability"),
            color=alt.Color("status:N", scale=colour, title="input"),
            tooltip=["input:N", alt.Tooltip("p:Q", format=".4f"), "status:N"],
        )
    )
    distribution = (
        alt.layer(
            shade,
            bars,
            data=alt.Data(values=pointer_rows),
            name="pointer",
            title="pointer distribution at this step (shaded: chosen before)",
        )
        .transform_filter(f"{at} && datum.step == step")
        .transform_flatten(["position", "input", "p", "status", "before"])
        .properties(width=420, height=200)
    )
    output_base = (
        alt.Chart()
        .transform_filter(f"{at} && datum.k <= step")
        .encode(
            x=alt.X(
                "k:O",
                scale=alt.Scale(domain=list(range(1, n + 1))),
                title="output step",
                axis=alt.Axis(labelAngle=0),
            ),
            y=alt.Y("value:Q", scale=alt.Scale(domain=[0, 1]), title="value output"),
        )
    )
    output = alt.layer(
        output_base.mark_bar().encode(
            color=alt.condition(
                "datum.k == step",
                alt.value(STATUS["chosen at this step"]),
                alt.value(STATUS["chosen before"]),
            ),
            tooltip=["k:O", "input:N"],
        ),
        output_base.mark_text(dy=-7, fontSize=10).encode(text="input:N"),
        data=alt.Data(values=output_rows),
        name="output",
        title="output so far",
    ).properties(width=420, height=140)
    start = (n + 1) // 2 if step is None else step
    controls = [
        _which(names, "list"),
        alt.param(
            name="mask",
            value="on",
            bind=alt.binding_select(options=list(MASKS), name="mask at decoding "),
        ),
        slider("step", "decoding step", list(range(1, n + 1)), start),
    ]
    return alt.vconcat(distribution, output).add_params(*controls)


def tour_steps(
    model: PointerNet,
    points: torch.Tensor,
    names: Sequence[str],
    optimal: torch.Tensor | None = None,
    step: int | None = None,
) -> alt.LayerChart:
    """Chapter 11: the tour a pointer network decodes greedily, step by step.

    ``points (L, n, 2)``: ``L`` instances in the unit square, named ``names`` in a
    menu; ``optimal (L, n)``, if given, their optimal tours, drawn dashed. A slider
    picks the step ``t`` (starting at ``step``, the middle one by default): each
    city is coloured by the probability that step ``t`` of ``model.greedy`` points
    at it, the tour of steps ``1..t-1`` is drawn as a line, and the city step ``t``
    chooses is ringed.
    """
    check_ndim("points", points, "(instances, n, 2)", ndim=3)
    check_last_dim("points", points, 2, "(instances, n, 2)")
    _check_names(names, len(points))
    if optimal is not None:
        check_shape("optimal", optimal, points.shape[:2], "(instances, n)")
    n = points.shape[1]
    chosen, probs = _decode(model, points)
    city_rows, tour_rows, choice_rows = [], [], []
    for i, (name, order, steps) in enumerate(zip(names, chosen, probs, strict=True)):
        xy = [[round(c, 8) for c in city] for city in points[i].tolist()]
        x, y = [c[0] for c in xy], [c[1] for c in xy]
        for t in range(1, n + 1):
            city_rows.append(
                {
                    "which": name,
                    "step": t,
                    "city": list(range(n)),
                    "x": x,
                    "y": y,
                    "p": steps[t - 1],
                }
            )
            choice = order[t - 1]
            choice_rows.append(
                {
                    "which": name,
                    "step": t,
                    "city": choice,
                    "x": x[choice],
                    "y": y[choice],
                }
            )
        tours = [("greedy, so far", order)]
        if optimal is not None:
            # closed: back to the first city
            tours.append(("optimal", [*optimal[i].tolist(), int(optimal[i, 0])]))
        for tour, cities in tours:
            tour_rows += [
                {"which": name, "tour": tour, "k": k, "x": x[c], "y": y[c]}
                for k, c in enumerate(cities, start=1)
            ]
    square = alt.Scale(domain=[0, 1])
    at = "datum.which == which && datum.step == step"
    line = (
        alt.Chart(alt.Data(values=tour_rows), name="tour")
        .mark_line(color="black", strokeWidth=2)
        .encode(
            x=alt.X("x:Q", scale=square, title="x"),
            y=alt.Y("y:Q", scale=square, title="y"),
            order="k:Q",
            strokeDash=alt.StrokeDash(
                "tour:N",
                scale=alt.Scale(
                    domain=["greedy, so far", "optimal"], range=[[1, 0], [2, 4]]
                ),
                title="tour",
            ),
        )
        .transform_filter(
            "datum.which == which && (datum.tour == 'optimal' || datum.k < step)"
        )
    )
    cities = (
        alt.Chart(alt.Data(values=city_rows), name="cities")
        .mark_circle(size=220, stroke="black", strokeWidth=1, opacity=1)
        .encode(
            x="x:Q",
            y="y:Q",
            color=alt.Color(
                "p:Q",
                scale=alt.Scale(scheme="viridis", domain=[0, 1]),
                title="pointer probability",
            ),
            tooltip=["city:O", alt.Tooltip("p:Q", format=".4f")],
        )
        .transform_filter(at)
        .transform_flatten(["city", "x", "y", "p"])
    )
    ring = (
        alt.Chart(alt.Data(values=choice_rows), name="choice")
        .mark_point(
            size=700, shape="circle", color=OKABE_ITO[4], strokeWidth=3, opacity=1
        )
        .encode(x="x:Q", y="y:Q", tooltip=["city:O"])
        .transform_filter(at)
    )
    label = (
        alt.Chart(alt.Data(values=choice_rows))
        .mark_text(dy=-22, color=OKABE_ITO[4], fontWeight="bold")
        .encode(x="x:Q", y="y:Q", text=alt.value("greedy choice"))
        .transform_filter(at)
    )
    start = (n + 1) // 2 if step is None else step
    return (
        alt.layer(line, cities, ring, label)
        .add_params(
            _which(names, "test instance"),
            slider("step", "decoding step", list(range(1, n + 1)), start),
        )
        .properties(
            width=380, height=380, title="greedy decoding, one step at a time"
        )
    )
