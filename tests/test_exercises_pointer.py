import itertools

import numpy as np
import pytest
import torch

from attnlab import pointer
from attnlab.exercises import (
    ExerciseError,
    check_beam_gaps,
    check_greedy_pointer,
    check_held_karp,
    check_masked_pointer,
    check_pointer_distribution,
    check_sort_length,
    check_tour_length,
    check_two_opt,
)
from attnlab.exercises import pointer as pointer_checks
from attnlab.pointer import PointerNet
from attnlab.tasks import geometry, sorting_data


def stub(*args):
    raise NotImplementedError()


def in_float64(fn):
    """The same answer computed in float64 (tensor arguments converted, integer ones left alone)."""
    def run(*args):
        return fn(*(a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args))
    return run


# ---------------------------------------------------------------- pointer distribution
def good_distribution(s, h, w1, w2, v):
    return torch.softmax(torch.tanh(h @ w1.T + w2 @ s) @ v, dim=-1)


@pytest.mark.parametrize("answer", [good_distribution, in_float64(good_distribution)], ids=["float32", "float64"])
def test_pointer_distribution_accepts_the_reference(answer, capsys):
    check_pointer_distribution(answer)
    check_pointer_distribution(answer, seed=None)
    assert "passed" in capsys.readouterr().out


def naive_softmax(s, h, w1, w2, v):
    e = (torch.tanh(h @ w1.T + w2 @ s) @ v).exp()
    return e / e.sum()


def distribution_in_place(s, h, w1, w2, v):
    h.mul_(1.0)
    s.add_(1.0)
    return good_distribution(s - 1.0, h, w1, w2, v)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda s, h, w1, w2, v: good_distribution(s, h, w1, w2, v) @ h, "weighted sum"),
        (lambda s, h, w1, w2, v: torch.tanh(h @ w1.T + w2 @ s) @ v, "probabilities"),
        (lambda s, h, w1, w2, v: torch.softmax((h @ w1.T + w2 @ s) @ v, dim=-1), "lack the tanh"),
        (lambda s, h, w1, w2, v: torch.softmax(torch.tanh(h @ w2.T + w1 @ s) @ v, dim=-1), "swapped"),
        (lambda s, h, w1, w2, v: torch.softmax(torch.tanh(h @ w1.T) @ v, dim=-1), "decoder state"),
        (naive_softmax, "overflows"),
        (lambda s, h, w1, w2, v: (good_distribution(s, h, w1, w2, v), h), "pair"),
        (distribution_in_place, "in place"),
        (lambda s, h, w1, w2, v: pointer_checks._reference_distribution(s, h, w1, w2, v), "library's own"),
        (stub, "not implemented yet"),
    ],
    ids=["weighted-sum", "no-softmax", "no-tanh", "swapped-weights", "ignores-decoder", "overflow", "pair",
         "in-place", "delegates", "stub"],
)
def test_pointer_distribution_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_pointer_distribution(wrong)


def test_pointer_distribution_messages_hold_no_expected_values():
    with pytest.raises(ExerciseError) as info:
        check_pointer_distribution(lambda s, h, w1, w2, v: torch.full((len(h),), 1.0 / len(h)))
    assert "difference" in str(info.value) and "[" not in str(info.value)


# ---------------------------------------------------------------- masking
def good_mask(scores, chosen):
    return torch.softmax(scores.masked_fill(chosen, float("-inf")), dim=-1)


def renormalise_after(scores, chosen):
    p = torch.softmax(scores, dim=-1).masked_fill(chosen, 0.0)
    return p / p.sum(-1, keepdim=True)


def first_row_mask_for_all(scores, chosen):
    return torch.softmax(scores.masked_fill(chosen[:1], float("-inf")), dim=-1)


def mask_in_place(scores, chosen):
    scores[chosen] = float("-inf")
    return torch.softmax(scores, dim=-1)


@pytest.mark.parametrize("answer", [good_mask, in_float64(good_mask),
                                    lambda s, c: torch.softmax(s.masked_fill(c, -1e9), dim=-1)],
                         ids=["float32", "float64", "large-negative"])
