"""Explorable pointing, step by step: a pointer network sorting numbers (chapter 11)
and the tour it decodes greedily through the cities of a travelling salesman
instance (chapter 12)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import altair as alt
import torch

from attnlab._validate import check_last_dim, check_ndim, check_shape
from attnlab.explorable.controls import slider
from attnlab.explorable.page import OKABE_ITO
from attnlab.pointer import PointerNet
from attnlab.tasks import tour_length

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
    """Chapter 11: a sorter's greedy decoding, step by step.

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
            # two lines, so that the chart can narrow to a phone's width
            title=["pointer distribution at this step", "(shaded: chosen before)"],
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
        output_base.mark_text(dy=-7).encode(text="input:N"),
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


# What the edge that a step of a tour adds is to the optimal tour, and its colour.
EDGES = {
    "an edge of the optimal tour": "black",
    "not in the optimal tour": OKABE_ITO[0],
    "the first city": "#777777",
}
OPTIMAL = "the optimal tour"  # the last option of chapter 12's menu of tours
TOUR_DIGITS = 6  # probabilities and coordinates rounded to 6 decimals
# chapter 12's map and the panels beside it, in pixels: side by side in the book's
# column at 1280 pixels
MAP, WIDTH = 270, 250


def _six(values: Sequence[float]) -> list[float]:
    return [round(v, TOUR_DIGITS) for v in values]


def _edge(pair: Sequence[int], optimal: set[frozenset[int]]) -> str:
    """What the edge between the cities ``pair`` is to the ``optimal`` tour's
    edges."""
    return list(EDGES)[0 if frozenset(pair) in optimal else 1]


def followed(
    model: PointerNet, points: torch.Tensor, tours: torch.Tensor
) -> torch.Tensor:
    """The pointer distribution of every step ``(L, n, n)`` when ``model`` is fed
    the cities of ``tours (L, n)`` (teacher forcing, the cities visited masked): for
    the greedy tours, greedy decoding's own distributions."""
    with torch.no_grad():
        return model(points, tours).exp()


def _tour_rows(
    model: PointerNet,
    points: torch.Tensor,
    names: Sequence[str],
    optimal: torch.Tensor,
    tours: Mapping[str, torch.Tensor],
) -> dict[str, list[dict]]:
    """The rows of :func:`tour_steps`, for each instance and tour followed: per
    step, each city's pointer probability and status (``cities``), and the
    probability of the city taken with the edge it adds (``taken``); the tour's
    edges (``edges``: edge ``k`` reaches the city of step ``k``, the way back
    closes the tour at step ``n``); its length, gap and probability
    (``summary``); and the optimal tour, closed (``optimal``)."""
    n = points.shape[1]
    rows: dict[str, list[dict]] = {
        key: [] for key in ("cities", "taken", "edges", "summary", "optimal")
    }
    best = tour_length(points, optimal)  # (L,)
    for label, tour in tours.items():
        probs = followed(model, points, tour)  # (L, n, n)
        lengths = tour_length(points, tour)  # (L,)
        with torch.no_grad():
            probability = model.log_likelihood(points, tour).exp()  # (L,)
        for i, name in enumerate(names):
            order = tour[i].tolist()
            x, y = _six(points[i, :, 0].tolist()), _six(points[i, :, 1].tolist())
            cycle = optimal[i].tolist()
            best_edges = {
                frozenset(e) for e in zip(cycle, cycle[1:] + cycle[:1], strict=True)
            }
            at = {"which": name, "tour": label}
            for t in range(1, n + 1):
                before = set(order[: t - 1])
                rows["cities"].append(
                    {
                        **at,
                        "step": t,
                        "city": list(range(n)),
                        "x": x,
                        "y": y,
                        "p": _six(probs[i, t - 1].tolist()),
                        "status": [
                            list(STATUS)[
                                0 if j == order[t - 1] else 1 if j in before else 2
                            ]
                            for j in range(n)
                        ],
                        "before": [int(j in before) for j in range(n)],
                    }
                )
                rows["taken"].append(
                    {
                        **at,
                        "k": t,
                        "p": round(
                            probs[i, t - 1, order[t - 1]].item(), TOUR_DIGITS
                        ),
                        "edge": _edge(order[t - 2 : t], best_edges)
                        if t > 1
                        else "the first city",
                    }
                )
            closing = zip(order, order[1:] + order[:1], strict=True)
            rows["edges"] += [
                {
                    **at,
                    "k": min(k, n),
                    "x": x[a],
                    "y": y[a],
                    "x2": x[b],
                    "y2": y[b],
                    "edge": _edge((a, b), best_edges),
                }
                for k, (a, b) in enumerate(closing, start=2)
            ]
            rows["summary"].append(
                {
                    **at,
                    "length": round(lengths[i].item(), TOUR_DIGITS),
                    "gap": round((lengths[i] / best[i] - 1).item(), TOUR_DIGITS),
                    "probability": float(f"{probability[i].item():.6g}"),
                }
            )
    for i, name in enumerate(names):
        closed = [*optimal[i].tolist(), int(optimal[i, 0])]
        x, y = _six(points[i, :, 0].tolist()), _six(points[i, :, 1].tolist())
        rows["optimal"] += [
            {"which": name, "k": k, "x": x[c], "y": y[c]}
            for k, c in enumerate(closed, start=1)
        ]
    return rows


