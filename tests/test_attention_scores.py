"""The scoring functions, masks and the masked softmax of ``attnlab.attention``, against independent references."""

import math
from functools import partial

import pytest
import torch
import torch.nn.functional as F
from torch.func import functional_call

from attnlab.attention import (
    AdditiveScore,
    GeneralScore,
    LocationScore,
    attend,
    causal_mask,
    cosine_score,
    dot_score,
    inverse_distance_score,
    masked_softmax,
    padding_mask,
    scaled_cosine_score,
    scaled_dot_score,
)
from tests.tensors import randn


def random_mask(*shape, seed=0):
    """A random boolean mask with at least one True per row (the first key is always allowed)."""
    mask = torch.rand(*shape, generator=torch.Generator().manual_seed(seed)) < 0.6
    mask[..., 0] = True
    return mask


# --- scaled dot product: against PyTorch's fused attention ------------------------------------------------------


@pytest.mark.parametrize("batch", [(), (3,), (2, 3)])
def test_attend_scaled_dot_equals_sdpa_without_mask(batch):
    q, k, v = randn(*batch, 5, 16, seed=1), randn(*batch, 7, 16, seed=2), randn(*batch, 7, 3, seed=3)
    context, weights = attend(q, k, v, score=scaled_dot_score)
    torch.testing.assert_close(context, F.scaled_dot_product_attention(q, k, v), atol=1e-6, rtol=0)
    torch.testing.assert_close(weights, torch.softmax(q @ k.transpose(-2, -1) / 4.0, dim=-1), atol=1e-6, rtol=0)


def test_attend_scaled_dot_equals_sdpa_with_mask():
    q, k, v = randn(4, 6, 8, seed=4), randn(4, 9, 8, seed=5), randn(4, 9, 5, seed=6)
    mask = random_mask(4, 6, 9, seed=7)
    context, weights = attend(q, k, v, score=scaled_dot_score, mask=mask)
    torch.testing.assert_close(context, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=1e-6, rtol=0)
    assert (weights[~mask] == 0).all()


def test_attend_with_padding_mask_equals_sdpa():
    lengths = torch.tensor([9, 1, 4, 6])
    q, k, v = randn(4, 3, 8, seed=8), randn(4, 9, 8, seed=9), randn(4, 9, 2, seed=10)
    mask = padding_mask(lengths, 9)[:, None, :]  # (batch, 1, Tk): the same keys are hidden from every query
    context, weights = attend(q, k, v, score=scaled_dot_score, mask=mask)
    torch.testing.assert_close(context, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=1e-6, rtol=0)
    for b, n in enumerate(lengths.tolist()):
        assert (weights[b, :, n:] == 0).all()
        torch.testing.assert_close(context[b], attend(q[b], k[b, :n], v[b, :n], score=scaled_dot_score)[0])


