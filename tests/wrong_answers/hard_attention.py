"""Typical wrong answers to the code exercises of chapter 6, "Soft and hard attention".

Each entry maps an exercise label to the complete source of a solution cell that runs but is wrong; a grader that
submits it must take that exercise's points away.
"""

WRONG: dict[str, str] = {
    "ex-hard-reinforce": '''
def my_reinforce_loss(
    log_prob: torch.Tensor, reward: torch.Tensor, baseline: torch.Tensor
) -> torch.Tensor:
    """Mean of -(r - b) log p + (r - b)^2."""
    ### BEGIN SOLUTION
    reward = reward.detach()
    advantage = reward - baseline  # not detached: the policy term trains the baseline too
    return (-advantage * log_prob + (reward - baseline) ** 2).mean()
    ### END SOLUTION
''',
    "ex-hard-baseline-variance": '''
def my_reinforce_samples(
    theta: torch.Tensor,
    rewards: torch.Tensor,
    baseline: float,
    n: int,
    generator: torch.Generator,
) -> torch.Tensor:
    """n one-draw REINFORCE estimates (n, S) of the gradient of E[r] in theta (S,)."""
    ### BEGIN SOLUTION
    probs = torch.softmax(theta.detach(), 0)
    choices = torch.multinomial(probs, n, replacement=True, generator=generator)
    score = torch.eye(len(probs), dtype=probs.dtype)[choices] - probs
    return rewards[choices][:, None] * score  # the baseline is never subtracted
    ### END SOLUTION
''',
    "ex-hard-fix-straight-through": '''
def fixed_straight_through(
    scores: torch.Tensor, noise: torch.Tensor, tau: float
) -> torch.Tensor:
    """One-hot sample forward, gradient of the relaxation backward."""
    ### BEGIN SOLUTION
    soft = torch.softmax((scores + noise) / tau, dim=-1)
    choice = scores.argmax(-1)  # only the sign is fixed: still the mode, not a sample
    hard = torch.nn.functional.one_hot(choice, scores.shape[-1]).to(soft.dtype)
    return hard + soft - soft.detach()
    ### END SOLUTION
''',
}