def tour_steps(
    model: PointerNet,
    points: torch.Tensor,
    names: Sequence[str],
    optimal: torch.Tensor,
    tours: Mapping[str, torch.Tensor] | None = None,
    step: int | None = None,
) -> alt.HConcatChart:
    """Chapter 12: a tour built one city at a time, with the pointer distribution of
    every step.

    ``points (L, n, 2)``: ``L`` instances in the unit square, named ``names`` in a
    menu, with their optimal tours ``optimal (L, n)``. A second menu picks the tour
    followed: one of ``tours`` (label -> ``(L, n)`` tours; default ``{"greedy
    decoding": model.greedy(points).indices}``) or the optimal tour. At step ``t``
    (a slider, starting at ``step``, the middle one by default) the model has been
    fed the followed tour's first ``t - 1`` cities (:func:`followed`). The map
    sizes each city by the probability that step ``t`` points at it, draws the
    tour up to the city the step takes (ringed), each edge black where the optimal
    tour (dashed) has it and orange where not; the bars give the whole
    distribution, the cities visited shaded; the lower panel the probability of
    the city each step takes, coloured by its edge, with the tour's length, its gap
    to the optimum and its probability under the model.
    """
    check_ndim("points", points, "(instances, n, 2)", ndim=3)
    check_last_dim("points", points, 2, "(instances, n, 2)")
    _check_names(names, len(points))
    check_shape("optimal", optimal, points.shape[:2], "(instances, n)")
    if tours is None:
        with torch.no_grad():
            tours = {"greedy decoding": model.greedy(points).indices}
    if OPTIMAL in tours:
        raise ValueError(
            f"tours must not use the label {OPTIMAL!r}, the chart's own"
        )
    for label, tour in tours.items():
        check_shape(f"tours[{label!r}]", tour, points.shape[:2], "(instances, n)")
    options = [*tours, OPTIMAL]
    rows = _tour_rows(model, points, names, optimal, {**tours, OPTIMAL: optimal})
    n = points.shape[1]
    unit = alt.Scale(domain=[0, 1])
    this_tour = "datum.which == which && datum.tour == tour"
    now = f"{this_tour} && datum.step == step"
    # one colour scale for the cities and the edges, shared by the panels
    colours = {**STATUS, **EDGES}
    scale = alt.Scale(domain=list(colours), range=list(colours.values()))
    status = alt.Color("status:N", scale=scale, title=None)
    edge = alt.Color("edge:N", scale=scale, title=None)
    cities = alt.Chart(alt.NamedData("cities")).transform_filter(now)
    best = (
        alt.Chart(alt.Data(values=rows["optimal"]))
        .transform_filter("datum.which == which")
        .mark_line(color="#999999", strokeDash=[3, 3], strokeWidth=1.5)
        .encode(
            x=alt.X("x:Q", scale=unit, title="x"),
            y=alt.Y("y:Q", scale=unit, title="y"),
            order="k:Q",
        )
    )
    edges = (
        alt.Chart(alt.Data(values=rows["edges"]), name="edges")
        .transform_filter(f"{this_tour} && datum.k <= step")
        .mark_rule(strokeWidth=2.5)
        .encode(x="x:Q", y="y:Q", x2="x2:Q", y2="y2:Q", color=edge)
    )
    dots = (
        cities.transform_flatten(["city", "x", "y", "p", "status"])
        .transform_calculate(size="datum.status == 'chosen before' ? 0 : datum.p")
        .mark_circle(stroke="white", strokeWidth=0.5, opacity=1)
        .encode(
            x="x:Q",
            y="y:Q",
            color=status,
            size=alt.Size(
                "size:Q",
                scale=alt.Scale(domain=[0, 1], range=[40, 900]),
                legend=None,
            ),
            tooltip=["city:O", alt.Tooltip("p:Q", format=".4f"), "status:N"],
        )
        .properties(name="cities")
    )
    ring = (
        cities.transform_flatten(["city", "x", "y", "status"])
        .transform_filter(f"datum.status == {list(STATUS)[0]!r}")
        .mark_point(size=1000, shape="circle", color="black", strokeWidth=2)
        .encode(x="x:Q", y="y:Q")
        .properties(name="choice")
    )
    numbers = (
        cities.transform_flatten(["city", "x", "y"])
        .mark_text(dx=11, dy=-9)
        .encode(x="x:Q", y="y:Q", text="city:N")
    )
    tour_map = alt.layer(
        best,
        edges,
        dots,
        ring,
        numbers,
        title="the tour so far (dashed: the optimal tour)",
    ).properties(width=MAP, height=MAP)
    city_axis = alt.X(
        "city:O",
        scale=alt.Scale(domain=list(range(n))),
        title="city",
        axis=alt.Axis(labelAngle=0),
    )
    distribution = (
        alt.layer(
            alt.Chart()
            .mark_bar(color="#E5E5E5")
            .encode(x=city_axis, y=alt.Y("before:Q", scale=unit, title=None)),
            alt.Chart()
            .mark_bar()
            .encode(
                x=city_axis,
                y=alt.Y("p:Q", scale=unit, title="pointer probability"),
                color=status,
                tooltip=["city:O", alt.Tooltip("p:Q", format=".4f"), "status:N"],
            ),
            data=alt.NamedData("cities"),
            name="pointer",
            title="pointer distribution (shaded: visited)",
        )
        .transform_filter(now)
        .transform_flatten(["city", "p", "status", "before"])
        .properties(width=WIDTH, height=130)
    )
    step_axis = alt.X(
        "k:O",
        scale=alt.Scale(domain=list(range(1, n + 1))),
        title="step",
        axis=alt.Axis(labelAngle=0),
    )
    taken = (
        alt.layer(
            alt.Chart()
            .mark_bar()
            .encode(
                x=step_axis,
                y=alt.Y("p:Q", scale=unit, title="probability"),
                color=edge,
                tooltip=["k:O", alt.Tooltip("p:Q", format=".4f"), "edge:N"],
            ),
            # a frame around the column of the step the slider is at
            alt.Chart()
            .transform_filter("datum.k == step")
            .transform_calculate(top="1")
            .mark_bar(
                filled=False, stroke=STATUS["chosen at this step"], strokeWidth=2
            )
            .encode(x=step_axis, y=alt.Y("top:Q", scale=unit)),
            data=alt.Data(values=rows["taken"]),
            name="taken",
            title="the probability of the city each step takes",
        )
        .transform_filter(this_tour)
        .properties(width=WIDTH, height=100)
    )
    summary = (
        alt.Chart(alt.Data(values=rows["summary"]), name="summary")
        .transform_filter(this_tour)
        .transform_calculate(
            text="'length ' + format(datum.length, '.3f') + ', '"
            " + format(datum.gap, '.1%') + ' above the optimum;\\nits probability '"
            " + format(datum.probability, '.2~g')"
        )
        # on two lines, narrower than the panels above it (a phone's column)
        .mark_text(align="left", baseline="top", lineBreak="\n")
        .encode(x=alt.value(0), y=alt.value(0), text="text:N")
        .properties(width=WIDTH, height=32, view=alt.ViewConfig(stroke=None))
    )
    start = (n + 1) // 2 if step is None else step
    return (
        alt.hconcat(tour_map, alt.vconcat(distribution, taken, summary))
        .add_params(
            _which(names, "test instance"),
            alt.param(
                name="tour",
                value=options[0],
                bind=alt.binding_select(options=options, name="tour followed "),
            ),
            slider("step", "decoding step", list(range(1, n + 1)), start),
        )
        .properties(datasets={"cities": rows["cities"]})  # once, for every layer
        .configure_legend(orient="bottom", direction="vertical")
    )