def test_scaled_dot_score_hand_computed():
    query = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    keys = torch.tensor([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    torch.testing.assert_close(scaled_dot_score(query, keys), torch.tensor([[0.5, 5.0]]))  # (1, 10) / sqrt(4)


# --- cosine -----------------------------------------------------------------------------------------------------


def test_cosine_equals_torch_cosine_similarity_pair_by_pair():
    q, k = randn(2, 3, 5, seed=11), randn(2, 4, 5, seed=12)
    scores = cosine_score(q, k)
    assert scores.shape == (2, 3, 4)
    for b in range(2):
        for i in range(3):
            for j in range(4):
                expected = F.cosine_similarity(q[b, i], k[b, j], dim=0)
                torch.testing.assert_close(scores[b, i, j], expected, atol=1e-6, rtol=0)


def test_cosine_ignores_length_and_lies_in_minus_one_one():
    q, k = randn(3, 6, seed=13), randn(5, 6, seed=14)
    stretch = torch.tensor([0.1, 1.0, 7.0, 100.0, 3.0])[:, None]
    torch.testing.assert_close(cosine_score(q, k * stretch), cosine_score(q, k))
    torch.testing.assert_close(cosine_score(k, k).diagonal(), torch.ones(5))
    torch.testing.assert_close(cosine_score(k, -k).diagonal(), -torch.ones(5))
    assert cosine_score(q, k).abs().max() <= 1 + 1e-6


def test_cosine_of_zero_vectors_is_zero_with_finite_gradient():
    q = torch.zeros(2, 4, dtype=torch.float64)
    q[1] = torch.tensor([1.0, -2.0, 0.5, 3.0])
    k = torch.zeros(3, 4, dtype=torch.float64)
    k[1:] = randn(2, 4, seed=15, dtype=torch.float64)
    q.requires_grad_(True)
    k.requires_grad_(True)
    scores = cosine_score(q, k)
    assert torch.isfinite(scores).all()
    assert (scores[0] == 0).all() and (scores[:, 0] == 0).all()  # a zero vector has no direction: score 0
    scores.sum().backward()
    assert torch.isfinite(q.grad).all() and torch.isfinite(k.grad).all()
    weights = attend(q.detach()[None], k.detach()[None], torch.eye(3, dtype=torch.float64)[None],
                     score=cosine_score)[1]
    torch.testing.assert_close(weights[0, 0], torch.full((3,), 1 / 3, dtype=torch.float64))  # zero query: uniform


def test_scaled_cosine_is_beta_times_cosine():
    q, k = randn(2, 3, 4, seed=16), randn(2, 5, 4, seed=17)
    torch.testing.assert_close(scaled_cosine_score(q, k, 7.5), 7.5 * cosine_score(q, k))
    beta = torch.tensor([[1.0, 2.0, 30.0], [0.0, 5.0, 0.5]])  # one strength per query
    torch.testing.assert_close(scaled_cosine_score(q, k, beta), beta[..., None] * cosine_score(q, k))
    message = r"beta must be a number or have shape \(\.\.\., Tq\) = \(\.\.\., 3\), got \(2, 4\)"
    with pytest.raises(ValueError, match=message):
        scaled_cosine_score(q, k, torch.ones(2, 4))


# --- general ----------------------------------------------------------------------------------------------------


def test_general_score_equals_query_W_keys_transposed():
    score = GeneralScore(d_query=3, d_key=5)
    q, k = randn(2, 4, 3, seed=18), randn(2, 6, 5, seed=19)
    expected = q @ score.weight.detach() @ k.transpose(-2, -1)
    torch.testing.assert_close(score(q, k), expected)
    for b in range(2):  # and pair by pair, q_i^T W k_j
        for i in range(4):
            for j in range(6):
                torch.testing.assert_close(score(q, k)[b, i, j], q[b, i] @ score.weight @ k[b, j])


def test_general_score_with_identity_is_the_dot_product():
    score = GeneralScore(4, 4)
    with torch.no_grad():
        score.weight.copy_(torch.eye(4))
    q, k = randn(3, 2, 4, seed=20), randn(3, 5, 4, seed=21)
    torch.testing.assert_close(score(q, k), dot_score(q, k))


def test_general_score_broadcasts_batch_dimensions():
    score = GeneralScore(4, 2)
    q, k = randn(3, 4, seed=24), randn(5, 6, 2, seed=25)  # one set of queries for a batch of key sets
    out = score(q, k)
    assert out.shape == (5, 3, 6)
    torch.testing.assert_close(out[2], score(q, k[2]))


# --- additive ---------------------------------------------------------------------------------------------------


def additive_double_loop(score: AdditiveScore, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """v^T tanh(W [q_i; k_j] + b) for every pair, with the concatenated W = [W_q  W_k] and explicit loops."""
    W = torch.cat([score.query_proj.weight, score.key_proj.weight], dim=1)  # (h, d_q + d_k)
    out = torch.empty(q.shape[0], k.shape[0])
    for i in range(q.shape[0]):
        for j in range(k.shape[0]):
            out[i, j] = score.v @ torch.tanh(W @ torch.cat([q[i], k[j]]) + score.key_proj.bias)
    return out


def test_additive_score_equals_brute_force_double_loop():
    torch.manual_seed(0)
    score = AdditiveScore(d_query=3, d_key=5, d_hidden=7)
    q, k = randn(2, 4, 3, seed=26), randn(2, 6, 5, seed=27)
    out = score(q, k)
    assert out.shape == (2, 4, 6)
    with torch.no_grad():
        for b in range(2):
            torch.testing.assert_close(out[b].detach(), additive_double_loop(score, q[b], k[b]))


def test_additive_score_with_precomputed_key_projection():
    score = AdditiveScore(3, 5, 7)
    q, k = randn(2, 4, 3, seed=28), randn(2, 6, 5, seed=29)
    projected = score.project_keys(k)
    assert projected.shape == (2, 6, 7)
    torch.testing.assert_close(score(q, k, projected_keys=projected), score(q, k))
    # one decoder step at a time with the projection computed once gives the same as all queries at once
    steps = torch.cat([score(q[:, t : t + 1], k, projected_keys=projected) for t in range(4)], dim=1)
    torch.testing.assert_close(steps, score(q, k))
    with pytest.raises(ValueError, match=r"projected_keys must have shape \(\.\.\., Tk, d_hidden\) = \(\.\.\., 6, 7\)"):
        score(q, k, projected_keys=projected[:, :5])


# --- location ---------------------------------------------------------------------------------------------------


def test_location_score_depends_on_the_query_alone():
    score = LocationScore(d_query=3, n_keys=8)
    q = randn(2, 4, 3, seed=30)
    k1, k2 = randn(2, 8, 5, seed=31), randn(2, 8, 5, seed=32)
    expected = q @ score.proj.weight.detach().T + score.proj.bias.detach()
    torch.testing.assert_close(score(q, k1), expected)
    torch.testing.assert_close(score(q, k2), expected)  # other key contents, same scores
    torch.testing.assert_close(score(q, k1[:, :5]), expected[..., :5])  # fewer keys: the first Tk positions
    assert score(q[0], k1).shape == (2, 4, 8)  # batch dimensions broadcast
    with pytest.raises(ValueError, match=r"at most n_keys = 8 positions, got keys \(2, 9, 5\)"):
        score(q, randn(2, 9, 5))


# --- every score: attend accepts it, and its gradient is right --------------------------------------------------


def all_scores(d_query: int, d_key: int):
    """(name, score) for every score in the module; the parameter-free ones need d_query == d_key."""
    torch.manual_seed(1)
    same = d_query == d_key
    return [
        *([("dot", dot_score), ("scaled dot", scaled_dot_score), ("cosine", cosine_score),
           ("scaled cosine", partial(scaled_cosine_score, beta=3.0)),
           ("inverse distance", inverse_distance_score)] if same else []),
        ("general", GeneralScore(d_query, d_key)),
        ("additive", AdditiveScore(d_query, d_key, 6)),
        ("location", LocationScore(d_query, 7)),
    ]


@pytest.mark.parametrize("d_query,d_key", [(4, 4), (3, 5)])
def test_attend_accepts_every_score(d_query, d_key):
    q, k, v = randn(2, 3, d_query, seed=33), randn(2, 7, d_key, seed=34), randn(2, 7, 2, seed=35)
    for name, score in all_scores(d_query, d_key):
        context, weights = attend(q, k, v, score=score)
        assert context.shape == (2, 3, 2) and weights.shape == (2, 3, 7), name
        torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3), msg=name)
        torch.testing.assert_close(context, weights @ v, msg=name)


@pytest.mark.parametrize("name", [n for n, _ in all_scores(4, 4)])
def test_gradcheck_every_score(name):
    score = dict(all_scores(4, 4))[name]
    q = randn(2, 3, 4, seed=36, dtype=torch.float64).requires_grad_(True)
    k = randn(2, 7, 4, seed=37, dtype=torch.float64).requires_grad_(True)
    if isinstance(score, torch.nn.Module):
        score = score.double()
        names = [n for n, _ in score.named_parameters()]
        params = tuple(p.detach().clone().requires_grad_(True) for p in score.parameters())

        def fn(q, k, *params):
            return functional_call(score, dict(zip(names, params, strict=True)), (q, k))

        assert torch.autograd.gradcheck(fn, (q, k, *params))
    else:
        assert torch.autograd.gradcheck(score, (q, k))


def test_gradcheck_scaled_cosine_with_respect_to_beta():
    q = randn(2, 3, 4, seed=38, dtype=torch.float64).requires_grad_(True)
    k = randn(2, 5, 4, seed=39, dtype=torch.float64).requires_grad_(True)
    beta = (randn(2, 3, seed=40, dtype=torch.float64).abs() + 0.5).requires_grad_(True)
    assert torch.autograd.gradcheck(scaled_cosine_score, (q, k, beta))


def test_gradcheck_additive_with_precomputed_keys():
    score = AdditiveScore(3, 4, 5).double()
    q = randn(2, 3, 3, seed=41, dtype=torch.float64).requires_grad_(True)
    k = randn(2, 6, 4, seed=42, dtype=torch.float64)
    projected = score.project_keys(k).detach().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda q, p: score(q, k, projected_keys=p), (q, projected))


