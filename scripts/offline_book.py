"""Make the built book readable without a network: serve MathJax from the build instead of its CDN.

    python scripts/offline_book.py _build/html path/to/node_modules/mathjax

Copies MathJax's ``es5`` folder (from the npm package ``mathjax``, installed by ``make offline``) into
``_static/mathjax/`` and points every page's MathJax script at that copy, by a path relative to the page.
"""

import re
import shutil
import sys
from pathlib import Path

CDN = re.compile(r'src="https://cdn\.jsdelivr\.net/npm/mathjax@3/es5/([\w.-]+\.js)"')


def main(html: Path, mathjax: Path) -> None:
    source = mathjax / "es5"
    if not (source / "tex-mml-chtml.js").exists():
        sys.exit(f"{source} has no tex-mml-chtml.js: install the npm package mathjax first")
    target = html / "_static" / "mathjax"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    changed = 0
    for page in html.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        depth = len(page.relative_to(html).parts) - 1
        new = CDN.sub(lambda m, d=depth: f'src="{"../" * d}_static/mathjax/{m.group(1)}"', text)
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed += 1
    print(f"MathJax copied to {target}; {changed} pages now load it from the build")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
