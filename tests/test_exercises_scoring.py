import math

import pytest
import torch
import torch.nn.functional as F

from attnlab.attention import (
    AdditiveScore,
    attend,
    dot_score,
    masked_softmax,
    padding_mask,
    scaled_dot_score,
)
from attnlab.exercises import (
    ExerciseError,
    check_additive_score,
    check_hidden_units_experiment,
    check_masked_softmax,
    check_padding_mask,
    check_scaled_dot_score,
    check_shepard_score,
)
from attnlab.exercises.scoring import _reference_additive
from attnlab.train import train


def stub(*args):
    raise NotImplementedError()


# --- scaled dot product -----------------------------------------------------------------------------------------


def good_scaled_dot(query, keys):
    return query @ keys.transpose(-2, -1) / query.shape[-1] ** 0.5


def good_scaled_dot_float64(query, keys):
    return query.double() @ keys.double().transpose(-2, -1) / math.sqrt(query.shape[-1])


@pytest.mark.parametrize("answer", [good_scaled_dot, good_scaled_dot_float64])
def test_scaled_dot_accepts_right_answers(answer, capsys):
    check_scaled_dot_score(answer)
    check_scaled_dot_score(answer, seed=None)
    assert "passed all 5 checks" in capsys.readouterr().out


def scale_in_place(query, keys):
    query /= query.shape[-1] ** 0.5
    return query @ keys.transpose(-2, -1)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda q, k: q @ k.transpose(-2, -1), "plain dot product .* divide it by sqrt"),
        (lambda q, k: q @ k.transpose(-2, -1) / q.shape[-1], "divides by d .* divide by sqrt"),
        (lambda q, k: k @ q.transpose(-2, -1) / q.shape[-1] ** 0.5, r"that is \(\.\.\., Tk, Tq\)"),
        (lambda q, k: q @ k.transpose(-2, -1) / k.shape[-2] ** 0.5, "number of keys"),
        (lambda q, k: q @ k.T / q.shape[-1] ** 0.5, r"raised RuntimeError"),  # .T breaks batched keys
        (lambda q, k: scaled_dot_score(q, k), "scaled_dot_score"),
        (lambda q, k: dot_score(q, k) / q.shape[-1] ** 0.5, "dot_score"),
        (scale_in_place, "in place"),
        (stub, "not implemented yet"),
    ],
    ids=["unscaled", "divides-by-d", "transposed", "scaled-by-number-of-keys", "T-on-batched-keys",
         "calls-library", "calls-dot-score", "in-place", "stub"],
)
@pytest.mark.filterwarnings("ignore:The use of `x.T`")
def test_scaled_dot_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_scaled_dot_score(wrong)


def test_scaled_dot_names_a_transposed_square_answer():
    def transposed_when_square(q, k):
        out = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
        return out.transpose(-2, -1) if q.shape[-2] == k.shape[-2] else out

    with pytest.raises(ExerciseError, match="returns the scores transposed"):
        check_scaled_dot_score(transposed_when_square)


# --- additive score ---------------------------------------------------------------------------------------------


def good_additive(query, keys, W_q, W_k, v):
    return torch.tanh((query @ W_q.T).unsqueeze(-2) + (keys @ W_k.T).unsqueeze(-3)) @ v


def good_additive_float64(query, keys, W_q, W_k, v):
    return good_additive(query.double(), keys.double(), W_q.double(), W_k.double(), v.double())


@pytest.mark.parametrize("answer", [good_additive, good_additive_float64])
def test_additive_accepts_right_answers(answer, capsys):
    check_additive_score(answer)
    check_additive_score(answer, seed=None)
    assert "passed all 4 checks" in capsys.readouterr().out


def additive_by_library(query, keys, W_q, W_k, v):
    module = AdditiveScore(W_q.shape[1], W_k.shape[1], W_q.shape[0])
    with torch.no_grad():
        module.query_proj.weight.copy_(W_q)
        module.key_proj.weight.copy_(W_k)
        module.key_proj.bias.zero_()
        module.v.copy_(v)
    return module(query, keys)


