"""Build the students' edition of the book: the full build's executed chapters, worked solutions and solution code
left out (attnlab.edition.student_page), into its own folder.

Nothing is executed again: each chapter's outputs come from the execution cache that `make book` filled, so the
full edition must be built first (`make book EDITION=student` does that when it is missing). A notebook changed
since then has no outputs in the cache, and the build stops, saying so. The edition is published beside the full
one, under `student/` (.github/workflows/pages.yml); its Colab buttons open the students' notebooks of the
`students` branch, which the same workflow writes.

    python scripts/student_edition.py [--cache _build/.jupyter_cache] [--out _build/student-edition]

Writes OUT/source/ (what Jupyter Book builds: the book's pages, the students' edition of each notebook with its
outputs, a configuration that executes nothing) and OUT/html/ (the edition).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import yaml
from jupyter_cache import get_cache

from attnlab.edition import student_page
from attnlab.teaching.release import is_chapter

ROOT = Path(__file__).resolve().parents[1]
# The branch that holds the students' notebooks (the Colab buttons of this edition open them there).
STUDENTS_BRANCH = "students"


def config(full: dict) -> dict:
    """The full edition's _config.yml, changed for the students' edition."""
    edition = yaml.safe_load(yaml.safe_dump(full))
    edition["title"] = f"{full['title']} (students' edition)"
    edition["execute"]["execute_notebooks"] = "off"
    edition["repository"]["branch"] = STUDENTS_BRANCH
    full_address = full["html"]["baseurl"]
    edition["html"]["baseurl"] = f"{full_address}student/"
    edition["html"]["announcement"] = (
        "Students' edition: the worked solutions are left out."
        f' <a href="{full_address}">The full edition</a> has them.'
    )
    # the instructors' table of exercises reads the solution notebooks
    edition["sphinx"]["config"]["homework_source"] = str(ROOT)
    return edition


def executed(cache, path: Path) -> nbformat.NotebookNode:
    """The notebook at ``path`` with the outputs of its run in ``cache``."""
    notebook = nbformat.read(path, as_version=4)
    try:
        return cache.merge_match_into_notebook(notebook)[1]
    except KeyError:
        raise SystemExit(f"{path.relative_to(ROOT)} has no run in the execution cache that matches it: "
                         "build the full edition first (make book)") from None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=ROOT / "_build" / ".jupyter_cache")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "student-edition")
    args = parser.parse_args()
    if not (args.cache / "global.db").exists():
        raise SystemExit(f"no execution cache at {args.cache}: build the full edition first (make book)")
    source = args.out / "source"
    shutil.rmtree(args.out, ignore_errors=True)
    source.mkdir(parents=True)
    shutil.copytree(ROOT / "book", source / "book")
    shutil.copytree(ROOT / "results", source / "results")
    shutil.copy(ROOT / "_toc.yml", source / "_toc.yml")
    full = yaml.safe_load((ROOT / "_config.yml").read_text())
    (source / "_config.yml").write_text(yaml.safe_dump(config(full), sort_keys=False))
    cache = get_cache(str(args.cache))
    (source / "notebooks").mkdir()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        notebook = executed(cache, path)
        nbformat.write(student_page(notebook) if is_chapter(path) else notebook, source / "notebooks" / path.name)
        print(f"{path.name}: students' edition written", flush=True)
    build = subprocess.run([str(Path(sys.executable).parent / "jupyter-book"), "build", str(source), "--path-output",
                            str(args.out), "--all", "-W", "--keep-going"], check=False)
    if build.returncode != 0:
        return build.returncode
    (args.out / "_build" / "html").rename(args.out / "html")
    shutil.rmtree(args.out / "_build")
    print(f"the students' edition is in {args.out / 'html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
