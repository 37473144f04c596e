import pytest
import torch

from attnlab.attention import inverse_distance_score
from attnlab.memory import SoftDict


def orthonormal_keys(n: int, d: int, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.linalg.qr(torch.randn(d, n, generator=gen)).Q.T


def test_exact_match_reproduces_a_dict():
    keys = orthonormal_keys(5, 8)
    values = torch.arange(5.0)[:, None] * 10
    memory = SoftDict(keys, values)
    reference = {i: 10.0 * i for i in range(5)}
    for i in range(5):
        value, weights = memory.lookup(keys[i], temperature=0.01)
        assert value.shape == (1,) and weights.shape == (5,)
        assert value.item() == pytest.approx(reference[i], abs=1e-6)
        assert weights[i].item() == pytest.approx(1.0, abs=1e-6)


def test_lookup_matches_a_hand_computed_softmax():
    keys = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    values = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])
    query = torch.tensor([2.0, 0.0])
    value, weights = SoftDict(keys, values).lookup(query, temperature=2.0)
    scores = torch.tensor([2.0, 0.0, 2.0]) / 2.0
    expected = scores.exp() / scores.exp().sum()
    torch.testing.assert_close(weights, expected)
    torch.testing.assert_close(value, expected @ values)


def test_temperature_limits_are_average_and_argmax():
    gen = torch.Generator().manual_seed(1)
    keys, values = torch.randn(6, 4, generator=gen), torch.randn(6, 3, generator=gen)
    query = torch.randn(4, generator=gen)
    memory = SoftDict(keys, values)
    hot, _ = memory.lookup(query, temperature=1e6)
    cold, _ = memory.lookup(query, temperature=1e-4)
    torch.testing.assert_close(hot, values.mean(0), atol=1e-4, rtol=0)
    torch.testing.assert_close(cold, values[(keys @ query).argmax()], atol=1e-5, rtol=0)


def test_batched_lookup_equals_single_lookups():
    gen = torch.Generator().manual_seed(2)
    memory = SoftDict(torch.randn(7, 3, generator=gen), torch.randn(7, 2, generator=gen))
    queries = torch.randn(4, 3, generator=gen)
    values, weights = memory.lookup(queries)
    assert values.shape == (4, 2) and weights.shape == (4, 7)
    for b in range(4):
        value, weight = memory.lookup(queries[b])
        torch.testing.assert_close(values[b], value)
        torch.testing.assert_close(weights[b], weight)


def test_custom_score_inverse_distance_prefers_the_nearest_key():
    stations = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    readings = torch.tensor([[10.0], [20.0], [30.0]])
    value, weights = SoftDict(stations, readings, score=inverse_distance_score).lookup(torch.tensor([0.9, 0.1]), 0.1)
    assert weights.argmax().item() == 1
    assert torch.allclose(weights.sum(), torch.tensor(1.0))


def test_lookup_is_differentiable_in_query_keys_and_values():
    gen = torch.Generator().manual_seed(3)
    keys = torch.randn(5, 3, generator=gen, dtype=torch.float64, requires_grad=True)
    values = torch.randn(5, 2, generator=gen, dtype=torch.float64, requires_grad=True)
    query = torch.randn(3, generator=gen, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda q, k, v: SoftDict(k, v).lookup(q, 0.7)[0], (query, keys, values))


@pytest.mark.parametrize(
    ("keys", "values", "message"),
    [
        (torch.zeros(3), torch.zeros(3, 1), r"keys must have shape \(n, d_k\), got \(3,\)"),
        (torch.zeros(3, 2), torch.zeros(4, 1), r"same n: keys \(3, 2\), values \(4, 1\)"),
    ],
)
def test_bad_memory_shapes_are_named(keys, values, message):
    with pytest.raises(ValueError, match=message):
        SoftDict(keys, values)


def test_bad_query_and_temperature_are_named():
    memory = SoftDict(torch.zeros(3, 2), torch.zeros(3, 1))
    with pytest.raises(ValueError, match=r"d_k = 2, got \(5,\)"):
        memory.lookup(torch.zeros(5))
    with pytest.raises(ValueError, match="temperature must be > 0, got 0"):
        memory.lookup(torch.zeros(2), temperature=0)
