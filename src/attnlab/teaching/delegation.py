"""What an answer's code reaches, read from the notebook's source by the grader
(homework grading).

The checks refuse an answer that calls the library's own version of what the
exercise asks for, but they notice it in the student's process (Python's profiler),
where an answer can switch the profiler off. :func:`findings` reads the same
question from the notebook as handed in, outside that process: for each function a
check cell hands to its checks, it follows every name the function's code uses to
the cell that bound it (imports, definitions, assignments, in the order nbgrader runs
the cells) and reports

- a reference to an object whose code the check forbids (the exercise's own library
  code and the check's references, :meth:`~attnlab.exercises._checking.CheckInfo.
  forbidden_code`), through any chain of helpers, aliases and assignments;
- code that reaches past what the source shows: ``exec``, ``eval``, ``compile``,
  ``__import__``, ``globals()``, ``vars()``, ``getattr`` with a computed name,
  ``importlib``, ``sys.modules``, the profiler and tracer, frames;
- a name or a module attribute that no cell binds (bound behind the source's back).

Every right answer written with torch operations, in any form, has no finding; a
finding costs the check cell its points, with a message that names it.
"""

from __future__ import annotations

import ast
import bisect
import builtins
import importlib
import re
import sys
from dataclasses import dataclass
from types import CodeType, ModuleType
from typing import Any

import nbformat

from attnlab.exercises._checking import CHECKS, _code_objects
from attnlab.teaching.release import (
    cell_grade_id,
    check_call_nodes,
    is_check_cell,
    without_hidden_tests,
)

DYNAMIC_NAMES = frozenset(
    {"exec", "eval", "compile", "__import__", "globals", "vars", "locals"}
)
DYNAMIC_ATTRIBUTES = frozenset(
    {
        "setprofile",
        "settrace",
        "_getframe",
        "currentframe",
        "import_module",
        "__globals__",
        "__builtins__",
        "__dict__",
        "__code__",
        "f_back",
        "f_globals",
        "f_locals",
        "__subclasses__",
    }
)
DYNAMIC_MODULES = ("importlib", "inspect", "ctypes", "gc", "builtins")
# names a notebook's kernel (IPython) defines
KERNEL_NAMES = frozenset({"get_ipython", "display", "In", "Out", "exit", "quit"})


@dataclass(frozen=True)
class _Binding:
    """What a name was bound to: an object (an import), or code of the notebook
    (``node``) whose names resolve as they were at ``time`` (None: when the
    function is called)."""

    obj: Any = None
    node: ast.AST | None = None
    time: int | None = None
    opaque: bool = False


