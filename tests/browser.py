"""What the headless-Chromium tests share: the browser, a local server, and the explorable figures' data, read both
from the chart's spec and from what Vega drew.

A test that needs the browser calls `chromium_or_skip()` (a missing browser is a skip, or a failure where
ATTNLAB_REQUIRE_BOOK=1); `explorable_page(charts)` draws `attnlab.explorable` charts on a page of their own, served
with the vendored Vega, without building the book.
"""

import contextlib
import functools
import http.server
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from attnlab.explorable.page import SMALLEST_PX
from tests.notebook_files import ROOT

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
REQUIRED = os.environ.get("ATTNLAB_REQUIRE_BOOK") == "1"
VENDOR = ROOT / "book" / "_static" / "vega"

# The data of the items drawn by the mark `mark` of the chart `view` (Vega-Lite names a sub-chart's marks
# "<name>_marks"), in the order drawn.
DRAWN = """([view, mark]) => {
  const found = [];
  const walk = (node) => {
    if (node.marktype && node.name === mark) { found.push(...node.items.map(i => i.datum)); return; }
    (node.items || []).forEach(walk);
  };
  walk(window.attnlabViews[view].scenegraph().root);
  return found;
}"""


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@contextlib.contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve ``directory`` on 127.0.0.1; yield its address."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(directory)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


def chromium_or_skip():
    """Playwright's sync API, or a skip when there is no browser (a failure where ATTNLAB_REQUIRE_BOOK=1)."""
    if not Path(CHROMIUM).exists():
        if REQUIRED:
            raise RuntimeError(f"the browser tests need {CHROMIUM}")
        pytest.skip(f"no chromium at {CHROMIUM}")
    return pytest.importorskip("playwright.sync_api")


@contextlib.contextmanager
def browser() -> Iterator[object]:
    """A headless Chromium."""
    with chromium_or_skip().sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


# ---- the explorable figures ------------------------------------------------------------------------------------

def rows_of(chart, name: str) -> list[dict]:
    """The rows of the sub-chart called ``name`` in the chart's Vega-Lite spec."""

    def find(spec: dict) -> dict | None:
        if spec.get("name") == name:
            return spec
        children = [c for part in ("hconcat", "vconcat", "layer", "concat") for c in spec.get(part, [])]
        return next((found for c in children if (found := find(c)) is not None), None)

    spec = chart.to_dict()
    found = find(spec)
    assert found is not None, f"no sub-chart named {name!r}"
    source = found["data"]
    return source["values"] if "values" in source else spec["datasets"][source["name"]]


def pick(rows: list[dict], **setting) -> list[dict]:
    """The rows whose fields equal ``setting`` (floats within 1e-9)."""
    return [r for r in rows if all(abs(r[k] - v) < 1e-9 if isinstance(v, float) else r[k] == v
                                   for k, v in setting.items())]


@contextlib.contextmanager
def explorable_page(charts: dict[str, object], *, viewport: tuple[int, int] = (1280, 900),
                    column: int | None = None) -> Iterator[tuple[object, list[str], list[str]]]:
    """Open one page holding ``charts`` (chart name -> Altair chart), as ``attnlab.explorable.html`` writes them,
    in a window of ``viewport`` pixels, within a column at most ``column`` pixels wide if given.

    Yields the tab, the console errors and the URLs requested, once every chart is drawn.
    """
    from attnlab import explorable

    with contextlib.ExitStack() as stack:
        site = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        shutil.copytree(VENDOR, site / "_static" / "vega")
        (site / "notebooks").mkdir()
        outputs = [explorable.html(chart, name, f"Explorable {name}.").data for name, chart in charts.items()]
        (site / "notebooks" / "page.html").write_text(
            "<!doctype html><html><head><meta charset='utf-8'><title>explorables</title>"
            f"<link rel='icon' href='data:,'><style>figure {{ margin: 1em 0; padding: 0 8px; }} body {{ font-size: 16px; }} select {{ font: inherit; }}</style></head>"
            f"<body><main style='max-width: {column or 10_000}px'>"
            f"{''.join(outputs)}</main></body></html>")
        address = stack.enter_context(serve(site))
        chromium = stack.enter_context(browser())
        tab = chromium.new_page(viewport={"width": viewport[0], "height": viewport[1]})
        errors, requests = [], []
        tab.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        tab.on("pageerror", lambda exc: errors.append(str(exc)))
        tab.on("request", lambda request: requests.append(request.url))
        tab.goto(f"{address}/notebooks/page.html", wait_until="load")
        tab.wait_for_function(f"window.attnlabViews && Object.keys(window.attnlabViews).length === {len(charts)}",
                              timeout=20_000)
        yield tab, errors, requests


# The explorable figures on the page whose drawing (chart and controls) is wider than the figure: [id, drawn width,
# figure width].
TOO_WIDE = """Array.from(document.querySelectorAll('figure.attnlab-explorable'))
  .map(f => [f.id, f.querySelector('.attnlab-live').scrollWidth, f.clientWidth])
  .filter(([id, drawn, room]) => drawn > room + 1)"""


