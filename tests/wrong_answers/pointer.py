"""Typical wrong answers to the code exercises of the pointer-network chapters (10 and 11)."""

WRONG: dict[str, str] = {
    "ex-pointer-distribution": '''def pointer_distribution(s, h, W1, W2, v):
    """p(C = j) for every input j: decoder state s (d,), encoder states h (n, d) -> (n,)."""
    return torch.softmax((h @ W1.T + W2 @ s) @ v, dim=-1)
''',
    "ex-pointer-mask": '''def masked_pointer(scores, chosen):
    """Softmax over the inputs not yet chosen: scores (B, n), chosen (B, n) bool -> probabilities (B, n)."""
    p = torch.softmax(scores, dim=-1).masked_fill(chosen, 0.0)
    return p / p.sum(-1, keepdim=True)
''',
    "ex-tsp-tour-length": '''def my_tour_length(points, tours):
    """Length of each closed tour: points (B, n, 2), tours (B, n) -> (B,)."""
    ordered = points.gather(1, tours.unsqueeze(-1).expand(-1, -1, 2))
    return (ordered[:, 1:] - ordered[:, :-1]).norm(dim=-1).sum(dim=1)
''',
    "ex-tsp-held-karp": '''def shortest_tour_length(points):
    """Optimal closed tour length of points (n, 2) by dynamic programming over subsets."""
    n = len(points)
    here, left, length = 0, set(range(1, n)), 0.0
    while left:
        nxt = min(left, key=lambda j: np.linalg.norm(points[here] - points[j]))
        length += np.linalg.norm(points[here] - points[nxt])
        left.remove(nxt)
        here = nxt
    return length + np.linalg.norm(points[here] - points[0])
''',
}
