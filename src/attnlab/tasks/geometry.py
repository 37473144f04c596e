"""Pointer-network tasks with exact answers: sorting, planar convex hulls and the
travelling salesman problem.

Every generator takes a ``torch.Generator`` (so a run is reproducible) and returns
torch tensors: inputs ``(batch, n, d)`` as float32 and target index sequences
``(batch, T)`` as int64. The solvers and heuristics work on NumPy arrays and accept
tensors too.

Conventions:

- a **tour** is a permutation of ``0..n-1`` that starts at city 0; its length is
  that of the *closed* tour (back to the start). Optimal tours are written in the
  direction whose second city has the smaller index, so each tour has exactly one
  label.
- a **hull** is the list of its vertices counter-clockwise, starting at the vertex
  with the lowest index. In a batch, the end marker ``n`` closes each hull and ``PAD
  = -1`` (the pointer network's padding) fills the rest of the row.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable

import numpy as np
import torch
from scipy.spatial import ConvexHull

from attnlab.pointer import PAD

__all__ = [
    "convex_hull_data",
    "convex_hull_indices",
    "distance_matrices",
    "hull_metrics",
    "hull_sequence",
    "is_simple_polygon",
    "nearest_neighbour_tour",
    "optimality_gaps",
    "polygon_area",
    "shortest_path",
    "solve_tsp",
    "solve_tsp_batch",
    "sorting_data",
    "square_symmetry",
    "tour_length",
    "tsp_data",
    "two_opt",
    "two_opt_from_starts",
]

MAX_EXACT_CITIES = 16
_CANDIDATES_PER_CHUNK = (
    1_000_000  # floats in one Held-Karp layer (8 MB): bounds a chunk's memory
)


def _as_points(name: str, points: object, ndim: int, layout: str) -> np.ndarray:
    """``points`` as a float64 array of ``ndim`` dimensions whose last axis has size
    2."""
    if isinstance(points, torch.Tensor):
        points = points.detach().cpu().numpy()
    array = np.asarray(points, dtype=np.float64)
    if array.ndim != ndim or array.shape[-1] != 2:
        raise ValueError(f"{name} must have shape {layout}, got {array.shape}")
    return array


def _as_tours(tours: object, batch: int, n: int) -> np.ndarray:
    if isinstance(tours, torch.Tensor):
        tours = tours.detach().cpu().numpy()
    array = np.asarray(tours)
    if array.shape != (batch, n):
        raise ValueError(
            f"tours must have shape (batch, n) = {(batch, n)}, got {array.shape}"
        )
    return array.astype(np.int64)


# -----------------------------------------------------------------------------------
# sorting
def sorting_data(
    batch: int, n: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch`` lists of ``n`` numbers uniform in [0, 1) and the pointers that sort
    them.

    Returns ``values (batch, n, 1)`` and ``order (batch, n)`` with ``values[b,
    order[b]]`` increasing.
    """
    values = torch.rand(batch, n, 1, generator=generator)
    return values, values.squeeze(-1).argsort(dim=-1)


# -----------------------------------------------------------------------------------
# convex hull
def convex_hull_indices(points: object) -> np.ndarray:
    """The vertices of the convex hull of ``points (n, 2)``: counter-clockwise from
    the lowest index.

    Uses ``scipy.spatial.ConvexHull`` (Qhull); points lying on an edge are not
    vertices.
    """
    array = _as_points("points", points, 2, "(n, 2)")
    if len(array) < 3:
        raise ValueError(f"a convex hull needs at least 3 points, got {len(array)}")
    vertices = ConvexHull(array).vertices  # counter-clockwise for 2-d input
    start = int(np.argmin(vertices))
    return np.roll(vertices, -start).astype(np.int64)