# What an explorable figure shows lies inside its figure's content box (inside the padding, where the chart is
# drawn): every text of the chart (tick labels, titles, legends) and every control's label, input and value, and a
# slider's value on the slider's line. [figure id, what, the text].
OUTSIDE = """Array.from(document.querySelectorAll('figure.attnlab-explorable')).flatMap(f => {
  if (!f.querySelector('.attnlab-live svg')) { return []; }
  const style = getComputedStyle(f), box = f.getBoundingClientRect();
  const left = box.left + parseFloat(style.paddingLeft), right = box.right - parseFloat(style.paddingRight);
  const top = box.top + parseFloat(style.paddingTop), bottom = box.bottom - parseFloat(style.paddingBottom);
  const out = r => r.width > 0 && (r.left < left - 1 || r.right > right + 1 || r.top < top - 1 || r.bottom > bottom + 1);
  const texts = Array.from(f.querySelectorAll('.attnlab-live svg text')).filter(t => t.textContent.trim())
    .filter(t => out(t.getBoundingClientRect())).map(t => [f.id, 'chart text', t.textContent]);
  const controls = Array.from(f.querySelectorAll('.vega-bindings label > *'))
    .filter(e => out(e.getBoundingClientRect())).map(e => [f.id, 'control', e.textContent || e.getAttribute('name')]);
  const apart = Array.from(f.querySelectorAll('.vega-bindings input[type=range]')).filter(input => {
    const value = input.nextElementSibling;
    if (!value) { return false; }
    const a = input.getBoundingClientRect(), b = value.getBoundingClientRect();
    return (a.top + a.bottom) / 2 < b.top || (a.top + a.bottom) / 2 > b.bottom;
  }).map(input => [f.id, 'slider value not beside its slider', input.getAttribute('name')]);
  return [...texts, ...controls, ...apart];
})"""
# Chart text that Vega cut short with an ellipsis, because it was longer than its label limit: [figure id, the text].
CUT_TEXT = """Array.from(document.querySelectorAll('figure.attnlab-explorable .attnlab-live svg text'))
  .filter(t => t.textContent.trim().endsWith('\u2026')).map(t => [t.closest('figure').id, t.textContent])"""
# The text of an explorable chart as shown, in CSS pixels (its font size times the scale the chart is drawn at,
# rotated text included),
# where it is below the library's smallest size (9 CSS points, 12 pixels): [figure id, the text, its size].
SMALL_TEXT = """Array.from(document.querySelectorAll('figure.attnlab-explorable .attnlab-live svg text'))
  .filter(t => t.textContent.trim() && t.getBoundingClientRect().width > 0)
  .map(t => [t.closest('figure').id, t.textContent.slice(0, 40),
             Math.round(parseFloat(getComputedStyle(t).fontSize)
               * Math.hypot(t.getScreenCTM().a, t.getScreenCTM().b) * 10) / 10])
  .filter(([id, text, px]) => px < """ + str(SMALLEST_PX) + """ - 0.05)"""


def check_local_and_ready(opened, charts: int) -> None:
    """What every explorable page must be: it requested nothing but 127.0.0.1, logged no error, drew its ``charts``
    charts, each with its text alternative."""
    tab, errors, requests = opened
    assert all(url.startswith("http://127.0.0.1:") for url in requests), requests
    assert not errors, errors
    assert tab.locator(".vega-embed[aria-label^='Explorable ']").count() == charts


def drawn(tab, view: str, mark: str) -> list[dict]:
    """The data of the items that ``mark`` of the chart ``view`` draws now."""
    return tab.evaluate(DRAWN, [view, mark])


def after(tab, action, view: str, mark: str) -> list[dict]:
    """Do ``action``, wait until the data drawn by ``mark`` change (a time-out fails the test); return them."""
    before = tab.evaluate(f"args => JSON.stringify(({DRAWN})(args))", [view, mark])
    action()
    tab.wait_for_function(f"([view, mark, before]) => JSON.stringify(({DRAWN})([view, mark])) !== before",
                          arg=[view, mark, before], timeout=10_000)
    return drawn(tab, view, mark)


def slide(tab, chart: str, label: str, key: str):
    """An action: focus the slider labelled ``label`` (its start) and press ``key``."""
    return lambda: (tab.locator(f"#{chart} .vega-bindings").get_by_label(label).focus(), tab.keyboard.press(key))


def choose(tab, chart: str, label: str, option: str):
    """An action: pick ``option`` in the menu labelled ``label``."""
    return lambda: tab.locator(f"#{chart} .vega-bindings").get_by_label(label).select_option(option)


def signal(tab, view: str, name: str):
    """The current value of the chart's parameter ``name``."""
    return tab.evaluate("([view, name]) => window.attnlabViews[view].signal(name)", [view, name])
