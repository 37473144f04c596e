import pytest
import torch

from attnlab.exercises import ExerciseError, check_sharpness, check_soft_lookup


def good_lookup(query, keys, values):
    weights = torch.softmax(keys @ query, dim=-1)
    return weights @ values, weights


def test_soft_lookup_accepts_the_reference(capsys):
    check_soft_lookup(good_lookup)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda q, k, v: (torch.softmax(k @ q, 0) @ v, k @ q), "not 1|negative"),
        (lambda q, k, v: (torch.softmax(k @ q, 0).sum() * v.mean(0), torch.softmax(k @ q, 0)), "value is wrong"),
        (lambda q, k, v: (torch.softmax(k @ q, 0) @ v, torch.softmax(k @ q, 0)[:, None]), r"\(\d+, 1\) but expected"),
        (lambda q, k, v: ((k @ q).exp() / (k @ q).exp().sum() @ v, (k @ q).exp() / (k @ q).exp().sum()), "NaN"),
        (lambda q, k, v: torch.softmax(k @ q, 0), "must return a pair"),
    ],
    ids=["raw-scores", "unweighted-values", "weights-column", "naive-exp-overflow", "not-a-pair"],
)
def test_soft_lookup_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_soft_lookup(wrong)


def test_stub_gets_the_not_implemented_message():
    def stub(query, keys, values):
        raise NotImplementedError()

    with pytest.raises(ExerciseError, match="not implemented yet"):
        check_soft_lookup(stub)


def good_sharp(query, keys, values, temperature):
    weights = torch.softmax(keys @ query / temperature, dim=-1)
    return weights @ values, weights


def test_sharpness_accepts_the_reference():
    check_sharpness(good_sharp)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda q, k, v, t: good_sharp(q, k, v, 1 / t), "multiply the scores by the temperature"),
        (lambda q, k, v, t: good_sharp(q, k, v, 1.0), "wrong at temperature 0.1"),
        (lambda q, k, v, t: (lambda w: (w @ v, w))(torch.exp(k @ q / t) / torch.exp(k @ q / t).sum()), "NaN"),
    ],
    ids=["multiplies", "ignores-temperature", "naive-exp"],
)
def test_sharpness_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_sharpness(wrong)
