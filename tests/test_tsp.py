"""Geometry tasks: exact TSP against brute force, heuristics, tour length, convex hull labels and metrics."""

import itertools

import numpy as np
import pytest
import torch
from scipy.spatial import ConvexHull
from scipy.spatial.distance import cdist

from attnlab.pointer import PAD
from attnlab.tasks import (
    convex_hull_data,
    convex_hull_indices,
    distance_matrices,
    hull_metrics,
    is_simple_polygon,
    nearest_neighbour_tour,
    optimality_gaps,
    polygon_area,
    shortest_path,
    solve_tsp,
    solve_tsp_batch,
    sorting_data,
    square_symmetry,
    tour_length,
    tsp_data,
    two_opt,
    two_opt_from_starts,
)


def brute_force_length(points: np.ndarray) -> float:
    """Shortest closed tour over every permutation of the cities after city 0."""
    n = len(points)
    tours = np.array([(0, *rest) for rest in itertools.permutations(range(1, n))])
    return float(tour_length(np.broadcast_to(points, (len(tours), n, 2)), tours).min())


def assert_tours(tours: np.ndarray, n: int) -> None:
    for tour in tours:
        assert tour[0] == 0
        assert sorted(tour.tolist()) == list(range(n))


def test_tour_length_of_unit_square_by_hand():
    square = np.array([[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]])
    assert tour_length(square, np.array([[0, 1, 2, 3]]))[0] == pytest.approx(4.0)
    # crossing the square twice along its diagonals: 1 + sqrt(2) + 1 + sqrt(2)
    assert tour_length(square, np.array([[0, 1, 3, 2]]))[0] == pytest.approx(2 + 2 * np.sqrt(2))


def test_tour_length_torch_matches_numpy_and_loop():
    gen = torch.Generator().manual_seed(0)
    points = torch.rand(5, 7, 2, generator=gen, dtype=torch.float64)
    tours = torch.stack([torch.randperm(7, generator=gen) for _ in range(5)])
    out = tour_length(points, tours)
    assert isinstance(out, torch.Tensor) and out.shape == (5,)
    loop = [sum(float(torch.dist(points[b, tours[b, i]], points[b, tours[b, (i + 1) % 7]])) for i in range(7))
            for b in range(5)]
    np.testing.assert_allclose(out.numpy(), loop, rtol=1e-12)
    np.testing.assert_allclose(tour_length(points.numpy(), tours.numpy()), loop, rtol=1e-12)


def test_tour_length_is_differentiable_and_rotation_invariant():
    points = torch.rand(2, 6, 2, dtype=torch.float64, requires_grad=True)
    tours = torch.tensor([[0, 1, 2, 3, 4, 5], [5, 3, 1, 0, 2, 4]])
    assert torch.autograd.gradcheck(lambda p: tour_length(p, tours), (points,))
    shifted = tours.roll(2, dims=1)
    torch.testing.assert_close(tour_length(points, shifted), tour_length(points, tours))


@pytest.mark.parametrize("points, tours", [(np.zeros((2, 5)), np.zeros((2, 5))),
                                           (np.zeros((2, 5, 2)), np.zeros((2, 4)))])
def test_tour_length_rejects_bad_shapes(points, tours):
    with pytest.raises(ValueError, match="shape"):
        tour_length(points, tours)


def test_distance_matrices_match_scipy_cdist():
    points = np.random.default_rng(0).random((3, 6, 2))
    for b in range(3):
        np.testing.assert_allclose(distance_matrices(points)[b], cdist(points[b], points[b]), atol=1e-12)


@pytest.mark.parametrize("n", range(1, 9))
def test_held_karp_matches_brute_force(n):
    rng = np.random.default_rng(n)
    points = rng.random((12, n, 2))
    tours = solve_tsp_batch(points)
    assert tours.shape == (12, n) and tours.dtype == np.int64
    assert_tours(tours, n)
    for b in range(12):
        assert tour_length(points[b : b + 1], tours[b : b + 1])[0] == pytest.approx(brute_force_length(points[b]),
                                                                                    abs=1e-12)