def test_masked_pointer_accepts_the_reference(answer, capsys):
    check_masked_pointer(answer)
    check_masked_pointer(answer, seed=None)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda scores, chosen: torch.softmax(scores, dim=-1), "exactly 0"),
        (lambda scores, chosen: torch.softmax(scores, dim=-1).masked_fill(chosen, 0.0), "not 1"),
        (lambda scores, chosen: torch.softmax(scores.masked_fill(chosen, 0.0), dim=-1), "exactly 0"),
        (lambda scores, chosen: torch.softmax(scores - 5.0 * chosen, dim=-1), "exactly 0"),
        (lambda scores, chosen: (e := scores.exp().masked_fill(chosen, 0.0)) / e.sum(-1, keepdim=True), "overflows"),
        (renormalise_after, "renormalising"),
        (first_row_mask_for_all, "every row"),
        (lambda scores, chosen: good_mask(scores, ~chosen), "wrong inputs"),
        (mask_in_place, "in place"),
        (lambda scores, chosen: pointer.masked_log_softmax(scores, ~chosen).exp(), "library's own"),
        (stub, "not implemented yet"),
    ],
    ids=["no-mask", "zero-after-softmax", "zero-score", "finite-penalty", "naive-exp-overflow",
         "renormalise-after", "one-row-mask", "inverted-mask", "in-place", "delegates", "stub"],
)
def test_masked_pointer_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_masked_pointer(wrong)


# ---------------------------------------------------------------- greedy decoding (debugging)
def good_greedy(model, inputs):
    encoded = model.encode(inputs)
    batch, n = inputs.shape[:2]
    rows = torch.arange(batch)
    chosen = torch.zeros(batch, n, dtype=torch.bool)
    decoder_in, state = model.start.expand(batch, 1, -1), encoded.state
    indices, log_prob = [], torch.zeros(batch)
    for _ in range(n):
        out, state = model.decoder(decoder_in, state)
        log_p = model.pointer_scores(out, encoded)[:, 0].masked_fill(chosen, float("-inf")).log_softmax(dim=-1)
        choice = log_p.argmax(dim=-1)
        log_prob = log_prob + log_p[rows, choice]
        chosen[rows, choice] = True
        indices.append(choice)
        decoder_in = encoded.embedded[rows, choice].unsqueeze(1)
    return torch.stack(indices, dim=1), log_prob


def unmasked_greedy(model, inputs):
    encoded = model.encode(inputs)
    batch, n = inputs.shape[:2]
    rows = torch.arange(batch)
    decoder_in, state = model.start.expand(batch, 1, -1), encoded.state
    indices, log_prob = [], torch.zeros(batch)
    for _ in range(n):
        out, state = model.decoder(decoder_in, state)
        log_p = model.pointer_scores(out, encoded)[:, 0].log_softmax(dim=-1)
        choice = log_p.argmax(dim=-1)
        log_prob = log_prob + log_p[rows, choice]
        indices.append(choice)
        decoder_in = encoded.embedded[rows, choice].unsqueeze(1)
    return torch.stack(indices, dim=1), log_prob


def greedy_unmasked_log_prob(model, inputs):
    encoded = model.encode(inputs)
    batch, n = inputs.shape[:2]
    rows = torch.arange(batch)
    chosen = torch.zeros(batch, n, dtype=torch.bool)
    decoder_in, state = model.start.expand(batch, 1, -1), encoded.state
    indices, log_prob = [], torch.zeros(batch)
    for _ in range(n):
        out, state = model.decoder(decoder_in, state)
        scores = model.pointer_scores(out, encoded)[:, 0]
        choice = scores.masked_fill(chosen, float("-inf")).argmax(dim=-1)
        log_prob = log_prob + scores.log_softmax(dim=-1)[rows, choice]
        chosen[rows, choice] = True
        indices.append(choice)
        decoder_in = encoded.embedded[rows, choice].unsqueeze(1)
    return torch.stack(indices, dim=1), log_prob


