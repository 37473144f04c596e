"""Typical wrong answers to the code exercises of chapter 10, "Neural Turing Machines".

Each entry maps an exercise label to the complete source of a solution cell that runs but is wrong; a grader that
submits it must take that exercise's points away.
"""

WRONG: dict[str, str] = {
    "ex-ntm-write": '''
def my_write(
    memory: torch.Tensor, w: torch.Tensor, erase: torch.Tensor, add: torch.Tensor
) -> torch.Tensor:
    """Erase, then add, every row in proportion to its weight."""
    ### BEGIN SOLUTION
    weights = w[:, :, None]
    added = memory + weights * add[:, None, :]  # adds first: the new content is erased at once
    return added * (1 - weights * erase[:, None, :])
    ### END SOLUTION
''',
    "ex-ntm-fix-cosine": '''
def fixed_cosine_similarity(memory: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
    """Cosine of key (batch, M) with every row of memory (batch, N, M) -> (batch, N)."""
    ### BEGIN SOLUTION
    eps = 1e-8
    dot = (memory * key[:, None, :]).sum(-1)
    # eps after the square root: the value is finite, the gradient at a zero row is not
    row_norm = memory.pow(2).sum(-1).sqrt() + eps
    key_norm = key.pow(2).sum(-1, keepdim=True).sqrt() + eps
    return dot / (row_norm * key_norm)
    ### END SOLUTION
''',
    "ex-ntm-key-strength": '''
def measure_focus(memory: torch.Tensor, key: torch.Tensor):
    """Content weighting for growing beta: (betas, entropies in nats, largest weights)."""
    ### BEGIN SOLUTION
    betas = torch.tensor([0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0])
    weights = torch.stack(
        [ntm.content_addressing(memory, key, beta.reshape(1))[0] for beta in betas]
    )
    entropies = -(weights * weights.log()).sum(-1)  # 0 * log(0) is NaN at a large beta
    return betas, entropies, weights.amax(-1)
    ### END SOLUTION
''',
    "ex-ntm-shift": '''
def my_shift(w: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
    """Circular convolution of each weighting with its kernel."""
    ### BEGIN SOLUTION
    k = kernel.shape[1] // 2
    # rolls the wrong way: a shift by +1 moves the weight to row i - 1
    return sum(kernel[:, j : j + 1] * torch.roll(w, k - j, dims=-1) for j in range(2 * k + 1))
    ### END SOLUTION
''',
    "ex-ntm-sharpen": '''
def my_sharpen(w: torch.Tensor, gamma: torch.Tensor) -> torch.Tensor:
    """Sharpen each weighting: w^gamma, renormalised."""
    ### BEGIN SOLUTION
    powered = w ** gamma[:, None]  # underflows to 0 for a flat weighting and a large gamma
    return powered / powered.sum(-1, keepdim=True)
    ### END SOLUTION
''',
}
