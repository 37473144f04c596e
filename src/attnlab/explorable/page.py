"""How an explorable figure reaches the page: an HTML output that draws the Altair
chart with the book's own copy of Vega in the static book, the chart itself in
Jupyter and Colab.

In the static book each chart also carries a static image of itself at its initial
control values, drawn at build time (``vl-convert-python``, the optional extra
``attnlab[book]``): a reader without scripts sees the image, with the description as
its text alternative, and a printed page shows the image instead of the live chart
and its controls, so that paper holds the setting the caption and the prose
describe.
"""

from __future__ import annotations

import base64
import html as html_text
import json
import os
import warnings
import xml.etree.ElementTree as ElementTree

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

# The static image is shown where scripts do not run, and in print; on screen, a
# page whose scripts run hides it (the class attnlab-scripted, set before the image
# is drawn) unless the live chart fails to draw.
FALLBACK_CSS = (
    "<style>\n"
    ".attnlab-fallback { display: block; max-width: 100%; height: auto; }\n"
    # the controls wrap inside the column: a long menu option never widens the page
    # vega-embed makes the chart's own element an inline-block .vega-embed
    ".attnlab-live.vega-embed, .attnlab-live .vega-embed { max-width: 100%; }\n"
    ".attnlab-live .vega-bindings label {\n"
    "  display: inline-flex; flex-wrap: wrap; align-items: center; gap: 0 0.4em;\n"
    "  max-width: 100%;\n"
    "}\n"
    ".attnlab-live .vega-bindings select,\n"
    ".attnlab-live .vega-bindings input { max-width: 100%; min-width: 0; }\n"
    # a slider and its value wrap as one (attnlabDraw groups them), below a long
    # label if need be; the slider narrows, so that its value stays beside it
    ".attnlab-live .attnlab-slider {\n"
    "  display: inline-flex; align-items: center; gap: 0.4em;\n"
    "  flex: 1 1 8em; min-width: 0;\n"
    "}\n"
    ".attnlab-live .vega-bindings input[type=range] { flex: 1 1 4em; }\n"
    # in the book the numbered figure around it has the caption; the description
    # stays the text alternative, for screen readers
    "figure figure.attnlab-explorable > figcaption {\n"
    "  position: absolute; width: 1px; height: 1px; overflow: hidden;\n"
    "  clip-path: inset(50%); white-space: nowrap;\n"
    "}\n"
    ".attnlab-scripted .attnlab-fallback { display: none; }\n"
    "@media print {\n"
    "  .attnlab-scripted .attnlab-fallback { display: block; }\n"
    "  .attnlab-explorable .attnlab-live { display: none; }\n"
    "}\n"
    "</style>"
)

# Marks the figure as drawn by script (the class that hides the image on screen).
SCRIPTED = 'document.currentScript.parentNode.classList.add("attnlab-scripted")'

