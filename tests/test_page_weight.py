"""How much each page of the built book loads (scripts/page_weight.py), and the
icon fonts of scripts/vendor_icons.py.

The measuring script is tested on a small folder of pages that the tests write, the
committed icon fonts against the installed themes. The checks of the built book run
after `make book` (and `make offline`, which serves MathJax from the build); without
a built book they are skipped, unless ATTNLAB_REQUIRE_BOOK=1, where a missing book
is a failure (as in tests/test_book_in_browser.py). They check that Vega loads on
exactly the pages that hold an explorable figure, that every page stays within the
budgets below, and that every icon a page shows is in the book's icon fonts.

The budgets, from `python scripts/page_weight.py` on the book built with its
notebooks' outputs and MathJax served from the build. Before the book loaded only
the icons it uses, every page loaded 2.65 MB of theme and extension files (1.49 MB
of it Font Awesome's script, 0.30 MB its fonts), the heaviest chapter 5.76 MB in
all. After, 0.87 MB and 3.98 MB (MathJax 1.17 MB of it, Vega 0.83 MB, the page's
HTML 0.52 MB, its images 0.59 MB). The budgets leave a chapter room to grow, and
none for Font Awesome's script or its full fonts to come back.
"""

import importlib.util
import json
import os
import re
from pathlib import Path

import pytest

from attnlab.explorable import VENDORED
from tests.notebook_files import ROOT

HTML = ROOT / "_build" / "html"
REQUIRED = os.environ.get("ATTNLAB_REQUIRE_BOOK") == "1"
# bytes a page may load in all: its HTML, scripts, stylesheets, fonts and images
PAGE_BUDGET = 4_500_000
# bytes of what a page loads besides its own HTML and images, MathJax and Vega: the
# theme's and the extensions' files and the search index, the same on every page
SHARED_BUDGET = 1_000_000
EXPLORABLE = 'class="attnlab-explorable"'
VEGA = [f"_static/vega/{name}-{v}.min.js" for name, v in VENDORED.items()]
WEBFONTS = Path("vendor") / "fontawesome" / "webfonts"
RERUN = "run scripts/vendor_icons.py"
LIST = "python scripts/page_weight.py --files"


def _script(name: str):
    path = ROOT / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


page_weight = _script("page_weight")
vendor_icons = _script("vendor_icons")


def shared_bytes(weight: dict) -> int:
    """What a page loads besides its own HTML and images, MathJax and Vega."""
    own = ("_static/mathjax/", "_static/vega/")
    return (
        weight["total"]
        - weight["bytes"]["page"]
        - weight["bytes"]["image"]
        - sum(size for name, size in weight["files"].items() if name.startswith(own))
    )


def vega_misplaced(html: Path, weights: list[dict]) -> list[str]:
    """The pages that load Vega without holding an explorable figure, or hold one
    without loading all of Vega."""
    wrong = []
    for weight in weights:
        text = (html / weight["page"]).read_text(encoding="utf-8", errors="replace")
        explorable = EXPLORABLE in text
        loaded = [name for name in VEGA if name in weight["files"]]
        vega = [name for name in weight["files"] if name.startswith("_static/vega/")]
        if (explorable and loaded != VEGA) or (not explorable and vega):
            wrong.append(
                f"{weight['page']} (explorable: {explorable}, Vega: {vega})"
            )
    return wrong


# ---- the measuring script, on pages written here ----------------------------------


def write(path: Path, content: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)