def convex_hull_data(
    batch: int, n: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch`` sets of ``n`` uniform points in the unit square and their hulls as
    pointer targets.

    Returns ``points (batch, n, 2)`` and ``targets (batch, n + 1)``: each row is the
    hull (see :func:`convex_hull_indices`), then the end marker ``n``, then ``PAD =
    -1``. The rows are those of :func:`convex_hull_indices`, found for the whole
    batch at once by :func:`_hull_edges` (Qhull labels a set that test cannot).
    """
    if n < 3:
        raise ValueError(f"a convex hull needs at least 3 points, got n = {n}")
    points = torch.rand(batch, n, 2, generator=generator)
    targets = torch.full((batch, n + 1), PAD, dtype=torch.long)
    chunk = max(1, _CROSSINGS_PER_CHUNK // n**3)
    for start in range(0, batch, chunk):
        rows = slice(start, start + chunk)
        targets[rows], labelled = _hull_rows(points[rows])
        for b in (~labelled).nonzero().flatten().tolist():  # collinear points
            hull = convex_hull_indices(points[start + b].double().numpy())
            targets[start + b] = PAD
            targets[start + b, : len(hull)] = torch.from_numpy(hull)
            targets[start + b, len(hull)] = n
    return points, targets


_CROSSINGS_PER_CHUNK = 2_000_000  # entries of one chunk's (b, n, n, n) test (16 MB)


def _hull_edges(points: torch.Tensor) -> torch.Tensor:
    """The counter-clockwise hull edges of ``points (batch, n, 2)``: ``(batch, n,
    n)`` bool, True at ``[b, i, j]`` when every other point lies strictly to the left
    of the line from point i to point j."""
    p = points.double()
    d = p.unsqueeze(1) - p.unsqueeze(2)  # d[b, i, j] = p_j - p_i
    # cross[b, i, j, k] = (p_j - p_i) x (p_k - p_i): positive where k is left of i->j
    dx, dy = d[..., 0], d[..., 1]
    cross = dx.unsqueeze(3) * dy.unsqueeze(2) - dy.unsqueeze(3) * dx.unsqueeze(2)
    n = points.shape[1]
    index = torch.arange(n)
    # k is i or j
    ends = (index.view(n, 1, 1) == index.view(1, 1, n)) | (
        index.view(1, n, 1) == index.view(1, 1, n)
    )
    different = index.view(n, 1) != index.view(1, n)
    return ((cross > 0) | ends).all(dim=-1) & different


def _hull_rows(points: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of :func:`convex_hull_data` for ``points (batch, n, 2)``, and
    ``(batch,)`` True where the edges close one polygon (False for collinear
    points)."""
    n = points.shape[1]
    edges = _hull_edges(points)
    out_degree, in_degree = edges.sum(dim=2), edges.sum(dim=1)
    size = out_degree.sum(dim=1)  # the number of hull vertices
    following = edges.long().argmax(dim=2)  # (batch, n): the next vertex
    first = (out_degree > 0).long().argmax(dim=1)  # the vertex with the lowest index
    walk = [first]
    for _ in range(n):
        walk.append(following.gather(1, walk[-1].unsqueeze(1)).squeeze(1))
    walk = torch.stack(walk, dim=1)  # (batch, n + 1)
    step = torch.arange(n + 1)
    closes = walk.gather(1, size.clamp(max=n).unsqueeze(1)).squeeze(1) == first
    returns_early = (
        (walk == first.unsqueeze(1)) & (step > 0) & (step < size.unsqueeze(1))
    ).any(dim=1)
    labelled = (
        (out_degree <= 1).all(dim=1)
        & (in_degree == out_degree).all(dim=1)
        & (size >= 3)
        & closes
        & ~returns_early
    )
    rows = torch.where(step < size.unsqueeze(1), walk, PAD)
    rows = torch.where(step == size.unsqueeze(1), n, rows)
    return rows, labelled


def hull_sequence(row: object, n: int) -> np.ndarray:
    """The point indices of one predicted or target row, up to (not including) the
    end marker ``n`` or ``PAD``."""
    row = np.asarray(
        row.detach().cpu() if isinstance(row, torch.Tensor) else row, dtype=np.int64
    )
    stop = np.flatnonzero((row == n) | (row == PAD))
    return row[: stop[0]] if len(stop) else row


def polygon_area(vertices: np.ndarray) -> float:
    """Area of the polygon through ``vertices (k, 2)`` in order (shoelace formula; 0
    for k < 3)."""
    if len(vertices) < 3:
        return 0.0
    x, y = vertices[:, 0], vertices[:, 1]
    return 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))