def additive_in_place(query, keys, W_q, W_k, v):
    W_q.mul_(2.0)
    return good_additive(query, keys, W_q / 2, W_k, v)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda q, k, Wq, Wk, v: ((q @ Wq.T).unsqueeze(-2) + (k @ Wk.T).unsqueeze(-3)) @ v, "has no tanh"),
        (lambda q, k, Wq, Wk, v: torch.tanh(((q @ Wq.T).unsqueeze(-2) + (k @ Wk.T).unsqueeze(-3)) @ v),
         "applies tanh after the product with v"),
        (lambda q, k, Wq, Wk, v: torch.tanh(q @ Wq.T + k @ Wk.T) @ v, "raised RuntimeError|returned shape"),
        (lambda q, k, Wq, Wk, v: good_additive(q, k, Wq, Wk, v.abs()), "is wrong for query"),
        (lambda q, k, Wq, Wk, v: torch.tanh((q @ Wq.T).unsqueeze(-3) + (k @ Wk.T).unsqueeze(-2)) @ v,
         "transposed|returned shape"),
        (lambda q, k, Wq, Wk, v: good_additive(q, k, Wk, Wq, v), "swaps W_q and W_k|raised RuntimeError"),
        (additive_by_library, "AdditiveScore"),
        (lambda q, k, Wq, Wk, v: _reference_additive(q, k, Wq, Wk, v), "_reference_additive"),
        (additive_in_place, "in place"),
        (stub, "not implemented yet"),
    ],
    ids=["no-tanh", "tanh-after-v", "pairs-only-matching-positions", "wrong-v", "transposed", "swapped-weights",
         "calls-library", "calls-reference", "in-place", "stub"],
)
def test_additive_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_additive_score(wrong)


# --- padding mask -----------------------------------------------------------------------------------------------


def good_padding_mask(lengths, max_len):
    return torch.arange(max_len) < lengths[:, None]


def good_padding_mask_loop(lengths, max_len):
    return torch.tensor([[j < int(n) for j in range(max_len)] for n in lengths], dtype=torch.bool)


@pytest.mark.parametrize("answer", [good_padding_mask, good_padding_mask_loop])
def test_padding_mask_accepts_right_answers(answer, capsys):
    check_padding_mask(answer)
    check_padding_mask(answer, seed=None)
    assert "passed all 5 checks" in capsys.readouterr().out


def mask_in_place(lengths, max_len):
    lengths.clamp_(max=max_len - 1)
    return torch.arange(max_len) < lengths[:, None]


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda lengths, max_len: torch.arange(max_len) <= lengths[:, None], "one position too many"),
        (lambda lengths, max_len: torch.arange(max_len) < lengths[:, None] - 1, "one position too few"),
        (lambda lengths, max_len: torch.arange(max_len) >= lengths[:, None], "is inverted"),
        (lambda lengths, max_len: (torch.arange(max_len) < lengths[:, None]).float(), "return a boolean tensor"),
        (lambda lengths, max_len: torch.arange(int(lengths.max())) < lengths[:, None], "pad to max_len"),
        (lambda lengths, max_len: torch.arange(max_len)[None, :] < lengths.flip(0)[:, None], "another sequence"),
        (lambda lengths, max_len: padding_mask(lengths, max_len), "padding_mask"),
        (mask_in_place, "in place"),
        (stub, "not implemented yet"),
    ],
    ids=["off-by-one", "one-too-few", "inverted", "float", "ignores-max-len", "rows-swapped", "calls-library",
         "in-place", "stub"],
)
def test_padding_mask_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_padding_mask(wrong)


