"""The built book as a reader sees it: every page in headless Chromium, served from 127.0.0.1.

Runs after `make book` (and `make offline`, so MathJax is served from the build); without a built book it is
skipped, unless ATTNLAB_REQUIRE_BOOK=1 (as in .ci/run), where a missing book or browser is a failure.
"""

import functools
import http.server
import os
import re
import shutil
import threading
from pathlib import Path

import pytest

from tests.notebook_files import NOTEBOOKS, ROOT

HTML = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
REQUIRED = os.environ.get("ATTNLAB_REQUIRE_BOOK") == "1"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]

if not (HTML / "index.html").exists() or not Path(CHROMIUM).exists():
    if REQUIRED:
        raise RuntimeError(f"the browser test needs {HTML / 'index.html'} (make book) and {CHROMIUM}")
    pytest.skip("no built book or no chromium: run `make book` first", allow_module_level=True)
playwright_api = pytest.importorskip("playwright.sync_api")

PAGES = sorted(str(p.relative_to(HTML)) for p in HTML.rglob("*.html")
               if p.parts[len(HTML.parts)] not in ("_static", "_sources", "reports", "_images")
               and p.name not in ("genindex.html", "search.html", "index.html"))
CHAPTERS = [f"notebooks/{p.stem}.html" for p in NOTEBOOKS]


@pytest.fixture(scope="module")
def server():
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(HTML))
    handler.log_message = lambda *args: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def open_page(browser, url: str):
    """Open ``url``; return the page and the errors raised by the book's own code (console and exceptions)."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    response = page.goto(url, wait_until="load")
    assert response is not None and response.ok, f"{url} did not load"
    page.wait_for_load_state("networkidle")
    return page, errors


def wait_for_math(page) -> None:
    if page.locator(".math").count():
        page.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.document"
                               " && document.querySelectorAll('mjx-container').length > 0", timeout=20_000)


# Code blocks a reader sees: notebook code cells, show_source output, code in the prose pages. Printed
# text output (tables of numbers) is not code and may be wider.
WIDE_CODE = """Array.from(document.querySelectorAll('article pre'))
  .filter(p => !p.closest('.output.stream, .output.text_plain, .output.traceback, .output.error'))
  .filter(p => p.scrollWidth > p.clientWidth + 1)
  .map(p => p.textContent.split('\\n').reduce((a, b) => a.length >= b.length ? a : b))"""


def code_that_scrolls(page) -> list[str]:
    return page.evaluate(WIDE_CODE)


def test_the_code_check_finds_a_block_that_scrolls(browser, server):
    page, _ = open_page(browser, f"{server}/book/setup.html")
    try:
        assert not code_that_scrolls(page)
        page.evaluate("document.querySelector('article div.highlight pre').textContent = 'x'.repeat(120)")
        assert code_that_scrolls(page) == ["x" * 120]
        page.evaluate("document.querySelector('article div.highlight pre').textContent = 'x'.repeat(85)")
        assert not code_that_scrolls(page), "the column does not show 85 characters of code"
    finally:
        page.close()


def test_every_chapter_is_built():
    assert set(CHAPTERS) <= set(PAGES)


@pytest.mark.parametrize("name", PAGES)
def test_page(browser, server, name):
    page, errors = open_page(browser, f"{server}/{name}")
    try:
        assert page.title().strip(), "the page has no title"
        wait_for_math(page)
        broken = page.evaluate("Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0))"
                               ".map(i => i.src)")
        assert not broken, f"images that did not load: {broken}"
        text = page.inner_text("article")
        assert not re.search(r"\$\$|\\\[|\\begin\{", text), "raw LaTeX left in the text: math was not rendered"
        uncaptioned = page.evaluate("Array.from(document.querySelectorAll('article .cell_output img'))"
                                    ".filter(i => !(i.closest('figure') && i.closest('figure').querySelector"
                                    "('figcaption') && i.closest('figure').querySelector('figcaption')"
                                    ".innerText.trim())).length")
        assert uncaptioned == 0, f"{uncaptioned} output figure(s) without a caption"
        no_alt = page.evaluate("Array.from(document.querySelectorAll('article img'))"
                               ".filter(i => !(i.getAttribute('alt') || '').trim()).map(i => i.src)")
        assert not no_alt, f"images without alt text: {no_alt}"
        assert not code_that_scrolls(page), (
            f"code blocks wider than the text column at 1280 px (their longest lines): {code_that_scrolls(page)}")
        levels = page.evaluate("Array.from(document.querySelectorAll('article h1, article h2, article h3, "
                               "article h4, article h5, article h6')).map(h => Number(h.tagName[1]))")
        skipped = [(a, b) for a, b in zip(levels, levels[1:], strict=False) if b > a + 1]
        assert levels and levels[0] == 1 and not skipped, f"headings out of order: {levels}"
        assert not errors, f"console errors: {errors}"
        if name in CHAPTERS:
            colab = page.evaluate("Array.from(document.querySelectorAll('a')).map(a => a.href)"
                                  ".filter(h => h.includes('colab.research.google.com'))")
            assert colab and all(h.endswith(name.replace(".html", ".ipynb")) for h in colab), colab
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / f"{Path(name).stem}.png"), full_page=False)
    finally:
        page.close()


def test_sidebar_reaches_every_chapter(browser, server):
    page, _ = open_page(browser, f"{server}/book/intro.html")
    links = page.evaluate("Array.from(document.querySelectorAll('nav.bd-links a')).map(a => a.getAttribute('href'))")
    page.close()
    reached = {re.sub(r"^(\.\./)+", "", link).split("#")[0] for link in links}
    missing = [c for c in CHAPTERS if c not in reached]
    assert not missing, f"chapters missing from the sidebar: {missing}"


def test_search_finds_pointer(browser, server):
    page, errors = open_page(browser, f"{server}/search.html?q=pointer")
    page.wait_for_selector("#search-results ul.search li", timeout=20_000)
    assert page.locator("#search-results ul.search li").count() >= 1
    page.close()
    assert not errors, errors