class _Notebook:
    """The top-level bindings of a notebook's code cells, cell by cell."""

    def __init__(self) -> None:
        # each name's history: when it was bound, and to what (a linked list,
        # newest first, so that adding a binding costs nothing however many)
        self.times: dict[str, list[int]] = {}
        self.heads: dict[str, list[tuple[_Binding, Any]]] = {}
        self.time = 0
        self.attributes: dict[str, list[_Binding]] = {}  # "torch.helper" = ...
        self.dynamic = False  # whether some cell may bind names unseen

    def run(self, source: str, course: bool = False) -> None:
        """Read a cell; ``course``: a cell of the release, as released (its install
        cell imports and runs magics: none of that binds names unseen)."""
        try:
            tree = ast.parse(_python(source))
        except SyntaxError:  # never runs: binds nothing
            return
        except (RecursionError, MemoryError, ValueError):  # unreadable here
            self.dynamic = True
            return
        unseen = source != _python(source) or _binds_unseen(tree)
        self.dynamic = self.dynamic or (unseen and not course)
        for statement in tree.body:
            self.statement(statement, replace=True)

    def bind(self, name: str, binding: _Binding, replace: bool) -> None:
        self.time += 1
        parent = None if replace else self.head(name, self.time)
        self.times.setdefault(name, []).append(self.time)
        self.heads.setdefault(name, []).append((binding, parent))

    def head(self, name: str, time: int) -> tuple[_Binding, Any] | None:
        index = bisect.bisect_right(self.times.get(name, []), time)
        return self.heads[name][index - 1] if index else None

    def at(self, time: int | None = None) -> _Env:
        """The names as they were bound at ``time`` (None: now)."""
        return _Env(self, self.time if time is None else time)

    @property
    def env(self) -> _Env:
        return self.at()

    def statement(self, node: ast.stmt, replace: bool) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            for name, obj in _imported(node):
                self.bind(name, _Binding(obj=obj), replace)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            self.bind(node.name, _Binding(node=node), replace)
            for child in ast.walk(node):  # `global name` inside: bound when called
                for name in child.names if isinstance(child, ast.Global) else []:
                    self.bind(name, _Binding(node=node), replace=False)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is None:
                return
            value = _Binding(node=node.value, time=self.time)
            for target in targets:  # `x += y` keeps what x was bound to
                self.target(
                    target, value, replace and type(node) is not ast.AugAssign
                )
        else:
            # a loop's, a with's and a walrus's targets are bound to what they take
            # from; other names bound here (an exception's) are opaque
            if isinstance(node, ast.For | ast.AsyncFor):
                value = _Binding(node=node.iter, time=self.time)
                self.target(node.target, value, replace=False)
            for child in ast.walk(node):
                if isinstance(child, ast.withitem) and child.optional_vars:
                    value = _Binding(node=child.context_expr, time=self.time)
                    self.target(child.optional_vars, value, replace=False)
                elif isinstance(child, ast.NamedExpr):
                    value = _Binding(node=child.value, time=self.time)
                    self.target(child.target, value, replace=False)
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    self.statement(child, replace=False)
                elif isinstance(child, ast.excepthandler | ast.match_case):
                    for inner in child.body:
                        self.statement(inner, replace=False)
            for name in _stored_names(node, own_body=False) - set(self.times):
                self.bind(name, _Binding(opaque=True), replace=False)

    def target(self, target: ast.expr, value: _Binding, replace: bool) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, value, replace)
        elif isinstance(target, ast.Tuple | ast.List | ast.Starred):
            elements = (
                target.elts if not isinstance(target, ast.Starred) else [target]
            )
            for element in elements:
                inner = (
                    element.value if isinstance(element, ast.Starred) else element
                )
                self.target(inner, value, replace=False)
        elif isinstance(target, ast.Attribute):
            dotted = _dotted(target)
            if dotted is not None:
                self.attributes.setdefault(dotted, []).append(value)


# what binds a name without an assignment the reader sees (with DYNAMIC_NAMES, the
# DYNAMIC_ATTRIBUTES and the DYNAMIC_MODULES)
BINDERS = frozenset({"setattr", "delattr"})
KERNEL_BINDERS = frozenset(
    {"user_ns", "user_global_ns", "push", "run_cell", "run_line_magic", "ex", "ev"}
)


def _binds_unseen(tree: ast.AST) -> bool:
    """Whether code may bind a name or an attribute the reader cannot see."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in DYNAMIC_NAMES | BINDERS:
            return True
        if isinstance(node, ast.Attribute) and (
            node.attr in DYNAMIC_ATTRIBUTES | KERNEL_BINDERS
            or node.attr == "modules"
        ):
            return True
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] + [
                getattr(node, "module", "") or ""
            ]
            if any(n.split(".")[0] in DYNAMIC_MODULES for n in names):
                return True
    return False


@dataclass(frozen=True)
class _Env:
    """A notebook's names at one moment."""

    notebook: _Notebook
    time: int

    def get(self, name: str, default: Any = None) -> list[_Binding] | Any:
        """The bindings of ``name`` then (several where a branch or a loop may
        have bound it), or ``default``."""
        head = self.notebook.head(name, self.time)
        if head is None:
            return default
        bindings = []
        while head is not None:
            bindings.append(head[0])
            head = head[1]
        return bindings


def _python(source: str) -> str:
    """A cell's source without IPython's magics and shell lines."""
    return re.sub(r"(?m)^(\s*)[%!].*$", r"\1pass", source)


