"""Does every notebook run against the release its install cell installs?

A reader who opens a notebook in Colab runs it with the package that its first cell installs: the release tag
``git+<url>@vX.Y.Z``, not the checkout the notebook came from. This script reads each notebook's install cell,
finds that release in the repository's history and resolves, without running anything, what the notebook needs
from it:

- every ``import attnlab...`` and ``from attnlab... import name``: the module exists in the release, and the name
  is defined at its top level or is one of its submodules;
- every attribute read from such a module (``explorable.retrieval(...)`` after ``from attnlab import
  explorable``);
- every committed record read with ``published("name")``: ``results/name.json`` is in the release.

The release ``vX.Y.Z`` is its tag where the clone has it; otherwise the commit that first set ``__version__ =
"X.Y.Z"`` (the tag is made on that commit, see README.md, "A release"). When that commit is not there yet, the
release is being cut by the working tree itself, which is then what is read.

    python scripts/release_check.py                 # every notebook of notebooks/; exit 1 on any miss
    python scripts/release_check.py --at REV        # the notebooks as they are at REV (for example main~1)
    python scripts/release_check.py a.ipynb b.ipynb # these notebooks (the students' notebooks, say)
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "src/attnlab"
INSTALL_TAG = re.compile(r'os\.environ\.get\("ATTNLAB_SOURCE","git\+[^"@]+@(v[^"]+)"\)')
VERSION_LINE = '__version__ = "{}"'


def git(root: Path, *args: str) -> str:
    result = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise LookupError(result.stderr.strip() or f"git {' '.join(args)} failed")
    return result.stdout


class Tree:
    """The files of the repository at one commit, or in the working tree (``commit=None``)."""

    def __init__(self, root: Path, commit: str | None):
        self.root, self.commit = root, commit
        if commit is None:
            self.files = {
                str(p.relative_to(root)) for p in (root / PACKAGE).rglob("*.py")
            } | {str(p.relative_to(root)) for p in (root / "results").glob("*.json")}
        else:
            listing = git(root, "ls-tree", "-r", "--name-only", commit, "--", PACKAGE, "results")
            self.files = set(listing.split())

    def read(self, path: str) -> str:
        if self.commit is None:
            return (self.root / path).read_text()
        return git(self.root, "show", f"{self.commit}:{path}")

    def describe(self) -> str:
        return "the working tree" if self.commit is None else self.commit[:12]


def release_tree(root: Path, tag: str) -> Tree:
    """The release ``tag`` (``vX.Y.Z``): its tag, else the commit that set the version, else the working tree."""
    try:
        return Tree(root, git(root, "rev-parse", "--verify", "--quiet", f"{tag}^{{commit}}").strip())
    except LookupError:
        pass
    line = VERSION_LINE.format(tag.removeprefix("v"))
    if git(root, "rev-parse", "--is-shallow-repository").strip() == "true":
        raise LookupError(f"the clone is shallow and has no tag {tag}: run git fetch --unshallow --tags")
    introduced = git(root, "log", "--format=%H", "--reverse", "-S", line, "--", f"{PACKAGE}/__init__.py").split()
    if introduced:
        return Tree(root, introduced[0])
    if line in (root / PACKAGE / "__init__.py").read_text():
        return Tree(root, None)  # this tree cuts the release
    raise LookupError(f"no tag {tag} and no commit that sets {line}: the release the install cell names does not exist")


@dataclass
class Module:
    """A module of the release: its top-level names and its submodules."""

    name: str
    names: set[str] = field(default_factory=set)
    is_package: bool = False


class Release:
    def __init__(self, tree: Tree):
        self.tree = tree
        self._modules: dict[str, Module | None] = {}

    def path(self, module: str) -> tuple[str, bool] | None:
        parts = module.split(".")[1:]
        base = "/".join([PACKAGE, *parts])
        if f"{base}/__init__.py" in self.tree.files:
            return f"{base}/__init__.py", True
        if parts and f"{base}.py" in self.tree.files:
            return f"{base}.py", False
        return None

    def module(self, name: str) -> Module | None:
        if name not in self._modules:
            self._modules[name] = None  # a star-import cycle reads as empty
            self._modules[name] = self._load(name)
        return self._modules[name]

    def _load(self, name: str) -> Module | None:
        found = self.path(name)
        if found is None:
            return None
        path, is_package = found
        module = Module(name, is_package=is_package)
        tree = ast.parse(self.tree.read(path))
        package = name if is_package else name.rsplit(".", 1)[0]
        for node in _top_level(tree.body):
            module.names |= self._bound(node, package)
        if is_package:
            prefix = path.removesuffix("__init__.py")
            for file in self.tree.files:
                if file.startswith(prefix) and file.endswith(".py"):
                    rest = file[len(prefix):].split("/")
                    if len(rest) == 1 and rest[0] != "__init__.py":
                        module.names.add(rest[0].removesuffix(".py"))
                    elif len(rest) == 2 and rest[1] == "__init__.py":
                        module.names.add(rest[0])
        return module

    def _bound(self, node: ast.stmt, package: str) -> set[str]:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return {node.name}
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if isinstance(node, ast.Import):
            return {(a.asname or a.name).split(".")[0] for a in node.names}
        if isinstance(node, ast.ImportFrom):
            names = {a.asname or a.name for a in node.names if a.name != "*"}
            if any(a.name == "*" for a in node.names):
                source = _absolute(node, package)
                star = self.module(source) if source and source.startswith("attnlab") else None
                names |= {n for n in star.names if not n.startswith("_")} if star else set()
            return names
        return set()

    def resolve(self, module: str, name: str | None = None) -> bool:
        found = self.module(module)
        return found is not None and (name is None or name in found.names)


def _top_level(body: list[ast.stmt]):
    """The statements that bind a module's names: its body, and the bodies of its top-level if/try/with."""
    for node in body:
        if isinstance(node, ast.If | ast.Try | ast.With):
            for part in ("body", "orelse", "finalbody"):
                yield from _top_level(getattr(node, part, []))
            for handler in getattr(node, "handlers", []):
                yield from _top_level(handler.body)
        else:
            yield node