def is_simple_polygon(vertices: np.ndarray) -> bool:
    """True if the closed polygon through ``vertices (k, 2)`` has k >= 3 distinct
    vertices and no two non-adjacent edges meet (touching counts as meeting)."""
    k = len(vertices)
    if k < 3 or len(np.unique(vertices, axis=0)) < k:
        return False
    a, b = vertices, np.roll(vertices, -1, axis=0)  # edge i runs from a[i] to b[i]

    def orient(p: np.ndarray, q: np.ndarray, r: np.ndarray) -> np.ndarray:
        return np.sign(
            (q[..., 0] - p[..., 0]) * (r[..., 1] - p[..., 1])
            - (q[..., 1] - p[..., 1]) * (r[..., 0] - p[..., 0])
        )

    def on_segment(p: np.ndarray, q: np.ndarray, r: np.ndarray) -> np.ndarray:
        """r lies in the bounding box of segment p-q (used when p, q, r are
        collinear)."""
        return (
            (np.minimum(p[..., 0], q[..., 0]) <= r[..., 0])
            & (r[..., 0] <= np.maximum(p[..., 0], q[..., 0]))
            & (np.minimum(p[..., 1], q[..., 1]) <= r[..., 1])
            & (r[..., 1] <= np.maximum(p[..., 1], q[..., 1]))
        )

    i, j = np.triu_indices(k, k=2)
    keep = ~((i == 0) & (j == k - 1))  # the first and the last edge share a vertex
    i, j = i[keep], j[keep]
    p1, q1, p2, q2 = a[i], b[i], a[j], b[j]
    o1, o2, o3, o4 = (
        orient(p1, q1, p2),
        orient(p1, q1, q2),
        orient(p2, q2, p1),
        orient(p2, q2, q1),
    )
    crossing = (
        (o1 != o2) & (o3 != o4) & (o1 != 0) & (o2 != 0) & (o3 != 0) & (o4 != 0)
    )
    touching = (
        ((o1 == 0) & on_segment(p1, q1, p2))
        | ((o2 == 0) & on_segment(p1, q1, q2))
        | ((o3 == 0) & on_segment(p2, q2, p1))
        | ((o4 == 0) & on_segment(p2, q2, q1))
    )
    return not bool((crossing | touching).any())


def hull_metrics(
    points: object, predicted: object, targets: object
) -> dict[str, float]:
    """Accuracy and area coverage of predicted hulls, as the pointer-network paper
    measures them.

    points ``(batch, n, 2)``; predicted and targets ``(batch, T)`` rows in the format
    of :func:`convex_hull_data`. ``accuracy``: fraction of rows whose predicted
    sequence equals the target exactly. ``coverage``: mean over the batch of
    area(predicted polygon) / area(true hull), where a prediction that is not a
    simple polygon counts as 0; ``invalid``: the fraction of such predictions.
    """
    array = _as_points("points", points, 3, "(batch, n, 2)")
    batch, n, _ = array.shape
    predicted = (
        predicted.detach().cpu().numpy()
        if isinstance(predicted, torch.Tensor)
        else np.asarray(predicted)
    )
    targets = (
        targets.detach().cpu().numpy()
        if isinstance(targets, torch.Tensor)
        else np.asarray(targets)
    )
    for name, rows in (("predicted", predicted), ("targets", targets)):
        if rows.ndim != 2 or rows.shape[0] != batch:
            raise ValueError(
                f"{name} must have shape (batch, T) with batch = {batch}, got"
                f" {rows.shape}"
            )
    correct, coverage, invalid = 0, 0.0, 0
    for xy, pred_row, target_row in zip(array, predicted, targets, strict=True):
        pred, true = hull_sequence(pred_row, n), hull_sequence(target_row, n)
        correct += int(len(pred) == len(true) and bool(np.all(pred == true)))
        if len(np.unique(pred)) == len(pred) and is_simple_polygon(xy[pred]):
            coverage += polygon_area(xy[pred]) / polygon_area(xy[true])
        else:
            invalid += 1
    return {
        "accuracy": correct / batch,
        "coverage": coverage / batch,
        "invalid": invalid / batch,
    }


# -----------------------------------------------------------------------------------
# TSP
def distance_matrices(points: object) -> np.ndarray:
    """Euclidean distances between all pairs of cities: ``(batch, n, 2)`` ->
    ``(batch, n, n)``."""
    array = _as_points("points", points, 3, "(batch, n, 2)")
    return np.sqrt(((array[:, :, None, :] - array[:, None, :, :]) ** 2).sum(-1))


