import pytest
import torch
import torch.nn.functional as F

from attnlab import ntm
from attnlab.exercises import ExerciseError, check_sharpen, check_shift, check_write


def good_sharpen(w, gamma):
    powered = w ** gamma[:, None]
    return powered / powered.sum(-1, keepdim=True)


def good_shift(w, kernel):
    k = kernel.shape[1] // 2
    return sum(kernel[:, j : j + 1] * torch.roll(w, j - k, dims=-1) for j in range(kernel.shape[1]))


def good_write(memory, w, erase, add):
    w = w[..., None]
    return memory * (1 - w * erase[:, None]) + w * add[:, None]


@pytest.mark.parametrize(("check", "answer"), [
    (check_sharpen, good_sharpen), (check_sharpen, ntm.sharpen),
    (check_shift, good_shift), (check_shift, ntm.shift),
    (check_write, good_write), (check_write, ntm.write),
], ids=["sharpen", "sharpen-library", "shift", "shift-library", "write", "write-library"])
def test_checks_accept_correct_answers(check, answer, capsys):
    check(answer)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize(("wrong", "message"), [
    (lambda w, g: w ** g[:, None], "sum to"),
    (lambda w, g: good_sharpen(w * g[:, None], torch.ones_like(g)), "multiply w by gamma"),
    (lambda w, g: good_sharpen(w, g + 1), "gamma = 1"),
    (lambda w, g: good_sharpen(w, 1 / g), "wrong for gamma = \\(1, 2, 5\\)"),
    (lambda w, g: torch.softmax(g[:, None] * w, -1), "wrong"),
], ids=["unnormalised", "multiplies", "off-by-one-power", "inverse-power", "softmax"])
def test_sharpen_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_sharpen(wrong)


def zero_padded_shift(w, kernel):
    k = kernel.shape[1] // 2
    padded = F.pad(w, (k, k))
    n = w.shape[1]
    return sum(kernel[:, j : j + 1] * padded[:, 2 * k - j : 2 * k - j + n] for j in range(kernel.shape[1]))


@pytest.mark.parametrize(("wrong", "message"), [
    (lambda w, s: good_shift(w, s.flip(-1)), "from row i to row i-1"),
    (zero_padded_shift, "circular"),
    (lambda w, s: w, "wrong for the pure \\+1 kernel"),
    (lambda w, s: good_shift(w, s)[:, :-1], r"shape \(2, 6\) but expected \(2, 7\)"),
], ids=["reversed-kernel", "zero-padding", "identity", "drops-a-row"])
def test_shift_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_shift(wrong)


def write_in_place(memory, w, erase, add):
    memory.mul_(1 - w[..., None] * erase[:, None]).add_(w[..., None] * add[:, None])
    return memory


@pytest.mark.parametrize(("wrong", "message"), [
    (lambda m, w, e, a: (m + w[..., None] * a[:, None]) * (1 - w[..., None] * e[:, None]), "add before you erase"),
    (lambda m, w, e, a: m * (1 - e[:, None]) + w[..., None] * a[:, None], "ignores the weighting"),
    (lambda m, w, e, a: m * (1 - w[..., None] * e[:, None]) + a[:, None], "worked example"),
    (write_in_place, "changed the memory"),
], ids=["add-then-erase", "unweighted-erase", "unweighted-add", "in-place"])
def test_write_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_write(wrong)


def test_stub_gets_the_not_implemented_message():
    def stub(w, gamma):
        raise NotImplementedError()

    with pytest.raises(ExerciseError, match="not implemented yet"):
        check_sharpen(stub)
