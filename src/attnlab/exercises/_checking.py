"""The machinery behind every ``check_*`` function: run the student's code, compare,
explain what is wrong.

A check is a function decorated with :func:`exercise_check`. The decorator

- registers it in :data:`CHECKS` with the library code the exercise asks the
  student to write, so that tests can verify that no chapter shows that code before
  the exercise;
- rejects an answer that delegates to that library code, or to the check's own
  ``_reference_*`` functions;
- turns every failure into an :class:`ExerciseError` whose message says what is
  wrong, never a raw traceback from inside the check, and never the expected value;
- when the check is called with ``seed=None`` (as the graded hidden tests do),
  draws fresh inputs and names the seed in the message, so that the failing case can
  be replayed.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import functools
import inspect
import numbers
import secrets
import sys
import warnings
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, FrameType
from typing import Any, TypeVar

import numpy as np
import torch

PACKAGE_DIR = str(Path(__file__).resolve().parents[1])
F = TypeVar("F", bound=Callable[..., Any])


class ExerciseError(AssertionError):
    """A check failed; the message says what is wrong and, where it can, what to look
    at. ``raised`` names the built-in exception the student's code raised, if one
    did."""

    raised: str | None = None


@dataclass(frozen=True)
class CheckInfo:
    """A registered check: its name and the library objects whose code the exercise
    asks for."""

    name: str
    module: str
    exercised: tuple[object, ...]
    function: Callable

    def forbidden_code(self) -> dict[CodeType, str]:
        """Code objects the student's answer must not call: the exercised objects and
        the check's references."""
        objects = list(self.exercised)
        module = sys.modules[self.module]
        objects += [
            value
            for key, value in vars(module).items()
            if key.startswith("_reference")
        ]
        codes: dict[CodeType, str] = {}
        for obj in objects:
            for code in _code_objects(obj):
                owner = getattr(obj, "__module__", "?")
                codes[code] = f"{owner}.{getattr(obj, '__qualname__', obj)}"
        return codes


CHECKS: dict[str, CheckInfo] = {}
_active: ContextVar[CheckInfo | None] = ContextVar("active_check", default=None)
_drawn_seed: ContextVar[int | None] = ContextVar("drawn_seed", default=None)


def _code_objects(obj: object) -> list[CodeType]:
    """The code objects of a function, a method, or every function defined in a
    class's body; each unwrapped, so that a decorator's wrapper (``torch.no_grad``'s
    is shared by every function it decorates) is never taken for the library's."""
    obj = inspect.unwrap(obj) if callable(obj) else obj
    if inspect.isclass(obj):
        codes = []
        for member in vars(obj).values():
            member = getattr(member, "__func__", member)
            if isinstance(member, property):
                member = member.fget
            if callable(member) and not inspect.isclass(member):
                member = inspect.unwrap(member)
            if inspect.isfunction(member):
                codes.append(member.__code__)
        return codes
    function = getattr(obj, "__func__", obj)
    return [function.__code__] if inspect.isfunction(function) else []


def exercise_check(*exercised: object) -> Callable[[F], F]:
    """Decorate a ``check_*`` function; ``exercised``: the library code the exercise
    asks the student to write."""

    def decorate(check: F) -> F:
        info = CheckInfo(check.__name__, check.__module__, exercised, check)
        CHECKS[check.__name__] = info

        @functools.wraps(check)
        def run(*args: Any, **kwargs: Any) -> Any:
            # IPython and pytest hide this frame from tracebacks.
            __tracebackhide__ = True  # noqa: F841
            active, drawn = _active.set(info), _drawn_seed.set(None)
            try:
                # the student's warnings caught and stderr sent to stdout for the
                # whole check (its code may run outside `call`, e.g. a forward):
                # nbgrader gives 0 to a graded cell that writes to stderr
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    with contextlib.redirect_stderr(sys.stdout):
                        try:
                            return check(*args, **kwargs)
                        finally:
                            _show_warnings(caught)
            except ExerciseError as exc:
                raise ExerciseError(_with_seed(str(exc))) from None
            # a failure inside the check is reported as a problem with the answer
            except Exception as exc:
                raise ExerciseError(
                    _with_seed(
                        f"{check.__name__} could not use your answer"
                        f" ({type(exc).__name__}: {exc}). Look at the type, shape"
                        " and dtype of what your function returns."
                    )
                ) from None
            finally:
                _active.reset(active)
                _drawn_seed.reset(drawn)

        return run  # type: ignore[return-value]

    return decorate


@contextlib.contextmanager
def checking(info: CheckInfo) -> Iterator[None]:
    """Within this block, :func:`call` acts for the check ``info`` (the library
    code it refuses), as inside the check itself."""
    active = _active.set(info)
    try:
        yield
    finally:
        _active.reset(active)


