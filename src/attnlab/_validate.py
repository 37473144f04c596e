"""Shape and value checks that turn bad input into a clear ``ValueError``."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def shape_of(x: torch.Tensor) -> tuple[int, ...]:
    """The shape of ``x`` as a plain tuple (reads better in messages than
    ``torch.Size``)."""
    return tuple(x.shape)


def check_tensor(name: str, x: object) -> torch.Tensor:
    """Raise ``TypeError`` unless ``x`` is a tensor."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    return x


def check_ndim(
    name: str,
    x: torch.Tensor,
    layout: str,
    *,
    ndim: int | None = None,
    min_ndim: int = 0,
) -> None:
    """Raise ``ValueError`` unless ``x`` has ``ndim`` dimensions (or at least
    ``min_ndim``).

    ``layout`` names the expected shape in the message, e.g. ``"(batch, keys,
    dim)"``.
    """
    check_tensor(name, x)
    if (ndim is not None and x.dim() != ndim) or x.dim() < min_ndim:
        raise ValueError(f"{name} must have shape {layout}, got {shape_of(x)}")


def check_size(
    name: str, x: torch.Tensor, dim: int, expected: int, layout: str
) -> None:
    """Raise ``ValueError`` unless ``x.shape[dim] == expected``."""
    if x.shape[dim] != expected:
        raise ValueError(
            f"{name} must have shape {layout} with size {expected} in dimension"
            f" {dim}, got {shape_of(x)}"
        )


def check_last_dim(name: str, x: torch.Tensor, expected: int, layout: str) -> None:
    """Raise ``ValueError`` unless the last dimension of ``x`` is ``expected``."""
    if x.shape[-1] != expected:
        raise ValueError(
            f"{name} must have shape {layout} with last dimension {expected}, got"
            f" {shape_of(x)}"
        )


def check_shape(
    name: str, x: torch.Tensor, expected: Sequence[int], layout: str
) -> None:
    """Raise ``ValueError`` unless ``x`` has exactly the shape ``expected``."""
    check_tensor(name, x)
    if shape_of(x) != tuple(expected):
        raise ValueError(
            f"{name} must have shape {layout} = {tuple(expected)}, got {shape_of(x)}"
        )


def broadcast_batch(
    names: Sequence[str], shapes: Sequence[Sequence[int]]
) -> tuple[int, ...]:
    """Broadcast leading (batch) shapes, naming the arguments when they do not fit
    together."""
    first = tuple(shapes[0]) if shapes else ()
    # the common case, without torch.broadcast_shapes' overhead
    if all(tuple(s) == first for s in shapes):
        return first
    try:
        return tuple(torch.broadcast_shapes(*[torch.Size(s) for s in shapes]))
    except RuntimeError:
        described = ", ".join(
            f"{n} {tuple(s)}" for n, s in zip(names, shapes, strict=True)
        )
        raise ValueError(
            f"leading (batch) dimensions do not broadcast: {described}"
        ) from None


def check_positive(name: str, value: float) -> None:
    """Raise ``ValueError`` unless ``value > 0``."""
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value}")
