"""Typical wrong answers to the code exercises of chapter 5, "Luong attention: global and local".

Each entry maps an exercise label to the complete source of a solution cell that runs but is wrong; a grader that
submits it must take that exercise's points away.
"""

WRONG: dict[str, str] = {
    "ex-luong-global-step": '''
def my_luong_step(
    h: torch.Tensor, memory: torch.Tensor, mask: torch.Tensor, w_c: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Global attention from the current state with the dot score."""
    ### BEGIN SOLUTION
    scores = (memory @ h[:, :, None])[..., 0]
    weights = torch.softmax(scores.masked_fill(~mask, -torch.inf), dim=-1)
    context = (weights[..., None] * memory).sum(1)
    attentional = torch.tanh(torch.cat([h, context], dim=-1) @ w_c.T)  # [h_t; c_t]: wrong order
    return attentional, weights
    ### END SOLUTION
''',
    "ex-luong-local-p": '''
def my_local_p_weights(
    scores: torch.Tensor, centre: torch.Tensor, half_width: int, lengths: torch.Tensor
) -> torch.Tensor:
    """Local-p weights (B, S)."""
    ### BEGIN SOLUTION
    positions = torch.arange(scores.shape[-1])
    middle = torch.floor(centre[:, None] + 0.5)
    inside = ((positions - middle).abs() <= half_width) & (positions < lengths[:, None])
    align = torch.softmax(scores.masked_fill(~inside, -torch.inf), dim=-1)
    sigma = half_width  # Luong et al. use D / 2
    return align * torch.exp(-((positions - centre[:, None]) ** 2) / (2 * sigma**2))
    ### END SOLUTION
''',
    "ex-luong-window-gather": '''
def fixed_window_states(
    memory: torch.Tensor, centre: torch.Tensor, half_width: int, lengths: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """States (B, 2D + 1, d) of the window and a mask (B, 2D + 1) of its words."""
    ### BEGIN SOLUTION
    offsets = torch.arange(-half_width, half_width + 1)
    positions = centre.long()[:, None] + offsets  # still cut, not rounded
    inside = (positions >= 0) & (positions < lengths[:, None])  # this bug is fixed
    index = positions.clamp(0, memory.shape[1] - 1)
    return memory[torch.arange(memory.shape[0])[:, None], index], inside
    ### END SOLUTION
''',
    "ex-luong-window-mass": '''
def my_window_mass(model: Seq2Seq, examples: list, half_width: int) -> float:
    """Share of the attention mass inside |s - t| <= D."""
    ### BEGIN SOLUTION
    maps, _ = attention_maps(model, examples)
    shares = []
    for weights in maps:
        t = torch.arange(weights.shape[0])[:, None]
        s = torch.arange(weights.shape[1])[None, :]
        shares.append(weights[(s - t).abs() <= half_width].sum().item() / weights.shape[0])
    return sum(shares) / len(shares)  # every sentence counts once, not every word
    ### END SOLUTION
''',
}