STYLE = """@import "more.css";
/* url(fonts/commented.woff2) */
@font-face{font-family:X;src:url(fonts/x.woff2) format("woff2"),url(fonts/x.ttf)}
@font-face { font-family: Y; src: url('fonts/y.woff2') }
.logo { background: url(logo.png) }
"""
HEAD = """<link rel="stylesheet" href="{up}_static/style.css?v=1">
<link rel="preload" as="script" href="{up}_static/app.js?digest=2">
<script defer src="{up}_static/app.js?digest=2"></script>
<script src="https://cdn.example.org/lib.js"></script><script>inline()</script>"""
INDEX = """<img src="_images/figure.png"><img src="data:image/png;base64,AAAA">
<img src="_images/gone.png">"""


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """A built book of two pages: index.html, and book/page.html with an explorable
    figure and Vega."""
    book = tmp_path / "html"
    write(book / "_static" / "app.js", "a" * 100)
    write(book / "_static" / "style.css", STYLE)
    write(book / "_static" / "more.css", "@font-face{src:url(fonts/x.woff2)}\n")
    write(book / "_static" / "fonts" / "x.woff2", b"\0" * 300)
    write(book / "_static" / "fonts" / "x.ttf", b"\0" * 5000)
    write(book / "_static" / "fonts" / "y.woff2", b"\0" * 40)
    write(book / "_static" / "logo.png", b"\0" * 7000)
    write(book / "_static" / "macros.html", "<script src='app.js'></script>")
    write(book / "_images" / "figure.png", b"\0" * 2000)
    for name in VEGA:
        write(book / name, "v" * 1000)
    page = "<html><head>{head}</head><body>{body}</body></html>"
    write(book / "index.html", page.format(head=HEAD.format(up=""), body=INDEX))
    vega = "".join(f'<script src="../{name}"></script>' for name in VEGA)
    body = f'<figure {EXPLORABLE}></figure>{vega}<img src="/_images/figure.png">'
    write(
        book / "book" / "page.html",
        page.format(head=HEAD.format(up="../"), body=body),
    )
    return book


def test_every_file_a_page_loads_is_counted_once(tiny):
    weights = {w["page"]: w for w in page_weight.measure(tiny)}
    assert sorted(weights) == ["book/page.html", "index.html"]  # not _static/*.html
    index = weights["index.html"]
    assert index["files"] == {
        "_static/app.js": 100,  # preloaded, then loaded: once
        "_static/style.css": len(STYLE),
        "_static/more.css": (tiny / "_static" / "more.css").stat().st_size,
        "_static/fonts/x.woff2": 300,  # named by both stylesheets: once
        "_static/fonts/y.woff2": 40,  # not x.ttf, not logo.png, not the comment's
        "_images/figure.png": 2000,
    }
    assert index["bytes"]["script"] == 100
    assert index["bytes"]["font"] == 340
    assert index["bytes"]["image"] == 2000
    assert index["bytes"]["page"] == (tiny / "index.html").stat().st_size
    assert index["total"] == sum(index["bytes"].values())
    assert index["total"] == index["bytes"]["page"] + sum(index["files"].values())
    assert index["remote"] == ["https://cdn.example.org/lib.js"]
    assert index["missing"] == ["_images/gone.png"]
    page = weights["book/page.html"]
    assert page["bytes"]["script"] == 100 + 1000 * len(VEGA)
    assert page["files"]["_images/figure.png"] == 2000  # an address from the root


def test_vega_is_found_where_it_does_not_belong(tiny):
    assert vega_misplaced(tiny, page_weight.measure(tiny)) == []
    index, page = tiny / "index.html", tiny / "book" / "page.html"
    vega = f'<script src="{VEGA[0]}"></script></body>'
    write(index, index.read_text().replace("</body>", vega))
    write(page, page.read_text().replace(f"../{VEGA[1]}", "x.js"))
    wrong = vega_misplaced(tiny, page_weight.measure(tiny))
    assert [line.split(" ")[0] for line in wrong] == ["book/page.html", "index.html"]


def test_the_command_prints_and_writes_json(tiny, tmp_path, capsys):
    out = tmp_path / "weights.json"
    assert page_weight.main([str(tiny), "--json", str(out), "--files"]) == 0
    printed = capsys.readouterr().out
    assert "book/page.html" in printed and "_static/fonts/x.woff2" in printed
    assert "remote (not counted): https://cdn.example.org/lib.js" in printed
    written = json.loads(out.read_text())
    assert [w["page"] for w in written["pages"]] == ["book/page.html", "index.html"]
    assert page_weight.main([str(tmp_path / "nowhere")]) == 1


# ---- the committed icon files, against the installed themes -----------------------


def test_the_stylesheet_readers():
    css = (
        '.fa-a:before,.fa-b:before{content:"\\f002"}.fa-c:before{content:"\uf015"}'
        'html{--icon:"\\f05a"}.x:after{content:"\\f107";font-family:Y}'
        '.y:before{content:"\\2014"}'
    )
    assert vendor_icons.catalogue(css) == {"a": 0xF002, "b": 0xF002, "c": 0xF015}
    assert vendor_icons.drawn_by_css(css) == {0xF05A, 0xF107}
    names = vendor_icons.names_in('<i class="fab fa-github fa-lg"></i>')
    assert names == {"github", "lg"}