# --- masks ------------------------------------------------------------------------------------------------------


def test_padding_mask_hand_computed():
    expected = torch.tensor([[True, True, False, False], [False, False, False, False], [True, True, True, False]])
    mask = padding_mask(torch.tensor([2, 0, 3]), 4)
    assert mask.dtype == torch.bool
    assert torch.equal(mask, expected)
    assert torch.equal(padding_mask(torch.tensor([2, 0, 3])), expected[:, :3])  # max_len defaults to the longest


@pytest.mark.parametrize(
    "lengths,max_len,message",
    [
        (torch.tensor([[1, 2]]), 3, r"lengths must have shape \(batch,\), got \(1, 2\)"),
        (torch.tensor([1.0, 2.0]), 3, "lengths must be an integer tensor, got dtype torch.float32"),
        (torch.tensor([1, 4]), 3, r"lengths must lie in \[0, max_len = 3\], got \[1, 4\]"),
        (torch.tensor([-1, 2]), 3, r"lengths must lie in \[0, max_len = 3\], got \[-1, 2\]"),
    ],
)
def test_padding_mask_rejects_bad_lengths(lengths, max_len, message):
    with pytest.raises(ValueError, match=message):
        padding_mask(lengths, max_len)


def test_causal_mask_is_the_lower_triangle_and_hides_the_future():
    assert torch.equal(causal_mask(4), torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]).bool())
    x, v = randn(2, 5, 3, seed=43), randn(2, 5, 4, seed=44)
    context, weights = attend(x, x, v, score=scaled_dot_score, mask=causal_mask(5))
    assert (weights.triu(diagonal=1) == 0).all()
    torch.testing.assert_close(context[:, 0], v[:, 0])  # the first position can only see itself
    changed = v.clone()
    changed[:, 3:] += 100.0  # changing the future leaves the earlier outputs alone
    torch.testing.assert_close(attend(x, x, changed, score=scaled_dot_score, mask=causal_mask(5))[0][:, :3],
                               context[:, :3])


