import pytest
import torch

from attnlab.attention import attend, masked_softmax
from attnlab.exercises import (
    ExerciseError,
    check_query_training,
    check_sharpness,
    check_soft_lookup,
    check_topk_lookup,
)
from attnlab.exercises.memory import _reference_lookup, _reference_topk
from attnlab.memory import SoftDict


def stub(*args):
    raise NotImplementedError()


# --- soft lookup ------------------------------------------------------------------------------------------------


def good_lookup(query, keys, values):
    weights = torch.softmax(keys @ query, dim=-1)
    return weights @ values, weights


def good_lookup_float64(query, keys, values):
    weights = torch.softmax(keys.double() @ query.double(), dim=-1)
    return weights @ values.double(), weights


def good_lookup_by_hand(query, keys, values):
    scores = keys @ query
    e = (scores - scores.max()).exp()
    weights = e / e.sum()
    return weights @ values, weights


@pytest.mark.parametrize("answer", [good_lookup, good_lookup_float64, good_lookup_by_hand])
def test_soft_lookup_accepts_right_answers(answer, capsys):
    check_soft_lookup(answer)
    check_soft_lookup(answer, seed=None)
    assert "passed" in capsys.readouterr().out


def naive_exp(query, keys, values):
    e = (keys @ query).exp()
    weights = e / e.sum()
    return weights @ values, weights


def lookup_in_place(query, keys, values):
    keys *= 2
    return good_lookup(query, keys / 2, values)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda q, k, v: (torch.softmax(k @ q, 0) @ v, k @ q), "not 1|negative"),
        (lambda q, k, v: (torch.softmax(k @ q, 0).sum() * v.mean(0), torch.softmax(k @ q, 0)), "value is wrong"),
        (lambda q, k, v: (torch.softmax(k @ q, 0) @ v, torch.softmax(k @ q, 0)[:, None]), r"\(\d+, 1\) but expected"),
        (naive_exp, "subtract the largest score"),
        (lambda q, k, v: torch.softmax(k @ q, 0) @ v, "one tensor .* return the pair"),
        (lambda q, k, v: good_lookup(q, k, v)[::-1], r"returned \(weights, value\)"),
        (lambda q, k, v: good_lookup(q / q.shape[0] ** 0.5, k, v), "divides the scores by sqrt"),
        (lambda q, k, v: (torch.softmax(k @ q, 0) @ k, torch.softmax(k @ q, 0)),
         "weighted sum of the keys|returned shape"),
        (lambda q, k, v: attend(q[None], k, v), "attend"),
        (lambda q, k, v: SoftDict(k, v).lookup(q), "SoftDict.lookup"),
        (lambda q, k, v: (lambda w: (w[0] @ v, w[0]))(masked_softmax((k @ q)[None])), "masked_softmax"),
        (lambda q, k, v: tuple(t.double() for t in _reference_lookup(q, k, v)), "_reference_lookup"),
        (lookup_in_place, "in place"),
        (stub, "not implemented yet"),
    ],
    ids=["raw-scores", "unweighted-values", "weights-column", "naive-exp-overflow", "value-only", "swapped-pair",
         "scaled", "weighted-keys", "calls-attend", "calls-softdict", "calls-masked-softmax", "calls-reference",
         "in-place", "stub"],
)
def test_soft_lookup_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_soft_lookup(wrong)


# --- temperature ------------------------------------------------------------------------------------------------


def good_sharp(query, keys, values, temperature):
    weights = torch.softmax(keys @ query / temperature, dim=-1)
    return weights @ values, weights


def good_sharp_float64(query, keys, values, temperature):
    weights = torch.softmax((keys.double() @ query.double()) / float(temperature), dim=-1)
    return weights @ values.double(), weights


@pytest.mark.parametrize("answer", [good_sharp, good_sharp_float64])
def test_sharpness_accepts_right_answers(answer, capsys):
    check_sharpness(answer)
    check_sharpness(answer, seed=None)
    assert "passed" in capsys.readouterr().out


def divide_in_place(query, keys, values, temperature):
    query /= temperature
    return good_sharp(query, keys, values, 1.0)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda q, k, v, t: good_sharp(q, k, v, 1 / t), "multiply the scores by the temperature"),
        (lambda q, k, v, t: good_sharp(q, k, v, 1.0), "ignores its temperature"),
        (lambda q, k, v, t: good_sharp(q, k, v, max(t, 0.01)), "do not clamp"),
        (lambda q, k, v, t: good_sharp(q, k, v, min(t, 100.0)), "do not cap"),
        (lambda q, k, v, t: good_sharp(q, k, v, t + 1e-6), "do not clamp"),
        (lambda q, k, v, t: (lambda w: (w @ v, w))(torch.exp(k @ q / t) / torch.exp(k @ q / t).sum()),
         "subtract the largest score"),
        (lambda q, k, v, t: good_sharp(q, k, v, t)[0], "one tensor"),
        (lambda q, k, v, t: SoftDict(k, v).lookup(q, t), "SoftDict.lookup"),
        (divide_in_place, "in place"),
        (stub, "not implemented yet"),
    ],
    ids=["multiplies", "ignores-temperature", "clamped", "capped", "epsilon", "naive-exp", "value-only",
         "calls-softdict", "in-place", "stub"],
)
def test_sharpness_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_sharpness(wrong)


# --- top-k lookup -----------------------------------------------------------------------------------------------


def good_topk(query, keys, values, k):
    scores = keys @ query
    kept = torch.zeros_like(scores, dtype=torch.bool)
    kept[scores.topk(k).indices] = True
    weights = masked_softmax(scores, kept)
    return weights @ values, weights