def test_held_karp_known_optimum_and_canonical_direction():
    # eight points on a circle, shuffled: the optimal tour goes around the circle
    angles = np.linspace(0, 2 * np.pi, 8, endpoint=False)
    order = np.random.default_rng(1).permutation(8)
    points = np.stack([np.cos(angles), np.sin(angles)], axis=1)[order]
    tour = solve_tsp(points)
    assert tour_length(points[None], tour[None])[0] == pytest.approx(16 * np.sin(np.pi / 8))
    assert tour[1] < tour[-1]
    around = np.argsort(angles[order])
    # consecutive cities of the tour are neighbours on the circle
    positions = np.empty(8, dtype=int)
    positions[around] = np.arange(8)
    steps = np.diff(positions[np.append(tour, tour[0])]) % 8
    assert set(steps.tolist()) <= {1, 7}


def test_shortest_path_is_held_karps_recurrence_and_closes_the_optimal_tour():
    points = np.random.default_rng(5).random((7, 2))
    dist = cdist(points, points)
    for subset in ([1, 2, 3, 4], [2, 5, 6], [1, 2, 3, 4, 5, 6]):
        for j in subset:
            path, length = shortest_path(points, subset, j)
            assert path[0] == 0 and path[-1] == j and sorted(path[1:]) == sorted(subset)
            assert length == pytest.approx(sum(dist[a, b] for a, b in itertools.pairwise(path)), abs=1e-12)
            rest = [k for k in subset if k != j]
            expected = (min(shortest_path(points, rest, k)[1] + dist[k, j] for k in rest) if rest
                        else dist[0, j])
            assert length == pytest.approx(expected, abs=1e-12)  # cost(S, j) = min_k cost(S - {j}, k) + d(k, j)
    full = range(1, 7)
    closed = min(shortest_path(points, full, j)[1] + dist[j, 0] for j in full)
    assert closed == pytest.approx(tour_length(points[None], solve_tsp(points)[None])[0], abs=1e-12)


def test_shortest_path_rejects_what_it_cannot_solve():
    points = np.random.default_rng(6).random((12, 2))
    with pytest.raises(ValueError, match="end must be a city of the subset"):
        shortest_path(points, [1, 2], 3)
    with pytest.raises(ValueError, match="city 0 is the start"):
        shortest_path(points, [0, 1], 1)
    with pytest.raises(ValueError, match="at most 8 cities, got 9"):
        shortest_path(points, range(1, 10), 1)


def test_solve_tsp_single_matches_batch_and_rejects_bad_input():
    points = np.random.default_rng(2).random((4, 9, 2))
    np.testing.assert_array_equal(np.stack([solve_tsp(p) for p in points]), solve_tsp_batch(points))
    with pytest.raises(ValueError, match=r"\(n, 2\)"):
        solve_tsp(points)
    with pytest.raises(ValueError, match="n must be <="):
        solve_tsp(np.zeros((17, 2)))


def test_tsp_data_labels_are_optimal_permutations():
    points, tours = tsp_data(50, 7, torch.Generator().manual_seed(3))
    assert points.shape == (50, 7, 2) and points.dtype == torch.float32 and tours.dtype == torch.int64
    assert_tours(tours.numpy(), 7)
    for b in range(0, 50, 10):
        assert tour_length(points[b : b + 1].double(), tours[b : b + 1])[0].item() == pytest.approx(
            brute_force_length(points[b].double().numpy()), abs=1e-9)


