"""Write the book's own copies of the theme's icon files into ``book/_static/``:
only the icons the book uses.

    python scripts/vendor_icons.py

pydata-sphinx-theme (pinned in requirements.lock) loads on every page
``_static/scripts/fontawesome.js``, Font Awesome's whole SVG library (1.5 MB), which
redraws each ``<i class="fa-...">`` as SVG; its own stylesheet already draws the
same icons from Font Awesome's webfonts (``_static/vendor/fontawesome/webfonts/``,
300 kB with every icon), as it draws the admonitions' and links' icons
(``content:`` in the stylesheets). Files in ``html_static_path`` are copied over the
theme's files of the same name, so this script writes there:

- ``scripts/fontawesome.js``: a comment instead of the library;
- ``vendor/fontawesome/webfonts/fa-*.woff2`` and ``.ttf``: the theme's fonts cut
  down, with fontTools (pinned in requirements.lock) and brotli (``BROTLI``,
  installed into a temporary folder when missing), to the glyphs of the icons named
  in the themes' templates, Python and scripts (and the repository providers'
  icons, whose names sphinx-book-theme forms at build time), at the code points the
  theme's stylesheet gives them, and of every Font Awesome code point that the
  stylesheets of the theme and of the book's extensions use;
- ``vendor/fontawesome/webfonts/README.txt``: the fonts' licence and what they keep.

Run it after changing the theme's or an extension's version; the copies are
committed. tests/test_page_weight.py checks on the built book that every icon a page
names or a stylesheet draws is in the fonts.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATIC = ROOT / "book" / "_static"
FONTS = Path("vendor") / "fontawesome" / "webfonts"
THEMES = ("pydata_sphinx_theme", "sphinx_book_theme")
# the packages whose stylesheets the built book loads (jupyter_book.config's
# extensions, sphinx_exercise)
STYLED = (
    *THEMES,
    "sphinx",
    "sphinx_design",
    "sphinx_togglebutton",
    "sphinx_copybutton",
    "sphinx_thebe",
    "sphinx_exercise",
    "myst_nb",
    "jupyter_book",
)
BROTLI = "brotli==1.2.1"
# sphinx_book_theme.header_buttons.source writes f"fab fa-{provider.lower()}"
PROVIDERS = ("github", "gitlab", "bitbucket")
NAME = re.compile(r"\bfa-([a-z0-9]+(?:-[a-z0-9]+)*)")
RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
# Font Awesome's catalogue: `.fa-a:before,.fa-b:before{content:"\f002"}`
CATALOGUE = re.compile(
    r"\s*\.fa-[a-z0-9-]+:before(?:\s*,\s*\.fa-[a-z0-9-]+:before)*\s*"
)
ESCAPE = re.compile(r"\\([0-9a-fA-F]{1,6})\s?")
# Unicode's private use area, where Font Awesome's glyphs are
PRIVATE = range(0xE000, 0xF900)
STUB = """/* The book's stand-in for the theme's Font Awesome script (Font Awesome's
   whole SVG library, 1.5 MB). The theme's stylesheet draws every icon from the
   webfonts beside it, which scripts/vendor_icons.py cuts down to the icons the
   book uses. */
"""


def pinned(package: str) -> str:
    """The version of ``package`` in requirements.lock."""
    wanted = package.lower().replace("_", "-")
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        name, _, version = line.partition("==")
        if name.strip().lower().replace("_", "-") == wanted:
            return version.strip()
    raise SystemExit(f"{package} is not pinned in requirements.lock")


def check_versions() -> None:
    for package in ("pydata-sphinx-theme", "sphinx-book-theme", "fonttools"):
        installed = importlib.metadata.version(package)
        if installed != pinned(package):
            raise SystemExit(
                f"{package} {installed} is installed,"
                f" requirements.lock pins {pinned(package)}"
            )


def package_root(name: str) -> Path:
    return Path(importlib.import_module(name).__file__).parent


def _unescaped(value: str) -> str:
    return ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), value)


def _rules(css: str) -> list[tuple[str, str]]:
    return RULE.findall(re.sub(r"/\*.*?\*/", "", css, flags=re.S))


def catalogue(css: str) -> dict[str, int]:
    """Icon name (without ``fa-``) -> code point, from Font Awesome's rules in a
    stylesheet."""
    points = {}
    for selectors, body in _rules(css):
        content = re.search(r'content:\s*"([^"]*)"', body)
        if CATALOGUE.fullmatch(selectors) and content:
            text = _unescaped(content.group(1))
            for name in re.findall(r"\.fa-([a-z0-9-]+):before", selectors):
                points[name] = ord(text[0])
    return points


def drawn_by_css(css: str) -> set[int]:
    """The private-use code points that a stylesheet's rules draw (``content:``,
    custom properties), outside Font Awesome's catalogue."""
    points = set()
    for selectors, body in _rules(css):
        if not CATALOGUE.fullmatch(selectors):
            for value in re.findall(r'"([^"]*)"', body):
                points |= {ord(c) for c in _unescaped(value) if ord(c) in PRIVATE}
    return points