def test_padding_mask_messages_do_not_show_the_expected_mask():
    with pytest.raises(ExerciseError) as error:
        check_padding_mask(lambda lengths, max_len: torch.ones(len(lengths), max_len, dtype=torch.bool) if
                           len(lengths) == 5 else torch.arange(max_len) < lengths[:, None])
    assert "tensor" not in str(error.value) and "[[" not in str(error.value) and "rows [" in str(error.value)


# --- debugging the masked softmax -------------------------------------------------------------------------------


def good_masked_softmax(scores, mask):
    filled = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(filled, dim=-1).masked_fill(~mask, 0.0)


def good_masked_softmax_float64(scores, mask):
    real = scores.double().masked_fill(~mask, -math.inf)
    top = real.amax(-1, keepdim=True).nan_to_num(nan=0.0, posinf=0.0, neginf=0.0)
    e = (real - top.detach()).exp()
    total = e.sum(-1, keepdim=True)
    return e / torch.where(total > 0, total, torch.ones_like(total))


@pytest.mark.parametrize("answer", [good_masked_softmax, good_masked_softmax_float64])
def test_masked_softmax_accepts_right_answers(answer, capsys):
    check_masked_softmax(answer)
    check_masked_softmax(answer, seed=None)
    assert "passed" in capsys.readouterr().out


def renormalise_after(scores, mask):
    weights = torch.softmax(scores, dim=-1) * mask
    return weights / weights.sum(-1, keepdim=True)


def renormalise_after_guarded(scores, mask):
    weights = torch.softmax(scores, dim=-1) * mask
    return weights / weights.sum(-1, keepdim=True).clamp_min(1e-30)


def minus_inf(scores, mask):
    return torch.softmax(scores.masked_fill(~mask, -math.inf), dim=-1)


def small_constant(scores, mask):
    return torch.softmax(scores.masked_fill(~mask, -1e4), dim=-1).masked_fill(~mask, 0.0)


def uniform_on_empty_rows(scores, mask):
    return torch.softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), dim=-1)


def softmax_then_zero(scores, mask):
    return torch.softmax(scores, dim=-1) * mask


def detached(scores, mask):
    with torch.no_grad():
        return good_masked_softmax(scores, mask)


def fill_in_place(scores, mask):
    scores.masked_fill_(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (renormalise_after, "returns NaN for a row whose every key is masked"),
        (renormalise_after_guarded, "masked key takes"),
        (minus_inf, "returns NaN for a row whose every key is masked"),
        (small_constant, "below every real score"),
        (uniform_on_empty_rows, "uniform weights"),
        (softmax_then_zero, "sum to .* not 1"),
        (lambda s, m: good_masked_softmax(s, ~m), "gives weight to the masked keys"),
        (detached, "does not require a gradient"),
        (masked_softmax, "masked_softmax"),
        (fill_in_place, "in place|in-place"),
        (stub, "not implemented yet"),
    ],
    ids=["renormalise-after", "renormalise-after-guarded", "minus-inf", "small-constant",
         "uniform-empty-rows", "softmax-then-zero", "inverted-mask", "no-grad", "calls-library", "in-place", "stub"],
)
def test_masked_softmax_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_masked_softmax(wrong)


# --- the experiment: hidden units of the additive score ---------------------------------------------------------

D, N_KEYS = 4, 6


def batch(n, gen):
    keys = F.normalize(torch.randn(n, N_KEYS, D, generator=gen), dim=-1)
    target = torch.randint(N_KEYS, (n,), generator=gen)
    query = keys[torch.arange(n), target] + 0.1 * torch.randn(n, D, generator=gen)
    return query[:, None], keys, target


TEST = batch(500, torch.Generator().manual_seed(1))


def loss_fn(model, data):
    query, keys, target = data
    _, weights = attend(query, keys, keys, score=model)
    return F.nll_loss(weights[:, 0].clamp_min(1e-30).log(), target)


def accuracy(model, data):
    query, keys, target = data
    with torch.no_grad():
        _, weights = attend(query, keys, keys, score=model)
    return (weights[:, 0].argmax(-1) == target).float().mean().item()


