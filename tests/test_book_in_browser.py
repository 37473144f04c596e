"""The built book as a reader sees it: every page of both editions in headless Chromium, served from 127.0.0.1.

Runs after `make book` and `make book EDITION=student` (and `make offline`, so MathJax is served from the full
build); without a built book it is skipped, unless ATTNLAB_REQUIRE_BOOK=1 (as in .ci/run), where a missing edition
or browser is a failure. The students' edition (worked solutions left out) must have every page of the full one.
"""

import re
from pathlib import Path

import pytest

import attnlab
from attnlab.plot import DPI, SMALLEST_PT
from tests.browser import (
    CHROMIUM,
    CUT_TEXT,
    OUTSIDE,
    REQUIRED,
    SMALL_TEXT,
    SMALLEST_PX,
    TOO_WIDE,
    serve,
)
from tests.browser import browser as open_browser
from tests.notebook_files import NOTEBOOKS, ROOT

EDITIONS = {"full": ROOT / "_build" / "html", "student": ROOT / "_build" / "student-edition" / "html"}
HTML = EDITIONS["full"]
SCREENSHOTS = ROOT / "_build" / "screenshots"

missing = [edition for edition, html in EDITIONS.items() if not (html / "index.html").exists()]
if missing or not Path(CHROMIUM).exists():
    if REQUIRED:
        raise RuntimeError(f"the browser test needs both editions (missing: {missing}: make book, make book "
                           f"EDITION=student) and {CHROMIUM}")
    pytest.skip("no built book or no chromium: run `make book` and `make book EDITION=student` first",
                allow_module_level=True)
pytest.importorskip("playwright.sync_api")


def pages(html: Path) -> list[str]:
    return sorted(str(p.relative_to(html)) for p in html.rglob("*.html")
                  if p.parts[len(html.parts)] not in ("_static", "_sources", "reports", "_images")
                  and p.name not in ("genindex.html", "search.html", "index.html"))


PAGES = pages(HTML)
CHAPTERS = [f"notebooks/{p.stem}.html" for p in NOTEBOOKS]
# What each edition's Colab buttons open: the full edition, the release tag it is built from (whose install cell
# installs that same tag); the students' edition, the students' notebooks of that release.
BRANCHES = {"full": f"v{attnlab.__version__}", "student": "students"}


@pytest.fixture(scope="module")
def servers():
    with serve(EDITIONS["full"]) as full, serve(EDITIONS["student"]) as student:
        yield {"full": full, "student": student}


@pytest.fixture(scope="module")
def server(servers):
    return servers["full"]


@pytest.fixture(scope="module")
def browser():
    with open_browser() as chromium:
        yield chromium


PHONE = (390, 844)


def open_page(browser, url: str, viewport: tuple[int, int] = (1280, 900)):
    """Open ``url``; return the page and the errors raised by the book's own code (console and exceptions)."""
    page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
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


# Display equations wider than their box: they need a sideways scroll (on a phone they scroll inside their own box,
# book/_static/code-width.css; in the 1280-pixel column none may).
WIDE_MATH = """Array.from(document.querySelectorAll('article mjx-container[display="true"]'))
  .filter(m => m.scrollWidth > m.clientWidth + 1).map(m => m.textContent.slice(0, 60))"""
# The page itself is wider than the window: the reader must scroll the whole page sideways.
PAGE_SCROLLS = "document.documentElement.scrollWidth > window.innerWidth"


def wait_for_explorables(page) -> None:
    """Until every explorable figure on the page is drawn and fitted to its column."""
    page.wait_for_function("Object.keys(window.attnlabViews || {}).length === "
                           "document.querySelectorAll('figure.attnlab-explorable').length", timeout=20_000)


# A figure a cell drew (a PNG of DPI dots per inch, or an SVG of 96 pixels per inch) has no text below SMALLEST_PT
# points as drawn (tests/test_plot.py: attnlab.plot.rendered_points for the library's figures, the notebooks' font
# sizes and widths), so shown at w CSS pixels of its natural n its smallest text is at least
# SMALLEST_PT / 72 * (pixels per inch) * w / n CSS pixels: it must be 9 CSS points (12 pixels), less the 2 % by which
# an output's image box (704 pixels at 1280) is narrower than the 720-pixel column attnlab.plot measures against.
# [image, natural width, shown width, the smallest text's pixels].
FIGURE_TEXT = """Array.from(document.querySelectorAll('article .cell_output img:not(.attnlab-fallback)'))
  .filter(i => i.getBoundingClientRect().width > 0 && i.naturalWidth > 0)
  .map(i => [i.src.split('/').pop().slice(0, 16), i.naturalWidth, i.getBoundingClientRect().width,
             Math.round(""" + str(SMALLEST_PT) + """ / 72 * (/[.]svg/i.test(i.src) ? 96 : """ + str(DPI) + """)
                        * i.getBoundingClientRect().width / i.naturalWidth * 10) / 10])
  .filter(([src, natural, shown, px]) => px < """ + str(SMALLEST_PX * 0.98) + """)"""


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