def _imported(node: ast.Import | ast.ImportFrom) -> list[tuple[str, Any]]:
    """(bound name, imported object or its dotted name) for each alias."""
    out = []
    for alias in node.names:
        if isinstance(node, ast.Import):
            dotted = alias.name if alias.asname else alias.name.split(".")[0]
            out.append((alias.asname or dotted, _module(dotted) or dotted))
        else:
            base = "." * node.level + (node.module or "")
            if alias.name == "*":
                continue
            module = _module(base)
            obj = getattr(module, alias.name, None) if module is not None else None
            obj = obj if obj is not None else _module(f"{base}.{alias.name}")
            out.append((alias.asname or alias.name, obj or f"{base}.{alias.name}"))
    return out


def _module(dotted: str) -> ModuleType | None:
    """The module ``dotted`` if its package is already imported here (the course's
    own and what it imports: nothing a notebook names runs in the grader), else
    None."""
    if not dotted or dotted.split(".")[0] not in sys.modules:
        return None
    try:
        return importlib.import_module(dotted)
    except Exception:  # noqa: BLE001 - any failure means "not a module here"
        return None


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for an attribute chain rooted at a name, ``__import__:a.b.c`` for
    one rooted at ``__import__("a")``, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Call) and _imported_module(node):
        root = f"{IMPORT}{_imported_module(node).split('.')[0]}"
    elif isinstance(node, ast.Name):
        root = node.id
    else:
        return None
    return ".".join([root, *reversed(parts)])


IMPORT = "__import__:"
_MISSING = object()


def _imported_module(call: ast.Call) -> str | None:
    """The module of ``__import__("name")`` (a constant name), else None."""
    if (
        isinstance(call.func, ast.Name)
        and call.func.id == "__import__"
        and len(call.args) == 1
        and isinstance(call.args[0], ast.Constant)
        and isinstance(call.args[0].value, str)
    ):
        return call.args[0].value
    return None


def _stored_names(node: ast.AST, own_body: bool = True) -> set[str]:
    """Every name ``node`` binds anywhere inside it (a superset of a function's
    locals: parameters, assignments, loop targets, imports, nested definitions)."""
    names = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and isinstance(
            child.ctx, ast.Store | ast.Del
        ):
            names.add(child.id)
        elif isinstance(child, ast.arg):
            names.add(child.arg)
        elif isinstance(child, ast.alias):
            names.add((child.asname or child.name).split(".")[0])
        elif isinstance(
            child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
        ):
            if child is not node or not own_body:
                names.add(child.name)
        elif isinstance(child, ast.ExceptHandler) and child.name:
            names.add(child.name)
        elif isinstance(child, ast.MatchAs | ast.MatchStar) and child.name:
            names.add(child.name)
        elif isinstance(child, ast.MatchMapping) and child.rest:
            names.add(child.rest)
    return names