def tour_length(
    points: torch.Tensor | np.ndarray, tours: torch.Tensor | np.ndarray
) -> torch.Tensor | np.ndarray:
    """Length of each closed tour: ``points (B, n, 2)``, ``tours (B, n)`` ->
    ``(B,)``.

    The sum of the distances between consecutive cities of ``tours[b]``, plus the way
    back from the last city to the first. Works on torch tensors (differentiable in
    ``points``) and on NumPy arrays, and returns the same kind.
    """
    torch_in = isinstance(points, torch.Tensor)
    if not torch_in:
        points, tours = (
            torch.tensor(np.asarray(points, dtype=np.float64)),
            torch.tensor(np.asarray(tours)),
        )
    if points.dim() != 3 or points.shape[-1] != 2:
        raise ValueError(
            f"points must have shape (batch, n, 2), got {tuple(points.shape)}"
        )
    if tuple(tours.shape) != tuple(points.shape[:2]):
        raise ValueError(
            f"tours must have shape (batch, n) = {tuple(points.shape[:2])}, got"
            f" {tuple(tours.shape)}"
        )
    ordered = points.gather(1, tours.long().unsqueeze(-1).expand(-1, -1, 2))
    lengths = (ordered - ordered.roll(-1, dims=1)).norm(dim=-1).sum(dim=1)
    return lengths if torch_in else lengths.numpy()


def optimality_gaps(lengths: object, optimal: object) -> tuple[float, float]:
    """How much longer tours of ``lengths (B,)`` are than the ``optimal`` lengths
    ``(B,)`` of the same instances, two ways: ``(gap of means, mean gap)``.

    The gap of means is ``mean(lengths) / mean(optimal) - 1``; the mean gap is the
    mean over instances of each tour's own excess ``lengths / optimal - 1``. Both
    are 0 for optimal tours; they differ where the excess depends on the instance's
    size. Takes tensors or arrays, returns Python floats.
    """
    arrays = []
    for name, values in (("lengths", lengths), ("optimal", optimal)):
        if isinstance(values, torch.Tensor):
            values = values.detach().cpu().numpy()
        array = np.asarray(values, dtype=np.float64)
        if array.ndim != 1 or len(array) == 0:
            raise ValueError(
                f"{name} must have shape (batch,) with batch >= 1, got {array.shape}"
            )
        arrays.append(array)
    lengths, optimal = arrays
    if lengths.shape != optimal.shape:
        raise ValueError(
            f"lengths {lengths.shape} and optimal {optimal.shape} must have the same"
            " shape (batch,)"
        )
    if (optimal <= 0).any():
        raise ValueError("optimal lengths must be positive")
    return (
        float(lengths.mean() / optimal.mean() - 1),
        float(np.mean(lengths / optimal - 1)),
    )


def _canonical_direction(tours: np.ndarray) -> np.ndarray:
    """Reverse ``tours[b, 1:]`` where needed so that the second city has a smaller
    index than the last."""
    flip = tours[:, 1] > tours[:, -1]
    tours = tours.copy()
    tours[flip, 1:] = tours[flip, 1:][:, ::-1]
    return tours


