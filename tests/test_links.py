"""The addresses readers follow all agree with the one repository address of _config.yml.

README.md links to the published book (the repository's GitHub Pages site, also the book's ``html.baseurl``) and
to every chapter in Colab; the built pages' launch buttons, repository button and install cells name the same
repository. The built pages (`make book`) are read when they exist; without them those tests are skipped,
unless ATTNLAB_REQUIRE_BOOK=1 (as in .ci/run), where a missing book is a failure.
"""

import importlib.util
import os
import re
from html import unescape

import pytest
import yaml

import attnlab
from tests.notebook_files import NOTEBOOKS, ROOT

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
URL = CONFIG["repository"]["url"].rstrip("/")
HTML = ROOT / "_build" / "html"
REQUIRED = os.environ.get("ATTNLAB_REQUIRE_BOOK") == "1"
README = (ROOT / "README.md").read_text()


def _sync_script():
    spec = importlib.util.spec_from_file_location("sync_install_cell", ROOT / "scripts" / "sync_install_cell.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SYNC = _sync_script()
BOOK_URL = SYNC.pages_url(URL)
COLAB = SYNC.colab_prefix(CONFIG)
CHAPTERS = SYNC.toc_notebooks(ROOT)


def links(text: str) -> list[str]:
    return [unescape(h) for h in re.findall(r"https?://[^\s<>()\"'`]+", text)]


def test_the_book_address_is_the_repository_pages_site():
    assert BOOK_URL == "https://attnlab.github.io/attention-course/" or "attnlab/attention-course" not in URL
    assert CONFIG["html"]["baseurl"] == BOOK_URL


def test_readme_reads_online_at_the_published_book():
    section = README.split("## Read it online", 1)[1].split("\n## ", 1)[0]
    assert BOOK_URL in links(section), f"README.md's 'Read it online' must link to {BOOK_URL}"
    pages = [link for link in links(README) if ".github.io" in link]
    assert all(link.startswith(BOOK_URL) for link in pages), pages


def test_readme_opens_every_chapter_in_colab_from_this_repository():
    colab = [link for link in links(README) if "colab.research.google.com" in link]
    assert colab, "README.md has no 'Open in Colab' link"
    assert all(link.startswith(COLAB) for link in colab), [c for c in colab if not c.startswith(COLAB)]
    targets = [link.removeprefix(COLAB) for link in colab]
    assert sorted(targets) == sorted(str(p.relative_to(ROOT)) for p in NOTEBOOKS), targets
    assert targets == CHAPTERS, "README.md lists the chapters in the order of _toc.yml"


def test_readme_github_links_name_this_repository():
    github = [link for link in links(README) if link.startswith("https://github.com/")]
    assert all(link == URL or link.startswith(URL + "/") for link in github), github


# The built book -----------------------------------------------------------------------------------------------

def built_pages() -> dict[str, str]:
    if not (HTML / "index.html").exists():
        if REQUIRED:
            pytest.fail(f"ATTNLAB_REQUIRE_BOOK=1 but {HTML / 'index.html'} does not exist: run `make book`")
        pytest.skip("no built book: run `make book` first")
    pages = {str(p.relative_to(HTML)): p.read_text(errors="replace") for p in HTML.rglob("*.html")
             if p.parts[len(HTML.parts)] not in ("_static", "_sources", "_images", "reports")}
    return {name: html for name, html in pages.items() if 'http-equiv="Refresh"' not in html}  # not redirects


def hrefs(html: str) -> list[str]:
    return [unescape(h) for h in re.findall(r'href="([^"]+)"', html)]


def test_launch_buttons_open_this_repository_in_colab():
    pages = built_pages()
    for name in CHAPTERS:
        page = name.removesuffix(".ipynb") + ".html"
        assert page in pages, f"{page} was not built"
        colab = [h for h in hrefs(pages[page]) if "colab.research.google.com" in h]
        assert colab == [COLAB + name], f"{page}: Colab links {colab}, expected {COLAB + name}"


def test_repository_links_name_the_configured_repository():
    for page, html in built_pages().items():
        github = [h for h in hrefs(html) if h.startswith(("https://github.com/", "http://github.com/"))]
        assert URL in github, f"{page} has no repository button linking to {URL}"
        wrong = [h for h in github if not (h == URL or h.startswith(URL + "/"))]
        assert not wrong, f"{page} links to another repository: {wrong}"


def test_built_install_cells_install_the_release_of_this_version():
    pages = built_pages()
    expected = f"git+{URL}@v{attnlab.__version__}"
    for name in CHAPTERS:
        text = unescape(re.sub(r"<[^>]+>", "", pages[name.removesuffix(".ipynb") + ".html"]))
        sources = re.findall(r'os\.environ\.get\(\s*"ATTNLAB_SOURCE",\s*"([^"]*)"\s*\)', text)
        assert sources == [expected], f"{name}: the built install cell installs {sources}, expected {expected}"


def test_every_page_shows_the_version_and_its_address():
    for page, html in built_pages().items():
        if page in ("genindex.html", "search.html"):
            continue
        assert f"attnlab {attnlab.__version__} " in html, f"{page}: the footer does not show the version"
        canonical = re.search(r'<link rel="canonical" href="([^"]+)"', html)
        assert canonical and canonical.group(1).startswith(BOOK_URL), f"{page}: canonical address {canonical}"
