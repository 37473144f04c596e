"""Explorable figures for chapters 1, 2 and 9: sliders and menus that work in the
static book.

Each figure is an Altair (Vega-Lite) chart whose data ``attnlab`` computes on a grid
of control settings, by the same functions the chapter teaches; the browser only
picks the rows of the current setting. In the built book the chart is an HTML output
that loads Vega from the book's own ``_static/vega/`` folder (no network, no
kernel); in Jupyter or Colab it is an ordinary Altair chart.
"""

from __future__ import annotations

import html as html_text
import json
import math
import os
from collections.abc import Sequence

import altair as alt
import torch
from IPython.display import HTML

from attnlab.attention import Score, attend
from attnlab.memory import SoftDict
from attnlab.ntm import content_addressing, interpolate, sharpen, shift

# The versions the pinned Altair expects (altair.VEGA_VERSION and friends), copied
# into book/_static/vega/ by scripts/vendor_vega.py.
VENDORED = {"vega": "6.4.0", "vega-lite": "6.4.1", "vega-embed": "7.3.0"}
# Where a chapter's page (notebooks/*.html) finds them in the built book.
VENDOR_URL = "../_static/vega"
# Okabe and Ito's colour-blind-safe palette, without its black, the pale yellow last.
OKABE_ITO = [
    "#E69F00",
    "#56B4E9",
    "#009E73",
    "#0072B2",
    "#D55E00",
    "#CC79A7",
    "#F0E442",
]
TOLERANCE = 1e-6  # how close a grid value must be to a control's value


def for_static_book() -> bool:
    """Whether this kernel runs for the static book (``make book`` sets
    ``ATTNLAB_PROGRESS=lines``)."""
    return os.environ.get("ATTNLAB_PROGRESS") == "lines"


def html(chart: alt.TopLevelMixin, name: str, description: str) -> HTML:
    """The chart as an HTML output that draws itself from the vendored Vega files.

    ``name`` (letters, digits, ``-``) names the chart on the page:
    ``window.attnlabViews[name]`` holds its Vega view once drawn. ``description`` is
    the text alternative, shown under the chart and given to screen readers.
    """
    if not name.replace("-", "").isalnum():
        raise ValueError(f"name must be letters, digits and '-', got {name!r}")
    spec = json.dumps(chart.properties(description=description).to_dict())
    scripts = "\n".join(
        f'<script src="{VENDOR_URL}/{package}-{version}.min.js"></script>'
        for package, version in VENDORED.items()
    )
    # "</" would end the inline script early
    spec = spec.replace("</", "<\\/")
    caption = html_text.escape(description)
    return HTML(
        '<figure class="attnlab-explorable"'
        f' aria-describedby="{name}-description">\n'
        f'<div id="{name}"></div>\n'
        f'<figcaption id="{name}-description">{caption}</figcaption>\n'
        f"</figure>\n{scripts}\n<script>\n"
        f'vegaEmbed("#{name}", {spec}, {{"actions": false, "renderer": "svg"}})'
        ".then(function (result) {\n"
        "  window.attnlabViews = window.attnlabViews || {};\n"
        f'  window.attnlabViews["{name}"] = result.view;\n'
        "});\n</script>"
    )


def show(chart: alt.TopLevelMixin, name: str, description: str) -> object:
    """Display ``chart``: :func:`html` in the static book, the Altair chart (with
    ``description`` as its text alternative) in Jupyter and Colab."""
    if for_static_book():
        return html(chart, name, description)
    return chart.properties(description=description)


def _slider(
    name: str, label: str, values: Sequence[float], value: float
) -> alt.Parameter:
    """A slider over evenly spaced ``values``, labelled ``label``."""
    step = (values[-1] - values[0]) / (len(values) - 1)
    return alt.param(
        name=name,
        value=value,
        bind=alt.binding_range(
            min=values[0], max=values[-1], step=step, name=f"{label} "
        ),
    )


def _at(fields: dict[str, str]) -> str:
    """A filter keeping the rows whose fields equal the controls' values."""
    return " && ".join(
        f"abs(datum.{field} - {param}) < {TOLERANCE}"
        for field, param in fields.items()
    )


def _grid(start: float, stop: float, count: int) -> list[float]:
    """``count`` evenly spaced numbers from ``start`` to ``stop``, rounded."""
    return [round(start + (stop - start) * i / (count - 1), 9) for i in range(count)]


def _key_colours(key_names: Sequence[str]) -> alt.Scale:
    """One Okabe-Ito colour per key."""
    return alt.Scale(domain=list(key_names), range=OKABE_ITO[: len(key_names)])


def _weight_bars(
    rows: list[dict], key_names: Sequence[str], colour: alt.Scale, keep: str
) -> alt.Chart:
    """Bars of the attention weight per key, from the ``rows`` that the filter
    expression ``keep`` lets through (the controls' current setting)."""
    return (
        alt.Chart(alt.Data(values=rows), name="weights", title="weights")
        .mark_bar()
        .encode(
            x=alt.X(
                "key:N",
                sort=list(key_names),
                title="key",
                axis=alt.Axis(labelAngle=0),
            ),
            y=alt.Y(
                "weight:Q", scale=alt.Scale(domain=[0, 1]), title="attention weight"
            ),
            color=alt.Color("key:N", scale=colour, legend=None),
        )
        .transform_filter(keep)
    )


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
    shares = _grid(0.0, 1.0, mixes)
    logs = _grid(*log_temperatures)
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
    mix = _slider("mix", f"share of {end_name} in the query", shares, 0.5)
    log_tau = _slider("log_tau", "log10 temperature", logs, logs[len(logs) // 2])
    at = _at({"mix": "mix", "log_tau": "log_tau"})
    weights = _weight_bars(weight_rows, key_names, _key_colours(key_names), at)
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
    angle = _slider("angle", "angle of the query (degrees)", degrees, 0.0)
    length = alt.param(
        name="length",
        value=lengths[1],
        bind=alt.binding_select(options=list(lengths), name="length of the query "),
    )
    colour = _key_colours(key_names)
    weights = _weight_bars(
        rows,
        key_names,
        colour,
        f"datum.score == score && {_at({'angle': 'angle', 'length': 'length'})}",
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
        .transform_filter(_at({"angle": "angle", "length": "length"}))
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


def ntm_addressing(
    memory: torch.Tensor,
    key: torch.Tensor,
    w_prev: torch.Tensor,
    betas: Sequence[float],
    gates: Sequence[float],
    kernels: dict[str, Sequence[float]],
    gammas: Sequence[float],
) -> alt.HConcatChart:
    """Chapter 9: the four steps of one head's addressing side by side, with a
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
        condition = _at({c: c for c in controls if c != "shift"})
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
        _select("beta", "key strength beta", betas),
        _slider("g", "gate g", gates, gates[len(gates) // 2]),
        alt.param(
            name="shift",
            value=next(iter(kernels)),
            bind=alt.binding_select(options=list(kernels), name="shift weights "),
        ),
        _select("gamma", "sharpening gamma", gammas),
    ]
    return alt.vconcat(
        alt.hconcat(*charts[:2], previous), alt.hconcat(*charts[2:])
    ).add_params(*controls)


def _select(name: str, label: str, options: Sequence[float]) -> alt.Parameter:
    """A menu of ``options``, labelled ``label``, starting at the middle one."""
    return alt.param(
        name=name,
        value=options[len(options) // 2],
        bind=alt.binding_select(options=list(options), name=f"{label} "),
    )