# attnlabDraw(name, spec): draw the chart into its figure, then fit it to the
# figure's width, read at draw time (a phone, a narrow column). A chart wider than
# its figure is drawn again: side-by-side panels stacked and legends moved below,
# then every fixed width (and the height of a square view) narrowed in proportion,
# at most five times more, each time by the excess divided by how many pixels of
# drawing the last narrowing gained per pixel of width (axes and labels do not
# narrow); what still does not fit is scaled down as a picture. Each slider is
# grouped with its value, so that the two wrap together. The view is published in
# window.attnlabViews[name] once it is final.
DRAW = """window.attnlabDraw = window.attnlabDraw || function (name, spec) {
  var figure = document.getElementById(name + "-figure");
  var box = document.getElementById(name);
  var unscripted = function () { figure.classList.remove("attnlab-scripted"); };
  // how much wider than the figure's content box (inside its padding, where the
  // chart is drawn) the chart is (the controls wrap by CSS)
  var excess = function () {
    var svg = box.querySelector("svg");
    var drawn = svg ? svg.getBoundingClientRect().width : 0;
    var style = getComputedStyle(figure);
    var room = figure.clientWidth - parseFloat(style.paddingLeft)
      - parseFloat(style.paddingRight);
    return Math.ceil(drawn - room);
  };
  // the widest fixed width in the spec, which the excess is taken from
  var widest = function (part) {
    var own = typeof part.width === "number" ? part.width : 0;
    return ["vconcat", "concat", "layer"].reduce(function (most, key) {
      return Math.max(most, Math.max.apply(null, (part[key] || []).map(widest)));
    }, own);
  };
  var narrowed = function (node, over) {
    var next = Object.assign({}, node);
    var legend = (next.config || {}).legend || {};
    // side by side at any depth (rows of panels inside a column of them) becomes
    // one above the other
    var stacked = function (part) {
      var copy = Object.assign({}, part);
      if (copy.hconcat) { copy.vconcat = copy.hconcat; delete copy.hconcat; }
      if (copy.vconcat) { copy.vconcat = copy.vconcat.map(stacked); }
      return copy;
    };
    var sideBySide = JSON.stringify(next).indexOf('"hconcat"') >= 0;
    if (sideBySide || legend.orient !== "bottom") {
      if (sideBySide) { next = stacked(next); }
      legend = Object.assign({}, legend, {orient: "bottom", direction: "vertical"});
      next.config = Object.assign({}, next.config, {legend: legend});
      return next;
    }
    var most = widest(next);
    var share = Math.max(0.3, (most - over) / Math.max(most, 1));
    var changed = false;
    var walk = function (part) {
      if (typeof part.width === "number") {
        if (part.height === part.width) {
          part.height = Math.round(part.height * share);
        }
        part.width = Math.max(60, Math.round(part.width * share));
        changed = true;
      }
      ["vconcat", "concat", "layer"].forEach(function (key) {
        if (part[key]) {
          part[key] = part[key].map(function (child) {
            var copy = Object.assign({}, child);
            walk(copy);
            return copy;
          });
        }
      });
    };
    walk(next);
    return changed ? next : null;
  };
  // a slider whose range depends on menus (explorable.controls.slider_ranges) ends
  // where the data of the menus' current options end
  var follow = function (view) {
    var ranges = ((spec.usermeta || {}).attnlab || {}).ranges || {};
    Object.keys(ranges).forEach(function (slider) {
      var range = ranges[slider];
      var input = box.querySelector('input[name="' + slider + '"]');
      if (!input) { return; }
      var update = function () {
        var key = range.menus.map(function (m) { return view.signal(m); }).join("|");
        var most = range.max[key];
        if (most === undefined) { return; }
        input.max = most;
        if (view.signal(slider) > most) { view.signal(slider, most).runAsync(); }
      };
      range.menus.forEach(function (m) { view.addSignalListener(m, update); });
      update();
    });
  };
  // a slider and the value beside it in one box that wraps as a whole
  var group = function () {
    var sliders = box.querySelectorAll(".vega-bindings input[type=range]");
    sliders.forEach(function (input) {
      var pair = document.createElement("span");
      pair.className = "attnlab-slider";
      var value = input.nextElementSibling;
      input.parentNode.insertBefore(pair, input);
      pair.appendChild(input);
      if (value) { pair.appendChild(value); }
    });
  };
  var options = {"actions": false, "renderer": "svg"};
  // last: the widest fixed width and the excess of the drawing before
  var draw = function (current, tries, last) {
    vegaEmbed(box, current, options).then(function (result) {
      group();
      var over = excess();
      var most = widest(current);
      var gain = last && last.most > most
        ? Math.min(1, Math.max(0.25, (last.over - over) / (last.most - most))) : 1;
      var next = over > 1 && tries > 0
        && narrowed(current, Math.ceil(over / gain) + 1);
      if (next) {
        result.finalize();
        draw(next, tries - 1, {most: most, over: over});
        return;
      }
      if (over > 1) {
        var svg = box.querySelector("svg");
        svg.style.maxWidth = "100%";
        svg.style.height = "auto";
      }
      follow(result.view);
      window.attnlabViews = window.attnlabViews || {};
      window.attnlabViews[name] = result.view;
    }, function (error) { unscripted(); throw error; });
  };
  if (typeof vegaEmbed !== "function") { unscripted(); return; }
  draw(spec, 6);
};"""


