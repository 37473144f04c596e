"""Chapter 6's explorable REINFORCE (attnlab.explorable.reinforce_draws): the estimates equal the mean of the library's
one-draw estimates over the same draws, the ticks the exact gradient, and every control moves the drawn estimates in
headless Chromium."""

import pytest
import torch

from attnlab import explorable
from attnlab.explorable.sampling import per_choice_estimates
from attnlab.hard_attention import reinforce_loss
from tests.browser import (
    after,
    check_local_and_ready,
    choose,
    explorable_page,
    pick,
    rows_of,
    signal,
    slide,
)
from tests.browser import drawn as drawn_now

THETA = torch.tensor([0.5, -0.3, 1.2, 0.0, -1.0], dtype=torch.float64)
REWARDS = torch.tensor([9.0, 10.5, 10.0, 8.5, 11.0], dtype=torch.float64)
MEAN_REWARD = (torch.softmax(THETA, 0) * REWARDS).sum().item()
BASELINES = {"none": None, "b = E[r]": MEAN_REWARD}
EXPONENTS, REPEATS = (0, 1, 2, 3, 4, 5, 6), 6


@pytest.fixture(scope="module")
def chart():
    return explorable.reinforce_draws(THETA, REWARDS, BASELINES, torch.Generator().manual_seed(3), EXPONENTS, REPEATS)


@pytest.fixture(scope="module")
def draws() -> torch.Tensor:
    """(repeats, 64): the same choices, drawn in the documented order."""
    generator = torch.Generator().manual_seed(3)
    probs = torch.softmax(THETA, 0)
    return torch.stack([torch.multinomial(probs, 64, replacement=True, generator=generator) for _ in range(REPEATS)])


def expected(draws, baseline: str, e: int) -> torch.Tensor:
    """(repeats, S): the mean of the one-draw estimates, each the negative gradient of reinforce_loss, drawn choice
    by drawn choice."""
    b = BASELINES[baseline]
    out = []
    for choices in draws[:, : 2**e]:
        total = torch.zeros_like(THETA)
        for j in choices.tolist():
            theta = THETA.clone().requires_grad_()
            loss = reinforce_loss(torch.log_softmax(theta, 0)[j], REWARDS[j],
                                  None if b is None else torch.tensor(b, dtype=torch.float64))
            total -= torch.autograd.grad(loss, theta)[0]
        out.append(total / len(choices))
    return torch.stack(out)


def exact_gradient() -> list[float]:
    theta = THETA.clone().requires_grad_()
    return torch.autograd.grad((torch.softmax(theta, 0) * REWARDS).sum(), theta)[0].tolist()


@pytest.mark.parametrize(("baseline", "e"), [("none", 0), ("b = E[r]", 3), ("none", 6)])
def test_estimates_are_means_of_reinforce(chart, draws, baseline, e):
    rows = sorted(pick(rows_of(chart, "estimates"), baseline=baseline, e=e), key=lambda r: r["repeat"])
    assert [r["repeat"] for r in rows] == list(range(REPEATS))
    assert (torch.tensor([r["estimate"] for r in rows]) - expected(draws, baseline, e)).abs().max() < 1e-6


def test_ticks_are_the_exact_gradient(chart):
    ticks = rows_of(chart, "exact")
    assert [t["choice"] for t in ticks] == [1, 2, 3, 4, 5]
    assert [t["estimate"] for t in ticks] == pytest.approx(exact_gradient(), abs=1e-6)


@pytest.mark.parametrize("baseline", list(BASELINES))
def test_per_choice_estimates_are_the_score_function(baseline):
    # for a softmax, d log a_j / d theta = e_j - a: the estimate of choice j is (r_j - b)(e_j - a)
    b = BASELINES[baseline] or 0.0
    probs = torch.softmax(THETA, 0)
    closed_form = (REWARDS - b)[:, None] * (torch.eye(5, dtype=torch.float64) - probs)
    assert torch.allclose(per_choice_estimates(THETA, REWARDS, BASELINES[baseline]), closed_form)
    assert torch.allclose((probs[:, None] * closed_form).sum(0), torch.tensor(exact_gradient(), dtype=torch.float64))


def test_every_control_has_a_visible_label_and_the_page_is_small(chart):
    for param in chart.to_dict()["params"]:
        assert param["bind"]["name"].strip(), param
    assert len(explorable.html(chart, "reinforce-draws", "d").data) < 300_000


# ---- in the browser -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def page(chart):
    with explorable_page({"reinforce-draws": chart}) as opened:
        yield opened


def test_page_is_local_and_ready(page):
    check_local_and_ready(page, charts=1)


def test_every_control_moves_the_estimates(page, draws):
    tab = page[0]
    assert [signal(tab, "reinforce-draws", n) for n in ("e", "baseline")] == [0, "none"]
    for action, setting in [(slide(tab, "reinforce-draws", "log2 of the number of draws", "ArrowRight"), (1, "none")),
                            (choose(tab, "reinforce-draws", "baseline", "b = E[r]"), (1, "b = E[r]")),
                            (slide(tab, "reinforce-draws", "log2 of the number of draws", "End"), (6, "b = E[r]")),
                            (choose(tab, "reinforce-draws", "baseline", "none"), (6, "none"))]:
        drawn = after(tab, action, "reinforce-draws", "estimates_marks")
        assert [signal(tab, "reinforce-draws", n) for n in ("e", "baseline")] == list(setting)
        e, baseline = setting
        want = expected(draws, baseline, e)
        got = torch.full_like(want, float("nan"))
        for d in drawn:
            got[d["repeat"], d["choice"] - 1] = d["estimate"]
        assert (got - want).abs().max() < 1e-6  # NaN (a cell not drawn) fails too
        (caption,) = drawn_now(tab, "reinforce-draws", "spread_marks")
        assert caption["label"].startswith(f"n = {2**e} draws")