# What a cell printed: it wraps inside the column (book/_static/code-width.css), and it holds no progress bar
# (the built book prints one summary line per loop) and no stray value such as the True of a check.
OUTPUTS = "Array.from(document.querySelectorAll('article div.cell_output pre'))"
WIDE_OUTPUT = OUTPUTS + ".filter(p => p.scrollWidth > p.clientWidth + 1).map(p => p.textContent.slice(0, 100))"
NOISY_OUTPUT = OUTPUTS + ".map(p => p.textContent).filter(t => /\\d+%\\|/.test(t) || t.trim() === 'True')"


def test_the_output_checks_find_a_wide_line_a_bar_and_a_stray_value(browser, server):
    chapter = CHAPTERS[0].removeprefix("notebooks/")
    page, _ = open_page(browser, f"{server}/notebooks/{chapter}")
    try:
        assert page.locator("article div.cell_output pre").count(), "no printed output to test with"
        assert not page.evaluate(WIDE_OUTPUT) and not page.evaluate(NOISY_OUTPUT)
        pre = "document.querySelector('article div.cell_output pre')"
        page.evaluate(f"{pre}.textContent = 'wraps '.repeat(60)")
        assert not page.evaluate(WIDE_OUTPUT), "a long printed sentence does not wrap"
        page.evaluate(f"{pre}.style.whiteSpace = 'pre'")
        assert page.evaluate(WIDE_OUTPUT)
        page.evaluate(f"{pre}.textContent = 'NTM:  25%|# | 750/3000'")
        assert page.evaluate(NOISY_OUTPUT) == ["NTM:  25%|# | 750/3000"]
        page.evaluate(f"{pre}.textContent = 'True'")
        assert page.evaluate(NOISY_OUTPUT) == ["True"]
    finally:
        page.close()


def test_every_chapter_is_built():
    assert set(CHAPTERS) <= set(PAGES)


def test_the_students_edition_has_every_page():
    assert pages(EDITIONS["student"]) == PAGES


@pytest.mark.parametrize("name", PAGES)
@pytest.mark.parametrize("edition", sorted(EDITIONS))
def test_page(browser, servers, edition, name):
    page, errors = open_page(browser, f"{servers[edition]}/{name}")
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
        assert not page.evaluate(WIDE_OUTPUT), f"printed output wider than the column: {page.evaluate(WIDE_OUTPUT)}"
        assert not page.evaluate(NOISY_OUTPUT), f"a progress bar or a stray value printed: {page.evaluate(NOISY_OUTPUT)}"
        assert not page.evaluate(WIDE_MATH), f"equations wider than the column: {page.evaluate(WIDE_MATH)}"
        wait_for_explorables(page)
        assert not page.evaluate(TOO_WIDE), f"explorables wider than the column: {page.evaluate(TOO_WIDE)}"
        assert not page.evaluate(OUTSIDE), f"explorables drawn outside their figure: {page.evaluate(OUTSIDE)}"
        assert not page.evaluate(SMALL_TEXT), f"explorables' text below 12 pixels: {page.evaluate(SMALL_TEXT)}"
        assert not page.evaluate(CUT_TEXT), f"explorables' text cut short: {page.evaluate(CUT_TEXT)}"
        assert not page.evaluate(FIGURE_TEXT), (
            f"figures shown so small that their text is below 9 points: {page.evaluate(FIGURE_TEXT)}")
        unnumbered = page.evaluate("Array.from(document.querySelectorAll('figure.attnlab-explorable'))"
                                   ".filter(f => !(f.parentElement.closest('figure') && f.parentElement"
                                   ".closest('figure').querySelector(':scope > figcaption .caption-number')))"
                                   ".map(f => f.id)")
        assert not unnumbered, f"explorables without a numbered caption: {unnumbered}"
        levels = page.evaluate("Array.from(document.querySelectorAll('article h1, article h2, article h3, "
                               "article h4, article h5, article h6')).map(h => Number(h.tagName[1]))")
        skipped = [(a, b) for a, b in zip(levels, levels[1:], strict=False) if b > a + 1]
        assert levels and levels[0] == 1 and not skipped, f"headings out of order: {levels}"
        assert not errors, f"console errors: {errors}"
        if name in CHAPTERS:
            colab = page.evaluate("Array.from(document.querySelectorAll('a')).map(a => a.href)"
                                  ".filter(h => h.includes('colab.research.google.com'))")
            notebook = f"/blob/{BRANCHES[edition]}/{name.replace('.html', '.ipynb')}"
            assert colab and all(h.endswith(notebook) for h in colab), colab
            if edition == "full":
                SCREENSHOTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(SCREENSHOTS / f"{Path(name).stem}.png"), full_page=False)
    finally:
        page.close()