class RemoteAnswer:
    """A student's function that runs in another process (the notebook, seen from
    the grader: :mod:`attnlab.teaching.verdicts`). :func:`call` hands it the call."""

    def call_remote(self, name: str, args: tuple, kwargs: dict) -> Any:
        """Run the call there; its value, or an :class:`ExerciseError`."""
        raise NotImplementedError

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Called by the check itself, not through :func:`call`: the built-in
        exception the student's code raised is raised again here."""
        try:
            return self.call_remote(
                getattr(self, "__name__", "your function"), args, kwargs
            )
        except ExerciseError as exc:
            kind = getattr(builtins, exc.raised or "", None)
            if isinstance(kind, type) and issubclass(kind, Exception):
                raise kind(str(exc)) from None
            raise


def _with_seed(message: str) -> str:
    seed = _drawn_seed.get()
    if seed is None:
        return message
    return (
        f"{message} [inputs drawn at random: call the check with seed={seed} to see"
        " this case again]"
    )


def generator(seed: int | None) -> torch.Generator:
    """A torch generator for the check's inputs: ``seed`` fixed (the public check),
    or ``None`` for a fresh draw."""
    if seed is None:
        seed = secrets.randbelow(2**31)
        _drawn_seed.set(seed)
    return torch.Generator().manual_seed(seed)


def describe(x: Any) -> str:
    """A short description of an argument for messages: tensors by shape, other
    values by repr."""
    if isinstance(x, torch.Tensor):
        return f"tensor{tuple(x.shape)}"
    text = repr(x)
    return text if len(text) <= 40 else f"{type(x).__name__}(...)"


def _argument_names(
    fn: Callable, args: tuple, kwargs: dict
) -> list[tuple[str, Any]]:
    """(name, value) for every argument of the call, named as in the student's
    signature where possible."""
    try:
        bound = inspect.signature(fn).bind_partial(*args, **kwargs)
        return list(bound.arguments.items())
    except (TypeError, ValueError):
        return [(f"argument {i + 1}", a) for i, a in enumerate(args)] + list(
            kwargs.items()
        )


def tensors(value: Any, parameters: bool = False) -> list[torch.Tensor]:
    """The tensors in ``value`` (nested lists, tuples, dictionaries and
    dataclasses), in order; with ``parameters``, the parameters of the models in it
    too."""
    if isinstance(value, torch.Tensor):
        return [value]
    if parameters and isinstance(value, torch.nn.Module):
        return list(value.parameters())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        items: Any = [getattr(value, field.name) for field in fields]
    elif isinstance(value, dict):
        items = value.values()
    elif isinstance(value, list | tuple):
        items = value
    else:
        return []
    return [t for item in items for t in tensors(item, parameters)]


def _delegation_profiler(
    forbidden: dict[CodeType, str], hits: list[str]
) -> Callable:
    """A ``sys.setprofile`` hook that records calls of forbidden code made by the
    student's code itself.

    A forbidden function called from inside other library code (the student calls an
    allowed library function that uses it) is not delegation; one reached from the
    student's code through torch or Python alone is.
    """

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or frame.f_code not in forbidden:
            return
        caller = frame.f_back
        while caller is not None and caller.f_code is not _invoke.__code__:
            if (
                caller.f_code.co_filename.startswith(PACKAGE_DIR)
                and caller.f_code not in forbidden
            ):
                return
            caller = caller.f_back
        hits.append(forbidden[frame.f_code])

    return profile


def _invoke(
    fn: Callable, args: tuple, kwargs: dict, profiler: Callable | None
) -> Any:
    if profiler is None:
        return fn(*args, **kwargs)
    previous = sys.getprofile()
    sys.setprofile(profiler)
    try:
        return fn(*args, **kwargs)
    finally:
        sys.setprofile(previous)


def _show_warnings(caught: list[warnings.WarningMessage]) -> None:
    """Print each distinct warning of the student's code once, as a note."""
    for text in dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught):
        print(f"Note (costs no points): your code warned: {text}")


def call(fn: Callable, name: str, *args: Any, **kwargs: Any) -> Any:
    """Call the student's ``fn`` and turn what can go wrong into an
    :class:`ExerciseError` that says what.

    Its exceptions are reported with the call that raised them; an answer that
    changes a tensor it was given in place, or that calls the library's own version
    of the exercise, is rejected.
    """
    if not callable(fn):
        raise ExerciseError(
            f"expected a function for {name}, got {type(fn).__name__}"
        )
    if isinstance(fn, RemoteAnswer):
        return fn.call_remote(name, args, kwargs)
    info = _active.get()
    forbidden = info.forbidden_code() if info is not None else {}
    hits: list[str] = []
    profiler = _delegation_profiler(forbidden, hits) if forbidden else None
    named = _argument_names(fn, args, kwargs)
    before = [
        (arg_name, t, t.detach().clone())
        for arg_name, value in named
        for t in tensors(value)
    ]
    held = [  # a batch (a dataclass) whose fields the answer must not rebind
        (arg, value, list(map(id, tensors(value))))
        for arg, value in named
        if dataclasses.is_dataclass(value)
    ]
    try:
        out = _invoke(fn, args, kwargs, profiler)
    except NotImplementedError:
        raise ExerciseError(
            f"{name} is not implemented yet: replace `raise NotImplementedError()`"
            " with your code."
        ) from None
    except ExerciseError:
        raise
    # the student's code failed: show the call, not a torch traceback
    except Exception as exc:
        arguments = ", ".join(
            f"{k}={describe(v)}" if not k.startswith("argument ") else describe(v)
            for k, v in named
        )
        error = ExerciseError(
            f"{name}({arguments}) raised {type(exc).__name__}: {exc}"
        )
        if type(exc).__module__ == "builtins":
            error.raised = type(exc).__name__
        raise error from None
    if hits:
        raise ExerciseError(
            f"{name} calls `{hits[0]}`, the library's own version of what this"
            " exercise asks you to write. Write the computation yourself with torch"
            " operations."
        )
    changed = [
        arg_name
        for arg_name, tensor, copy in before
        if tensor.shape != copy.shape
        or not torch.equal(torch.nan_to_num(tensor.detach()), torch.nan_to_num(copy))
    ]
    changed += [
        arg_name
        for arg_name, value, ids in held
        if list(map(id, tensors(value))) != ids
    ]
    if changed:
        raise ExerciseError(
            f"{name} changed its input `{changed[0]}` in place (with an operation"
            " such as `+=`, `x[...] = ...`, `x.mul_(...)` or `batch.src = ...`):"
            " leave the inputs as they are and compute new tensors (or a new batch,"
            " with dataclasses.replace) instead."
        )
    return out


