"""Whether the course's code in this interpreter is still the code on disk.

The graded hidden tests import the checks afresh from disk and call
:func:`verify_integrity` before they trust the library code the checks use. A
notebook that replaced a check, a helper of the checks or a library function
(``attnlab.exercises.check_x = ...``, ``_checking.expect_close = ...``,
``attnlab.attention.attend = ...``) is reported, and its exercises earn no points.
Every function and method defined at the top level of an ``attnlab`` module must
still have the code compiled from the module's file, and every name a module imports
from another ``attnlab`` module must still be that module's object.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
from types import CodeType, ModuleType
from typing import Any

from attnlab.exercises._checking import CHECKS, ExerciseError

TAMPERED = "the course's code was changed in this notebook"


def _codes_by_name(code: CodeType) -> dict[str, CodeType]:
    """The code objects defined directly in ``code`` (functions, classes), by
    name."""
    return {c.co_name: c for c in code.co_consts if isinstance(c, CodeType)}


def _function_code(obj: object) -> CodeType | None:
    """The code of a (decorated) function, static or class method, or property."""
    obj = getattr(obj, "__func__", obj)
    if isinstance(obj, property):
        obj = obj.fget
    if callable(obj):
        obj = inspect.unwrap(obj)
    return getattr(obj, "__code__", None)


def _verified(source: str, importer: str) -> bool:
    """Whether the names that module ``importer`` imports from module ``source`` are
    verified: those from the library's modules, and those from ``attnlab.exercises``
    only within it (the hidden tests import it afresh, so a library module that
    imported from it before holds the earlier copies)."""
    library = source == "attnlab" or source.startswith("attnlab.")
    exercises = source.startswith("attnlab.exercises")
    return library and (not exercises or importer.startswith("attnlab.exercises"))


def _same(bound: object, original: object) -> bool:
    """A function or class must be the very object; a constant only equal."""
    if callable(original) or bound is original:
        return bound is original
    try:
        return bool(bound == original)
    except (TypeError, ValueError, RuntimeError):  # an array compares element-wise
        return False


def _problems(module: ModuleType) -> list[str]:
    """What differs between ``module`` and its file on disk."""
    path = getattr(module, "__file__", None)
    if not path or not path.endswith(".py"):
        return []
    with open(path, encoding="utf-8") as file:
        source = file.read()
    tree = ast.parse(source)
    defined = _codes_by_name(compile(tree, path, "exec"))
    name = module.__name__
    problems = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            live = _function_code(getattr(module, node.name, None))
            if live != defined.get(node.name):
                problems.append(f"{name}.{node.name}")
        elif isinstance(node, ast.ClassDef):
            cls = getattr(module, node.name, None)
            if not inspect.isclass(cls):
                problems.append(f"{name}.{node.name}")
                continue
            methods = _codes_by_name(defined[node.name])
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    live = _function_code(vars(cls).get(item.name))
                    if live != methods.get(item.name):
                        problems.append(f"{name}.{node.name}.{item.name}")
        elif isinstance(node, ast.ImportFrom) and _verified(node.module or "", name):
            source_module = sys.modules.get(node.module)
            for alias in node.names:
                if source_module is None or not hasattr(source_module, alias.name):
                    continue
                bound = alias.asname or alias.name
                if not _same(
                    getattr(module, bound, None), getattr(source_module, alias.name)
                ):
                    problems.append(f"{name}.{bound}")
    return problems


def verify_integrity(*also: str) -> None:
    """Raise :class:`ExerciseError` naming what was changed if any loaded
    ``attnlab`` module differs from its file.

    The modules of ``attnlab.exercises`` are left out, except those named in
    ``also``: the hidden tests import them afresh from disk just before calling this.
    """
    problems = []
    for name, module in sorted(sys.modules.items()):
        library = name == "attnlab" or name.startswith("attnlab.")
        if library and (not name.startswith("attnlab.exercises") or name in also):
            problems += _problems(module)
    if problems:
        raise ExerciseError(
            f"Grading stopped: {TAMPERED} ({', '.join(problems[:3])} is not the"
            " course's own). A check, a helper of the checks or a library function"
            " that is replaced or patched earns no points: remove the code that"
            " changes it and hand the notebook in again."
        )


def graded(name: str, *args: Any, **kwargs: Any) -> None:
    """Run the check ``name`` as the graded hidden tests do: the library verified
    first, and the check and its helpers verified again after the student's code has
    run inside it."""
    verify_integrity()
    check = getattr(importlib.import_module("attnlab.exercises"), name)
    try:
        check(*args, **kwargs)
    finally:
        verify_integrity("attnlab.exercises._checking", CHECKS[name].module)
