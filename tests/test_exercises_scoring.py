import pytest
import torch

from attnlab.exercises import ExerciseError, check_additive_score, check_padding_mask, check_scaled_dot_score


def good_scaled_dot(query, keys):
    return query @ keys.transpose(-2, -1) / query.shape[-1] ** 0.5


def test_scaled_dot_accepts_the_reference(capsys):
    check_scaled_dot_score(good_scaled_dot)
    assert "passed all 4 checks" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda q, k: q @ k.transpose(-2, -1), "plain dot product .* divide it by sqrt"),
        (lambda q, k: q @ k.transpose(-2, -1) / q.shape[-1], "divides by d .* divide by sqrt"),
        (lambda q, k: k @ q.transpose(-2, -1) / q.shape[-1] ** 0.5, r"that is \(\.\.\., Tk, Tq\)"),
        (lambda q, k: q @ k.transpose(-2, -1) / k.shape[-2] ** 0.5, "is wrong for query"),
        (lambda q, k: q @ k.T / q.shape[-1] ** 0.5, r"raised RuntimeError"),  # .T breaks batched keys
    ],
    ids=["unscaled", "divides-by-d", "transposed", "scaled-by-number-of-keys", "T-on-batched-keys"],
)
@pytest.mark.filterwarnings("ignore:The use of `x.T`")
def test_scaled_dot_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_scaled_dot_score(wrong)


def good_additive(query, keys, W_q, W_k, v):
    return torch.tanh((query @ W_q.T).unsqueeze(-2) + (keys @ W_k.T).unsqueeze(-3)) @ v


def test_additive_accepts_the_reference(capsys):
    check_additive_score(good_additive)
    assert "passed all 3 checks" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda q, k, Wq, Wk, v: ((q @ Wq.T).unsqueeze(-2) + (k @ Wk.T).unsqueeze(-3)) @ v, "has no tanh"),
        (lambda q, k, Wq, Wk, v: torch.tanh(((q @ Wq.T).unsqueeze(-2) + (k @ Wk.T).unsqueeze(-3)) @ v),
         "applies tanh after the product with v"),
        (lambda q, k, Wq, Wk, v: torch.tanh(q @ Wq.T + k @ Wk.T) @ v, "raised RuntimeError|returned shape"),
        (lambda q, k, Wq, Wk, v: good_additive(q, k, Wq, Wk, v.abs()), "is wrong for query"),
    ],
    ids=["no-tanh", "tanh-after-v", "pairs-only-matching-positions", "wrong-v"],
)
def test_additive_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_additive_score(wrong)


def good_padding_mask(lengths, max_len):
    return torch.arange(max_len) < lengths[:, None]


def test_padding_mask_accepts_the_reference(capsys):
    check_padding_mask(good_padding_mask)
    assert "passed all 4 checks" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda lengths, max_len: torch.arange(max_len) <= lengths[:, None], "one position too many"),
        (lambda lengths, max_len: torch.arange(max_len) >= lengths[:, None], "is inverted"),
        (lambda lengths, max_len: (torch.arange(max_len) < lengths[:, None]).float(), "return a boolean tensor"),
        (lambda lengths, max_len: torch.arange(int(lengths.max())) < lengths[:, None], "pad to max_len"),
        (lambda lengths, max_len: torch.arange(max_len)[None, :] < lengths.flip(0)[:, None], "is wrong for lengths"),
    ],
    ids=["off-by-one", "inverted", "float", "ignores-max-len", "rows-swapped"],
)
def test_padding_mask_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_padding_mask(wrong)


def test_stubs_get_the_not_implemented_message():
    def stub(*args):
        raise NotImplementedError()

    for check in (check_scaled_dot_score, check_additive_score, check_padding_mask):
        with pytest.raises(ExerciseError, match="not implemented yet"):
            check(stub)