def feeds_start_vector(model, inputs):
    encoded = model.encode(inputs)
    batch, n = inputs.shape[:2]
    rows = torch.arange(batch)
    chosen = torch.zeros(batch, n, dtype=torch.bool)
    state = encoded.state
    indices, log_prob = [], torch.zeros(batch)
    for _ in range(n):
        out, state = model.decoder(model.start.expand(batch, 1, -1), state)
        log_p = model.pointer_scores(out, encoded)[:, 0].masked_fill(chosen, float("-inf")).log_softmax(dim=-1)
        choice = log_p.argmax(dim=-1)
        log_prob = log_prob + log_p[rows, choice]
        chosen[rows, choice] = True
        indices.append(choice)
    return torch.stack(indices, dim=1), log_prob


def test_greedy_pointer_accepts_the_reference(capsys):
    check_greedy_pointer(good_greedy)
    check_greedy_pointer(good_greedy, seed=None)
    check_greedy_pointer(lambda model, inputs: tuple(t.double() for t in good_greedy(model, inputs)))
    assert "passed" in capsys.readouterr().out


def test_greedy_pointer_agrees_with_the_library():
    model = PointerNet(d_input=1, d_hidden=12)
    inputs = torch.rand(5, 7, 1)
    indices, log_prob = good_greedy(model, inputs)
    decoded = model.greedy(inputs)
    assert torch.equal(indices, decoded.indices)
    torch.testing.assert_close(log_prob.detach(), decoded.log_prob)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (unmasked_greedy, "times in row"),
        (greedy_unmasked_log_prob, "unmasked softmax"),
        (feeds_start_vector, "choices differ"),
        (lambda model, inputs: good_greedy(model, inputs)[0], "pair"),
        (lambda model, inputs: (model.greedy(inputs).indices, model.greedy(inputs).log_prob), "library's own"),
        (lambda model, inputs: (good_greedy(model, inputs)[0], torch.zeros(len(inputs))), "log_prob is wrong"),
        (stub, "not implemented yet"),
    ],
    ids=["no-mask", "unmasked-log-prob", "no-feedback", "indices-only", "delegates", "no-log-prob", "stub"],
)
def test_greedy_pointer_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_greedy_pointer(wrong)


def test_greedy_pointer_rejects_changing_the_inputs():
    def in_place(model, inputs):
        result = good_greedy(model, inputs.clone())
        inputs.mul_(2.0)
        return result

    with pytest.raises(ExerciseError, match="in place"):
        check_greedy_pointer(in_place)


# ---------------------------------------------------------------- sorting at a new length (experiment)
@pytest.fixture(scope="module")
def sorter():
    torch.manual_seed(0)
    return PointerNet(d_input=1, d_hidden=16)


def good_sort_at_length(model, n):
    values, order = sorting_data(200, n, torch.Generator().manual_seed(n))
    decoded = model.greedy(values).indices
    return (decoded == order).all(dim=1).float().mean().item(), values, decoded


def perfect_sorter_fraction(model, n):
    fraction, values, decoded = good_sort_at_length(model, n)
    return np.float64(fraction), values, decoded


def test_sort_length_accepts_the_reference(sorter, capsys):
    check_sort_length(good_sort_at_length, sorter)
    check_sort_length(good_sort_at_length, sorter, seed=None)
    check_sort_length(perfect_sorter_fraction, sorter)
    check_sort_length(lambda m, n: (torch.tensor(good_sort_at_length(m, n)[0]), *good_sort_at_length(m, n)[1:]),
                      sorter)
    assert "passed" in capsys.readouterr().out


class Sorted(torch.nn.Module):
    """A 'model' whose greedy decoding sorts every list exactly, to make the fraction of exact lists 1."""

    def greedy(self, values):
        return pointer.Decoded(values[..., 0].argsort(dim=1), torch.zeros(len(values)), torch.zeros(0))


def length_ten(model, n):
    return good_sort_at_length(model, 10)


def unmasked(model, n):
    values, order = sorting_data(200, n, torch.Generator().manual_seed(n))
    decoded = model.greedy(values, mask_chosen=False).indices
    return (decoded == order).all(dim=1).float().mean().item(), values, decoded


def per_position(model, n):
    _, values, decoded = good_sort_at_length(model, n)
    return (decoded == values[..., 0].argsort(dim=1)).float().mean().item(), values, decoded