@pytest.mark.parametrize(("edition", "name"), [(e, n) for e in sorted(EDITIONS) for n in CHAPTERS])
def test_chapter_on_a_phone(browser, servers, edition, name):
    """At 390 x 844 the page never scrolls sideways: equations scroll in their own box, explorables fit."""
    page, errors = open_page(browser, f"{servers[edition]}/{name}", viewport=PHONE)
    try:
        wait_for_math(page)
        wait_for_explorables(page)
        assert not page.evaluate(TOO_WIDE), f"explorables wider than the column: {page.evaluate(TOO_WIDE)}"
        assert not page.evaluate(OUTSIDE), f"explorables drawn outside their figure: {page.evaluate(OUTSIDE)}"
        assert not page.evaluate(SMALL_TEXT), f"explorables' text below 12 pixels: {page.evaluate(SMALL_TEXT)}"
        assert not page.evaluate(CUT_TEXT), f"explorables' text cut short: {page.evaluate(CUT_TEXT)}"
        assert not page.evaluate(PAGE_SCROLLS), "the page scrolls sideways on a phone"
        assert not errors, f"console errors: {errors}"
    finally:
        page.close()


def test_the_width_checks_find_a_wide_equation_and_a_page_that_scrolls(browser, server):
    page, _ = open_page(browser, f"{server}/{CHAPTERS[1]}", viewport=PHONE)
    try:
        wait_for_math(page)
        assert not page.evaluate(PAGE_SCROLLS)
        page.evaluate("document.querySelector('article').style.minWidth = '900px'")
        assert page.evaluate(PAGE_SCROLLS)
    finally:
        page.close()
    page, _ = open_page(browser, f"{server}/{CHAPTERS[1]}")
    try:
        wait_for_math(page)
        assert not page.evaluate(WIDE_MATH)
        page.evaluate("document.querySelector('article mjx-container[display=\"true\"]').style.maxWidth = '50px'")
        assert len(page.evaluate(WIDE_MATH)) == 1
    finally:
        page.close()


def test_the_figure_check_finds_a_figure_shown_too_small(browser, server):
    page, _ = open_page(browser, f"{server}/{CHAPTERS[0]}")
    try:
        # a figure narrower than the column, shown at full size, then at 90 % (9-point text at 100 dpi: 11.25 pixels)
        image = ("Array.from(document.querySelectorAll('article .cell_output img:not(.attnlab-fallback)'))"
                 ".find(i => i.naturalWidth < 700)")
        natural, before = page.evaluate(f"{image}.naturalWidth"), len(page.evaluate(FIGURE_TEXT))
        page.evaluate(f"{image}.style.width = '{round(natural * 0.9)}px'")
        assert len(page.evaluate(FIGURE_TEXT)) == before + 1
    finally:
        page.close()


def test_sidebar_reaches_every_chapter(browser, server):
    page, _ = open_page(browser, f"{server}/book/intro.html")
    links = page.evaluate("Array.from(document.querySelectorAll('nav.bd-links a')).map(a => a.getAttribute('href'))")
    page.close()
    reached = {re.sub(r"^(\.\./)+", "", link).split("#")[0] for link in links}
    missing = [c for c in CHAPTERS if c not in reached]
    assert not missing, f"chapters missing from the sidebar: {missing}"


@pytest.mark.parametrize("edition", sorted(EDITIONS))
def test_search_finds_pointer(browser, servers, edition):
    page, errors = open_page(browser, f"{servers[edition]}/search.html?q=pointer")
    page.wait_for_selector("#search-results ul.search li", timeout=20_000)
    assert page.locator("#search-results ul.search li").count() >= 1
    page.close()
    assert not errors, errors
