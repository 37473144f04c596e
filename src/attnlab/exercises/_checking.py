"""The machinery behind every ``check_*`` function: run the student's code, compare, explain what is wrong."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


class ExerciseError(AssertionError):
    """A check failed; the message says what is wrong and, where it can, what to look at."""


def describe(x: Any) -> str:
    """A short description of an argument for messages: tensors by shape, other values by repr."""
    if isinstance(x, torch.Tensor):
        return f"tensor{tuple(x.shape)}"
    return repr(x)


def call(fn: Callable, name: str, *args: Any, **kwargs: Any) -> Any:
    """Call the student's ``fn``, turning its exceptions into an :class:`ExerciseError` that says where."""
    if not callable(fn):
        raise ExerciseError(f"expected a function for {name}, got {type(fn).__name__}")
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        raise ExerciseError(
            f"{name} is not implemented yet: replace `raise NotImplementedError()` with your code."
        ) from None
    except Exception as exc:  # the student's code failed: show the call, not a torch traceback
        arguments = ", ".join([describe(a) for a in args] + [f"{k}={describe(v)}" for k, v in kwargs.items()])
        raise ExerciseError(f"{name}({arguments}) raised {type(exc).__name__}: {exc}") from None


def expect_tensor(name: str, out: Any, shape: tuple[int, ...]) -> torch.Tensor:
    """The output must be a tensor of the given shape, free of NaN."""
    if not isinstance(out, torch.Tensor):
        raise ExerciseError(f"{name} must return a torch.Tensor, got {type(out).__name__}")
    if tuple(out.shape) != tuple(shape):
        raise ExerciseError(f"{name} returned shape {tuple(out.shape)} but expected {tuple(shape)}")
    if torch.isnan(out).any():
        raise ExerciseError(f"{name} returned NaN values")
    return out


def expect_close(name: str, out: torch.Tensor, expected: torch.Tensor, what: str, atol: float = 1e-5) -> None:
    """``out`` must match the reference ``expected``; ``what`` describes the case in the message."""
    if not torch.allclose(out.to(expected.dtype), expected, atol=atol, rtol=1e-4):
        error = (out.to(expected.dtype) - expected).abs().max().item()
        raise ExerciseError(f"{name} is wrong {what}: largest difference from the reference is {error:.3g}")


def passed(name: str, n_cases: int) -> None:
    """Report success."""
    print(f"Well done: {name} passed all {n_cases} checks.")