def test_heuristics_are_permutations_and_never_beat_the_optimum():
    points = np.random.default_rng(4).random((200, 9, 2))
    optimal = tour_length(points, solve_tsp_batch(points))
    nearest = nearest_neighbour_tour(points)
    improved = two_opt(points, nearest)
    for tours in (nearest, improved):
        assert_tours(tours, 9)
        assert (tour_length(points, tours) >= optimal - 1e-12).all()
    # 2-opt only ever shortens a tour, and it does on average
    assert (tour_length(points, improved) <= tour_length(points, nearest) + 1e-12).all()
    assert tour_length(points, improved).mean() < tour_length(points, nearest).mean()


def test_two_opt_reaches_a_local_optimum_and_keeps_optimal_tours():
    points = np.random.default_rng(5).random((30, 8, 2))
    optimal = solve_tsp_batch(points)
    np.testing.assert_allclose(tour_length(points, two_opt(points, optimal)), tour_length(points, optimal))
    improved = two_opt(points, np.tile(np.arange(8), (30, 1)))
    length = tour_length(points, improved)
    for i, j in itertools.combinations(range(1, 8), 2):  # no single reversal shortens any result
        reversed_ = improved.copy()
        reversed_[:, i : j + 1] = reversed_[:, i : j + 1][:, ::-1]
        assert (tour_length(points, reversed_) >= length - 1e-12).all()


def test_nearest_neighbour_by_hand():
    points = np.array([[[0.0, 0.0], [3.0, 0.0], [1.0, 0.0], [2.0, 0.0]]])
    np.testing.assert_array_equal(nearest_neighbour_tour(points), [[0, 2, 3, 1]])
    # from city 1 (x = 3): 1 -> 3 (x = 2) -> 2 (x = 1) -> 0, rotated to begin at city 0
    np.testing.assert_array_equal(nearest_neighbour_tour(points, start=1), [[0, 1, 3, 2]])


def test_nearest_neighbour_from_any_start_follows_the_rule():
    points = np.random.default_rng(6).random((40, 8, 2))
    dist = np.linalg.norm(points[:, :, None] - points[:, None, :], axis=-1)
    for start in range(8):
        tours = nearest_neighbour_tour(points, start=start)
        assert_tours(tours, 8)
        for b in range(40):  # walk the closed tour from `start`: each step goes to the closest unvisited city
            order = np.roll(tours[b], -int(np.flatnonzero(tours[b] == start)[0]))
            for k in range(1, 8):
                unvisited = [c for c in range(8) if c not in order[:k]]
                assert dist[b, order[k - 1], order[k]] == min(dist[b, order[k - 1], c] for c in unvisited)
    with pytest.raises(ValueError, match="start must be a city between 0 and 7, got 8"):
        nearest_neighbour_tour(points, start=8)


def test_sorting_data_targets_sort_the_values():
    values, order = sorting_data(20, 10, torch.Generator().manual_seed(0))
    assert values.shape == (20, 10, 1) and order.shape == (20, 10)
    ordered = values.squeeze(-1).gather(1, order)
    assert (ordered[:, 1:] > ordered[:, :-1]).all()


def test_convex_hull_indices_are_counter_clockwise_from_the_lowest_index():
    square_with_inside = np.array([[0.5, 0.5], [1.0, 1.0], [0.0, 0.0], [0.2, 0.7], [1.0, 0.0], [0.0, 1.0]])
    np.testing.assert_array_equal(convex_hull_indices(square_with_inside), [1, 5, 2, 4])
    points = np.random.default_rng(6).random((40, 2))
    hull = convex_hull_indices(points)
    assert hull[0] == hull.min()
    assert set(hull.tolist()) == set(ConvexHull(points).vertices.tolist())
    first, second = points[np.roll(hull, -1)] - points[hull], points[np.roll(hull, -2)] - points[np.roll(hull, -1)]
    signed = first[:, 0] * second[:, 1] - first[:, 1] * second[:, 0]
    assert (signed > 0).all()  # every turn is to the left
    with pytest.raises(ValueError, match="at least 3"):
        convex_hull_indices(points[:2])


