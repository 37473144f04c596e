import pytest
import torch
import torch.nn.functional as F

from attnlab import ntm
from attnlab.exercises import (
    ExerciseError,
    check_cosine_similarity,
    check_key_strength,
    check_sharpen,
    check_shift,
    check_write,
)
from attnlab.exercises import ntm as ntm_checks

# --- correct answers, written as a student would ----------------------------------------------------------------


def good_write(memory, w, erase, add):
    w = w[..., None]
    return memory * (1 - w * erase[:, None]) + w * add[:, None]


def good_cosine(memory, key, eps=1e-8):
    dot = (memory * key[:, None, :]).sum(-1)
    return dot / ((memory.pow(2).sum(-1) + eps).sqrt() * (key.pow(2).sum(-1, keepdim=True) + eps).sqrt())


def clamped_norm_cosine(memory, key):
    """Another right answer: norms from torch.linalg (finite gradient at 0), clamped away from 0."""
    dot = (memory * key[:, None, :]).sum(-1)
    row = torch.linalg.vector_norm(memory, dim=-1).clamp_min(1e-8)
    return dot / (row * torch.linalg.vector_norm(key, dim=-1, keepdim=True).clamp_min(1e-8))


def good_shift(w, kernel):
    k = kernel.shape[1] // 2
    return sum(kernel[:, j : j + 1] * torch.roll(w, j - k, dims=-1) for j in range(kernel.shape[1]))


def good_sharpen(w, gamma):
    powered = (w / w.amax(-1, keepdim=True)) ** gamma[:, None]
    return powered / powered.sum(-1, keepdim=True)


def log_space_sharpen(w, gamma):
    """Another right answer: a softmax of gamma * log w (zeros give log 0 = -inf, hence weight 0)."""
    return torch.softmax(gamma[:, None] * w.log(), dim=-1)


BETAS = [0.0, 1.0, 5.0, 20.0, 50.0, 100.0, 200.0, 1000.0]


def good_measure(memory, key):
    betas = torch.tensor(BETAS)
    weights = torch.stack([ntm.content_addressing(memory, key, beta.reshape(1))[0] for beta in betas])
    return betas, -torch.special.xlogy(weights, weights).sum(-1), weights.amax(-1)


def python_number_measure(memory, key):
    betas, entropies, top = good_measure(memory.double(), key.double())
    return BETAS, [float(h) for h in entropies], [float(t) for t in top]


def demo_memory_and_key():
    gen = torch.Generator().manual_seed(5)
    memory = torch.randn(1, 16, 6, generator=gen)
    memory[0, 11] = memory[0, 4] + 0.5 * torch.randn(6, generator=gen)
    return memory, memory[:, 4] + 0.3 * torch.randn(1, 6, generator=gen)


def check_measure(measure, **kwargs):
    check_key_strength(measure, *demo_memory_and_key(), **kwargs)


def in_float64(fn):
    def answer(*args):
        out = fn(*(a.double() for a in args))
        if isinstance(out, tuple):
            return tuple(o.double() if isinstance(o, torch.Tensor) else o for o in out)
        assert out.dtype == torch.float64
        return out

    return answer


CORRECT = [
    (check_write, good_write), (check_cosine_similarity, good_cosine), (check_cosine_similarity, clamped_norm_cosine),
    (check_shift, good_shift), (check_sharpen, good_sharpen), (check_sharpen, log_space_sharpen),
    (check_measure, good_measure), (check_measure, python_number_measure),
]
CORRECT_IDS = ["write", "cosine", "cosine-clamped", "shift", "sharpen", "sharpen-log-space", "measure",
               "measure-python-numbers"]


@pytest.mark.parametrize(("check", "answer"), CORRECT, ids=CORRECT_IDS)
def test_checks_accept_correct_answers(check, answer, capsys):
    check(answer)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize(("check", "answer"), CORRECT, ids=CORRECT_IDS)
def test_checks_accept_float64_answers(check, answer, capsys):
    check(in_float64(answer))
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize(("check", "answer"), CORRECT, ids=CORRECT_IDS)
def test_checks_accept_correct_answers_on_fresh_random_inputs(check, answer, capsys):
    for _ in range(3):
        check(answer, seed=None)
    assert "passed" in capsys.readouterr().out


# --- answers that hand the work to the library, change their inputs, or are not written yet -------------------------


@pytest.mark.parametrize(("check", "answer"), [
    (check_write, ntm.write), (check_write, lambda m, w, e, a: ntm.write(m, w, e, a) + 0),
    (check_write, ntm_checks._reference_write),
    (check_cosine_similarity, ntm.cosine_similarity), (check_cosine_similarity, ntm_checks._reference_cosine),
    (check_shift, ntm.shift), (check_shift, ntm_checks._reference_shift),
    (check_sharpen, ntm.sharpen), (check_sharpen, lambda w, g: ntm.sharpen(w.double(), g.double())),
    (check_sharpen, ntm_checks._reference_sharpen),
], ids=["write", "write-wrapped", "write-reference", "cosine", "cosine-reference", "shift", "shift-reference",
        "sharpen", "sharpen-wrapped", "sharpen-reference"])