def close(a: torch.Tensor, b: torch.Tensor, atol: float = 1e-5) -> bool:
    """True if ``a`` has ``b``'s shape and about its values, compared in float64 (so
    that a float32 or float64 answer is judged alike)."""
    return a.shape == b.shape and torch.allclose(
        a.double(), b.double(), atol=atol, rtol=1e-4
    )


def as_tensor(name: str, out: Any, dtype: torch.dtype | None = None) -> torch.Tensor:
    """The answer ``out`` (a tensor of any real dtype, a NumPy array or number, a
    Python number or list) as a tensor of ``dtype`` (the default float dtype if not
    given)."""
    dtype = dtype or torch.get_default_dtype()
    if isinstance(out, torch.Tensor):
        tensor = out.detach()
    elif isinstance(
        out, np.ndarray | np.generic | numbers.Real | list | tuple
    ) and not isinstance(out, bool):
        try:
            tensor = torch.as_tensor(np.asarray(out, dtype=np.float64))
        except (TypeError, ValueError):
            raise ExerciseError(
                f"{name} must return numbers, got {describe(out)}"
            ) from None
    else:
        raise ExerciseError(
            f"{name} must return a torch.Tensor or a number, got"
            f" {type(out).__name__}"
        )
    if tensor.is_complex():
        raise ExerciseError(f"{name} returned complex numbers")
    return tensor.to(device="cpu", dtype=dtype)


def expect_tensor(
    name: str, out: Any, shape: tuple[int, ...], dtype: torch.dtype | None = None
) -> torch.Tensor:
    """The output must be a tensor (any real dtype, or an array) of the given shape,
    free of NaN and infinity.

    Returned as ``dtype`` (the default float dtype if not given), so that the check
    compares like with like whatever float type the answer used.
    """
    if not isinstance(out, torch.Tensor | np.ndarray):
        raise ExerciseError(
            f"{name} must return a torch.Tensor, got {type(out).__name__}"
        )
    if tuple(out.shape) != tuple(shape):
        raise ExerciseError(
            f"{name} returned shape {tuple(out.shape)} but expected {tuple(shape)}"
        )
    tensor = as_tensor(name, out, dtype)
    if tensor.is_floating_point() and not torch.isfinite(tensor).all():
        raise ExerciseError(f"{name} returned NaN or infinite values")
    return tensor


def expect_number(name: str, out: Any) -> float:
    """The output must be one real number: a Python or NumPy number, or a tensor with
    one element."""
    if isinstance(out, bool):
        raise ExerciseError(f"{name} must return a number, got a bool")
    tensor = as_tensor(name, out, torch.float64)
    if tensor.numel() != 1:
        raise ExerciseError(
            f"{name} must return one number, got {tensor.numel()} values of shape "
            f"{tuple(tensor.shape)}"
        )
    value = tensor.item()
    if value != value or value in (float("inf"), float("-inf")):
        raise ExerciseError(f"{name} returned {value}, not a finite number")
    return value


def expect_close(
    name: str,
    out: torch.Tensor,
    expected: torch.Tensor,
    what: str,
    atol: float = 1e-5,
) -> None:
    """``out`` must match the reference ``expected``; ``what`` describes the case in
    the message."""
    out, expected = (
        as_tensor(name, out, torch.float64),
        as_tensor(name, expected, torch.float64),
    )
    if out.shape != expected.shape:
        raise ExerciseError(
            f"{name} returned shape {tuple(out.shape)} {what}, expected"
            f" {tuple(expected.shape)}"
        )
    if not torch.allclose(out, expected, atol=atol, rtol=1e-4):
        error = (out - expected).abs().max().item()
        raise ExerciseError(
            f"{name} is wrong {what}: largest difference from the reference is"
            f" {error:.3g}"
        )


def passed(name: str, n_cases: int) -> None:
    """Report success."""
    print(f"Well done: {name} passed all {n_cases} checks.")
