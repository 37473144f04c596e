"""Typical wrong answers to the code exercises of chapter 7, "Simple vs parameterized attention".

Each entry maps an exercise label to the complete source of a solution cell that runs but is wrong; a grader that
submits it must take that exercise's points away.
"""

WRONG: dict[str, str] = {
    "ex-selfattn-simple": '''
def simple_attention(y_d: torch.Tensor, Y_e: torch.Tensor,
                     mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Simple attention of decoder states (B, d) over encoder states (B, S, d)."""
    ### BEGIN SOLUTION
    scores = (Y_e @ y_d[..., None])[..., 0]
    a = torch.softmax(scores, dim=-1) * mask  # padding zeroed after the softmax: rows no longer sum to 1
    return (a[:, None] @ Y_e)[:, 0], a
    ### END SOLUTION
''',
    "ex-selfattn-parameterized": '''
def parameterized_attention(
    y_d: torch.Tensor, Y_e: torch.Tensor, W_q: torch.Tensor, W_k: torch.Tensor,
    W_v: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Parameterized attention of decoder states (B, d_dec) over Y_e (B, S, d_enc)."""
    ### BEGIN SOLUTION
    query = y_d @ W_q.T
    keys = Y_e @ W_k.T
    a = torch.softmax((keys @ query[..., None])[..., 0], dim=-1)
    return (a[:, None] @ keys)[:, 0], a  # hands over the keys: W_v is never used
    ### END SOLUTION
''',
    "ex-selfattn-split-heads": '''
def fixed_split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(B, T, d) -> (B, n_heads, T, d_head): head h gets features h*d_head to
    (h+1)*d_head - 1 of every position."""
    ### BEGIN SOLUTION
    batch, length, d = x.shape
    # splits d as (d_head, n_heads): head h gets every n_heads-th feature
    return x.reshape(batch, length, d // n_heads, n_heads).permute(0, 3, 1, 2)
    ### END SOLUTION


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, n_heads, T, d_head) -> (B, T, d): the inverse of fixed_split_heads."""
    ### BEGIN SOLUTION
    batch, n_heads, length, d_head = x.shape
    return x.permute(0, 2, 3, 1).reshape(batch, length, n_heads * d_head)
    ### END SOLUTION
''',
    "ex-selfattn-multi-head": '''
def multi_head_attention(
    x_q: torch.Tensor, x_kv: torch.Tensor, W_q: torch.Tensor, W_k: torch.Tensor,
    W_v: torch.Tensor, W_o: torch.Tensor, n_heads: int,
) -> torch.Tensor:
    """Multi-head attention of x_q (B, Tq, d) over x_kv (B, Tk, d)."""
    ### BEGIN SOLUTION
    batch, d = x_q.shape[0], x_q.shape[-1]

    def split(x: torch.Tensor) -> torch.Tensor:
        return x.reshape(batch, -1, n_heads, d // n_heads).transpose(1, 2)

    q, k, v = split(x_q @ W_q.T), split(x_kv @ W_k.T), split(x_kv @ W_v.T)
    scores = q @ k.transpose(-2, -1) / d**0.5  # sqrt(d), not sqrt(d_head)
    merged = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(batch, -1, d)
    return merged @ W_o.T
    ### END SOLUTION
''',
    "ex-selfattn-scaled-decoder": '''
class ScaledSimpleDecoder(SimpleAttentionDecoder):
    """Simple attention with every score multiplied by one learned number beta."""

    def __init__(
        self, vocab_size: int, embed_size: int, hidden_size: int, **options: str | int
    ) -> None:
        super().__init__(vocab_size, embed_size, hidden_size, **options)
        ### BEGIN SOLUTION
        self.beta = nn.Parameter(torch.ones(()))
        ### END SOLUTION

    def attention(
        self, query: torch.Tensor, state: dict
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(y_a (B, d), a (B, S)) for the decoder state query (B, d)."""
        ### BEGIN SOLUTION
        y_a, a = super().attention(query, state)
        a = self.beta * a  # beta times the weights, after the softmax: rows sum to beta
        return (a[:, None] @ state["memory"])[:, 0], a
        ### END SOLUTION
''',
}