def test_checks_reject_delegation_to_the_library(check, answer):
    with pytest.raises(ExerciseError, match="library's own version"):
        check(answer)


def write_in_place(memory, w, erase, add):
    return memory.mul_(1 - w[..., None] * erase[:, None]).add_(w[..., None] * add[:, None])


def cosine_in_place(memory, key):
    key /= key.norm(dim=-1, keepdim=True).clamp_min(1e-8)
    return good_cosine(memory, key)


def shift_in_place(w, kernel):
    out = good_shift(w, kernel)
    w.zero_()
    return out


def sharpen_in_place(w, gamma):
    w.div_(w.amax(-1, keepdim=True))
    return good_sharpen(w, gamma)


def measure_in_place(memory, key):
    result = good_measure(memory, key)
    memory.add_(1.0)
    return result


@pytest.mark.parametrize(("check", "answer", "argument"), [
    (check_write, write_in_place, "memory"), (check_cosine_similarity, cosine_in_place, "key"),
    (check_shift, shift_in_place, "w"), (check_sharpen, sharpen_in_place, "w"),
    (check_measure, measure_in_place, "memory"),
], ids=["write", "cosine", "shift", "sharpen", "measure"])
def test_checks_reject_answers_that_change_their_input(check, answer, argument):
    with pytest.raises(ExerciseError, match=f"changed its input `{argument}` in place"):
        check(answer)


def stub(*args):
    raise NotImplementedError()


@pytest.mark.parametrize("check", [check_write, check_cosine_similarity, check_shift, check_sharpen, check_measure],
                         ids=["write", "cosine", "shift", "sharpen", "measure"])
def test_stub_gets_the_not_implemented_message(check):
    with pytest.raises(ExerciseError, match="not implemented yet"):
        check(stub)


# --- typical mistakes -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("wrong", "message"), [
    (lambda m, w, e, a: (m + w[..., None] * a[:, None]) * (1 - w[..., None] * e[:, None]), "add before you erase"),
    (lambda m, w, e, a: m * (1 - e[:, None]) + w[..., None] * a[:, None], "erase ignores the weighting"),
    (lambda m, w, e, a: m * (1 - w[..., None] * e[:, None]) + a[:, None], "add ignores the weighting"),
    (lambda m, w, e, a: m * (w[..., None] * e[:, None]) + w[..., None] * a[:, None], "keep 1 - w"),
    (lambda m, w, e, a: good_write(m, w, e, a).transpose(1, 2), "returned shape"),
    (lambda m, w, e, a: good_write(m, w, a, e), "wrong on the worked example"),
], ids=["add-then-erase", "unweighted-erase", "unweighted-add", "keeps-the-erased-part", "transposed",
        "swapped-erase-and-add"])
def test_write_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_write(wrong)


def buggy_cosine(memory, key):
    """The chapter's buggy version: plain norms, NaN for a zero row."""
    dot = (memory * key[:, None, :]).sum(-1)
    return dot / (memory.norm(dim=-1) * key.norm(dim=-1, keepdim=True))


def rows_only_cosine(memory, key):
    dot = (memory * key[:, None, :]).sum(-1)
    return dot / ((memory.pow(2).sum(-1) + 1e-8).sqrt() * key.norm(dim=-1, keepdim=True))


def clamp_after_sqrt_cosine(memory, key):
    dot = (memory * key[:, None, :]).sum(-1)
    row = memory.pow(2).sum(-1).sqrt().clamp_min(1e-8)
    return dot / (row * key.pow(2).sum(-1, keepdim=True).sqrt().clamp_min(1e-8))


def detached_cosine(memory, key):
    with torch.no_grad():
        return good_cosine(memory, key)


@pytest.mark.parametrize(("wrong", "message"), [
    (buggy_cosine, "row of zeros still gives NaN"),
    (rows_only_cosine, "key of zeros gives NaN"),
    (clamp_after_sqrt_cosine, "gradient at a memory of zeros is NaN"),
    (detached_cosine, "does not depend on memory and key through autograd"),
    (lambda m, k: (m * k[:, None]).sum(-1), "dot product"),
    (lambda m, k: (m * k[:, None]).sum(-1) / (m.norm(dim=-1) + 1e-8), "outside \\[-1, 1\\]"),
    (lambda m, k: good_cosine(m, k, eps=1.0), "wrong for random memories"),
], ids=["no-eps", "rows-only", "clamp-after-sqrt", "no-grad", "dot-product", "key-norm-missing", "huge-eps"])
def test_cosine_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_cosine_similarity(wrong)


