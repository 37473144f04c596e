"""One seeded training loop, shared by every chapter: steps, progress bar,
evaluation, history, best checkpoint."""

from __future__ import annotations

import copy
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from attnlab.progress import progress
from attnlab.runmode import offset_seed


def seed_everything(seed: int) -> torch.Generator:
    """Seed Python, NumPy and torch; return a fresh ``torch.Generator`` seeded the
    same, for data. ``ATTNLAB_SEED_OFFSET`` is added to ``seed`` first
    (:func:`attnlab.runmode.offset_seed`)."""
    seed = offset_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


@dataclass
class History:
    """What happened during training: loss per step, evaluations, time and examples
    seen."""

    loss: list[float] = field(default_factory=list)
    evals: list[dict[str, float]] = field(default_factory=list)
    seconds: float = 0.0
    examples: int = 0
    best_step: int | None = None

    def metric(self, name: str) -> tuple[list[int], list[float]]:
        """The steps at which ``name`` was evaluated and its values."""
        rows = [e for e in self.evals if name in e]
        return [int(e["step"]) for e in rows], [e[name] for e in rows]

    def smoothed_loss(self, window: int = 50) -> np.ndarray:
        """Moving average of the training loss over ``window`` steps (shorter at the
        start)."""
        loss = np.asarray(self.loss, dtype=float)
        cumsum = np.cumsum(np.insert(loss, 0, 0.0))
        idx = np.arange(1, len(loss) + 1)
        lo = np.maximum(0, idx - window)
        return (cumsum[idx] - cumsum[lo]) / (idx - lo)


def train(
    model: nn.Module,
    next_batch: Callable[[int], Any],
    loss_fn: Callable[[nn.Module, Any], torch.Tensor],
    *,
    steps: int,
    batch_size: int,
    lr: float = 1e-3,
    clip: float | None = 1.0,
    lr_factor: Callable[[int], float] | None = None,
    evaluate: Callable[[nn.Module], dict[str, float]] | None = None,
    eval_every: int = 100,
    best: tuple[str, str] | None = None,
    desc: str = "training",
) -> History:
    """Train ``model`` with Adam for ``steps`` steps and return its :class:`History`.

    next_batch(step) returns a batch; loss_fn(model, batch) returns a scalar loss.
    ``lr_factor(step)`` multiplies the learning rate (e.g. a drop late in the run).
    ``evaluate(model)`` is called every ``eval_every`` steps and at the end (in eval
    mode, without gradients); with ``best=("val_bits", "min")`` the weights of the
    best evaluation are restored at the end. ``clip`` is the gradient-norm clip.
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    if best is not None and (evaluate is None or best[1] not in ("min", "max")):
        raise ValueError(
            "best needs an evaluate function and a direction 'min' or 'max', got"
            f" {best}"
        )
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = (
        torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor)
        if lr_factor
        else None
    )
    history = History()
    best_value, best_state = math.inf, None
    postfix: dict[str, str] = {}
    start = time.perf_counter()

    def run_eval(step: int) -> None:
        nonlocal best_value, best_state
        model.eval()
        with torch.no_grad():
            result = {"step": float(step), **evaluate(model)}
        model.train()
        history.evals.append(result)
        if best is not None:
            value = result[best[0]] if best[1] == "min" else -result[best[0]]
            if value < best_value:
                best_value, best_state, history.best_step = (
                    value,
                    copy.deepcopy(model.state_dict()),
                    step,
                )
        postfix.update({k: f"{v:.3g}" for k, v in result.items() if k != "step"})

    model.train()
    with progress(steps, desc) as bar:
        for step in range(1, steps + 1):
            loss = loss_fn(model, next_batch(step))
            if not torch.isfinite(loss):
                raise FloatingPointError(f"loss became {loss.item()} at step {step}")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if clip is not None:
                nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            history.loss.append(loss.item())
            history.examples += batch_size
            if evaluate is not None and (step % eval_every == 0 or step == steps):
                run_eval(step)
            postfix["loss"] = f"{loss.item():.3g}"
            bar.set_postfix(postfix, refresh=False)
            bar.update(1)
    history.seconds = time.perf_counter() - start
    model.eval()
    if best_state is not None:
        model.load_state_dict(best_state)
    return history
