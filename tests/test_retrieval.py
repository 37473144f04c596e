"""Chapter 2's retrieval task: the relations, the batches, the accuracy and the loss."""

import math

import pytest
import torch

from attnlab.attention import dot_score
from attnlab.tasks.retrieval import (
    N_KEYS,
    RELATIONS,
    map_alignment,
    relate,
    retrieval_accuracy,
    retrieval_batch,
    retrieval_loss,
    retrieval_map,
    retrieval_set,
    train_score,
)


def test_the_map_is_orthogonal_and_fixed_by_its_seed():
    a = retrieval_map(8)
    assert a.shape == (8, 8)
    torch.testing.assert_close(a @ a.T, torch.eye(8), atol=1e-5, rtol=0)
    assert torch.equal(a, retrieval_map(8))
    assert not torch.equal(a, retrieval_map(8, seed=11))


def test_the_relations_on_a_hand_checked_key():
    swap = torch.tensor([[0.0, 1.0], [1.0, 0.0]])  # A swaps the two components
    key = torch.tensor([0.6, -0.8])
    torch.testing.assert_close(relate(key, "same space", swap), key)
    torch.testing.assert_close(relate(key, "linear map", swap), torch.tensor([-0.8, 0.6]))
    # sqrt(2) |k| - 0.8, then swapped
    expected = torch.tensor([math.sqrt(2) * 0.8 - 0.8, math.sqrt(2) * 0.6 - 0.8])
    torch.testing.assert_close(relate(key, "non-linear", swap), expected)
    # the non-linear relation forgets the signs
    torch.testing.assert_close(relate(-key, "non-linear", swap), expected)


def test_a_batch_has_the_documented_shapes_and_unit_keys():
    a = retrieval_map()
    for relation in RELATIONS:
        query, keys, target = retrieval_batch(5, relation, a, torch.Generator().manual_seed(0))
        assert query.shape == (5, 1, 8) and keys.shape == (5, N_KEYS, 8) and target.shape == (5,)
        torch.testing.assert_close(keys.norm(dim=-1), torch.ones(5, N_KEYS))
        right = keys[torch.arange(5), target]
        # the query is the relation of the right key, up to the noise (0.1 per component)
        assert (query[:, 0] - relate(right, relation, a)).abs().max() < 0.6
    query, keys, target = retrieval_batch(3, "same space", a, torch.Generator().manual_seed(0), n_keys=4, noise=0)
    assert keys.shape == (3, 4, 8)
    torch.testing.assert_close(query[:, 0], keys[torch.arange(3), target])


def test_a_set_repeats_with_its_seed():
    a = retrieval_map()
    first, again = retrieval_set(10, "linear map", a, seed=1), retrieval_set(10, "linear map", a, seed=1)
    for x, y in zip(first, again, strict=True):
        assert torch.equal(x, y)


def test_accuracy_and_loss_on_a_hand_checked_case():
    keys = torch.eye(3)[None].repeat(2, 1, 1)  # (2, 3, 3): the unit vectors
    query = torch.tensor([[[2.0, 0.0, 0.0]], [[0.0, 0.0, 1.0]]])
    target = torch.tensor([0, 1])  # the first is right, the second wrong (it points at key 2)
    assert retrieval_accuracy(dot_score, (query, keys, target)) == 0.5
    # weights: softmax(2, 0, 0) at key 0; softmax(0, 0, 1) at key 1
    first = math.log(math.exp(2) + 2) - 2
    second = math.log(2 + math.e)
    loss = retrieval_loss(dot_score, (query, keys, target))
    assert loss.item() == pytest.approx((first + second) / 2, rel=1e-6)


def test_the_dot_score_finds_the_key_in_the_same_space_only():
    a = retrieval_map()
    assert retrieval_accuracy(dot_score, retrieval_set(500, "same space", a, seed=1)) > 0.95
    assert retrieval_accuracy(dot_score, retrieval_set(500, "linear map", a, seed=1)) < 0.3


def test_alignment_is_one_for_a_multiple_of_the_map_and_zero_for_an_orthogonal_matrix():
    a = retrieval_map()
    assert map_alignment(3 * a, a) == pytest.approx(1.0, abs=1e-6)
    assert map_alignment(-a, a) == pytest.approx(-1.0, abs=1e-6)
    b = torch.tensor([[1.0, 0.0], [0.0, -1.0]])
    assert map_alignment(b, torch.eye(2)) == pytest.approx(0.0, abs=1e-6)


def test_training_repeats_and_keeps_the_best_validation_weights():
    from attnlab.attention import GeneralScore

    a = retrieval_map()
    validation = retrieval_set(200, "linear map", a, seed=3)
    runs = [train_score(lambda: GeneralScore(8, 8), "linear map", a, validation, steps=4, eval_every=2)
            for _ in range(2)]
    (first, history), (second, _) = runs
    assert torch.equal(first.weight, second.weight)
    best = max(history.metric("val_accuracy")[1])
    assert retrieval_accuracy(first, validation) == pytest.approx(best)


@pytest.mark.parametrize(
    ("batch", "match"),
    [
        ((torch.zeros(4, 8), torch.zeros(4, 16, 8), torch.zeros(4, dtype=torch.long)),
         r"query must have shape \(batch, 1, d\), got \(4, 8\)"),
        ((torch.zeros(4, 2, 8), torch.zeros(4, 16, 8), torch.zeros(4, dtype=torch.long)),
         r"query must have shape \(batch, 1, d\) with size 1 in dimension 1, got \(4, 2, 8\)"),
        ((torch.zeros(4, 1, 8), torch.zeros(3, 16, 8), torch.zeros(4, dtype=torch.long)),
         r"keys must have shape \(batch, keys, d\) with size 4 in dimension 0, got \(3, 16, 8\)"),
        ((torch.zeros(4, 1, 8), torch.zeros(4, 16, 7), torch.zeros(4, dtype=torch.long)),
         r"keys must have shape \(batch, keys, d\) with size 8 in dimension 2, got \(4, 16, 7\)"),
        ((torch.zeros(4, 1, 8), torch.zeros(4, 16, 8), torch.zeros(5, dtype=torch.long)),
         r"target must have shape \(batch,\) = \(4,\), got \(5,\)"),
    ],
)
def test_bad_batches_name_the_expected_and_the_actual_shape(batch, match):
    with pytest.raises(ValueError, match=match):
        retrieval_accuracy(dot_score, batch)
    with pytest.raises(ValueError, match=match):
        retrieval_loss(dot_score, batch)


def test_bad_arguments_are_named():
    a = retrieval_map()
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="relation must be one of"):
        retrieval_batch(4, "rotated", a, g)
    with pytest.raises(ValueError, match=r"rotation must have shape \(d, d\) = \(8, 8\), got \(8, 7\)"):
        relate(torch.zeros(3, 8), "linear map", torch.zeros(8, 7))
    with pytest.raises(ValueError, match=r"rotation must have shape \(d, d\), got \(8,\)"):
        retrieval_batch(4, "linear map", torch.zeros(8), g)
    with pytest.raises(ValueError, match="n must be > 0, got 0"):
        retrieval_batch(0, "linear map", a, g)
    with pytest.raises(ValueError, match=r"weight must have shape \(d, d\) = \(8, 8\), got \(4, 4\)"):
        map_alignment(torch.zeros(4, 4), a)