def measure_with(entropy=None, top=None, betas=BETAS):
    def measure(memory, key):
        b = torch.tensor(betas)
        weights = torch.stack([ntm.content_addressing(memory, key, beta.reshape(1))[0] for beta in b])
        h = entropy(weights) if entropy else -torch.special.xlogy(weights, weights).sum(-1)
        return b, h, top(weights) if top else weights.amax(-1)

    return measure


def chapter_memory_measure(memory, key):
    return good_measure(*demo_memory_and_key())


@pytest.mark.parametrize(("wrong", "message"), [
    (measure_with(entropy=lambda w: -(w * w.log()).sum(-1)), "0 \\* log\\(0\\) is NaN"),
    (measure_with(entropy=lambda w: torch.special.xlogy(w, w).sum(-1)), "negative"),
    (measure_with(entropy=lambda w: -(w * w.clamp_min(1e-30).log2()).sum(-1)), "in bits"),
    (measure_with(top=lambda w: w.argmax(-1).float()), "index of the best row"),
    (measure_with(top=lambda w: w.amin(-1)), "smallest weight"),
    (measure_with(entropy=lambda w: -torch.special.xlogy(w, w).mean(-1)), "entropies is wrong"),
    (measure_with(betas=[0.0, 1.0, 2.0, 5.0, 10.0, 50.0]), "at least 200"),
    (measure_with(betas=[0.0, 10.0, 200.0]), "at least 6"),
    (measure_with(betas=BETAS[::-1]), "increasing order"),
    (lambda m, k: good_measure(m, k)[1:], "three things"),
    (chapter_memory_measure, "measure on the memory and key you are given"),
], ids=["nan-entropy", "no-minus-sign", "bits", "argmax", "smallest", "mean-not-sum", "small-range", "too-few",
        "decreasing", "pair", "fixed-memory"])
def test_key_strength_experiment_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_measure(wrong)


def test_key_strength_experiment_needs_its_memory_and_key():
    memory, key = demo_memory_and_key()
    with pytest.raises(ExerciseError, match="memory \\(1, N, M\\) and the key \\(1, M\\)"):
        check_key_strength(good_measure, key, memory)


def zero_padded_shift(w, kernel):
    k = kernel.shape[1] // 2
    padded = F.pad(w, (k, k))
    n = w.shape[1]
    return sum(kernel[:, j : j + 1] * padded[:, 2 * k - j : 2 * k - j + n] for j in range(kernel.shape[1]))


@pytest.mark.parametrize(("wrong", "message"), [
    (lambda w, s: good_shift(w, s.flip(-1)), "from row i to row i-1"),
    (lambda w, s: sum(s[:, j : j + 1] * torch.roll(w, j, dims=-1) for j in range(s.shape[1])), "by 2 rows"),
    (zero_padded_shift, "circular"),
    (lambda w, s: w, "wrong for the pure \\+1 kernel"),
    (lambda w, s: good_shift(w, s)[:, :-1], r"shape \(2, 6\) but expected \(2, 7\)"),
    (lambda w, s: good_shift(w, s[:1].expand_as(s)), "kernel of the first batch element"),
    (lambda w, s: good_shift(w, s) / s.shape[1], "wrong for the pure \\+1 kernel"),
], ids=["reversed-kernel", "shift-by-j", "zero-padding", "identity", "drops-a-row", "first-kernel-only",
        "mean-not-sum"])
def test_shift_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_shift(wrong)


@pytest.mark.parametrize(("wrong", "message"), [
    (lambda w, g: w ** g[:, None], "sum to"),
    (lambda w, g: good_sharpen(w * g[:, None], torch.ones_like(g)), "equals w although gamma is not 1"),
    (lambda w, g: torch.softmax(g[:, None] * w, -1), "softmax to gamma \\* w"),
    (lambda w, g: good_sharpen(w, g + 1), "gamma = 1"),
    (lambda w, g: good_sharpen(w, g[:1].expand_as(g)), "gamma of the first row"),
    (lambda w, g: good_sharpen(w, 1 / g), "wrong for random weightings"),
    (lambda w, g: (w ** g[:, None]) / (w ** g[:, None]).sum(-1, keepdim=True), "underflows"),
    (lambda w, g: good_sharpen(w, g)[:, :, None], "returned shape"),
], ids=["unnormalised", "multiplies", "softmax", "off-by-one-power", "first-gamma-only", "inverse-power", "underflow",
        "extra-axis"])
def test_sharpen_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_sharpen(wrong)


def test_messages_never_show_the_expected_values():
    """A wrong answer learns what is wrong and by how much, never the reference's numbers."""
    with pytest.raises(ExerciseError) as caught:
        check_shift(lambda w, s: w * 0.5)
    assert "tensor(" not in str(caught.value) and "0.3, 0.0" not in str(caught.value)