def solve_tsp_batch(points: object) -> np.ndarray:
    """Exact optimal tours by Held-Karp dynamic programming, vectorised over subsets
    and instances.

    points ``(batch, n, 2)`` -> tours ``(batch, n)``, each starting at city 0 (see
    the module's conventions). ``cost[S, j]`` is the shortest path that leaves city
    0, visits exactly the cities of the set S and ends at ``j`` in S; it is filled
    for all sets of one size at once from the sets one smaller:
    ``cost[S, j] = min_k cost[S - {j}, k] + d(k, j)``. Time O(2^n n^2), memory O(2^n
    n) per instance.
    """
    array = _as_points("points", points, 3, "(batch, n, 2)")
    batch, n, _ = array.shape
    if n > MAX_EXACT_CITIES:
        raise ValueError(
            "Held-Karp needs memory 2^n per instance; n must be <="
            f" {MAX_EXACT_CITIES}, got {n}"
        )
    if n <= 3:  # every tour of up to three cities has the same length
        return np.tile(np.arange(n, dtype=np.int64), (batch, 1))
    m = n - 1
    # largest layer, per instance
    widest = max(size * math.comb(m, size) for size in range(1, m + 1)) * m
    chunk = max(1, _CANDIDATES_PER_CHUNK // widest)
    return np.concatenate(
        [_held_karp(array[i : i + chunk]) for i in range(0, batch, chunk)]
    )


def _held_karp(points: np.ndarray) -> np.ndarray:
    batch, n, _ = points.shape
    # cities 1..n-1 are bits 0..m-1 of a subset; the instances are the last axis
    m = n - 1
    dist = distance_matrices(points).transpose(1, 2, 0)  # (n, n, B)
    # (m, B): from the start to city j (and back: distances are symmetric)
    d0 = dist[0, 1:]
    # d_to[j, k] = d(k, j), (m, m, B)
    d_to = np.ascontiguousarray(dist[1:, 1:].transpose(1, 0, 2))
    bits = 1 << np.arange(m)
    cost = np.full((1 << m, m, batch), np.inf)
    # the city before j on the best path
    parent = np.zeros((1 << m, m, batch), dtype=np.int8)
    cost[bits, np.arange(m)] = d0
    subsets = np.arange(1 << m)
    sizes = np.array([bin(s).count("1") for s in subsets])
    for size in range(2, m + 1):
        layer = subsets[sizes == size]
        # every pair (S, j) with j in S
        s_index, j = np.nonzero((layer[:, None] & bits[None, :]) != 0)
        subset = layer[s_index]
        # (pairs, k, B): cost[S - {j}, k] + d(k, j)
        candidates = cost[subset ^ bits[j]] + d_to[j]
        best = candidates.argmin(axis=1)
        cost[subset, j] = np.take_along_axis(candidates, best[:, None, :], axis=1)[
            :, 0
        ]
        parent[subset, j] = best
    full = (1 << m) - 1
    last = (cost[full] + d0).argmin(axis=0)  # (B,)
    tours = np.zeros((batch, n), dtype=np.int64)
    subset, rows = np.full(batch, full), np.arange(batch)
    for position in range(n - 1, 0, -1):
        tours[:, position] = last + 1
        previous = parent[subset, last, rows].astype(np.int64)
        subset = subset ^ (1 << last)
        last = previous
    return _canonical_direction(tours)


MAX_ENUMERATED_CITIES = 8


def shortest_path(
    points: object, subset: Iterable[int], end: int
) -> tuple[list[int], float]:
    """The sub-problem of Held-Karp, solved by trying every order: the shortest path
    that leaves city 0 of ``points (n, 2)``, visits exactly the cities of ``subset``
    (which leaves out 0) and ends at ``end`` in ``subset``.

    Returns ``(path, length)``, the path as city indices from 0 to ``end``; its
    length is ``cost(subset, end)`` of the recurrence. For small sets only (at most
    8 cities): it is the definition that Held-Karp computes without enumerating.
    """
    array = _as_points("points", points, 2, "(n, 2)")
    cities = sorted({int(c) for c in subset})
    n = len(array)
    if any(not 0 < c < n for c in cities):
        raise ValueError(
            f"subset must hold cities 1..{n - 1} (city 0 is the start), got {cities}"
        )
    if end not in cities:
        raise ValueError(f"end must be a city of the subset {cities}, got {end}")
    if len(cities) > MAX_ENUMERATED_CITIES:
        raise ValueError(
            "shortest_path tries every order: at most"
            f" {MAX_ENUMERATED_CITIES} cities, got {len(cities)}"
        )
    dist = distance_matrices(array[None])[0]
    middle = [c for c in cities if c != end]
    best, best_length = [], math.inf
    for order in itertools.permutations(middle):
        path = [0, *order, end]
        length = float(sum(dist[a, b] for a, b in itertools.pairwise(path)))
        if length < best_length:
            best, best_length = path, length
    return best, best_length


def solve_tsp(points: object) -> np.ndarray:
    """The optimal closed tour of ``points (n, 2)`` by Held-Karp, starting at city 0:
    ``(n,)`` int64."""
    array = _as_points("points", points, 2, "(n, 2)")
    return solve_tsp_batch(array[None])[0]


def tsp_data(
    batch: int, n: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch`` instances of ``n`` uniform cities in the unit square with their
    optimal tours as labels.

    Returns ``points (batch, n, 2)`` float32 and ``tours (batch, n)`` int64 (exact,
    by Held-Karp on the same float32 coordinates the model sees).
    """
    points = torch.rand(batch, n, 2, generator=generator)
    return points, torch.from_numpy(solve_tsp_batch(points))


def square_symmetry(points: torch.Tensor, which: torch.Tensor) -> torch.Tensor:
    """Map each instance ``points (B, n, 2)`` by one of the 8 symmetries of the unit
    square (``which (B,)``).

    ``which`` in 0..7: bit 0 mirrors x, bit 1 mirrors y, bit 2 swaps x and y.
    Distances are unchanged, so an optimal tour stays optimal with the same labels: a
    free eightfold augmentation of a labelled TSP set.
    """
    if points.dim() != 3 or points.shape[-1] != 2:
        raise ValueError(
            f"points must have shape (batch, n, 2), got {tuple(points.shape)}"
        )
    if tuple(which.shape) != (points.shape[0],):
        raise ValueError(
            f"which must have shape (batch,) = ({points.shape[0]},), got"
            f" {tuple(which.shape)}"
        )
    x, y = points[..., 0], points[..., 1]
    x = torch.where((which % 2 == 1).unsqueeze(-1), 1 - x, x)
    y = torch.where((which // 2 % 2 == 1).unsqueeze(-1), 1 - y, y)
    swap = (which // 4 == 1).unsqueeze(-1)
    return torch.stack([torch.where(swap, y, x), torch.where(swap, x, y)], dim=-1)


def nearest_neighbour_tour(points: object, start: int = 0) -> np.ndarray:
    """Greedy tours: from city ``start``, always go to the closest unvisited city.
    ``(B, n, 2)`` -> ``(B, n)``.

    The tour is returned rotated to begin at city 0 (the same closed tour), as every
    tour in this package is.
    """
    dist = distance_matrices(points)
    batch, n, _ = dist.shape
    if not 0 <= start < n:
        raise ValueError(f"start must be a city between 0 and {n - 1}, got {start}")
    rows = np.arange(batch)
    tours = np.full((batch, n), start, dtype=np.int64)
    visited = np.zeros((batch, n), dtype=bool)
    visited[:, start] = True
    for step in range(1, n):
        here = dist[rows, tours[:, step - 1]]
        tours[:, step] = np.where(visited, np.inf, here).argmin(axis=-1)
        visited[rows, tours[:, step]] = True
    first = (tours == 0).argmax(axis=1)
    return tours[rows[:, None], (first[:, None] + np.arange(n)) % n]


def two_opt(points: object, tours: object, max_rounds: int = 1000) -> np.ndarray:
    """Improve ``tours (B, n)`` by 2-opt moves until none shortens any tour (a local
    optimum).

    A move reverses ``tour[i..j]`` (1 <= i < j <= n-1), replacing the edges (t[i-1],
    t[i]) and (t[j], t[j+1]) by (t[i-1], t[j]) and (t[i], t[j+1]). Each round
    applies, in every tour, the move that shortens it most. City 0 stays first.
    """
    dist = distance_matrices(points)
    batch, n, _ = dist.shape
    tours = _as_tours(tours, batch, n).copy()
    if n < 4:
        return tours
    i, j = np.triu_indices(n, k=1)
    keep = i >= 1
    i, j = i[keep], j[keep]
    rows = np.arange(batch)[:, None]
    positions = np.arange(n)[None, :]
    for _ in range(max_rounds):
        a, b, c, d = tours[:, i - 1], tours[:, i], tours[:, j], tours[:, (j + 1) % n]
        delta = (
            dist[rows, a, c] + dist[rows, b, d] - dist[rows, a, b] - dist[rows, c, d]
        )
        move = delta.argmin(axis=1)
        improve = delta[np.arange(batch), move] < -1e-12
        if not improve.any():
            break
        lo, hi = i[move][:, None], j[move][:, None]
        inside = improve[:, None] & (positions >= lo) & (positions <= hi)
        source = np.where(inside, lo + hi - positions, positions)
        tours = np.take_along_axis(tours, source, axis=1)
    return tours


def two_opt_from_starts(points: object, starts: int) -> np.ndarray:
    """The shortest of ``starts`` 2-opt tours ``(B, n)``: nearest neighbour from each
    of the cities ``0 .. starts - 1``, then :func:`two_opt`; ``points (B, n, 2)``.

    ``starts`` candidates per instance, as many as a beam of that width proposes.
    """
    points = _as_points("points", points, 3, "(batch, n, 2)")
    if not 1 <= starts <= points.shape[1]:
        raise ValueError(
            f"starts must be between 1 and the number of cities {points.shape[1]},"
            f" got {starts}"
        )
    tours = np.stack(
        [two_opt(points, nearest_neighbour_tour(points, s)) for s in range(starts)],
        axis=1,
    )
    lengths = np.stack([tour_length(points, tours[:, s]) for s in range(starts)], 1)
    return tours[np.arange(len(tours)), lengths.argmin(axis=1)]