def test_convex_hull_data_rows():
    points, targets = convex_hull_data(30, 8, torch.Generator().manual_seed(7))
    assert points.shape == (30, 8, 2) and targets.shape == (30, 9)
    for xy, row in zip(points, targets, strict=True):
        hull = convex_hull_indices(xy.numpy())
        k = len(hull)
        np.testing.assert_array_equal(row[:k].numpy(), hull)
        assert row[k] == 8 and (row[k + 1 :] == PAD).all()


def test_convex_hull_data_labels_every_size_as_qhull_does():
    """The batched edge test gives Qhull's rows, small and large sets, several chunks."""
    generator = torch.Generator().manual_seed(9)
    for n, batch in [(3, 200), (5, 300), (10, 300), (20, 200), (50, 40)]:
        points, targets = convex_hull_data(batch, n, generator)
        for xy, row in zip(points, targets, strict=True):
            hull = convex_hull_indices(xy.double().numpy())
            k = len(hull)
            np.testing.assert_array_equal(row[:k].numpy(), hull)
            assert row[k] == n and (row[k + 1 :] == PAD).all()


def test_convex_hull_data_leaves_collinear_points_to_qhull():
    from attnlab.tasks.geometry import _hull_rows

    # a point in the middle of the bottom edge: no edge has all others strictly left
    square = torch.tensor([[[0.0, 0.0], [0.5, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]])
    _, labelled = _hull_rows(square)
    assert not labelled.any()
    _, labelled = _hull_rows(square[:, [0, 2, 3, 4]])
    assert labelled.all()
    with pytest.raises(ValueError, match="at least 3"):
        convex_hull_data(2, 2, torch.Generator().manual_seed(0))


def test_polygon_area_and_simplicity_by_hand():
    square = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    assert polygon_area(square) == pytest.approx(1.0)
    assert polygon_area(square[::-1]) == pytest.approx(1.0)
    assert polygon_area(square[:2]) == 0.0
    assert is_simple_polygon(square)
    assert not is_simple_polygon(square[[0, 2, 1, 3]])  # a bow tie crosses itself
    assert not is_simple_polygon(square[:2])
    assert not is_simple_polygon(square[[0, 1, 2, 0]])  # a repeated vertex
    # a vertex touching a non-adjacent edge
    assert not is_simple_polygon(np.array([[0.0, 0.0], [2.0, 0.0], [1.0, 1.0], [1.0, 0.0], [0.5, 2.0]]))


def test_hull_metrics():
    points, targets = convex_hull_data(20, 9, torch.Generator().manual_seed(8))
    perfect = hull_metrics(points, targets, targets)
    assert perfect == {"accuracy": 1.0, "coverage": pytest.approx(1.0), "invalid": 0.0}
    # drop the last hull vertex of every row: a smaller simple polygon, never exactly right
    shorter = targets.clone()
    ratios = []
    for b in range(20):
        k = int((targets[b] == 9).nonzero()[0])
        shorter[b, k - 1], shorter[b, k] = 9, PAD
        hull = targets[b, :k].numpy()
        xy = points[b].double().numpy()
        ratios.append(polygon_area(xy[hull[:-1]]) / polygon_area(xy[hull]))
    metrics = hull_metrics(points, shorter, targets)
    assert metrics["accuracy"] == 0.0 and metrics["invalid"] == 0.0
    assert metrics["coverage"] == pytest.approx(np.mean(ratios))
    # a crossing polygon (two vertices swapped) counts as invalid, with coverage 0
    crossed = targets.clone()
    crossed[:, [1, 2]] = crossed[:, [2, 1]]
    assert hull_metrics(points, crossed, targets)["invalid"] > 0.5
    with pytest.raises(ValueError, match="predicted"):
        hull_metrics(points, targets[:3], targets)


def test_square_symmetries_keep_distances_and_optimal_tours():
    points, tours = tsp_data(8, 8, torch.Generator().manual_seed(9))
    which = torch.arange(8)
    moved = square_symmetry(points, which)
    assert ((moved >= 0) & (moved <= 1)).all()
    np.testing.assert_allclose(distance_matrices(moved), distance_matrices(points), atol=1e-6)
    # the 8 maps are distinct: each sends the point (0.1, 0.3) somewhere else
    corner = square_symmetry(torch.tensor([[[0.1, 0.3]]]).expand(8, 1, 2), which)[:, 0]
    assert len({tuple(p.tolist()) for p in corner.round(decimals=4)}) == 8
    np.testing.assert_allclose(tour_length(moved.double(), tours), tour_length(points.double(), tours), atol=1e-6)
    np.testing.assert_allclose(tour_length(moved.double(), torch.from_numpy(solve_tsp_batch(moved))),
                               tour_length(points.double(), tours), atol=1e-6)
    with pytest.raises(ValueError, match="which"):
        square_symmetry(points, which[:3])


def test_tour_and_hull_figures_label_their_polygons():
    import matplotlib

    matplotlib.use("Agg")
    from attnlab.plot import hulls, tours

    square = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    ax = tours(square, {"around": [0, 1, 2, 3], "crossing": [0, 2, 1, 3]})
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["around (length 4.000)", f"crossing (length {2 + 2 * np.sqrt(2):.3f})"]
    assert ax.get_xlabel() == "x" and ax.get_ylabel() == "y"
    ax = hulls(square, {"true hull": [0, 1, 2, 3], "predicted": [0, 1, 2]})
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["true hull (4 vertices, area 1.000)", "predicted (3 vertices, area 0.500)"]
    ax = hulls(square, {"bow tie": [0, 2, 1, 3]})
    assert ax.get_legend().get_texts()[0].get_text() == "bow tie (4 vertices, crosses itself)"
    with pytest.raises(ValueError, match=r"\(n, 2\)"):
        tours(square[None], {"around": [0, 1, 2, 3]})


def test_two_opt_from_starts_keeps_the_shortest_of_the_starts():
    points = np.random.default_rng(7).random((60, 9, 2))
    by_start = np.stack([tour_length(points, two_opt(points, nearest_neighbour_tour(points, s))) for s in range(4)])
    best = two_opt_from_starts(points, 4)
    assert_tours(best, 9)
    np.testing.assert_allclose(tour_length(points, best), by_start.min(axis=0))
    assert (by_start.min(axis=0) < by_start[0] - 1e-9).any()  # another start does better somewhere
    np.testing.assert_array_equal(two_opt_from_starts(points, 1), two_opt(points, nearest_neighbour_tour(points)))
    assert isinstance(two_opt_from_starts(torch.from_numpy(points).float(), 2), np.ndarray)
    with pytest.raises(ValueError, match="starts must be between 1 and the number of cities 9, got 10"):
        two_opt_from_starts(points, 10)


def test_optimality_gaps_by_hand_and_against_a_loop():
    # two instances, optimal lengths 1 and 3, tours of length 2 and 3: the first is 100% too long, the second optimal
    gap_of_means, mean_gap = optimality_gaps(torch.tensor([2.0, 3.0]), np.array([1.0, 3.0]))
    assert gap_of_means == pytest.approx(5 / 4 - 1) and mean_gap == pytest.approx(0.5)
    assert optimality_gaps([3.0, 1.5], [3.0, 1.5]) == (0.0, 0.0)
    rng = np.random.default_rng(0)
    optimal = rng.uniform(1, 4, size=50)
    lengths = optimal * rng.uniform(1, 1.3, size=50)
    excess = [length / best - 1 for length, best in zip(lengths, optimal, strict=True)]
    gap_of_means, mean_gap = optimality_gaps(lengths, optimal)
    assert gap_of_means == pytest.approx(sum(lengths) / sum(optimal) - 1)
    assert mean_gap == pytest.approx(sum(excess) / len(excess))
    for bad in ([[1.0]], [1.0, 2.0, 3.0], []):
        with pytest.raises(ValueError, match="shape"):
            optimality_gaps(bad, [1.0, 2.0])
    with pytest.raises(ValueError, match="positive"):
        optimality_gaps([1.0], [0.0])


def test_the_records_gaps_are_per_instance_and_refuse_a_tour_below_the_optimum():
    from attnlab.experiments.pointer_networks_tsp import instance_gaps, length_gaps

    gaps = length_gaps(torch.tensor([3.0, 2.0 * (1 - 1e-16)], dtype=torch.float64), torch.tensor([2.0, 2.0], dtype=torch.float64))
    assert gaps.tolist() == [0.5, 0.0]  # a rounding error below the optimum counts as 0
    with pytest.raises(ValueError, match="shorter than the optimal one"):
        length_gaps(torch.tensor([1.9]), torch.tensor([2.0]))
    square = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]])
    crossed, optimal = torch.tensor([[0, 2, 1, 3]]), torch.tensor([[0, 1, 2, 3]])
    assert instance_gaps(square, optimal, crossed).item() == pytest.approx((2 + 2 * 2**0.5) / 4 - 1)