class _Reader:
    """Follows the names one answer's code uses and collects its findings."""

    def __init__(self, notebook: _Notebook, forbidden: dict[CodeType, str]):
        self.notebook, self.forbidden = notebook, forbidden
        self.found: list[str] = []
        self.seen: set[int] = set()
        self.todo: list[_Binding] = []  # a work list, not recursion: no chain of
        # helpers is too long to follow

    def read(self, name: str) -> list[str]:
        """The findings of everything the global ``name`` reaches."""
        self.found, self.seen, self.todo = [], set(), []
        self.name(name, self.notebook.env)
        while self.todo:
            self.binding(self.todo.pop())
        return self.found

    def note(self, finding: str) -> None:
        if finding not in self.found:
            self.found.append(finding)

    def unbound(self, name: str) -> None:
        """A name no cell binds: bound behind the source's back where the notebook
        binds names dynamically somewhere, else dead code (or a bug the checks
        will find)."""
        if self.notebook.dynamic:
            self.note(f"unbound:{name}")

    def binding(self, binding: _Binding) -> None:
        if binding.opaque:
            return
        if binding.node is None:
            self.object(binding.obj)
            return
        if id(binding.node) in self.seen:
            return
        self.seen.add(id(binding.node))
        env = self.notebook.at(binding.time)
        local = (
            _stored_names(binding.node)
            if isinstance(binding.node, ast.FunctionDef | ast.AsyncFunctionDef)
            else _stored_names(binding.node, own_body=False)
            if isinstance(binding.node, ast.Lambda | ast.ClassDef)
            else _lambda_names(binding.node)
        )
        self.code(binding.node, env, local)

    def object(self, obj: Any) -> None:
        # a module the grader has not imported: import_module etc.
        if isinstance(obj, str):
            if obj.split(".")[0] in DYNAMIC_MODULES or obj == "sys.modules":
                self.note(f"`{obj}`")
            return
        if isinstance(obj, ModuleType):
            if obj.__name__.split(".")[0] in DYNAMIC_MODULES:
                self.note(f"`{obj.__name__}`")
            return
        label = self.forbidden_label(obj)
        name = getattr(obj, "__name__", None)
        if label is not None:
            self.note(f"library:{label}")
        elif obj is sys.modules:
            self.note("`sys.modules`")
        elif getattr(obj, "__module__", None) in DYNAMIC_MODULES:
            self.note(f"`{obj.__module__}.{name}`")
        elif isinstance(name, str) and name in DYNAMIC_ATTRIBUTES | DYNAMIC_NAMES:
            self.note(f"`{name}`")

    def forbidden_label(self, obj: Any) -> str | None:
        try:
            codes = _code_objects(obj)
            if isinstance(obj, type):  # its methods unwrapped too, as the check
                # names a decorated one (`@torch.no_grad()`)
                codes += [c for m in vars(obj).values() for c in _code_objects(m)]
        except Exception:  # noqa: BLE001 - an object inspect cannot read
            return None
        for code in codes:
            if code in self.forbidden:
                return self.forbidden[code]
        return None

    def name(self, name: str, env: _Env) -> None:
        bindings = env.get(name)
        if bindings is None:
            if name in DYNAMIC_NAMES:
                self.note(f"`{name}`")
            elif not (hasattr(builtins, name) or name in KERNEL_NAMES):
                self.unbound(name)
            return
        self.todo.extend(bindings)

    def attribute(self, node: ast.Attribute, env: _Env) -> bool:
        """Resolve a chain ``module.a.b`` rooted at an imported module; True if the
        chain was resolved here (its root is a module)."""
        dotted = _dotted(node)
        if dotted is None:
            return False
        root, *parts = dotted.split(".")
        if root.startswith(IMPORT):
            bindings = [_Binding(obj=_module(root.removeprefix(IMPORT)))]
        else:
            bindings = env.get(root) or []
        modules = [b.obj for b in bindings if isinstance(b.obj, ModuleType)]
        if len(bindings) != 1 or not modules:
            return False
        obj: Any = modules[0]
        name = obj.__name__
        for index, part in enumerate(parts):
            key = ".".join([root, *parts[: index + 1]])
            self.todo.extend(self.notebook.attributes.get(key, []))
            if part in DYNAMIC_ATTRIBUTES or (name == "sys" and part == "modules"):
                self.note(f"`{name}.{part}`")
                return True
            if isinstance(obj, ModuleType):
                name = f"{obj.__name__}.{part}"
                nxt = getattr(obj, part, _MISSING)
                obj = nxt if nxt is not _MISSING else _module(name) or _MISSING
                if obj is _MISSING:
                    if key not in self.notebook.attributes:
                        self.unbound(key)
                    return True
                self.object(obj)
            else:
                self.object(obj)
                return True
        return True

    def code(self, node: ast.AST, env: _Env, local: set[str]):
        # `__import__("torch")` and `getattr(x, "name")` with constant names read
        # as the import and the attribute they spell
        imports = {
            id(c.func)
            for c in ast.walk(node)
            if isinstance(c, ast.Call) and _imported_module(c)
        }
        # annotations are never run (a name in one may be unbound)
        annotations = [
            a
            for c in ast.walk(node)
            for a in (
                [c.returns]
                if isinstance(c, ast.FunctionDef | ast.AsyncFunctionDef)
                else [c.annotation]
                if isinstance(c, ast.arg | ast.AnnAssign)
                else []
            )
            if a is not None
        ]
        skipped = imports | {id(n) for a in annotations for n in ast.walk(a)}
        for child in ast.walk(node):
            if id(child) in skipped:
                continue
            if isinstance(child, ast.Call) and _imported_module(child):
                self.object(_module(_imported_module(child)))
            if isinstance(child, ast.Call) and _constant_getattr(child):
                target, attribute = child.args[0], child.args[1].value
                spelled = ast.Attribute(target, attribute, ast.Load())
                if self._root(spelled) not in local:
                    self.attribute(spelled, env)
            if isinstance(child, ast.Attribute) and isinstance(child.ctx, ast.Load):
                if child.attr in DYNAMIC_ATTRIBUTES:
                    self.note(f"`.{child.attr}`")
            if isinstance(child, ast.Attribute) and self._root(child) not in local:
                self.attribute(child, env)
            elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
                if child.id not in local:
                    self.name(child.id, env)
            elif isinstance(child, ast.Import | ast.ImportFrom):
                for _, obj in _imported(child):
                    self.object(obj)
            elif isinstance(child, ast.Call) and _computed_getattr(child):
                self.note("`getattr` with a computed name")

    @staticmethod
    def _root(node: ast.Attribute) -> str | None:
        dotted = _dotted(node)
        return dotted.split(".")[0] if dotted else None


