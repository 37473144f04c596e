"""Typical wrong answers to the code exercises of chapters 3 (encoder-decoder) and 4 (Bahdanau attention).

Each entry maps an exercise label to the complete source of a solution cell that runs but answers wrongly; the
grading test submits it and expects the exercise's points to be lost.
"""

WRONG: dict[str, str] = {
    "ex-encdec-teacher-forcing": '''
def decode_teacher_forcing(decoder, encoded, targets: torch.Tensor) -> torch.Tensor:
    """Logits (B, T, V) of the decoder fed with <bos> and then the true previous words."""
    ### BEGIN SOLUTION
    state = decoder.decode_init(encoded)
    x = torch.full((targets.shape[0],), decoder.bos_id)
    logits = []
    with torch.no_grad():
        for t in range(targets.shape[1]):
            step_logits, state, _ = decoder.decode_step(state, x)
            logits.append(step_logits)
            x = targets[:, t]
    return torch.stack(logits, dim=1)
    ### END SOLUTION
''',
    "ex-encdec-padded-loss": '''
def fixed_sequence_loss(logits: torch.Tensor, targets: torch.Tensor,
                        pad_id: int) -> torch.Tensor:
    """Mean cross-entropy over the real words of targets (B, T), logits (B, T, V)."""
    ### BEGIN SOLUTION
    word_losses = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    real = targets != pad_id
    return ((word_losses * real).sum(1) / real.sum(1)).mean()
    ### END SOLUTION
''',
    "ex-encdec-greedy-stop": '''
def fixed_greedy(decoder, encoded, max_len: int) -> torch.Tensor:
    """Greedy translation (B, T) that stops once every row has written <eos>."""
    ### BEGIN SOLUTION
    state = decoder.decode_init(encoded)
    x = torch.full((encoded.states.shape[0],), decoder.bos_id)
    words = []
    for _ in range(max_len):
        logits, state, _ = decoder.decode_step(state, x)
        x = decoder.choose(logits).argmax(-1)
        words.append(x)
        if (x == decoder.eos_id).any():
            break
    return torch.stack(words, dim=1)
    ### END SOLUTION
''',
    "ex-bahdanau-context": '''
def bahdanau_context(query, states, mask, W_q, W_k, v):
    """Additive attention of query (B, d_q) over states (B, S, d_k): (context, weights)."""
    ### BEGIN SOLUTION
    scores = torch.tanh((query @ W_q.T)[:, None, :] + states @ W_k.T) @ v
    weights = torch.softmax(scores, dim=-1) * mask
    return (weights[:, :, None] * states).sum(dim=1), weights
    ### END SOLUTION
''',
    "ex-bahdanau-attention-map": '''
def fixed_attention_map(queries, states, mask, W_q, W_k, v):
    """Additive attention of every query (B, T, d_q) over states (B, S, d_k): (contexts (B, T, d_k),
    weights (B, T, S)), row t for output step t."""
    ### BEGIN SOLUTION
    keys = states @ W_k.T
    scores = torch.tanh((queries @ W_q.T)[:, :, None] + keys[:, None]) @ v
    scores = scores.masked_fill(~mask[:, None], torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=1)
    weights = weights / weights.sum(-1, keepdim=True)  # the rows sum to 1 now, the padding keeps its weight
    return weights @ states, weights
    ### END SOLUTION
''',
    "ex-bahdanau-alignment-accuracy": '''
def alignment_accuracy(weights: torch.Tensor, alignment: torch.Tensor) -> float:
    """Share of target words (alignment >= 0) whose attention peak is at the true source position."""
    ### BEGIN SOLUTION
    return (weights.argmax(dim=-1) == alignment).float().mean().item()
    ### END SOLUTION
''',
}