def test_the_fonts_hold_every_icon_the_themes_use():
    fonttools = pytest.importorskip("fontTools.ttLib")
    static = ROOT / "book" / "_static"
    theme = vendor_icons.package_root("pydata_sphinx_theme") / "theme"
    styles = theme / "pydata_sphinx_theme" / "static" / "styles"
    css = (styles / "pydata-sphinx-theme.css").read_text(encoding="utf-8")
    table = vendor_icons.catalogue(css)
    wanted = {table[n] for n in vendor_icons.icons_named() if n in table}
    wanted |= set(vendor_icons.css_points())
    held = set()
    for font in (static / WEBFONTS).glob("*.ttf"):
        held |= set(fonttools.TTFont(font).getBestCmap())
        assert font.with_suffix(".woff2").stat().st_size < 10_000, font.name
    missing = sorted(f"U+{point:04X}" for point in wanted - held)
    assert not missing, f"icons the themes use, not in the fonts: {missing}; {RERUN}"
    stub = static / "scripts" / "fontawesome.js"
    assert stub.read_text() == vendor_icons.STUB, RERUN


# ---- the built book ---------------------------------------------------------------


def built_or_skip() -> None:
    if not (HTML / "index.html").exists():
        if REQUIRED:
            raise RuntimeError(f"no built book at {HTML} (make book)")
        pytest.skip("no built book: run `make book`")


@pytest.fixture(scope="module")
def weights() -> list[dict]:
    built_or_skip()
    return page_weight.measure(HTML)


def test_vega_loads_only_on_pages_with_an_explorable(weights):
    pages = [(HTML / w["page"]).read_text() for w in weights]
    assert any(EXPLORABLE in page for page in pages), "no explorable in the book"
    wrong = vega_misplaced(HTML, weights)
    assert not wrong, f"Vega without an explorable, or the other way: {wrong}"


def test_every_page_within_its_budget(weights):
    over = [
        f"{w['page']}: {w['total'] / 1e6:.2f} MB"
        for w in weights
        if w["total"] > PAGE_BUDGET
    ]
    assert not over, f"pages over {PAGE_BUDGET / 1e6} MB ({LIST}): {over}"
    shared = [
        f"{w['page']}: {shared_bytes(w) / 1e6:.2f} MB"
        for w in weights
        if shared_bytes(w) > SHARED_BUDGET
    ]
    assert not shared, (
        f"shared files over {SHARED_BUDGET / 1e6} MB ({LIST}): {shared}"
    )
    missing = sorted({name for w in weights for name in w["missing"]})
    assert not missing, f"pages name files that the build lacks: {missing}"


def test_every_icon_a_page_shows_is_in_the_fonts(weights):
    fonttools = pytest.importorskip("fontTools.ttLib")
    fonts = HTML / "_static" / WEBFONTS
    for font in fonts.iterdir():
        ours = ROOT / "book" / "_static" / WEBFONTS / font.name
        stale = f"{font.name} is the theme's, not book/_static's: rebuild the book"
        assert ours.is_file() and ours.read_bytes() == font.read_bytes(), stale
    held = set()
    for font in fonts.glob("*.ttf"):
        held |= set(fonttools.TTFont(font).getBestCmap())
    css = HTML / "_static" / "styles" / "pydata-sphinx-theme.css"
    table = vendor_icons.catalogue(css.read_text(encoding="utf-8"))
    missing = set()
    for w in weights:
        page = (HTML / w["page"]).read_text(encoding="utf-8", errors="replace")
        classes = " ".join(re.findall(r'class="([^"]*)"', page))
        shown = {table[n] for n in vendor_icons.names_in(classes) if n in table}
        for name in w["files"]:
            if name.endswith(".css"):
                text = (HTML / name).read_text(encoding="utf-8", errors="replace")
                shown |= vendor_icons.drawn_by_css(text)
        missing |= {f"{w['page']}: U+{point:04X}" for point in shown - held}
    assert not missing, f"icons not in the fonts: {sorted(missing)}; {RERUN}"