def good_topk_threshold_float64(query, keys, values, k):
    scores = keys.double() @ query.double()
    threshold = scores.sort(descending=True).values[k - 1]
    scores = scores.masked_fill(scores < threshold, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ values.double(), weights


@pytest.mark.parametrize("answer", [good_topk, good_topk_threshold_float64])
def test_topk_accepts_right_answers(answer, capsys):
    check_topk_lookup(answer)
    check_topk_lookup(answer, seed=None)
    assert "passed" in capsys.readouterr().out


def softmax_then_zero(query, keys, values, k):
    scores = keys @ query
    weights = torch.softmax(scores, -1) * (scores >= scores.topk(k).values[-1])
    return weights @ values, weights


def sorted_order(query, keys, values, k):
    top = (keys @ query).topk(k)
    weights = torch.zeros(keys.shape[0])
    weights[:k] = torch.softmax(top.values, -1)
    return torch.softmax(top.values, -1) @ values[top.indices], weights


def only_the_kept(query, keys, values, k):
    top = (keys @ query).topk(k)
    weights = torch.softmax(top.values, -1)
    return weights @ values[top.indices], weights


def lowest(query, keys, values, k):
    return good_topk(-query, keys, values, k)


def one_too_many(query, keys, values, k):
    return good_topk(query, keys, values, min(k + 1, keys.shape[0]))


def topk_in_place(query, keys, values, k):
    query *= 1.5
    return good_topk(query / 1.5, keys, values, k)


def naive_topk(query, keys, values, k):
    scores = keys @ query
    e = scores.exp() * (scores >= scores.topk(k).values[-1])
    weights = e / e.sum()
    return weights @ values, weights


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (softmax_then_zero, "softmax over all keys and then zero"),
        (sorted_order, "order of the scores"),
        (only_the_kept, "return one weight per key"),
        (lowest, "lowest-scoring"),
        (one_too_many, "keep exactly k keys"),
        (naive_topk, "subtract the largest score"),
        (lambda q, k, v, n: tuple(t.float() for t in _reference_topk(q, k, v, n)), "_reference_topk"),
        (topk_in_place, "in place"),
        (stub, "not implemented yet"),
    ],
    ids=["softmax-then-zero", "sorted-order", "only-kept-weights", "lowest", "k-plus-one", "naive-exp",
         "calls-reference", "in-place", "stub"],
)
def test_topk_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_topk_lookup(wrong)


# --- the experiment: learning a query at another temperature ---------------------------------------------------


@pytest.fixture(scope="module")
def city_memory():
    gen = torch.Generator().manual_seed(0)
    keys = torch.linalg.qr(torch.randn(16, 4, generator=gen)).Q.T
    return SoftDict(keys, torch.eye(4)[[1, 3, 0, 2]]), torch.eye(4)[0]


def make_learner(memory, target, *, no_grad=False, fixed_temperature=None, return_start=False, mean=False):
    def learn_query(temperature, steps):
        gen = torch.Generator().manual_seed(1)
        start = 0.1 * torch.randn(16, generator=gen)
        query = start.clone().requires_grad_()
        optimizer = torch.optim.Adam([query], lr=0.05)
        losses = []
        for _ in range(steps):
            value, _ = memory.lookup(query, temperature=fixed_temperature or temperature)
            loss = (value - target).pow(2).mean() if mean else (value - target).pow(2).sum()
            if no_grad:
                loss = loss.detach().requires_grad_()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return (start if return_start else query.detach()), losses

    return learn_query


def test_query_training_accepts_the_experiment(city_memory, capsys):
    memory, target = city_memory
    check_query_training(make_learner(memory, target), memory, target)
    check_query_training(make_learner(memory, target), memory, target, seed=None)
    assert "passed" in capsys.readouterr().out


def test_query_training_accepts_losses_as_a_tensor(city_memory):
    memory, target = city_memory
    learner = make_learner(memory, target)
    check_query_training(lambda t, s: (learner(t, s)[0].double(), torch.tensor(learner(t, s)[1])), memory, target)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"no_grad": True}, "no gradient"),
        ({"fixed_temperature": 0.5}, "pass its temperature"),
        ({"return_start": True}, "return the trained query"),
        ({"mean": True}, "summed squared error"),
    ],
    ids=["no-gradient", "ignores-temperature", "returns-the-start", "mean-loss"],
)
def test_query_training_rejects_typical_mistakes(city_memory, options, message):
    memory, target = city_memory
    with pytest.raises(ExerciseError, match=message):
        check_query_training(make_learner(memory, target, **options), memory, target)


def test_query_training_rejects_wrong_outputs(city_memory):
    memory, target = city_memory
    learner = make_learner(memory, target)
    with pytest.raises(ExerciseError, match="one loss per step"):
        check_query_training(lambda t, s: (learner(t, s)[0], learner(t, s)[1][1:]), memory, target)
    with pytest.raises(ExerciseError, match="pair"):
        check_query_training(lambda t, s: learner(t, s)[0], memory, target)
    with pytest.raises(ExerciseError, match="not implemented yet"):
        check_query_training(stub, memory, target)


def noisy_lookup(query, keys, values):
    import sys
    import warnings

    print("debugging:", query.shape)
    print("to stderr", file=sys.stderr)
    warnings.warn("a warning of the student's own", UserWarning, stacklevel=1)
    torch.tensor([torch.tensor(1.0)])  # a torch UserWarning, as students' code often has
    return good_lookup(query, keys, values)


def test_a_right_answer_that_warns_and_prints_passes_with_nothing_on_stderr(capsys):
    check_soft_lookup(noisy_lookup)
    out, err = capsys.readouterr()
    assert err == ""
    assert "passed" in out and "to stderr" in out and "debugging" in out
    assert out.count("Note (costs no points): your code warned: UserWarning: a warning of the student's own") == 1