def make_experiment(*, fixed_hidden=None, fixed_steps=None, report=accuracy, percent=False):
    def experiment(d_hidden, steps):
        torch.manual_seed(0)
        model = AdditiveScore(D, D, fixed_hidden or d_hidden)
        gen = torch.Generator().manual_seed(2)
        train(model, lambda step: batch(64, gen), loss_fn, steps=fixed_steps or steps, batch_size=64, lr=1e-2,
              desc="test")
        value = report(model, TEST)
        return model, 100 * value if percent else value

    return experiment


def test_hidden_units_experiment_accepts_the_experiment(capsys):
    check_hidden_units_experiment(make_experiment(), TEST)
    check_hidden_units_experiment(make_experiment(report=lambda m, d: torch.tensor(accuracy(m, d))), TEST, seed=None)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"fixed_hidden": 64}, "hidden size you are given"),
        ({"fixed_steps": 1}, "same model after 1 and after 30 steps"),
        ({"report": lambda m, d: accuracy(m, batch(500, torch.Generator().manual_seed(9)))}, "measure the model"),
        ({"percent": True}, "percentage"),
    ],
    ids=["ignores-hidden-size", "ignores-steps", "other-data", "percent"],
)
def test_hidden_units_experiment_rejects_typical_mistakes(options, message):
    with pytest.raises(ExerciseError, match=message):
        check_hidden_units_experiment(make_experiment(**options), TEST)


def test_hidden_units_experiment_rejects_wrong_outputs():
    with pytest.raises(ExerciseError, match=r"pair \(model, accuracy\)"):
        check_hidden_units_experiment(lambda h, s: make_experiment()(h, s)[0], TEST)
    with pytest.raises(ExerciseError, match="not implemented yet"):
        check_hidden_units_experiment(stub, TEST)


# --- Shepard's score --------------------------------------------------------------------------------------------


def good_shepard(query, keys, p):
    return -p * torch.cdist(query, keys).clamp_min(1e-12).log()


def good_shepard_float64_by_hand(query, keys, p):
    r = (query.double().unsqueeze(-2) - keys.double().unsqueeze(-3)).pow(2).sum(-1).sqrt()
    return -p * torch.log(r + 1e-30) + 3.0  # a constant per query changes no weight


def good_shepard_from_the_inverse_distance(query, keys, p):
    from attnlab.attention import inverse_distance_score

    return p * inverse_distance_score(query, keys).log()


@pytest.mark.parametrize("answer", [good_shepard, good_shepard_float64_by_hand, good_shepard_from_the_inverse_distance])
def test_shepard_accepts_right_answers_in_any_form(answer, capsys):
    check_shepard_score(answer)
    check_shepard_score(answer, seed=None)
    assert "passed all 5 checks" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda q, k, p: -torch.cdist(q, k).clamp_min(1e-12).log(), "ignores p"),
        (lambda q, k, p: p * torch.cdist(q, k).clamp_min(1e-12).log(), "farthest key the most weight"),
        (lambda q, k, p: torch.cdist(q, k).clamp_min(1e-12).pow(-p), r"returns r\^-p itself"),
        (lambda q, k, p: -p * torch.cdist(q, k).pow(2).clamp_min(1e-12).log(), "squared distance"),
        (lambda q, k, p: -p * torch.cdist(q, k).log(), "exactly on key 2 .* clamp the distance"),
        (lambda q, k, p: -p * torch.cdist(k, q).clamp_min(1e-12).log(), "shape"),
        (lambda q, k, p: torch.softmax(-p * torch.cdist(q, k).clamp_min(1e-12).log(), -1), "returns Shepard's weights themselves"),
        (stub, "not implemented yet"),
    ],
    ids=["no-power", "sign", "power-not-log", "squared", "no-clamp", "transposed", "weights-not-scores", "stub"],
)
def test_shepard_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_shepard_score(wrong)
