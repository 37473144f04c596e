"""The static fallback of the explorable figures (attnlab.explorable.html): an image of the chart at its initial
control values, drawn at build time, that a reader without scripts sees, and that a printed page shows instead of
the live chart and its controls; on screen, with scripts, only the live chart."""

import base64
import contextlib
import re
import shutil
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
import torch

from attnlab import explorable
from attnlab.attention import cosine_score, dot_score, scaled_dot_score
from tests.browser import VENDOR, browser, serve

pytest.importorskip("vl_convert")

NAME, DESCRIPTION = "score-menu", 'Bars of the weights over the keys A to D; menus for the score & "length".'
IMAGE = re.compile(r'<img class="attnlab-fallback" src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"'
                   r' width="(\d+)" height="(\d+)" alt="([^"]*)">')


@pytest.fixture(scope="module")
def chart():
    keys = torch.tensor([[1.0, 0.0], [2.0, 2.0], [0.0, 0.0], [-1.0, 0.2]])
    scores = {"dot": dot_score, "scaled dot": scaled_dot_score, "cosine": cosine_score}
    return explorable.score_menu(scores, keys, list("ABCD"))


@pytest.fixture(scope="module")
def output(chart) -> str:
    return explorable.html(chart, NAME, DESCRIPTION).data


def fallback(output: str) -> tuple[ElementTree.Element, int, int, str]:
    """The fallback image of an output: its SVG, the width and height given to <img>, its alt text."""
    (found,) = IMAGE.findall(output)
    data, width, height, alt = found
    return ElementTree.fromstring(base64.b64decode(data)), int(width), int(height), alt


def test_the_output_holds_the_image_with_the_description_as_alt_text(output):
    svg, width, height, alt = fallback(output)
    assert alt == 'Bars of the weights over the keys A to D; menus for the score &amp; &quot;length&quot;.'
    assert svg.tag == "{http://www.w3.org/2000/svg}svg"
    assert (float(svg.get("width")), float(svg.get("height"))) == pytest.approx((width, height), abs=0.5)
    assert 100 < width < 2000 and 100 < height < 2000
    # the image is drawn at the initial control values: the bars of the starting setting
    assert svg.find(".//{http://www.w3.org/2000/svg}path") is not None


def test_the_image_costs_little(chart, output):
    without = len(output) - len(IMAGE.search(output).group(0))
    assert len(output) - without < 60_000, f"the image adds {(len(output) - without) / 1000:.0f} KB"


def test_without_vl_convert_the_output_warns_and_has_no_image(chart, monkeypatch):
    monkeypatch.setitem(sys.modules, "vl_convert", None)  # import vl_convert now raises ImportError
    with pytest.warns(UserWarning, match="vl-convert-python"):
        page = explorable.html(chart, NAME, DESCRIPTION).data
    assert "attnlab-fallback\" src" not in page and "vegaEmbed" in page


# ---- in the browser -------------------------------------------------------------------------------------------

@contextlib.contextmanager
def site(output: str, vendored: bool = True):
    """A page holding ``output``, served with the vendored Vega (or without it)."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        if vendored:
            shutil.copytree(VENDOR, root / "_static" / "vega")
        (root / "notebooks").mkdir()
        (root / "notebooks" / "page.html").write_text(
            "<!doctype html><html><head><meta charset='utf-8'><title>fallback</title>"
            f"<link rel='icon' href='data:,'></head><body>{output}</body></html>")
        with serve(root) as address:
            yield f"{address}/notebooks/page.html"


@pytest.fixture(scope="module")
def chromium():
    with browser() as opened:
        yield opened


def open_tab(chromium, url: str, scripts: bool):
    context = chromium.new_context(java_script_enabled=scripts, viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    errors = []
    tab.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.goto(url, wait_until="load")
    return context, tab, errors


def test_without_scripts_the_image_is_shown_and_the_live_chart_absent(chromium, output):
    with site(output) as url:
        context, tab, errors = open_tab(chromium, url, scripts=False)
        try:
            image = tab.locator("img.attnlab-fallback")
            assert image.is_visible()
            assert image.get_attribute("alt") == DESCRIPTION
            assert tab.evaluate("() => document.querySelector('img.attnlab-fallback').naturalWidth") > 0
            box = image.bounding_box()
            _, width, height, _ = fallback(output)
            assert (box["width"], box["height"]) == pytest.approx((width, height), abs=1)
            assert tab.locator(f"#{NAME} svg, #{NAME} canvas, #{NAME} .vega-bindings").count() == 0
            assert not errors, errors
        finally:
            context.close()


def test_with_scripts_only_the_live_chart_is_on_screen_and_print_shows_the_image(chromium, output):
    with site(output) as url:
        context, tab, errors = open_tab(chromium, url, scripts=True)
        try:
            tab.wait_for_function("name => window.attnlabViews && window.attnlabViews[name]", arg=NAME,
                                  timeout=20_000)
            image, live = tab.locator("img.attnlab-fallback"), tab.locator(f"#{NAME} svg.marks")
            assert not image.is_visible() and live.is_visible()
            # the image is the size of the chart the browser draws (fonts may shift it by a few pixels)
            drawn = [float(live.get_attribute(side)) for side in ("width", "height")]
            _, width, height, _ = fallback(output)
            assert (width, height) == pytest.approx(drawn, abs=6)
            tab.emulate_media(media="print")
            assert image.is_visible() and not live.is_visible()
            assert not tab.locator(f"#{NAME} .vega-bindings").is_visible(), "controls in print"
            tab.emulate_media(media="screen")
            assert not image.is_visible() and live.is_visible()
            assert not errors, errors
        finally:
            context.close()


def test_where_vega_does_not_load_the_image_comes_back(chromium, output):
    with site(output, vendored=False) as url:
        context, tab, _ = open_tab(chromium, url, scripts=True)
        try:
            assert tab.locator("img.attnlab-fallback").is_visible()
        finally:
            context.close()