def _absolute(node: ast.ImportFrom, package: str) -> str | None:
    if node.level == 0:
        return node.module
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def notebook_code(nb: dict) -> list[str]:
    """The code cells' sources, IPython's ``%`` and ``!`` lines blanked (they are not Python)."""
    cells = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        cells.append("\n".join("" if line.lstrip().startswith(("%", "!")) else line
                               for line in source.splitlines()))
    return cells


def install_tag(nb: dict) -> str:
    """The tag (``vX.Y.Z``) that the notebook's install cell, its first code cell, installs."""
    code = notebook_code(nb)
    flat = re.sub(r"\s+", "", code[0]) if code else ""  # the formatter may wrap the call
    found = INSTALL_TAG.search(flat)
    if not found:
        raise LookupError("its first code cell installs no release tag (git+<url>@vX.Y.Z)")
    return found.group(1)


def missing(nb: dict, release: Release) -> list[str]:
    """What the notebook imports, reads from a module or loads with ``published`` that the release lacks."""
    problems: list[str] = []
    modules: dict[str, str] = {}  # a notebook name bound to a module of attnlab -> that module
    published: set[str] = set()  # the notebook's names for attnlab.experiments.record.published
    trees = []
    for number, source in enumerate(notebook_code(nb)):
        try:
            trees.append((number, ast.parse(source)))
        except SyntaxError as error:
            problems.append(f"code cell {number}: not Python ({error.msg}, line {error.lineno})")
    for number, tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] != "attnlab":
                        continue
                    if not release.resolve(alias.name):
                        problems.append(f"code cell {number}: import {alias.name}: no such module")
                    elif alias.asname:
                        modules[alias.asname] = alias.name
                    else:
                        modules.setdefault("attnlab", "attnlab")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "attnlab":
                if not release.resolve(node.module):
                    problems.append(f"code cell {number}: from {node.module} import ...: no such module")
                    continue
                for alias in node.names:
                    if not release.resolve(node.module, alias.name):
                        problems.append(f"code cell {number}: from {node.module} import {alias.name}: "
                                        f"{node.module} has no {alias.name}")
                        continue
                    submodule = f"{node.module}.{alias.name}"
                    if release.resolve(submodule):
                        modules[alias.asname or alias.name] = submodule
                    if (node.module, alias.name) == ("attnlab.experiments.record", "published"):
                        published.add(alias.asname or alias.name)
    for number, tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
                module = modules[node.value.id]
                if not release.resolve(module, node.attr):
                    problems.append(f"code cell {number}: {node.value.id}.{node.attr}: {module} has no {node.attr}")
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in published
                  and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                record = f"results/{node.args[0].value}.json"
                if record not in release.tree.files:
                    problems.append(f"code cell {number}: published({node.args[0].value!r}): no {record}")
    return problems


def check(root: Path, notebooks: dict[str, dict]) -> dict[str, tuple[str, str, list[str]]]:
    """For each notebook: the tag it installs, the release read for it, and what that release lacks."""
    releases: dict[str, Release] = {}
    report = {}
    for name, nb in notebooks.items():
        try:
            tag = install_tag(nb)
            if tag not in releases:
                releases[tag] = Release(release_tree(root, tag))
        except LookupError as error:
            report[name] = ("?", "-", [str(error)])
            continue
        report[name] = (tag, releases[tag].tree.describe(), missing(nb, releases[tag]))
    return report


def notebooks_at(root: Path, rev: str | None, paths: list[Path]) -> dict[str, dict]:
    if paths:
        return {str(p): json.loads(p.read_text()) for p in paths}
    if rev is None:
        return {str(p.relative_to(root)): json.loads(p.read_text())
                for p in sorted((root / "notebooks").glob("*.ipynb"))}
    names = git(root, "ls-tree", "--name-only", rev, "--", "notebooks/").split()
    return {n: json.loads(git(root, "show", f"{rev}:{n}")) for n in sorted(names) if n.endswith(".ipynb")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks to check (default: notebooks/*.ipynb)")
    parser.add_argument("--at", metavar="REV", help="check the notebooks of notebooks/ as they are at REV")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this script's)")
    args = parser.parse_args(argv)
    report = check(args.root, notebooks_at(args.root, args.at, args.notebooks))
    failed = 0
    for name, (tag, where, problems) in report.items():
        print(f"{'ok  ' if not problems else 'FAIL'} {name}: installs {tag} (read at {where})")
        for problem in problems:
            print(f"       {problem}")
        failed += bool(problems)
    print(f"{len(report) - failed} of {len(report)} notebooks run against the release they install")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