# The smallest text an explorable shows, in CSS pixels: 9 points, as for the static
# figures (attnlab.plot.SMALLEST_PT); titles a pixel larger.
SMALLEST_PX = 12
READABLE = {
    "axis": {"labelFontSize": SMALLEST_PX, "titleFontSize": SMALLEST_PX},
    "legend": {"labelFontSize": SMALLEST_PX, "titleFontSize": SMALLEST_PX},
    "header": {"labelFontSize": SMALLEST_PX, "titleFontSize": SMALLEST_PX},
    "title": {"fontSize": SMALLEST_PX + 1},
    "text": {"fontSize": SMALLEST_PX},
}


def readable(chart: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """``chart`` with its text at least ``SMALLEST_PX`` pixels where it asks for no
    size itself: axes, legends, titles and text marks (the chart's own
    configuration kept)."""
    own = chart.config.to_dict() if chart.config is not alt.Undefined else {}
    config = {**own}
    for part, sizes in READABLE.items():
        config[part] = {**sizes, **own.get(part, {})}
    return chart.properties(config=config)


def for_static_book() -> bool:
    """Whether this kernel runs for the static book (``make book`` sets
    ``ATTNLAB_PROGRESS=lines``)."""
    return os.environ.get("ATTNLAB_PROGRESS") == "lines"


def static_image(spec: dict) -> tuple[str, int, int] | None:
    """The Vega-Lite ``spec`` drawn at its initial control values, as an SVG
    ``data:`` URL, with its width and height in pixels; ``None`` (and a warning)
    where ``vl-convert-python`` is not installed."""
    try:
        import vl_convert
    except ImportError:
        warnings.warn(
            "no static image for the explorable figure: install vl-convert-python"
            " (pip install 'attnlab[book]')",
            stacklevel=3,
        )
        return None
    major, minor = VENDORED["vega-lite"].split(".")[:2]
    svg = vl_convert.vegalite_to_svg(spec, vl_version=f"v{major}_{minor}")
    root = ElementTree.fromstring(svg)
    width, height = (round(float(root.get(side))) for side in ("width", "height"))
    url = "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()
    return url, width, height


def html(chart: alt.TopLevelMixin, name: str, description: str) -> HTML:
    """The chart as an HTML output that draws itself from the vendored Vega files.

    ``name`` (letters, digits, ``-``) names the chart on the page:
    ``window.attnlabViews[name]`` holds its Vega view once drawn. ``description`` is
    the text alternative, shown under the chart and given to screen readers. A
    static image of the chart at its initial control values (:func:`static_image`)
    stands in for it without scripts and in print.
    """
    if not name.replace("-", "").isalnum():
        raise ValueError(f"name must be letters, digits and '-', got {name!r}")
    spec_dict = readable(chart).properties(description=description).to_dict()
    spec = json.dumps(spec_dict)
    scripts = "\n".join(
        f'<script src="{VENDOR_URL}/{package}-{version}.min.js"></script>'
        for package, version in VENDORED.items()
    )
    # "</" would end the inline script early
    spec = spec.replace("</", "<\\/")
    caption = html_text.escape(description)
    image = static_image(spec_dict)
    fallback = ""
    if image is not None:
        url, width, height = image
        fallback = (
            f'<img class="attnlab-fallback" src="{url}" width="{width}"'
            f' height="{height}" alt="{caption}">\n'
        )
    return HTML(
        f'{FALLBACK_CSS}\n<figure class="attnlab-explorable" id="{name}-figure"'
        f' aria-describedby="{name}-description">\n'
        # before the image is drawn: no flash of it where scripts run
        f"<script>{SCRIPTED}</script>\n"
        f'<div id="{name}" class="attnlab-live"></div>\n{fallback}'
        f'<figcaption id="{name}-description">{caption}</figcaption>\n'
        f"</figure>\n{scripts}\n<script>\n{DRAW}\n"
        f'window.attnlabDraw("{name}", {spec});\n</script>'
    )


def show(chart: alt.TopLevelMixin, name: str, description: str) -> object:
    """Display ``chart``: :func:`html` in the static book, the Altair chart (with
    ``description`` as its text alternative) in Jupyter and Colab."""
    if for_static_book():
        return html(chart, name, description)
    return readable(chart).properties(description=description)
