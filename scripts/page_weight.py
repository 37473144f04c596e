"""How many bytes each page of the built book loads.

    python scripts/page_weight.py [_build/html] [--json weights.json] [--files]

For every page of a built HTML folder (each ``.html`` file outside ``_static``,
``_sources`` and ``_images``): the page's own bytes and those of every local file
that its HTML names, each counted once per page: scripts (``<script src>``),
stylesheets and preloads (``<link rel=stylesheet|preload href>``), images
(``<img src>``), and the fonts its stylesheets name (``@import`` followed; of each
``@font-face``, the first ``url()`` of its ``src``, the format a current browser
fetches). A browser fetches a font only when some text uses it, so the fonts are an
upper bound. Not counted, and listed: addresses outside the book (a CDN), and names
that no file matches. Not seen at all: what scripts load by themselves (MathJax's
own fonts and extensions).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

SKIPPED = {"_static", "_sources", "_images"}  # folders of assets, not pages
KINDS = ("page", "script", "stylesheet", "font", "image")
FONT_SUFFIXES = {".woff2", ".woff", ".ttf", ".otf", ".eot"}
# what a <link rel=preload as=...> fetches, by its `as`
PRELOADS = {
    "script": "script",
    "style": "stylesheet",
    "font": "font",
    "image": "image",
}

COMMENT = re.compile(r"/\*.*?\*/", re.S)
IMPORT = re.compile(r"""@import\s+(?:url\(\s*)?["']?([^"')\s;]+)""")
FONT_FACE = re.compile(r"@font-face\s*\{([^}]*)\}", re.S)
SRC = re.compile(r"(?:^|[;{\s])src\s*:([^;}]*)", re.S)
URL = re.compile(r"""url\(\s*["']?([^"')]+?)["']?\s*\)""")


class _Assets(HTMLParser):
    """Collects (kind, address) of what a page's HTML asks the browser to fetch."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {key: value or "" for key, value in attrs}
        if tag == "script" and a.get("src"):
            self.found.append(("script", a["src"]))
        elif tag == "img" and a.get("src"):
            self.found.append(("image", a["src"]))
        elif tag == "link" and a.get("href"):
            rel = a.get("rel", "").lower().split()
            if "stylesheet" in rel:
                self.found.append(("stylesheet", a["href"]))
            elif "preload" in rel:
                kind = PRELOADS.get(a.get("as", "").lower())
                if kind is None:
                    kind = (
                        "font" if _suffix(a["href"]) in FONT_SUFFIXES else "script"
                    )
                self.found.append((kind, a["href"]))


def _suffix(address: str) -> str:
    return Path(urlsplit(address).path).suffix.lower()


def _local(address: str, base: Path, root: Path) -> Path | None:
    """The file that ``address`` (relative to the folder ``base``) names inside
    ``root``; ``None`` for a remote or inline (``data:``) address."""
    parts = urlsplit(address)
    if parts.scheme or parts.netloc or not parts.path:
        return None
    path = unquote(parts.path)
    target = root / path.lstrip("/") if path.startswith("/") else base / path
    return Path(*_normalised(target.parts))


def _normalised(parts: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for part in parts:
        if part == "..":
            if out and out[-1] not in ("/", ".."):
                out.pop()
        elif part != ".":
            out.append(part)
    return out


def _remote(address: str) -> bool:
    parts = urlsplit(address)
    return bool(parts.netloc) or parts.scheme in ("http", "https")


@cache
def _css_references(css: Path) -> tuple[tuple[str, str], ...]:
    """(kind, address) of the stylesheets a stylesheet imports and the fonts its
    ``@font-face`` rules fetch (the first ``url()`` of each ``src``)."""
    text = COMMENT.sub("", css.read_text(encoding="utf-8", errors="replace"))
    found = [("stylesheet", address) for address in IMPORT.findall(text)]
    for body in FONT_FACE.findall(text):
        for src in SRC.findall(body):
            first = URL.search(src)
            if first and not first.group(1).startswith("data:"):
                found.append(("font", first.group(1)))
    return tuple(found)


def page_weight(page: Path, root: Path) -> dict:
    """The bytes that the page ``page`` of the built book in ``root`` loads.

    Returns ``{"page": path relative to root, "total": bytes, "bytes": {kind:
    bytes} for kind in KINDS, "files": {path relative to root: bytes}, "remote":
    [address], "missing": [path]}``.
    """
    parser = _Assets()
    parser.feed(page.read_text(encoding="utf-8", errors="replace"))
    weight = {kind: 0 for kind in KINDS}
    weight["page"] = page.stat().st_size
    files: dict[str, int] = {}
    remote: list[str] = []
    missing: list[str] = []
    queue = [(kind, address, page.parent) for kind, address in parser.found]
    while queue:
        kind, address, base = queue.pop(0)
        if _remote(address):
            if address not in remote:
                remote.append(address)
            continue
        path = _local(address, base, root)
        if path is None:
            continue  # inline (data:), already in the page's bytes
        name = (
            path.relative_to(root).as_posix()
            if path.is_relative_to(root)
            else str(path)
        )
        if name in files or name in missing:
            continue
        if not path.is_file():
            missing.append(name)
            continue
        files[name] = path.stat().st_size
        weight[kind] += files[name]
        if kind == "stylesheet":
            queue.extend((k, a, path.parent) for k, a in _css_references(path))
    return {
        "page": page.relative_to(root).as_posix(),
        "total": sum(weight.values()),
        "bytes": weight,
        "files": dict(sorted(files.items(), key=lambda item: -item[1])),
        "remote": remote,
        "missing": missing,
    }


def pages(root: Path) -> list[Path]:
    """Every page of the built book in ``root``, sorted."""
    return sorted(
        p
        for p in root.rglob("*.html")
        if p.relative_to(root).parts[0] not in SKIPPED
    )


def measure(root: Path) -> list[dict]:
    """:func:`page_weight` of every page of the built book in ``root``."""
    root = Path(*_normalised(root.resolve().parts))
    if not root.is_dir():
        raise FileNotFoundError(f"no built book at {root}")
    return [page_weight(page, root) for page in pages(root)]


def table(weights: list[dict], files: bool = False) -> str:
    """The weights as a text table in kB (1000 bytes), with each page's files when
    ``files`` is true."""
    heads = ("page", "html", "scripts", "styles", "fonts", "images", "total")
    width = max([len(w["page"]) for w in weights] + [len("page")])
    lines = [f"{heads[0]:<{width}}" + "".join(f"{h:>10}" for h in heads[1:])]
    for w in weights:
        numbers = [w["bytes"][kind] for kind in KINDS] + [w["total"]]
        lines.append(
            f"{w['page']:<{width}}" + "".join(f"{n / 1e3:>10.1f}" for n in numbers)
        )
        if files:
            lines += [
                f"    {size / 1e3:>10.1f}  {name}"
                for name, size in w["files"].items()
            ]
        lines += [f"    remote (not counted): {address}" for address in w["remote"]]
        lines += [f"    missing: {name}" for name in w["missing"]]
    totals = [w["total"] for w in weights]
    if totals:
        lines.append(
            f"{len(totals)} pages; largest {max(totals) / 1e3:.1f} kB, "
            f"median {sorted(totals)[len(totals) // 2] / 1e3:.1f} kB"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "html", nargs="?", default="_build/html", type=Path, help="the built book"
    )
    parser.add_argument(
        "--json", type=Path, help="also write the weights to this JSON file"
    )
    parser.add_argument(
        "--files", action="store_true", help="list each page's files"
    )
    args = parser.parse_args(argv)
    try:
        weights = measure(args.html)
    except FileNotFoundError as error:
        print(error, file=sys.stderr)
        return 1
    print(table(weights, files=args.files))
    if args.json:
        args.json.write_text(
            json.dumps({"root": str(args.html), "pages": weights}, indent=1) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
