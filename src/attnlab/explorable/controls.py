"""The pieces the explorable figures share: sliders and menus over a grid of
settings, the filter that keeps the current setting's rows, and bars of weights."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt

from attnlab.explorable.page import OKABE_ITO, TOLERANCE


def slider(
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


def slider_ranges(
    chart: alt.TopLevelMixin, slider: str, menus: Sequence[str], maxima: dict
) -> alt.TopLevelMixin:
    """``chart`` whose slider ``slider`` ends, in the static book, at
    ``maxima[key]`` for the menus' current options (``key``: the options of
    ``menus`` joined by ``|``), its value pulled back when a shorter option is
    picked; in Jupyter and Colab the slider keeps its full range."""
    ranges = {slider: {"menus": list(menus), "max": dict(maxima)}}
    return chart.properties(usermeta={"attnlab": {"ranges": ranges}})


def where(fields: dict[str, str]) -> str:
    """A filter keeping the rows whose fields equal the controls' values."""
    return " && ".join(
        f"abs(datum.{field} - {param}) < {TOLERANCE}"
        for field, param in fields.items()
    )


def grid(start: float, stop: float, count: int) -> list[float]:
    """``count`` evenly spaced numbers from ``start`` to ``stop``, rounded."""
    return [round(start + (stop - start) * i / (count - 1), 9) for i in range(count)]


def key_colours(key_names: Sequence[str]) -> alt.Scale:
    """One Okabe-Ito colour per key."""
    return alt.Scale(domain=list(key_names), range=OKABE_ITO[: len(key_names)])


def weight_bars(
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


def select(name: str, label: str, options: Sequence[float]) -> alt.Parameter:
    """A menu of ``options``, labelled ``label``, starting at the middle one."""
    return alt.param(
        name=name,
        value=options[len(options) // 2],
        bind=alt.binding_select(options=list(options), name=f"{label} "),
    )


def example_names(examples: Sequence, names: Sequence[str] | None) -> list[str]:
    """Menu labels of translation ``examples``: ``names``, or by default each
    source's length (``"<S> words"``); they must all differ."""
    if names is None:
        names = [f"{len(e.source)} words" for e in examples]
    labels = list(names)
    if len(set(labels)) != len(examples):
        raise ValueError(
            f"names must be {len(examples)} different labels, one per example, got"
            f" {labels}"
        )
    return labels
