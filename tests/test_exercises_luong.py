import pytest
import torch

from attnlab.exercises import ExerciseError, check_local_p_weights, check_reinforce_loss


def good_local_p(scores, centre, half_width, lengths):
    positions = torch.arange(scores.shape[-1])
    real = positions < lengths[:, None]
    inside = ((positions - torch.floor(centre[:, None] + 0.5)).abs() <= half_width) & real
    align = torch.softmax(scores.masked_fill(~inside, -torch.inf), dim=-1)
    sigma = half_width / 2
    return align * torch.exp(-((positions - centre[:, None]) ** 2) / (2 * sigma**2))


def test_local_p_accepts_the_reference(capsys):
    check_local_p_weights(good_local_p)
    assert "passed all 3 checks" in capsys.readouterr().out


def _variant(*, gaussian=True, whole_softmax=False, sigma_factor=0.5, padding=True, round_gaussian=False,
             real_window=False):
    def local_p(scores, centre, half_width, lengths):
        positions = torch.arange(scores.shape[-1]).float()
        real = positions < lengths[:, None] if padding else torch.ones_like(scores, dtype=torch.bool)
        middle = torch.floor(centre[:, None] + 0.5)
        distance = (positions - centre[:, None]).abs() if real_window else (positions - middle).abs()
        inside = (distance <= half_width) & real
        if whole_softmax:
            align = torch.softmax(scores.masked_fill(~real, -torch.inf), -1) * inside
        else:
            align = torch.softmax(scores.masked_fill(~inside, -torch.inf), -1)
        if not gaussian:
            return align
        at = middle if round_gaussian else centre[:, None]
        return align * torch.exp(-((positions - at) ** 2) / (2 * (sigma_factor * half_width) ** 2))

    return local_p


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (_variant(gaussian=False), "has no Gaussian"),
        (_variant(whole_softmax=True), "softmax over the whole sentence"),
        (_variant(sigma_factor=1.0), "uses sigma = D"),
        (_variant(padding=False), "gives weight to padding"),
        (_variant(round_gaussian=True), "centres the Gaussian on round"),
        (_variant(real_window=True), r"uses the window \|s - p_t\| <= D"),
        (lambda s, c, d, n: good_local_p(s, c, d, n)[:, :-1], "returned shape"),
        (lambda s, c, d, n: good_local_p(s, c, d + 1, n), "is wrong"),
    ],
    ids=["no-gaussian", "whole-softmax", "sigma-D", "padding", "rounded-gaussian", "real-window", "shape",
         "wider-window"],
)
def test_local_p_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_local_p_weights(wrong)


def good_reinforce(log_prob, reward, baseline):
    advantage = (reward - baseline).detach()
    return (-advantage * log_prob + (reward.detach() - baseline) ** 2).mean()


def test_reinforce_accepts_the_reference(capsys):
    check_reinforce_loss(good_reinforce)
    assert "passed all 3 checks" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda lp, r, b: (-(r - b).detach() * lp + (r - b) ** 2).mean(), "gradient flow into the reward"),
        (lambda lp, r, b: ((r - b).detach() * lp + (r.detach() - b) ** 2).mean(), "wrong sign"),
        (lambda lp, r, b: (-r.detach() * lp + (r.detach() - b) ** 2).mean(), "does not subtract the baseline"),
        (lambda lp, r, b: (-(r - b).detach() * lp + (r.detach() - b) ** 2).sum(), "sums over the entries"),
        (lambda lp, r, b: (-(r - b).detach() * lp).mean(), "does not train the baseline"),
        (lambda lp, r, b: (-(r.detach() - b) * lp + (r.detach() - b) ** 2).mean(), "lets the policy term train"),
        (lambda lp, r, b: -(r - b).detach() * lp + (r.detach() - b) ** 2, "returned shape"),
    ],
    ids=["reward-not-detached", "sign", "no-baseline", "sum", "no-baseline-fit", "advantage-not-detached",
         "not-reduced"],
)
def test_reinforce_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_reinforce_loss(wrong)


def test_checks_report_an_unimplemented_stub():
    def stub(*args):
        raise NotImplementedError()

    for check in (check_local_p_weights, check_reinforce_loss):
        with pytest.raises(ExerciseError, match="not implemented yet"):
            check(stub)