def descending(model, n):
    _, values, decoded = good_sort_at_length(model, n)
    return (decoded == values[..., 0].argsort(dim=1, descending=True)).all(1).float().mean().item(), values, decoded


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (length_ten, "length n"),
        (unmasked, "greedy decoding of the model"),
        (per_position, "correct positions"),
        (lambda m, n: good_sort_at_length(m, n)[0], "triple"),
        (lambda m, n: (0.5, *good_sort_at_length(m, n)[1:]), "does not match"),
        (lambda m, n: (1.0, *good_sort_at_length(m, n)[1:]), "does not match"),
        (stub, "not implemented yet"),
    ],
    ids=["ignores-n", "unmasked", "per-position", "fraction-only", "made-up", "claims-perfect", "stub"],
)
def test_sort_length_rejects_typical_mistakes(sorter, wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_sort_length(wrong, sorter)


def test_sort_length_catches_percent_and_descending_order():
    model = Sorted()
    check_sort_length(good_sort_at_length, model)
    with pytest.raises(ExerciseError, match="percent"):
        check_sort_length(lambda m, n: (100 * good_sort_at_length(m, n)[0], *good_sort_at_length(m, n)[1:]), model)
    with pytest.raises(ExerciseError, match="decreasing order"):
        check_sort_length(descending, model)


# ---------------------------------------------------------------- tour length
def good_tour_length(points, tours):
    ordered = points[torch.arange(len(points))[:, None], tours]
    return (ordered - ordered.roll(-1, dims=1)).norm(dim=-1).sum(-1)


@pytest.mark.parametrize("answer", [good_tour_length, in_float64(good_tour_length),
                                    lambda p, t: good_tour_length(p, t).numpy()], ids=["float32", "float64", "numpy"])
def test_tour_length_accepts_the_reference(answer, capsys):
    check_tour_length(answer)
    check_tour_length(answer, seed=None)
    assert "passed" in capsys.readouterr().out


def open_path(points, tours):
    ordered = points[torch.arange(len(points))[:, None], tours]
    return (ordered[:, 1:] - ordered[:, :-1]).norm(dim=-1).sum(-1)


def squared(points, tours):
    ordered = points[torch.arange(len(points))[:, None], tours]
    return (ordered - ordered.roll(-1, dims=1)).pow(2).sum(-1).sum(-1)


def index_order(points, tours):
    return (points - points.roll(-1, dims=1)).norm(dim=-1).sum(-1)


def one_axis(points, tours):
    ordered = points[torch.arange(len(points))[:, None], tours]
    return (ordered - ordered.roll(-1, dims=1))[..., 0].abs().sum(-1)


def centres_in_place(points, tours):
    points.sub_(points.mean(dim=1, keepdim=True))
    return good_tour_length(points, tours)


@pytest.mark.parametrize(("wrong", "message"),
                         [(open_path, "close the tour"), (squared, "squared distances"), (index_order, "diagonals"),
                          (one_axis, "one axis"), (lambda p, t: good_tour_length(p, t)[:, None], "shape"),
                          (centres_in_place, "in place"), (geometry.tour_length, "library's own"),
                          (lambda p, t: pointer_checks._reference_tour_length(p, t), "library's own"),
                          (stub, "not implemented yet")],
                         ids=["open-path", "squared-distances", "ignores-tour", "one-axis", "column", "in-place",
                              "library", "reference", "stub"])
def test_tour_length_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_tour_length(wrong)


# ---------------------------------------------------------------- Held-Karp
def good_held_karp(points):
    n = len(points)
    d = np.linalg.norm(points[:, None] - points[None], axis=-1)
    cost = {(1 << j, j): d[0, j] for j in range(1, n)}
    for size in range(2, n):
        for subset in itertools.combinations(range(1, n), size):
            bits = sum(1 << j for j in subset)
            for j in subset:
                cost[bits, j] = min(cost[bits ^ (1 << j), k] + d[k, j] for k in subset if k != j)
    full = sum(1 << j for j in range(1, n))
    return min(cost[full, j] + d[j, 0] for j in range(1, n)) if n > 1 else 0.0


@pytest.mark.parametrize("answer", [good_held_karp, lambda p: float(good_held_karp(p)),
                                    lambda p: torch.tensor(good_held_karp(p)),
                                    lambda p: torch.tensor(good_held_karp(p), dtype=torch.float32),
                                    lambda p: np.float32(good_held_karp(p))],
                         ids=["numpy-float64", "python-float", "tensor64", "tensor32", "numpy-float32"])
def test_held_karp_accepts_the_reference(answer, capsys):
    check_held_karp(answer)
    check_held_karp(answer, seed=None)
    assert "passed" in capsys.readouterr().out


def nearest_neighbour(points):
    n, here, left, length = len(points), 0, set(range(1, len(points))), 0.0
    while left:
        nxt = min(left, key=lambda j: np.linalg.norm(points[here] - points[j]))
        length += np.linalg.norm(points[here] - points[nxt])
        left.remove(nxt)
        here = nxt
    return length + np.linalg.norm(points[here] - points[0]) if n > 1 else 0.0


def open_optimal_path(points):
    n = len(points)
    best = np.inf
    for rest in itertools.permutations(range(1, n)):
        tour = (0, *rest)
        best = min(best, sum(np.linalg.norm(points[tour[i]] - points[tour[i + 1]]) for i in range(n - 1)))
    return best


def a_tour(points):
    return np.arange(len(points))


def library_length(points):
    tour = geometry.solve_tsp(points)
    return float(geometry.tour_length(points[None], tour[None])[0])


def scales_in_place(points):
    points *= 1.0 + 1e-12
    return good_held_karp(points)


@pytest.mark.parametrize(("wrong", "message"),
                         [(nearest_neighbour, "too long"), (open_optimal_path, "shorter than possible"),
                          (lambda points: "short", "must return"), (a_tour, "one number"),
                          (library_length, "library's own"), (scales_in_place, "changed the points"),
                          (stub, "not implemented yet")],
                         ids=["nearest-neighbour", "open-path", "not-a-number", "returns-tour", "library", "in-place",
                              "stub"])
def test_held_karp_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_held_karp(wrong)


def test_held_karp_never_prints_the_optimum():
    points = torch.rand(2, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64).numpy()
    optimum = good_held_karp(points)
    for wrong in (nearest_neighbour, open_optimal_path, lambda p: good_held_karp(p) + 0.25):
        with pytest.raises(ExerciseError) as info:
            check_held_karp(wrong)
        assert f"{optimum:.4f}" not in str(info.value) and f"{optimum:.3f}" not in str(info.value)


def test_held_karp_draws_fresh_instances_without_a_seed():
    seen = []

    def record(points):
        seen.append(points.copy())
        return good_held_karp(points)

    check_held_karp(record, seed=None)
    check_held_karp(record, seed=None)
    half = len(seen) // 2
    assert not np.allclose(seen[half - 1], seen[-1])


# ---------------------------------------------------------------- 2-opt (debugging)
def good_two_opt(points, tour):
    d = torch.cdist(points, points).double()
    tour, n = tour.tolist(), len(tour)
    improved = True
    while improved:
        improved = False
        for i in range(1, n - 1):
            for j in range(i + 1, n):
                a, b, c, e = tour[i - 1], tour[i], tour[j], tour[(j + 1) % n]
                if d[a, c] + d[b, e] < d[a, b] + d[c, e] - 1e-10:
                    tour[i : j + 1] = tour[i : j + 1][::-1]
                    improved = True
    return torch.tensor(tour)


def off_by_one(points, tour, max_rounds=50):
    d = torch.cdist(points, points).double()
    tour, n = tour.tolist(), len(tour)
    for _ in range(max_rounds):
        improved = False
        for i in range(1, n - 1):
            for j in range(i + 1, n):
                a, b, c, e = tour[i - 1], tour[i], tour[j], tour[(j + 1) % n]
                if d[a, c] + d[b, e] < d[a, b] + d[c, e] - 1e-10:
                    tour[i:j] = tour[i:j][::-1]
                    improved = True
        if not improved:
            break
    return torch.tensor(tour)


def one_pass(points, tour):
    d = torch.cdist(points, points).double()
    tour, n = tour.tolist(), len(tour)
    for i in range(1, n - 1):
        for j in range(i + 1, n):
            a, b, c, e = tour[i - 1], tour[i], tour[j], tour[(j + 1) % n]
            if d[a, c] + d[b, e] < d[a, b] + d[c, e] - 1e-10:
                tour[i : j + 1] = tour[i : j + 1][::-1]
                break
        else:
            continue
        break
    return torch.tensor(tour)


def reverse_in_place(points, tour):
    result = good_two_opt(points, tour)
    tour.copy_(result)
    return result


@pytest.mark.parametrize("answer", [good_two_opt, lambda p, t: good_two_opt(p, t).numpy(),
                                    lambda p, t: good_two_opt(p, t).tolist(), in_float64(good_two_opt)],
                         ids=["tensor", "numpy", "list", "float64"])
def test_two_opt_accepts_the_reference(answer, capsys):
    check_two_opt(answer)
    check_two_opt(answer, seed=None)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize(("wrong", "message"),
                         [(off_by_one, "longer|local optimum"), (one_pass, "local optimum"),
                          (lambda p, t: t.roll(1), "starts at city"),
                          (lambda p, t: torch.cat([t[:1], t[:-1]]), "not a permutation"),
                          (lambda p, t: torch.from_numpy(geometry.two_opt(p[None], t[None])[0]), "library's own"),
                          (reverse_in_place, "in place"), (lambda p, t: 0.0, "must return a tour"),
                          (stub, "not implemented yet")],
                         ids=["off-by-one", "one-move", "rotated", "duplicate", "library", "in-place", "number",
                              "stub"])
def test_two_opt_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_two_opt(wrong)


# ---------------------------------------------------------------- beam widths (experiment)
@pytest.fixture(scope="module")
def tsp_case():
    torch.manual_seed(0)
    model = PointerNet(d_input=2, d_hidden=16)
    points, tours = geometry.tsp_data(40, 7, torch.Generator().manual_seed(3))
    return model, points, tours


def shortest_of_beam(model, points, width):
    beams, _ = model.beam_search(points, width)
    lengths = torch.stack([geometry.tour_length(points, beams[:, w]) for w in range(width)], dim=1)
    return lengths.min(dim=1).values, lengths[:, 0]


def good_beam_gaps(model, points, tours, widths):
    optimal = geometry.tour_length(points, tours)
    return {w: (shortest_of_beam(model, points, w)[0] / optimal).mean().item() - 1 for w in widths}


def test_beam_gaps_accepts_the_reference(tsp_case, capsys):
    check_beam_gaps(good_beam_gaps, *tsp_case)
    check_beam_gaps(good_beam_gaps, *tsp_case, seed=None)
    check_beam_gaps(lambda m, p, t, ws: {w: torch.tensor(g) for w, g in good_beam_gaps(m, p, t, ws).items()},
                    *tsp_case)
    check_beam_gaps(lambda m, p, t, ws: {w: np.float32(g) for w, g in good_beam_gaps(m, p, t, ws).items()},
                    *tsp_case)
    assert "passed" in capsys.readouterr().out


def most_probable(model, points, tours, widths):
    optimal = geometry.tour_length(points, tours)
    return {w: (shortest_of_beam(model, points, w)[1] / optimal).mean().item() - 1 for w in widths}


def gap_of_means(model, points, tours, widths):
    optimal = geometry.tour_length(points, tours)
    return {w: shortest_of_beam(model, points, w)[0].mean().item() / optimal.mean().item() - 1 for w in widths}


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (most_probable, "most probable"),
        (gap_of_means, "mean of each instance's gap"),
        (lambda m, p, t, ws: {w: 100 * g for w, g in good_beam_gaps(m, p, t, ws).items()}, "percent"),
        (lambda m, p, t, ws: {w: 1 + g for w, g in good_beam_gaps(m, p, t, ws).items()}, "minus 1"),
        (lambda m, p, t, ws: dict.fromkeys(ws, good_beam_gaps(m, p, t, [ws[-1]])[ws[-1]]), "every width"),
        (lambda m, p, t, ws: list(good_beam_gaps(m, p, t, ws).values()), "dict"),
        (lambda m, p, t, ws: good_beam_gaps(m, p, t, [1, 2]), "one gap per width"),
        (stub, "not implemented yet"),
    ],
    ids=["most-probable", "gap-of-means", "percent", "ratio", "ignores-width", "list", "wrong-widths", "stub"],
)
def test_beam_gaps_rejects_typical_mistakes(tsp_case, wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_beam_gaps(wrong, *tsp_case)