def _lambda_names(node: ast.AST) -> set[str]:
    """The names bound inside the lambdas and comprehensions of an expression."""
    names = set()
    for child in ast.walk(node):
        if isinstance(
            child,
            ast.Lambda
            | ast.ListComp
            | ast.SetComp
            | ast.DictComp
            | ast.GeneratorExp,
        ):
            names |= _stored_names(child)
        elif isinstance(child, ast.NamedExpr) and isinstance(child.target, ast.Name):
            names.add(child.target.id)
    return names


def _constant_getattr(call: ast.Call) -> bool:
    return (
        isinstance(call.func, ast.Name)
        and call.func.id == "getattr"
        and len(call.args) >= 2
        and isinstance(call.args[1], ast.Constant)
        and isinstance(call.args[1].value, str)
    )


def _computed_getattr(call: ast.Call) -> bool:
    return (
        isinstance(call.func, ast.Name)
        and call.func.id in ("getattr", "setattr", "delattr")
        and (len(call.args) < 2 or not isinstance(call.args[1], ast.Constant))
    )


@dataclass(frozen=True)
class Finding:
    """What reading a check cell's answers found: the instructor's note and the
    student's message."""

    note: str
    message: str


def finding(function: str, found: str, grade_id: str) -> Finding:
    """The :class:`Finding` for what was ``found`` in the answer ``function``."""
    if found.startswith("library:"):
        note = f"the library's own version called in {grade_id}"
    else:
        note = f"code the grader cannot read in {grade_id}"
    return Finding(note, message(function, found))


def message(function: str, finding: str) -> str:
    """What the feedback says of one finding in the answer ``function``."""
    if finding.startswith("library:"):
        return (
            f"{function} calls `{finding.removeprefix('library:')}`, the library's"
            " own version of what this exercise asks you to write. Write the"
            " computation yourself with torch operations."
        )
    if finding.startswith("unbound:"):
        return (
            f"{function} uses `{finding.removeprefix('unbound:')}`, which no cell of"
            " the notebook defines: define everything your answer uses in the"
            " notebook's cells."
        )
    return (
        f"{function} uses {finding}, which reaches past the code the notebook shows;"
        " answers are graded by reading their code, so write the computation with"
        " torch operations instead."
    )


