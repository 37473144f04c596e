"""The explorable figures of the built book in headless Chromium: every control of every chart moves it.

Runs after `make book`; without a built book it is skipped, unless ATTNLAB_REQUIRE_BOOK=1, where a missing book
or browser is a failure (as in tests/test_book_in_browser.py). It reads each chapter page from a local server,
waits for the chart that `attnlab.explorable` put there (and its static image, for print and readers without
scripts, hidden on screen), then moves each slider with the keyboard and picks another option of each menu, and
checks that the chart's drawn marks and its signal follow, within a second.
"""

import os
from pathlib import Path

import pytest

from attnlab.explorable import VENDORED
from tests.browser import CHROMIUM, DRAWN, serve
from tests.browser import browser as open_browser
from tests.notebook_files import ROOT

HTML = ROOT / "_build" / "html"
REQUIRED = os.environ.get("ATTNLAB_REQUIRE_BOOK") == "1"

if not (HTML / "index.html").exists() or not Path(CHROMIUM).exists():
    if REQUIRED:
        raise RuntimeError(f"the browser test needs {HTML / 'index.html'} (make book) and {CHROMIUM}")
    pytest.skip("no built book or no chromium: run `make book` first", allow_module_level=True)
pytest.importorskip("playwright.sync_api")

# page -> chart name (the `name` given to explorable.show) -> the Vega mark whose drawn data the controls change
EXPLORABLES = {
    "notebooks/01_context_sensitive_memory.html": {"soft-lookup": "weights_marks"},
    "notebooks/02_scoring_functions.html": {"score-menu": "weights_marks"},
    "notebooks/06_soft_and_hard_attention.html": {"reinforce-draws": "estimates_marks"},
    "notebooks/07_parameterized_attention.html": {"dk-scaling": "weights_marks"},
    "notebooks/08_transformer.html": {"transformer-heads": "weights_marks"},
    "notebooks/09_positions_and_cost.html": {"transformer-long-alignment": "step_weights_marks"},
    "notebooks/03_encoder_decoder.html": {"decoder-steps": "top_words_marks"},
    "notebooks/04_bahdanau_attention.html": {"alignment-heatmap": "step_weights_marks"},
    "notebooks/05_luong_attention.html": {"local-window": "local_weights_0_marks"},
    "notebooks/10_neural_turing_machines.html": {"ntm-addressing": "step4_marks"},
    "notebooks/11_pointer_networks.html": {"pointer-steps": "pointer_layer_1_marks"},
    "notebooks/12_pointer_networks_tsp.html": {"tour-steps": "cities_0_marks"},
}
# The drawn data as JSON, to compare before and after a control moved.
DRAWN_JSON = f"args => JSON.stringify(({DRAWN})(args))"


@pytest.fixture(scope="module")
def server():
    with serve(HTML) as address:
        yield address


@pytest.fixture(scope="module")
def browser():
    with open_browser() as chromium:
        yield chromium


def test_the_vendored_scripts_are_in_the_build():
    for package, version in VENDORED.items():
        assert (HTML / "_static" / "vega" / f"{package}-{version}.min.js").is_file(), package


@pytest.mark.parametrize("name", sorted(EXPLORABLES))
def test_every_control_moves_the_chart(browser, server, name):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    requests: list[str] = []
    # a resource that failed to load is reported by its URL below (MathJax's CDN fails without `make offline`)
    page.on("console", lambda msg: errors.append(msg.text)
            if msg.type == "error" and not msg.text.startswith("Failed to load resource") else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("request", lambda request: requests.append(request.url))
    page.on("requestfailed", lambda request: errors.append(f"{request.url} did not load")
            if request.url.startswith(server) else None)
    try:
        page.goto(f"{server}/{name}", wait_until="load")
        for view, mark in EXPLORABLES[name].items():
            page.wait_for_function("view => window.attnlabViews && window.attnlabViews[view]", arg=view,
                                   timeout=10_000)
            assert page.locator(f"#{view}[aria-label]").count() == 1, "the chart has no text alternative"
            fallback = page.locator(f"#{view}-figure img.attnlab-fallback")
            assert fallback.count() == 1 and fallback.get_attribute("alt"), "no static image for print and no scripts"
            assert not fallback.is_visible(), "the static image is on screen beside the live chart"
            controls = page.locator(f"#{view} .vega-bindings label")
            assert controls.count() >= 1, "the chart has no controls"
            for index in range(controls.count()):
                label = controls.nth(index)
                assert label.locator(".vega-bind-name").inner_text().strip(), "a control without a visible label"
                field = label.locator("input, select").first
                signal = field.get_attribute("name")
                before = page.evaluate(DRAWN_JSON, [view, mark])
                old = page.evaluate("([v, s]) => window.attnlabViews[v].signal(s)", [view, signal])
                if field.evaluate("e => e.tagName") == "SELECT":
                    options = field.locator("option")
                    current = field.input_value()
                    other = next(options.nth(i).get_attribute("value") for i in range(options.count())
                                 if options.nth(i).get_attribute("value") != current)
                    field.select_option(other)
                else:
                    field.focus()
                    at_end = field.input_value() == field.get_attribute("max")
                    page.keyboard.press("ArrowLeft" if at_end else "ArrowRight")
                page.wait_for_function(f"([view, mark, before]) => JSON.stringify(({DRAWN})([view, mark])) !== before",
                                       arg=[view, mark, before], timeout=5_000)
                new = page.evaluate("([v, s]) => window.attnlabViews[v].signal(s)", [view, signal])
                assert new != old, f"{signal} did not change"
        # MathJax comes from its CDN unless `make offline` ran; Vega always from the build
        remote = [url for url in requests if "vega" in url and not url.startswith(f"{server}/")]
        assert not remote, f"Vega loaded from outside the book: {remote}"
        assert not errors, f"console errors: {errors}"
    finally:
        page.close()