def test_train_tsp_takes_the_steps_rate_and_evaluations_it_is_given():
    from attnlab.experiments.pointer_networks_tsp import train_tsp

    data = tsp_data(16, 5, torch.Generator().manual_seed(0))
    runs = {lr: train_tsp(data, data, steps=4, lr=lr, eval_every=2) for lr in (1e-3, 1e-2)}
    for _, history in runs.values():
        assert len(history.loss) == 4 and history.metric("greedy_gap")[0] == [2, 4]
    (slow, _), (fast, _) = runs.values()
    assert any(not torch.equal(a, b) for a, b in zip(slow.parameters(), fast.parameters(), strict=True))


def test_pointer_tsp_half_steps_records_every_recipe_and_judges_each_seed(tmp_path, monkeypatch, capsys):
    from attnlab.experiments import pointer_networks_tsp, record
    from attnlab.experiments import pointer_tsp_half_steps as half

    for key, value in {"train": 32, "test": 4, "val": 8, "batch": 8}.items():
        monkeypatch.setitem(pointer_networks_tsp.SETTINGS, key, value)
    recipes = {half.CHAPTER: {"steps": 4, "lr": 1e-3}, "2 steps, rate 0.002": {"steps": 2, "lr": 2e-3}}
    monkeypatch.setitem(half.SETTINGS, "recipes", recipes)
    monkeypatch.setitem(half.SETTINGS, "evaluations", 2)
    path = tmp_path / "half.json"
    try:
        half.main(["--seeds", "2", "--json", str(path)])
    except SystemExit as verdict:  # a toy run may contradict the page's statement
        assert "contradicts" in str(verdict)
    runs = record.load(path)["results"]["runs"]
    assert [run["seed"] for run in runs] == [0, 1]
    for run in runs:
        assert run["recipes"][half.CHAPTER]["val_steps"] == [2, 4]
        assert run["recipes"]["2 steps, rate 0.002"]["val_steps"] == [1, 2]
        for result in run["recipes"].values():
            assert result["best_gap"] == min(result["val_gap"]) and result["seconds"] > 0
    assert "| 2 steps, rate 0.002 | " in capsys.readouterr().out

    def made(chapter, shorter):
        return [{"seed": s, "recipes": {half.CHAPTER: {"best_gap": c}, "2 steps, rate 0.002": {"best_gap": h}}}
                for s, (c, h) in enumerate(zip(chapter, shorter, strict=True))]

    claim = "2 steps, rate 0.002: a larger smallest validation gap than the chapter's recipe, on every seed"
    assert half.conclusions({"runs": made([0.02, 0.03], [0.025, 0.031])}) == {claim: True}
    assert half.conclusions({"runs": made([0.02, 0.03], [0.025, 0.029])}) == {claim: False}  # one seed reaches it