def findings(
    notebook: nbformat.NotebookNode, release: nbformat.NotebookNode | None = None
) -> dict[str, Finding]:
    """The check cells (grade id) of ``notebook`` whose answers reach what they
    must not, each with its first finding (the library's own code first);
    ``release``: the notebook as released, whose own cells are the course's."""
    import attnlab.exercises  # noqa: F401 - registers every check

    course = {
        c.source for c in (release.cells if release else []) if c.cell_type == "code"
    }
    reading = _Notebook()
    out = {}
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        if is_check_cell(cell):
            source = without_hidden_tests(cell.source)
            try:
                calls = check_call_nodes(_python(source))
            except (SyntaxError, RecursionError, ValueError):
                calls = []
            for call in calls:
                info = CHECKS.get(call.func.id)
                if info is None:
                    continue
                reader = _Reader(reading, info.forbidden_code())
                for argument in [*call.args, *(k.value for k in call.keywords)]:
                    for name in _answer_names(argument, reading.env):
                        found = reader.read(name)
                        if found:
                            grade_id = cell_grade_id(cell) or ""
                            first = min(found, key=_library_first)
                            out.setdefault(grade_id, finding(name, first, grade_id))
            reading.run(source, course=True)
        else:
            reading.run(cell.source, course=cell.source in course)
    if (where := reaches_grader(notebook, course)) is not None:
        note = (
            f"the notebook reaches for the grader (its module, its socket or the"
            f" import system) in {where}: no check earns points"
        )
        message = "this notebook reaches for the grader: no check earns points"
        for cell in notebook.cells:
            if is_check_cell(cell):
                out[cell_grade_id(cell) or ""] = Finding(note, message)
    return out


# what a notebook names only to reach the grader: its package, the variable of its
# socket, and the hooks of the import system through which the hidden tests import it
GRADER_MODULE = "attnlab.teaching"
GRADER_WORDS = ("ATTNLAB_GRADER", GRADER_MODULE)
IMPORT_HOOKS = ("meta_path", "path_hooks", "path_importer_cache")


def _computed_import(node: ast.AST) -> bool:
    """An import whose module's name is computed (``import_module(a + b)``,
    ``__import__(name)``): what hides the module it reaches."""
    if not isinstance(node, ast.Call):
        return False
    function = node.func
    name = (
        function.attr
        if isinstance(function, ast.Attribute)
        else getattr(function, "id", "")
    )
    if name not in ("import_module", "__import__"):
        return False
    first = node.args[0] if node.args else None
    return not (isinstance(first, ast.Constant) and isinstance(first.value, str))


def reaches_grader(
    notebook: nbformat.NotebookNode, course: set[str] = frozenset()
) -> str | None:
    """The first cell (its grade id, or its number) whose code, hidden tests and the
    course's own cells aside, imports the grader's package, names its socket or
    touches the import system's hooks, or imports a module by a computed name; None
    if none does. Nothing a student writes needs any of them."""
    for number, cell in enumerate(notebook.cells):
        if cell.cell_type != "code" or cell.source in course:
            continue
        try:
            tree = ast.parse(_python(without_hidden_tests(cell.source)))
        except (SyntaxError, RecursionError, ValueError):
            continue
        for node in ast.walk(tree):
            named = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [f"{node.module}." + ".".join(a.name for a in node.names)]
                if isinstance(node, ast.ImportFrom) and node.module
                else [node.value]
                if isinstance(node, ast.Constant) and isinstance(node.value, str)
                else []
            )
            hooked = isinstance(node, ast.Attribute) and node.attr in IMPORT_HOOKS
            if hooked or _computed_import(node):
                return cell_grade_id(cell) or f"cell {number}"
            if any(w in n for n in named for w in GRADER_WORDS):
                return cell_grade_id(cell) or f"cell {number}"
    return None


def _library_first(found: str) -> bool:
    return not found.startswith("library:")


def _answer_names(argument: ast.expr, env: _Env) -> list[str]:
    """The names in a check's argument that the notebook bound to its own code (the
    student's functions and classes, and values computed by them)."""
    names = []
    for node in ast.walk(argument):
        if isinstance(node, ast.Name) and any(
            b.node is not None for b in env.get(node.id, [])
        ):
            names.append(node.id)
    return names