# --- masked softmax and attend: properties ----------------------------------------------------------------------


def test_masked_softmax_rows_sum_to_one_and_masked_weights_are_exactly_zero():
    scores, mask = randn(3, 4, 6, seed=45) * 10, random_mask(3, 4, 6, seed=46)
    weights = masked_softmax(scores, mask)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 4))
    assert (weights[~mask] == 0).all() and (weights[mask] > 0).all()
    # the allowed positions get the softmax of the allowed scores alone
    row = weights[1, 2][mask[1, 2]]
    torch.testing.assert_close(row, torch.softmax(scores[1, 2][mask[1, 2]], dim=0))


def test_all_masked_row_gives_zeros_without_nan_forward_and_backward():
    q = randn(2, 3, 4, seed=47).requires_grad_(True)
    k = randn(2, 5, 4, seed=48).requires_grad_(True)
    v = randn(2, 5, 2, seed=49).requires_grad_(True)
    mask = random_mask(2, 3, 5, seed=50)
    mask[1, 2] = False  # one query may attend to nothing
    context, weights = attend(q, k, v, score=scaled_dot_score, mask=mask)
    assert (weights[1, 2] == 0).all() and (context[1, 2] == 0).all()
    torch.testing.assert_close(weights.sum(-1)[0], torch.ones(3))
    (context.sum() + weights.pow(2).sum()).backward()
    for name, x in [("query", q), ("keys", k), ("values", v)]:
        assert torch.isfinite(x.grad).all(), name
    assert (q.grad[1, 2] == 0).all()  # the fully masked query gets no gradient
    # and naive masking with -inf does give NaN there, which is what the masked softmax avoids
    naive = torch.softmax(scaled_dot_score(q, k).masked_fill(~mask, -math.inf), dim=-1)
    assert torch.isnan(naive[1, 2]).all()


