import pytest
import torch

from attnlab.exercises import ExerciseError, check_multi_head_attention, check_parameterized_attention
from attnlab.exercises.selfattn import _reference_multi_head


def good_parameterized(y_d, Y_e, W_q, W_k, W_v):
    query, keys, values = y_d @ W_q.T, Y_e @ W_k.T, Y_e @ W_v.T  # (B, d), (B, S, d), (B, S, d_v)
    a = torch.softmax((keys @ query[..., None])[..., 0], dim=-1)
    return (a[:, None] @ values)[:, 0], a


def test_parameterized_accepts_the_reference(capsys):
    check_parameterized_attention(good_parameterized)
    assert "passed all 3 checks" in capsys.readouterr().out


def no_query_projection(y_d, Y_e, W_q, W_k, W_v):
    keys, values = Y_e @ W_k.T, Y_e @ W_v.T
    a = torch.softmax((keys @ y_d[..., None])[..., 0], dim=-1)
    return (a[:, None] @ values)[:, 0], a


def keys_as_values(y_d, Y_e, W_q, W_k, W_v):
    _, a = good_parameterized(y_d, Y_e, W_q, W_k, W_v)
    return (a[:, None] @ (Y_e @ W_k.T))[:, 0], a


def states_as_values(y_d, Y_e, W_q, W_k, W_v):
    _, a = good_parameterized(y_d, Y_e, W_q, W_k, W_v)
    return (a[:, None] @ Y_e)[:, 0], a


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda y, Y, Wq, Wk, Wv: (good_parameterized(y, Y, Wq, Wk, Wv)[0],
                                   torch.exp((Y @ Wk.T @ (y @ Wq.T)[..., None])[..., 0])), "do not sum to 1"),
        (no_query_projection, "ignore W_q"),
        (lambda y, Y, Wq, Wk, Wv: good_parameterized(y, Y, Wq.T, Wk, Wv), "y_d W_q instead"),
        (lambda y, Y, Wq, Wk, Wv: good_parameterized(y / Wq.shape[0] ** 0.5, Y, Wq, Wk, Wv), "divided by sqrt"),
        (keys_as_values, "averages the keys"),
        (states_as_values, "encoder states themselves"),
        (lambda y, Y, Wq, Wk, Wv: good_parameterized(y, Y, Wq, Wk, Wv)[0], "must return a pair"),
    ],
    ids=["unnormalised", "no-query-projection", "transposed-query-weight", "scaled", "keys-as-values",
         "states-as-values", "no-pair"],
)
def test_parameterized_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_parameterized_attention(wrong)


def good_multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, n_heads):
    batch, d = x_q.shape[0], x_q.shape[-1]

    def split(x):  # (B, T, d) -> (B, h, T, d_head)
        return x.reshape(batch, -1, n_heads, d // n_heads).transpose(1, 2)

    q, k, v = split(x_q @ W_q.T), split(x_kv @ W_k.T), split(x_kv @ W_v.T)
    weights = torch.softmax(q @ k.transpose(-2, -1) / (d // n_heads) ** 0.5, dim=-1)
    return (weights @ v).transpose(1, 2).reshape(batch, -1, d) @ W_o.T


@pytest.mark.parametrize("answer", [good_multi_head, _reference_multi_head], ids=["by-hand", "library"])
def test_multi_head_accepts_correct_answers(answer, capsys):
    check_multi_head_attention(answer)
    assert "passed all 4 checks" in capsys.readouterr().out


def view_split(x_q, x_kv, W_q, W_k, W_v, W_o, n_heads):
    batch, d = x_q.shape[0], x_q.shape[-1]

    def split(x):  # wrong: positions and features get mixed
        return x.reshape(batch, n_heads, -1, d // n_heads)

    q, k, v = split(x_q @ W_q.T), split(x_kv @ W_k.T), split(x_kv @ W_v.T)
    weights = torch.softmax(q @ k.transpose(-2, -1) / (d // n_heads) ** 0.5, dim=-1)
    return (weights @ v).transpose(1, 2).reshape(batch, -1, d) @ W_o.T


def scaled_by(factor):
    def answer(x_q, x_kv, W_q, W_k, W_v, W_o, n_heads):
        d = x_q.shape[-1]
        # rescaling the query changes the scale of the scores: sqrt(d_head) / factor in place of sqrt(d_head)
        return good_multi_head(x_q * (d // n_heads) ** 0.5 / factor(d, n_heads), x_kv, W_q, W_k, W_v, W_o, n_heads)
    return answer


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (view_split, "splits the heads wrongly"),
        (scaled_by(lambda d, h: 1.0), "does not scale the scores"),
        (scaled_by(lambda d, h: d**0.5), "divides by sqrt\\(d\\)"),
        (lambda x_q, x_kv, W_q, W_k, W_v, W_o, h: good_multi_head(x_q, x_kv, W_q, W_k, W_v, torch.eye(W_o.shape[0]), h),
         "leaves out the output projection"),
        (lambda x_q, x_kv, W_q, W_k, W_v, W_o, h: good_multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, 1),
         "is wrong for x_q"),
        (lambda x_q, x_kv, W_q, W_k, W_v, W_o, h: good_multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, h)[:, :1],
         "returned shape"),
    ],
    ids=["view-split", "unscaled", "scaled-by-d-model", "no-output-projection", "one-head-only", "wrong-shape"],
)
def test_multi_head_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_multi_head_attention(wrong)