def names_in(text: str) -> set[str]:
    """Every ``NAME`` of ``fa-NAME`` in ``text``."""
    return set(NAME.findall(text))


def icons_named() -> set[str]:
    """Every ``fa-NAME`` in the themes' templates, Python and scripts."""
    names = set(PROVIDERS)
    for theme in THEMES:
        for path in package_root(theme).rglob("*"):
            if (
                path.suffix in (".html", ".py", ".js")
                and path.name != "fontawesome.js"
            ):
                names |= names_in(path.read_text(encoding="utf-8", errors="replace"))
    return names


def css_points() -> dict[int, list[str]]:
    """Code point -> the stylesheets (package/path) that draw it."""
    found: dict[int, list[str]] = {}
    for package in STYLED:
        root = package_root(package)
        for path in sorted(root.rglob("*.css")):
            sheet = f"{package}/{path.relative_to(root).as_posix()}"
            css = path.read_text(encoding="utf-8", errors="replace")
            for point in drawn_by_css(css):
                found.setdefault(point, []).append(sheet)
    return found


def with_brotli(prefix: str) -> None:
    """Import brotli (fontTools writes woff2 with it), installed into ``prefix`` if
    missing."""
    try:
        import brotli  # noqa: F401
    except ImportError:
        pip = [sys.executable, "-m", "pip", "install", "--quiet"]
        subprocess.run([*pip, "--target", prefix, BROTLI], check=True)
        sys.path.insert(0, prefix)
        importlib.import_module("brotli")


def subset(source: Path, points: set[int], target: Path, flavor: str | None) -> None:
    from fontTools import subset as fonttools_subset
    from fontTools.ttLib import TTFont

    options = fonttools_subset.Options()
    options.flavor = flavor
    options.name_IDs = ["*"]  # keep the copyright and licence records
    options.name_languages = ["*"]
    font = TTFont(source, recalcTimestamp=False)  # the same bytes on every run
    subsetter = fonttools_subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(points))
    subsetter.subset(font)
    target.parent.mkdir(parents=True, exist_ok=True)
    fonttools_subset.save_font(font, str(target), options)


def main() -> None:
    check_versions()
    theme = package_root("pydata_sphinx_theme") / "theme"
    pydata = theme / "pydata_sphinx_theme" / "static"
    css = (pydata / "styles" / "pydata-sphinx-theme.css").read_text(encoding="utf-8")
    table = catalogue(css)
    named = {name: table[name] for name in sorted(icons_named()) if name in table}
    drawn = css_points()
    points = set(named.values()) | set(drawn)
    header = re.search(r"/\*!\s*(\* Font Awesome Free.*?)\*/", css, re.S)
    (STATIC / "scripts").mkdir(parents=True, exist_ok=True)
    (STATIC / "scripts" / "fontawesome.js").write_text(STUB)
    with tempfile.TemporaryDirectory() as prefix:
        with_brotli(prefix)
        for source in sorted((pydata / FONTS).glob("*.ttf")):
            for suffix, flavor in ((".woff2", "woff2"), (".ttf", None)):
                target = STATIC / FONTS / (source.stem + suffix)
                subset(source, points, target, flavor)
    licence = (header.group(1) if header else "").splitlines()
    lines = [
        "The theme's Font Awesome fonts, cut down by scripts/vendor_icons.py"
        " to the icons the book uses,",
        f"from pydata-sphinx-theme {pinned('pydata-sphinx-theme')}:",
        *(line.strip(" *") for line in licence if line.strip(" *")),
        "",
        "Icons named in the themes (name: code point):",
        *(f"  fa-{name}: U+{point:04X}" for name, point in named.items()),
        "Code points that stylesheets draw:",
        *(
            f"  U+{point:04X}: {', '.join(sheets)}"
            for point, sheets in sorted(drawn.items())
        ),
    ]
    (STATIC / FONTS / "README.txt").write_text("\n".join(lines) + "\n")
    total = sum(p.stat().st_size for p in (STATIC / FONTS).iterdir())
    print(f"{len(points)} glyphs in {STATIC / FONTS} ({total / 1e3:.1f} kB)")


if __name__ == "__main__":
    main()
