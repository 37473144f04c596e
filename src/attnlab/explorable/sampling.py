"""Explorable REINFORCE: averages of sampled gradient estimates, with and without a
baseline, as the number of draws grows (chapter 6)."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import torch

from attnlab.explorable.page import OKABE_ITO
from attnlab.hard_attention import reinforce_loss


def per_choice_estimates(
    theta: torch.Tensor, rewards: torch.Tensor, baseline: float | None
) -> torch.Tensor:
    """``(S, S)``: row ``j`` is the one-draw REINFORCE estimate of the gradient of
    ``E[r]`` in the logits ``theta (S,)`` when choice ``j`` is drawn, the negative
    gradient of :func:`~attnlab.hard_attention.reinforce_loss` (rewards ``(S,)``,
    a constant ``baseline`` or none)."""
    theta = theta.detach().clone().requires_grad_()
    b = None if baseline is None else torch.tensor(baseline, dtype=theta.dtype)
    return torch.stack(
        [
            -torch.autograd.grad(
                reinforce_loss(torch.log_softmax(theta, 0)[j], rewards[j], b), theta
            )[0]
            for j in range(len(theta))
        ]
    )


def reinforce_draws(
    theta: torch.Tensor,
    rewards: torch.Tensor,
    baselines: dict[str, float | None],
    generator: torch.Generator,
    exponents: Sequence[int] = tuple(range(11)),
    repeats: int = 20,
) -> alt.LayerChart:
    """Chapter 6: ``repeats`` REINFORCE estimates of the gradient of ``E[r]`` in the
    logits ``theta (S,)``, each the mean of ``n = 2**e`` one-draw estimates, beside
    the exact gradient; a slider sets ``e``, a menu the baseline.

    Repeat ``i`` draws its choices once, ``torch.multinomial(softmax(theta),
    2**max(exponents), replacement=True, generator=generator)`` (repeats in
    order), and averages the first ``n`` of them, the same draws for every baseline
    of ``baselines`` (a name for each, a constant or ``None`` for none). The
    estimates are :func:`per_choice_estimates`, rounded to 7 decimals.
    """
    probs = torch.softmax(theta.detach(), 0)
    # (repeats, most draws)
    draws = torch.stack(
        [
            torch.multinomial(
                probs, 2 ** max(exponents), replacement=True, generator=generator
            )
            for _ in range(repeats)
        ]
    )
    exact_theta = theta.detach().clone().requires_grad_()
    (exact,) = torch.autograd.grad(
        (torch.softmax(exact_theta, 0) * rewards).sum(), exact_theta
    )
    rows, spread = [], []
    for name, baseline in baselines.items():
        estimates = per_choice_estimates(theta, rewards, baseline)
        for e in exponents:
            means = estimates[draws[:, : 2**e]].mean(1)  # (repeats, S)
            total = means.var(0).sum().item() if repeats > 1 else 0.0
            spread.append(
                {
                    "baseline": name,
                    "e": e,
                    # two lines, so that the chart can narrow to a phone's width
                    "label": f"n = {2**e} draw{'s' if e else ''} per estimate\ntotal"
                    f" variance over the {repeats} estimates: {total:.3g}",
                }
            )
            rows += [
                {
                    "baseline": name,
                    "e": e,
                    "repeat": i,
                    "estimate": [round(v, 7) for v in means[i].tolist()],
                }
                for i in range(repeats)
            ]
    largest = max(max(abs(v) for v in r["estimate"]) for r in rows)
    largest = max(largest, exact.abs().max().item()) * 1.05
    exponent = alt.param(
        name="e",
        value=exponents[0],
        bind=alt.binding_range(
            min=exponents[0],
            max=exponents[-1],
            step=1,
            name="log2 of the number of draws n ",
        ),
    )
    baseline = alt.param(
        name="baseline",
        value=next(iter(baselines)),
        bind=alt.binding_select(options=list(baselines), name="baseline "),
    )
    choice = alt.X(
        "choice:O",
        title="logit of choice j (the gradient's component)",
        axis=alt.Axis(labelAngle=0),
    )
    value = alt.Y(
        "estimate:Q",
        scale=alt.Scale(domain=[-largest, largest]),
        title=f"gradient of E[r]: {repeats} estimates (dots), exact (black)",
    )
    points = (
        alt.Chart(alt.Data(values=rows), name="estimates")
        .mark_circle(size=40, opacity=0.8, color=OKABE_ITO[3])
        .encode(
            x=choice,
            xOffset=alt.XOffset("repeat:O"),
            y=value,
            tooltip=[
                alt.Tooltip("choice:O", title="choice"),
                alt.Tooltip("repeat:O", title="repeat"),
                alt.Tooltip("estimate:Q", title="estimate", format=".3f"),
            ],
        )
        .transform_filter("datum.baseline == baseline && datum.e == e")
        .transform_calculate(choice="sequence(1, length(datum.estimate) + 1)")
        .transform_flatten(["estimate", "choice"])
    )
    truth = (
        alt.Chart(
            alt.Data(
                values=[
                    {"choice": j + 1, "estimate": round(v, 7)}
                    for j, v in enumerate(exact.tolist())
                ]
            ),
            name="exact",
        )
        .mark_tick(color="black", thickness=2, size=30)
        .encode(
            x=choice,
            y=value,
            tooltip=[alt.Tooltip("estimate:Q", title="exact", format=".3f")],
        )
    )
    caption = (
        alt.Chart(alt.Data(values=spread), name="spread")
        .mark_text(align="left", baseline="bottom", dy=-6, lineBreak="\n")
        .encode(x=alt.value(0), y=alt.value(0), text="label:N")
        .transform_filter("datum.baseline == baseline && datum.e == e")
    )
    # one layer, not a concatenation, so that the sub-charts keep their names
    return (
        alt.layer(points, truth, caption)
        .properties(width=420, height=260)
        .add_params(exponent, baseline)
    )