def test_exact_single_match_returns_that_value():
    keys = 50.0 * torch.eye(6)  # orthogonal keys, far apart
    values = randn(6, 3, seed=51)
    for j in range(6):
        context, weights = attend(keys[j : j + 1], keys, values)
        assert torch.equal(weights[0], torch.eye(6)[j])
        assert torch.equal(context[0], values[j])


# --- clear errors -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: scaled_dot_score(randn(3, 4), randn(5, 6)),
         r"query and keys must share their last dimension d_k: query \(3, 4\), keys \(5, 6\)"),
        (lambda: cosine_score(randn(4), randn(5, 4)), r"query must have shape \(\.\.\., Tq, d_k\), got \(4,\)"),
        (lambda: cosine_score(randn(2, 3, 4), randn(3, 5, 4)), r"leading \(batch\) dimensions do not broadcast"),
        (lambda: GeneralScore(3, 5)(randn(2, 4), randn(6, 5)),
         r"query must have shape \(\.\.\., Tq, d_query\) with last dimension 3, got \(2, 4\)"),
        (lambda: AdditiveScore(3, 5, 7)(randn(2, 3), randn(6, 4)),
         r"keys must have shape \(\.\.\., Tk, d_key\) with last dimension 5, got \(6, 4\)"),
        (lambda: LocationScore(3, 5)(randn(2, 4), randn(5, 4)),
         r"query must have shape \(\.\.\., Tq, d_query\) with last dimension 3, got \(2, 4\)"),
        (lambda: AdditiveScore(3, 5, 0), "d_hidden must be > 0, got 0"),
        (lambda: attend(randn(2, 4), randn(5, 4), randn(6, 2), score=scaled_dot_score),
         r"keys and values must have the same number of entries Tk: keys \(5, 4\)"),
        (lambda: attend(randn(2, 4), randn(5, 4), randn(5, 2), score=lambda q, k: q @ k.T @ torch.ones(5, 3)),
         r"the score function must return \(\.\.\., Tq, Tk\) = \(\.\.\., 2, 5\), got \(2, 3\)"),
        (lambda: attend(randn(2, 4), randn(5, 4), randn(5, 2), mask=torch.ones(2, 5)),
         "mask must be a boolean tensor"),
        (lambda: attend(randn(2, 4), randn(5, 4), randn(5, 2), mask=torch.ones(2, 4, dtype=torch.bool)),
         r"mask \(2, 4\) does not broadcast to the scores \(2, 5\)"),
        (lambda: padding_mask(torch.tensor([1, 2]), -1), "max_len must be >= 0, got -1"),
        (lambda: causal_mask(0), "size must be > 0, got 0"),
    ],
)
def test_clear_value_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()
