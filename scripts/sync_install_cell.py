"""Write every copy of the repository's address and of the package version from their one source each.

The sources: ``repository.url`` (with ``path_to_book``) in ``_config.yml``, and ``__version__`` in
``src/attnlab/__init__.py``. The copies this script writes:

- the install cell, the first code cell of every notebook in ``notebooks/`` (and its copies in ``book/setup.md``
  and ``CONTRIBUTING.md``): its default install source becomes ``git+<url>@v<version>``, the release tag of the
  version the book was built with (``ATTNLAB_SOURCE`` still overrides it);
- ``_config.yml``: ``repository.branch``, the release tag ``v<version>``: the published book is built from that
  tag (.github/workflows/release.yml), and its Colab buttons open the notebooks of that tag, whose install cell
  installs that same tag, so that a reader gets the notebook and the package of one tested commit;
  the address of the published book (``html.baseurl``, the GitHub Pages site of the repository),
  the version in the page footer (``html.extra_footer``) and the substitution ``{{ attnlab_version }}``;
- ``README.md``: its links to the published book and to the notebooks in Colab, and its table of chapters (one
  row per notebook of ``_toc.yml``, with its title and its "Open in Colab" link);
- ``book/instructors.md``: its link to the students' edition (under the published book's address).

    python scripts/sync_install_cell.py           # rewrite whatever differs and list the files it changed
    python scripts/sync_install_cell.py --check   # change nothing; exit 1 and list the files out of date

Only the install source string of the install cell is rewritten: the rest of the cell, and every other cell,
stays as it is. tests/test_version.py and tests/test_links.py check the result.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from urllib.parse import urlparse

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]

# The default source of the install cell: os.environ.get("ATTNLAB_SOURCE", "<this string>").
INSTALL_SOURCE = re.compile(r'(os\.environ\.get\(\s*"ATTNLAB_SOURCE",\s*")([^"]*)("\s*\))')
VERSION = re.compile(r'^__version__\s*=\s*"([^"]+)"', re.MULTILINE)
PAGES_LINK = re.compile(r"https://[A-Za-z0-9-]+\.github\.io/[A-Za-z0-9._-]*/?")
COLAB_LINK = re.compile(r"https://colab\.research\.google\.com/github/[^/\s)\"'>]+/[^/\s)\"'>]+/blob/[^/\s)\"'>]+/")


def config(root: Path = ROOT) -> dict:
    return yaml.safe_load((root / "_config.yml").read_text())


def package_version(root: Path = ROOT) -> str:
    """``__version__`` of src/attnlab/__init__.py, read without importing the package (and torch)."""
    match = VERSION.search((root / "src" / "attnlab" / "__init__.py").read_text())
    if not match:
        raise SystemExit("src/attnlab/__init__.py has no line __version__ = \"...\"")
    return match.group(1)


def owner_and_name(url: str) -> tuple[str, str]:
    parsed = urlparse(url)
    parts = parsed.path.strip("/").removesuffix(".git").split("/")
    if parsed.netloc != "github.com" or len(parts) != 2:
        raise SystemExit(f"_config.yml: repository.url must be https://github.com/OWNER/NAME, not {url!r}")
    return parts[0], parts[1]


def pages_url(url: str) -> str:
    """Where GitHub Pages publishes the repository's site."""
    owner, name = owner_and_name(url)
    host = f"{owner.lower()}.github.io"
    return f"https://{host}/" if name.lower() == host else f"https://{host}/{name}/"


def install_source(url: str, version: str) -> str:
    """The install cell's default source: the release tag of ``version`` (made by .github/workflows/release.yml)."""
    return f"git+{url}@v{version}"


def release_branch(version: str) -> str:
    """What the book's Colab buttons and links open: the release tag, the commit the install cell installs."""
    return f"v{version}"


def colab_prefix(cfg: dict, branch: str | None = None) -> str:
    """The start of a notebook's Colab address, as the book's launch button builds it (with no path after it)."""
    owner, name = owner_and_name(cfg["repository"]["url"])
    branch = branch or cfg["repository"].get("branch", "main")
    book = str(cfg["repository"].get("path_to_book", "") or "").strip("/")
    colab = cfg.get("launch_buttons", {}).get("colab_url", "https://colab.research.google.com").rstrip("/")
    return f"{colab}/github/{owner}/{name}/blob/{branch}/" + (f"{book}/" if book else "")


CHAPTERS_START = "<!-- chapters: written by scripts/sync_install_cell.py -->"
CHAPTERS_END = "<!-- end of chapters -->"


