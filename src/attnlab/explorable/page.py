"""How an explorable figure reaches the page: an HTML output that draws the Altair
chart with the book's own copy of Vega in the static book, the chart itself in
Jupyter and Colab."""

from __future__ import annotations

import html as html_text
import json
import os

import altair as alt
from IPython.display import HTML

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
