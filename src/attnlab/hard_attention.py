"""Hard attention: read one source position, chosen by sampling from the attention
distribution.

Soft attention reads the weighted average ``c_t = sum_s a_t(s) h_s`` of all encoder
states; hard attention reads one of them, ``c_t = h_{s_t}`` with ``s_t ~ a_t`` (Xu et
al., 2015). Sampling has no gradient, so the attention is trained with the
score-function (REINFORCE) estimator of Williams (1992): for a reward ``r(s)``,

    d/dtheta E_{s ~ a}[r(s)] = E_{s ~ a}[(r(s) - b) d/dtheta log a(s)]

for any baseline ``b`` that does not depend on ``s``; a good baseline (a running
average of past rewards, as in Xu et al., or a prediction from the decoder state)
lowers the estimator's variance. The straight-through Gumbel-softmax (Jang et al.,
2017; Bengio et al., 2013) is the other route: a one-hot sample forward, the gradient
of a softmax relaxation backward.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from attnlab._validate import check_ndim, check_positive, check_tensor, shape_of
from attnlab.attention import Score, masked_softmax
from attnlab.luong import LuongDecoder, gather_positions
from attnlab.seq2seq import DecodeResult, Encoded, State

__all__ = [
    "BASELINES",
    "ESTIMATORS",
    "HardAttentionDecoder",
    "HardSample",
    "hard_attention_loss",
    "masked_log_softmax",
    "reinforce_loss",
    "sample_positions",
    "straight_through_gumbel",
]

ESTIMATORS = ("reinforce", "gumbel")
BASELINES = ("average", "learned", "none")


def sample_positions(
    weights: torch.Tensor, generator: torch.Generator | None = None
) -> torch.Tensor:
    """One position per row of ``weights (..., S)`` (non-negative, each row with a
    positive sum), drawn with probability proportional to its weight. Returns a long
    tensor ``(...)``; zero-weight positions are never drawn.
    """
    check_ndim("weights", weights, "(..., S)", min_ndim=1)
    rows = weights.detach().reshape(-1, weights.shape[-1])
    if (
        (rows < 0).any()
        or not torch.isfinite(rows).all()
        or (rows.sum(-1) <= 0).any()
    ):
        raise ValueError(
            "weights must be finite and non-negative with a positive sum in every"
            " row (a row with no position to choose cannot be sampled), got shape"
            f" {shape_of(weights)}"
        )
    return torch.multinomial(rows, 1, generator=generator).view(weights.shape[:-1])


def masked_log_softmax(
    scores: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """``log softmax`` over the last axis where ``mask`` is ``True``; masked
    positions get ``-inf``."""
    if mask is None:
        return torch.log_softmax(scores, dim=-1)
    filled = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.log_softmax(filled, dim=-1).masked_fill(~mask, -torch.inf)


def reinforce_loss(
    log_prob: torch.Tensor,
    reward: torch.Tensor,
    baseline: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """The REINFORCE surrogate loss with a baseline, averaged over the entries where
    ``mask`` is ``True``.

    log_prob ``(...)`` is ``log a(s)`` of the sampled choices, reward ``(...)`` their
    rewards (treated as constants), baseline ``(...)`` a prediction of the reward
    made without knowing the choice. Per entry

        -(r - b) log a(s)  +  (r - b)^2 ,

    where the advantage ``r - b`` is a constant in the first term (so its gradient in
    the attention's parameters is ``-(r - b) d log a(s)``, an unbiased estimate of
    ``-d E[r]``) and the second term fits the baseline to the reward. Without a
    baseline only the first term remains, with ``b = 0``.
    """
    check_tensor("log_prob", log_prob)
    for name, x in [("reward", reward), ("baseline", baseline), ("mask", mask)]:
        if x is not None and check_tensor(name, x).shape != log_prob.shape:
            raise ValueError(
                f"{name} must have the shape of log_prob {shape_of(log_prob)}, got"
                f" {shape_of(x)}"
            )
    reward = reward.detach()
    if baseline is None:
        per_entry = -reward * log_prob
    else:
        per_entry = -(reward - baseline.detach()) * log_prob + (
            reward - baseline
        ).pow(2)
    if mask is None:
        return per_entry.mean()
    if mask.dtype != torch.bool or not mask.any():
        raise ValueError(
            "mask must be a boolean tensor with at least one True entry"
        )
    return per_entry[mask].mean()


def straight_through_gumbel(
    scores: torch.Tensor,
    mask: torch.Tensor | None = None,
    tau: float = 1.0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """A one-hot sample from ``softmax(scores)`` whose gradient is that of the
    Gumbel-softmax relaxation.

    Adds Gumbel noise ``g = -log E`` (``E ~ Exp(1)``) to ``scores (..., S)``; the
    forward value is the one-hot of ``argmax(scores + g)``, an exact sample of
    ``softmax(scores)`` (the Gumbel-max trick); the backward pass uses the gradient
    of ``y = softmax((scores + g) / tau)`` (straight-through:
    ``one_hot + y - y.detach()``). Masked positions (``mask`` False) are never
    chosen.
    """
    check_ndim("scores", scores, "(..., S)", min_ndim=1)
    check_positive("tau", tau)
    noise = -torch.empty_like(scores).exponential_(generator=generator).log()
    soft = masked_softmax((scores + noise) / tau, mask)
    hard = F.one_hot(soft.detach().argmax(-1), scores.shape[-1]).to(scores.dtype)
    return hard + soft - soft.detach()


@dataclass
class HardSample:
    """A teacher-forced pass of :class:`HardAttentionDecoder` with its choices.

    logits ``(B, T, V)``; weights ``(B, T, S)`` the attention distributions;
    positions ``(B, T)`` the source positions read; log_prob ``(B, T)`` their ``log
    a_t(s_t)``; baseline ``(B, T)`` the rewards' baseline (``None`` without one).
    """

    logits: torch.Tensor
    weights: torch.Tensor
    positions: torch.Tensor
    log_prob: torch.Tensor
    baseline: torch.Tensor | None


class HardAttentionDecoder(LuongDecoder):
    """Luong's global decoder with hard attention: the context is *one* encoder
    state, ``c_t = h_{s_t}``.

    The distribution ``a_t = softmax(score(h_t, h_s))`` is computed as in
    :class:`~attnlab.luong.LuongDecoder`; in training mode ``s_t`` is sampled from
    it (``estimator="reinforce"``) or chosen by a straight-through Gumbel-softmax
    (``"gumbel"``); in eval mode it is the most likely position. There is no input
    feeding, so the choice at step ``t`` only affects the word at step ``t``, and the
    word's log-likelihood
    ``log p(y_t | s_t)`` is an unbiased per-step reward.

    ``baseline="average"`` (Xu et al.) subtracts a running average of the mean reward
    of past batches, ``b <- decay * b + (1 - decay) * mean reward``
    (:func:`hard_attention_loss` updates it in training mode; the first batch sets
    it); ``"learned"`` predicts each word's reward from ``h_t`` with a linear layer
    (on the detached state, so fitting it does not change the decoder); ``"none"``
    uses ``b = 0``.
    """

    def __init__(
        self,
        vocab_size: int,
        embed_size: int,
        hidden_size: int,
        context_size: int,
        *,
        score: str | Score | nn.Module = "dot",
        estimator: str = "reinforce",
        baseline: str = "average",
        decay: float = 0.9,
        tau: float = 1.0,
        attention_size: int | None = None,
        max_source_len: int | None = None,
        cell: str = "gru",
        pad_id: int = 0,
        bos_id: int = 1,
        eos_id: int = 2,
    ) -> None:
        if estimator not in ESTIMATORS:
            raise ValueError(
                f"estimator must be one of {ESTIMATORS}, got {estimator!r}"
            )
        if baseline not in BASELINES:
            raise ValueError(
                f"baseline must be one of {BASELINES}, got {baseline!r}"
            )
        if not 0 <= decay < 1:
            raise ValueError(f"decay must be in [0, 1), got {decay}")
        check_positive("tau", tau)
        super().__init__(
            vocab_size,
            embed_size,
            hidden_size,
            context_size,
            score=score,
            input_feeding=False,
            attention_size=attention_size,
            max_source_len=max_source_len,
            cell=cell,
            pad_id=pad_id,
            bos_id=bos_id,
            eos_id=eos_id,
        )
        self.estimator, self.tau, self.baseline, self.decay = (
            estimator,
            tau,
            baseline,
            decay,
        )
        if baseline == "learned":
            self.baseline_net = nn.Linear(hidden_size, 1)
        self.register_buffer("reward_average", torch.zeros(()))
        self.register_buffer("rewards_seen", torch.zeros((), dtype=torch.long))

    @torch.no_grad()
    def update_average(self, reward: torch.Tensor) -> None:
        """Fold the mean ``reward`` of a batch into the running average (the first
        batch sets it)."""
        mean = reward.detach().mean()
        weight = self.decay if self.rewards_seen > 0 else 0.0
        self.reward_average.copy_(weight * self.reward_average + (1 - weight) * mean)
        self.rewards_seen += 1

    def reward_baseline(self, h: torch.Tensor) -> torch.Tensor | None:
        """The baseline ``(B, T)`` for decoder states ``h (B, T, d_h)``, or ``None``
        (``baseline="none"``)."""
        if self.baseline == "learned":
            return self.baseline_net(h.detach())[..., 0]
        if self.baseline == "average":
            return self.reward_average.expand(h.shape[:-1])
        return None

    def hard_attention(
        self,
        queries: torch.Tensor,
        state: State,
        positions: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Choose and read one position per query ``(B, T, d_h)``.

        Returns ``(contexts (B, T, d_enc), weights (B, T, S), positions (B, T),
        log_prob (B, T))``. Given ``positions`` are read as they are (to evaluate
        chosen paths); otherwise they are sampled or chosen as described in the class
        docstring.
        """
        memory, mask = state["memory"], state["mask"][:, None]
        scores = self.score_fn(state)(queries, memory)
        log_weights = masked_log_softmax(scores, mask)
        weights = log_weights.exp()
        if positions is None and self.training and self.estimator == "gumbel":
            one_hot = straight_through_gumbel(
                scores, mask.expand_as(scores), self.tau
            )
            positions = one_hot.detach().argmax(-1)
            contexts = one_hot @ memory
        else:
            if positions is None:
                positions = (
                    sample_positions(weights)
                    if self.training
                    else weights.argmax(-1)
                )
            elif positions.shape != scores.shape[:-1]:
                raise ValueError(
                    "positions must have shape (batch, T) ="
                    f" {shape_of(scores)[:-1]}, got {shape_of(positions)}"
                )
            contexts = gather_positions(memory, positions[..., None])[..., 0, :]
        log_prob = log_weights.gather(-1, positions[..., None])[..., 0]
        return contexts, weights, positions, log_prob

    def attention(
        self, queries: torch.Tensor, state: State, steps: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        contexts, weights, _, _ = self.hard_attention(queries, state)
        return contexts, weights

    def sample(
        self,
        encoded: Encoded,
        targets: torch.Tensor,
        positions: torch.Tensor | None = None,
    ) -> HardSample:
        """A teacher-forced pass on ``targets (B, T)``, choosing positions (or
        reading the given ``(B, T)``)."""
        check_ndim("targets", targets, "(batch, T)", ndim=2)
        batch, steps = targets.shape
        if batch != encoded.states.shape[0]:
            raise ValueError(
                "targets must have shape (batch, T) with batch ="
                f" {encoded.states.shape[0]}, got {shape_of(targets)}"
            )
        state = self.decode_init(encoded)
        previous = torch.cat(
            [torch.full((batch, 1), self.bos_id, dtype=torch.long), targets[:, :-1]],
            dim=1,
        )
        h, _ = self.run_rnn(state["hidden"], self.embedding(previous))
        contexts, weights, positions, log_prob = self.hard_attention(
            h, state, positions
        )
        _, logits = self.readout(h, contexts)
        return HardSample(
            logits, weights, positions, log_prob, self.reward_baseline(h)
        )

    def decode(
        self,
        encoded: Encoded,
        targets: torch.Tensor | None = None,
        max_len: int | None = None,
    ) -> DecodeResult:
        if targets is None or max_len is not None:
            return super().decode(encoded, targets, max_len)
        result = self.sample(encoded, targets)
        return DecodeResult(
            result.logits, self.choose(result.logits).argmax(-1), result.weights
        )


def hard_attention_loss(
    model: Any, batch: Any, positions: torch.Tensor | None = None
) -> torch.Tensor:
    """Training loss of a ``Seq2Seq`` whose decoder is a
    :class:`HardAttentionDecoder`, on a batch with ``src``, ``src_mask`` and ``tgt``
    (e.g. a translation batch).

    The negative log-likelihood per target word given the sampled positions (its
    gradient trains everything but the choice), plus, for the REINFORCE estimator,
    :func:`reinforce_loss` with each word's log-likelihood as the reward of the
    position chosen for it. Its expected gradient is the gradient of
    ``-E[log p(y_t | s_t)]`` averaged over the words. In training mode a
    running-average baseline is then updated with this batch's rewards (after use: a
    baseline must not depend on the choices it judges). ``positions`` ``(B, T)``
    forces the positions read instead of sampling them, to enumerate every path.
    """
    decoder = model.decoder
    if not isinstance(decoder, HardAttentionDecoder):
        raise ValueError(
            "the model's decoder must be a HardAttentionDecoder, got"
            f" {type(decoder).__name__}"
        )
    encoded = model.encode(batch.src, batch.src_mask)
    result = decoder.sample(encoded, batch.tgt, positions=positions)
    log_p = torch.log_softmax(result.logits, dim=-1).gather(
        -1, batch.tgt[..., None]
    )[..., 0]
    counted = batch.tgt != decoder.pad_id
    nll = -log_p[counted].mean()
    if decoder.estimator == "gumbel":
        return nll
    loss = nll + reinforce_loss(result.log_prob, log_p, result.baseline, counted)
    if decoder.baseline == "average" and decoder.training:
        decoder.update_average(log_p[counted])
    return loss