def toc_notebooks(root: Path = ROOT) -> list[str]:
    """The chapter notebooks in the order of _toc.yml, as paths relative to the repository (``notebooks/x.ipynb``)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [chapter["file"] for part in toc.get("parts", []) for chapter in part.get("chapters", [])]
    return [f"{file}.ipynb" for file in files if (root / f"{file}.ipynb").exists()]


def chapters_table(root: Path, cfg: dict, branch: str) -> str:
    rows = ["| chapter | |", "| --- | --- |"]
    number = 0
    for name in toc_notebooks(root):
        nb = nbformat.read(root / name, as_version=4)
        markdown = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
        title = re.search(r"^# (.+)$", markdown, re.MULTILINE)
        title = title.group(1).strip() if title else Path(name).stem
        if Path(name).name[:2].isdigit():  # chapters are numbered, appendix pages are not
            number += 1
            label = f"{number}."
        else:
            label = "Appendix:"
        rows.append(f"| {label} {title} | [Open in Colab]({colab_prefix(cfg, branch)}{name}) |")
    return "\n".join(rows)


def _replace_chapters(text: str, table: str) -> str:
    start, end = text.find(CHAPTERS_START), text.find(CHAPTERS_END)
    if start < 0 or end < start:
        raise SystemExit(f"README.md: no lines {CHAPTERS_START} ... {CHAPTERS_END}")
    return text[: start + len(CHAPTERS_START)] + "\n" + table + "\n" + text[end:]


def footer(url: str, branch: str, version: str) -> str:
    return f'<p>attnlab {version} (<a href="{url}/blob/{branch}/CHANGELOG.md">changes</a>)</p>'


def _replace_install_source(text: str, source: str, where: str) -> str:
    if not INSTALL_SOURCE.search(text):
        raise SystemExit(f'{where}: no os.environ.get("ATTNLAB_SOURCE", "...") to rewrite')
    return INSTALL_SOURCE.sub(lambda m: m.group(1) + source + m.group(3), text)


def _replace_line(text: str, key: str, value: str, where: str) -> str:
    pattern = re.compile(rf"^(\s*{key}:[ \t]*).*$", re.MULTILINE)
    if len(pattern.findall(text)) != 1:
        raise SystemExit(f"{where}: expected exactly one line '{key}: ...'")
    return pattern.sub(lambda m: m.group(1) + value, text)


def synced_notebook(path: Path, source: str) -> str:
    nb = nbformat.read(path, as_version=4)
    first = next((cell for cell in nb.cells if cell.cell_type == "code"), None)
    if first is None or 'importlib.util.find_spec("attnlab")' not in first.source:
        raise SystemExit(f"{path}: the first code cell is not the install cell")
    first.source = _replace_install_source(first.source, source, str(path))
    return nbformat.writes(nb) + "\n"


def synced_files(root: Path = ROOT) -> dict[Path, str]:
    """Every file this script writes, with the text it should have."""
    cfg = config(root)
    url = cfg["repository"]["url"].rstrip("/")
    version = package_version(root)
    branch = release_branch(version)
    source = install_source(url, version)
    texts: dict[Path, str] = {}
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        texts[path] = synced_notebook(path, source)
    for name in ("book/setup.md", "CONTRIBUTING.md"):
        texts[root / name] = _replace_install_source((root / name).read_text(), source, name)
    text = (root / "_config.yml").read_text()
    text = _replace_line(text, "branch", branch, "_config.yml")
    text = _replace_line(text, "baseurl", f'"{pages_url(url)}"', "_config.yml")
    text = _replace_line(text, "extra_footer", f"'{footer(url, branch, version)}'", "_config.yml")
    text = _replace_line(text, "attnlab_version",
                         f'"{version}"   # written by scripts/sync_install_cell.py from attnlab.__version__',
                         "_config.yml")
    texts[root / "_config.yml"] = text
    text = (root / "README.md").read_text()
    text = PAGES_LINK.sub(pages_url(url), text)
    text = COLAB_LINK.sub(colab_prefix(cfg, branch), text)
    text = _replace_chapters(text, chapters_table(root, cfg, branch))
    texts[root / "README.md"] = text
    # the instructors' page links to the students' edition, published under the book's address
    text = (root / "book" / "instructors.md").read_text()
    texts[root / "book" / "instructors.md"] = PAGES_LINK.sub(pages_url(url), text)
    return texts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file is out of date")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this script's)")
    args = parser.parse_args(argv)
    stale = [path for path, text in synced_files(args.root).items() if path.read_text() != text]
    for path in stale:
        print(f"{'out of date' if args.check else 'rewrote'}: {path.relative_to(args.root)}")
    if args.check:
        if stale:
            print("run: python scripts/sync_install_cell.py", file=sys.stderr)
        return 1 if stale else 0
    for path, text in synced_files(args.root).items():
        if path in stale:
            path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
