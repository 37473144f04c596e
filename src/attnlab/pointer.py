"""Pointer networks: attention whose weights *are* the output (Vinyals, Fortunato and
Jaitly, 2015).

An LSTM encoder reads the inputs ``x_1..x_n`` into states ``h_1..h_n``; an LSTM
decoder, started from the encoder's final state, produces one state ``s_t`` per
output step. At step t every input j gets the additive score ``u_j = v^T tanh(W1 h_j
+ W2 s_t)``, and the softmax over j is the distribution of the output: the model
points at an input instead of naming a word from a fixed vocabulary, so the same
weights work for any n. The next decoder input is the (embedded) input it pointed at.
Inputs already chosen are masked out, so a decoded sequence never repeats an input;
``mask_chosen=False`` switches the mask off, in training or in decoding.

With ``end_token=True`` the model may also point at a learned extra position ``n``
that ends the sequence (for outputs of varying length such as convex hulls); rows are
then padded with ``PAD = -1`` after the end.

Shapes: inputs ``(batch, n, d_input)``; targets and decoded indices ``(batch, T)``;
pointer distributions ``(batch, T, N)`` with ``N = n`` (or ``n + 1`` with the end
token).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from attnlab._validate import check_ndim, check_positive, check_size, shape_of
from attnlab.attention import AdditiveScore, masked_softmax

PAD = -1


class Encoded(NamedTuple):
    """What the decoder needs from the encoder, computed once per input sequence."""

    # (B, n, H): embedded inputs, fed back to the decoder after it points at one
    embedded: torch.Tensor
    keys: torch.Tensor  # (B, N, H): encoder states h_j (plus the end key)
    projected: torch.Tensor  # (B, N, H): W1 h_j + b, shared by every decoder step
    # the encoder's final LSTM state, the decoder's initial state
    state: tuple[torch.Tensor, torch.Tensor]


class Decoded(NamedTuple):
    """Result of greedy decoding."""

    indices: torch.Tensor  # (B, T) chosen input positions (PAD after the end token)
    log_prob: torch.Tensor  # (B,) log-probability of the whole decoded sequence
    # (B, T, N) the pointer distribution of every step (zeros after the end)
    probs: torch.Tensor


def masked_log_softmax(scores: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """``log(masked_softmax(scores, allowed))``, computed stably: ``-inf`` where not
    allowed.

    Every row must allow at least one position.
    """
    return scores.masked_fill(~allowed, float("-inf")).log_softmax(dim=-1)


class PointerNet(nn.Module):
    """LSTM encoder, LSTM decoder, and an additive score whose softmax points at an
    input.

    ``d_input`` is the size of one input element (1 for numbers, 2 for points),
    ``d_hidden`` the size of the embeddings, LSTM states and the score's hidden
    layer.
    """

    def __init__(
        self, d_input: int, d_hidden: int = 128, *, end_token: bool = False
    ) -> None:
        super().__init__()
        check_positive("d_input", d_input)
        check_positive("d_hidden", d_hidden)
        self.d_input, self.d_hidden, self.end_token = d_input, d_hidden, end_token
        self.embed = nn.Linear(d_input, d_hidden)
        self.encoder = nn.LSTM(d_hidden, d_hidden, batch_first=True)
        self.decoder = nn.LSTM(d_hidden, d_hidden, batch_first=True)
        # W2 s_t, W1 h_j, v
        self.score = AdditiveScore(
            d_query=d_hidden, d_key=d_hidden, d_hidden=d_hidden
        )
        bound = d_hidden**-0.5
        # the first decoder input
        self.start = nn.Parameter(torch.empty(d_hidden).uniform_(-bound, bound))
        self.end_key = (
            nn.Parameter(torch.empty(d_hidden).uniform_(-bound, bound))
            if end_token
            else None
        )

    # ------------------------------------------------------------------ checks
    def _check_inputs(self, inputs: torch.Tensor) -> None:
        check_ndim("inputs", inputs, "(batch, n, d_input)", ndim=3)
        check_size("inputs", inputs, 2, self.d_input, "(batch, n, d_input)")
        if inputs.shape[1] < 1:
            raise ValueError(
                "inputs must hold at least one element per sequence, got"
                f" {shape_of(inputs)}"
            )

    def _check_targets(self, inputs: torch.Tensor, targets: torch.Tensor) -> None:
        check_ndim("targets", targets, "(batch, T)", ndim=2)
        if targets.shape[0] != inputs.shape[0]:
            raise ValueError(
                f"targets (batch, T) = {shape_of(targets)} and inputs"
                f" {shape_of(inputs)} must have the same batch size"
            )
        if targets.dtype not in (torch.int64, torch.int32):
            raise ValueError(
                f"targets must hold integer positions, got dtype {targets.dtype}"
            )
        n = inputs.shape[1]
        top = n if self.end_token else n - 1
        valid = (
            targets != PAD
            if self.end_token
            else torch.ones_like(targets, dtype=torch.bool)
        )
        if (targets[valid] < 0).any() or (targets[valid] > top).any():
            what = (
                f"0..{n - 1}, {n} (end) or {PAD} (padding)"
                if self.end_token
                else f"0..{n - 1}"
            )
            raise ValueError(
                f"targets must be positions in {what}; got values from "
                f"{targets.min().item()} to {targets.max().item()}"
            )
        if self.end_token:
            ended = targets == n
            after_end = (ended.long().cumsum(dim=1) - ended.long()) > 0
            if ((targets == PAD) != after_end).any():
                raise ValueError(
                    f"targets must be padded with {PAD} exactly after the end"
                    f" position {n}, and nowhere else"
                )

    def _steps(self, n: int) -> int:
        return n + 1 if self.end_token else n

    # ------------------------------------------------------------------ the model
    def encode(self, inputs: torch.Tensor) -> Encoded:
        """Run the encoder: ``inputs (B, n, d_input)`` -> :class:`Encoded`."""
        self._check_inputs(inputs)
        embedded = self.embed(inputs)
        keys, state = self.encoder(embedded)
        if self.end_key is not None:
            keys = torch.cat(
                [keys, self.end_key.expand(keys.shape[0], 1, -1)], dim=1
            )
        return Encoded(embedded, keys, self.score.project_keys(keys), state)

    def pointer_scores(
        self, decoder_states: torch.Tensor, encoded: Encoded
    ) -> torch.Tensor:
        """``u[b, t, j] = v^T tanh(W1 h_j + W2 s_t)``: ``(B, T, H)`` decoder states
        -> ``(B, T, N)``."""
        return self.score(
            decoder_states, encoded.keys, projected_keys=encoded.projected
        )

    def _feed(self, encoded: Encoded, indices: torch.Tensor) -> torch.Tensor:
        """The embedded inputs at ``indices (B, T)``, as the next decoder inputs
        ``(B, T, H)``.

        The end position and padding have no input of their own and are clamped into
        range (nothing reads the decoder after the end).
        """
        safe = indices.clamp(0, encoded.embedded.shape[1] - 1)
        return encoded.embedded.gather(
            1, safe.unsqueeze(-1).expand(-1, -1, self.d_hidden)
        )

    def _allowed_after(self, chosen: torch.Tensor) -> torch.Tensor:
        """Positions a step may point at, given the inputs already ``chosen (...,
        n)``: ``(..., N)``."""
        if self.end_token:
            return torch.cat([~chosen, torch.ones_like(chosen[..., :1])], dim=-1)
        return ~chosen

    def forward(
        self,
        inputs: torch.Tensor,
        targets: torch.Tensor,
        *,
        mask_chosen: bool = True,
    ) -> torch.Tensor:
        """Teacher-forced log pointer distributions ``(B, T, N)`` for the target
        sequences ``(B, T)``.

        Step t is fed the input at ``targets[:, t - 1]`` (the learned start vector at
        t = 0) and may not point at ``targets[:, :t]``. Rows of padded steps are the
        unmasked distribution (ignore them). With ``mask_chosen=False`` every step is
        the softmax over all N positions, as in the original paper's training.
        """
        encoded = self.encode(inputs)
        self._check_targets(inputs, targets)
        batch, n = inputs.shape[:2]
        previous = self._feed(encoded, targets[:, :-1])
        decoder_in = torch.cat([self.start.expand(batch, 1, -1), previous], dim=1)
        states, _ = self.decoder(decoder_in, encoded.state)
        scores = self.pointer_scores(states, encoded)
        if not mask_chosen:  # any input may be chosen again
            return scores.log_softmax(dim=-1)
        picked = torch.nn.functional.one_hot(targets.clamp(0, n - 1), n).bool() & (
            targets >= 0
        ).unsqueeze(-1)
        picked &= (targets < n).unsqueeze(-1)
        chosen_before = (picked.cumsum(dim=1) - picked.long()) > 0  # (B, T, n)
        allowed = self._allowed_after(chosen_before)
        # padded steps: any row that is finite
        allowed |= (targets == PAD).unsqueeze(-1)
        if not allowed.gather(2, targets.clamp(min=0).unsqueeze(-1)).all():
            raise ValueError(
                "targets point at an input that an earlier step of the same sequence"
                " already chose"
            )
        return masked_log_softmax(scores, allowed)

    def log_likelihood(
        self,
        inputs: torch.Tensor,
        targets: torch.Tensor,
        *,
        mask_chosen: bool = True,
    ) -> torch.Tensor:
        """``log p(targets | inputs)`` by the chain rule: the sum over steps of the
        log pointer probability of each target (padding excluded). ``(B, n,
        d_input)``, ``(B, T)`` -> ``(B,)``. ``mask_chosen`` as in :meth:`forward`.
        """
        log_probs = self(inputs, targets, mask_chosen=mask_chosen)
        step = log_probs.gather(2, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        return step.masked_fill(targets == PAD, 0.0).sum(dim=1)

    def loss(
        self,
        inputs: torch.Tensor,
        targets: torch.Tensor,
        *,
        mask_chosen: bool = True,
    ) -> torch.Tensor:
        """Mean negative log-likelihood per target step (padding excluded): the
        training objective. ``mask_chosen=False`` trains without the mask."""
        log_likelihood = self.log_likelihood(
            inputs, targets, mask_chosen=mask_chosen
        )
        return -log_likelihood.sum() / (targets != PAD).sum()

    # ------------------------------------------------------------------ decoding
    @torch.no_grad()
    def greedy(self, inputs: torch.Tensor, *, mask_chosen: bool = True) -> Decoded:
        """Point at the most probable input at every step.

        With ``mask_chosen=False`` the inputs already chosen are *not* masked (to
        show what the mask prevents:
        the decoder may then point at the same input twice). Returns
        :class:`Decoded`.
        """
        encoded = self.encode(inputs)
        batch, n = inputs.shape[:2]
        steps = self._steps(n)
        rows = torch.arange(batch)
        chosen = torch.zeros(batch, n, dtype=torch.bool)
        finished = torch.zeros(batch, dtype=torch.bool)
        indices = torch.full((batch, steps), PAD, dtype=torch.long)
        probs = inputs.new_zeros(batch, steps, n + int(self.end_token))
        log_prob = inputs.new_zeros(batch)
        decoder_in, state = self.start.expand(batch, 1, -1), encoded.state
        for t in range(steps):
            out, state = self.decoder(decoder_in, state)
            scores = self.pointer_scores(out, encoded)[:, 0]
            allowed = self._allowed_after(
                chosen if mask_chosen else torch.zeros_like(chosen)
            )
            p = masked_softmax(scores, allowed)
            choice = p.argmax(dim=-1)
            live = ~finished
            indices[live, t] = choice[live]
            probs[live, t] = p[live]
            log_prob += torch.where(
                live, masked_log_softmax(scores, allowed)[rows, choice], 0.0
            )
            chosen[rows[live & (choice < n)], choice[live & (choice < n)]] = True
            finished |= choice == n
            decoder_in = self._feed(encoded, choice.unsqueeze(1))
        return Decoded(indices, log_prob, probs)

    @torch.no_grad()
    def beam_search(
        self, inputs: torch.Tensor, width: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Keep the ``width`` most probable partial sequences at every step (never
        repeating an input).

        Returns ``indices (B, width, T)`` and their log-probabilities ``(B, width)``,
        most probable first. A finished sequence (end token) carries over with
        unchanged score, padded with ``PAD``.
        """
        encoded = self.encode(inputs)
        batch, n = inputs.shape[:2]
        if not 1 <= width <= n:
            raise ValueError(
                f"width must be between 1 and the number of inputs n = {n}, got"
                f" {width}"
            )
        steps, size = self._steps(n), n + int(self.end_token)
        flat = batch * width

        def tile(x: torch.Tensor, dim: int = 0) -> torch.Tensor:
            return x.repeat_interleave(width, dim=dim)

        beams = Encoded(
            tile(encoded.embedded),
            tile(encoded.keys),
            tile(encoded.projected),
            (tile(encoded.state[0], 1), tile(encoded.state[1], 1)),
        )
        score = inputs.new_full((batch, width), float("-inf"))
        score[:, 0] = (
            # all beams start identical: keep one, or the first step would pick
            # duplicates
            0.0
        )
        chosen = torch.zeros(flat, n, dtype=torch.bool)
        finished = torch.zeros(flat, dtype=torch.bool)
        indices = torch.zeros(batch, width, 0, dtype=torch.long)
        decoder_in, state = self.start.expand(flat, 1, -1), beams.state
        for _ in range(steps):
            out, state = self.decoder(decoder_in, state)
            log_p = masked_log_softmax(
                self.pointer_scores(out, beams)[:, 0], self._allowed_after(chosen)
            )
            # a finished beam has exactly one continuation, of probability 1
            # (recorded as padding)
            done = torch.full_like(log_p, float("-inf"))
            done[:, size - 1] = 0.0
            log_p = torch.where(finished.unsqueeze(-1), done, log_p)
            total = (score.unsqueeze(-1) + log_p.view(batch, width, size)).view(
                batch, width * size
            )
            score, best = total.topk(width, dim=-1)
            parent, choice = best // size, best % size
            source = (torch.arange(batch).unsqueeze(-1) * width + parent).view(-1)
            was_finished = finished[source].view(batch, width)
            record = torch.where(was_finished, PAD, choice)
            indices = torch.cat(
                [
                    indices.gather(1, parent.unsqueeze(-1).expand_as(indices)),
                    record.unsqueeze(-1),
                ],
                dim=-1,
            )
            state = (state[0][:, source], state[1][:, source])
            chosen, finished = chosen[source], finished[source]
            choice = choice.view(-1)
            live = choice < n
            chosen[torch.arange(flat)[live], choice[live]] = True
            finished |= choice == n
            decoder_in = self._feed(beams, choice.unsqueeze(1))
        return indices, score
