"""Luong attention (Luong, Pham and Manning, 2015), the decoders of chapter 5: global
and local attention from the current decoder state.

:func:`luong_score` picks one of the scores of chapter 2 by name.
:class:`LuongDecoder` (global attention) first updates its state ``h_t``, then
attends from it over every encoder state and scores the next word from the
attentional state ``h~_t = tanh(W_c [c_t; h_t])``. :class:`LocalAttentionDecoder`
scores only the ``2D + 1`` source positions around a centre ``p_t``: the window's
positions (:func:`window_positions`), the encoder states read there
(:func:`gather_positions`) and its weights (:func:`local_window`). Both decoders run
the decoder loop of :mod:`attnlab.seq2seq`, so its greedy and beam decoding work
unchanged. Shapes: encoder states ``(B, S, d_enc)``, decoder states ``(B, d_h)``,
attention weights ``(B, S)``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch
from torch import nn

from attnlab._validate import check_ndim, check_positive, check_tensor, shape_of
from attnlab.attention import (
    AdditiveScore,
    GeneralScore,
    LocationScore,
    Score,
    attend,
    dot_score,
    masked_softmax,
)
from attnlab.seq2seq import (
    RNNS,
    Decoder,
    DecoderBase,
    DecodeResult,
    Encoded,
    State,
    check_cell,
)

LUONG_SCORES = ("dot", "general", "concat", "location")


def luong_score(
    name: str,
    hidden_size: int,
    context_size: int,
    *,
    attention_size: int | None = None,
    max_source_len: int | None = None,
) -> Score | nn.Module:
    """Luong's scores of a decoder state ``h_t (d_h)`` against an encoder state ``h_s
    (d_enc)``, by name.

    ``"dot"`` ``h_t . h_s`` (needs ``d_h = d_enc``); ``"general"`` ``h_t^T W_a h_s``;
    ``"concat"`` ``v_a^T tanh(W_a [h_t; h_s])``
    (:class:`~attnlab.attention.AdditiveScore`, ``attention_size`` hidden units,
    default ``d_h``); ``"location"`` ``W_a h_t`` over at most ``max_source_len``
    positions.
    """
    if name == "dot":
        if hidden_size != context_size:
            raise ValueError(
                f"the dot score needs hidden_size = context_size, got {hidden_size}"
                f" and {context_size}"
            )
        return dot_score
    if name == "general":
        return GeneralScore(hidden_size, context_size)
    if name == "concat":
        return AdditiveScore(
            hidden_size, context_size, attention_size or hidden_size
        )
    if name == "location":
        if max_source_len is None:
            raise ValueError(
                "the location score needs max_source_len, the longest source it can"
                " attend over"
            )
        return LocationScore(hidden_size, max_source_len)
    raise ValueError(f"score must be one of {LUONG_SCORES}, got {name!r}")


class LuongDecoder(DecoderBase):
    """Luong's global attention decoder: attend from the *current* state ``h_t``,
    then mix.

    Step ``t`` reads the previous word (and, with ``input_feeding``, the previous
    attentional state ``h~_{t-1}``), updates the RNN to ``h_t``, attends from ``h_t``
    over all encoder states with ``score`` (a name of :func:`luong_score` or any
    score function/module) to get ``c_t``, and scores the next word from the
    attentional state ``h~_t = tanh(W_c [c_t; h_t])``: ``logits = W_s h~_t``.
    Bahdanau's decoder, by contrast, attends from ``h_{t-1}`` before the update. The
    state starts at ``tanh(W_init final)``.

    Without input feeding the RNN never sees the attention, so teacher forcing runs
    the RNN over the whole target at once and attends from every step in one batched
    call (same result as the step loop, faster).
    """

    def __init__(
        self,
        vocab_size: int,
        embed_size: int,
        hidden_size: int,
        context_size: int,
        *,
        score: str | Score | nn.Module = "dot",
        input_feeding: bool = True,
        attention_size: int | None = None,
        max_source_len: int | None = None,
        cell: str = "gru",
        pad_id: int = 0,
        bos_id: int = 1,
        eos_id: int = 2,
    ) -> None:
        super().__init__(vocab_size, pad_id=pad_id, bos_id=bos_id, eos_id=eos_id)
        check_cell(cell)
        for name, value in [
            ("embed_size", embed_size),
            ("hidden_size", hidden_size),
            ("context_size", context_size),
        ]:
            check_positive(name, value)
        self.cell, self.hidden_size, self.context_size = (
            cell,
            hidden_size,
            context_size,
        )
        self.input_feeding = input_feeding
        self.score = (
            luong_score(
                score,
                hidden_size,
                context_size,
                attention_size=attention_size,
                max_source_len=max_source_len,
            )
            if isinstance(score, str)
            else score
        )
        self.embedding = nn.Embedding(vocab_size, embed_size, padding_idx=pad_id)
        self.init = nn.Linear(context_size, hidden_size)
        self.rnn = RNNS[cell][0](
            embed_size + (hidden_size if input_feeding else 0),
            hidden_size,
            batch_first=True,
        )
        # W_c
        self.combine = nn.Linear(context_size + hidden_size, hidden_size, bias=False)
        self.out = nn.Linear(hidden_size, vocab_size)  # W_s

    def decode_init(self, encoded: Encoded) -> State:
        check_ndim("encoded.final", encoded.final, "(batch, d_enc)", ndim=2)
        check_ndim("encoded.states", encoded.states, "(batch, S, d_enc)", ndim=3)
        if (
            encoded.final.shape[-1] != self.context_size
            or encoded.states.shape[-1] != self.context_size
        ):
            raise ValueError(
                f"the encoder's states must have size d_enc = {self.context_size},"
                f" got final {shape_of(encoded.final)} and states"
                f" {shape_of(encoded.states)}"
            )
        h = torch.tanh(self.init(encoded.final))
        state: State = {
            "hidden": (h, torch.zeros_like(h)) if self.cell == "lstm" else h,
            "memory": encoded.states,
            "mask": encoded.mask,
        }
        if self.input_feeding:
            state["feed"] = torch.zeros_like(h)  # h~_0
        if hasattr(self.score, "project_keys"):
            state["projected_keys"] = self.score.project_keys(encoded.states)
        return state

    output_state = staticmethod(Decoder.output_state)

    def run_rnn(self, hidden: Any, inputs: torch.Tensor) -> tuple[torch.Tensor, Any]:
        """Run the RNN over ``inputs (B, T, d_in)`` from ``hidden``; return ``(states
        (B, T, d_h), last hidden)``."""
        h0 = (
            tuple(s[None] for s in hidden)
            if isinstance(hidden, tuple)
            else hidden[None]
        )
        outputs, last = self.rnn(inputs, h0)
        return outputs, (
            tuple(s[0] for s in last) if isinstance(last, tuple) else last[0]
        )

    def score_fn(self, state: State) -> Score:
        """The score, with the key side from the state when it was computed once per
        sequence."""
        if "projected_keys" in state:
            return partial(self.score, projected_keys=state["projected_keys"])
        return self.score

    def attention(
        self, queries: torch.Tensor, state: State, steps: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Global attention of ``queries (B, T, d_h)`` over all encoder states:
        ``(contexts (B, T, d_enc), weights (B, T, S))``. ``steps (B, T)`` (the target
        positions) is unused here, used by local attention.
        """
        return attend(
            queries,
            state["memory"],
            state["memory"],
            score=self.score_fn(state),
            mask=state["mask"][:, None],
        )

    def readout(
        self, h: torch.Tensor, context: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(h~ = tanh(W_c [c; h]), logits = W_s h~)`` for ``h (..., d_h)`` and
        ``context (..., d_enc)``."""
        attentional = torch.tanh(self.combine(torch.cat([context, h], dim=-1)))
        return attentional, self.out(attentional)

    def decode_step(
        self, state: State, x: torch.Tensor
    ) -> tuple[torch.Tensor, State, torch.Tensor]:
        inputs = self.embedding(x)
        if self.input_feeding:
            inputs = torch.cat([inputs, state["feed"]], dim=-1)
        # h: (B, 1, d_h), the current state h_t
        h, hidden = self.run_rnn(state["hidden"], inputs[:, None])
        context, weights = self.attention(
            h, state, state.get("step", torch.zeros_like(x))[:, None]
        )
        attentional, logits = self.readout(h[:, 0], context[:, 0])
        new_state = {**state, "hidden": hidden}
        if self.input_feeding:
            new_state["feed"] = attentional
        if "step" in state:
            new_state["step"] = state["step"] + 1
        return logits, new_state, weights[:, 0]

    def decode(
        self,
        encoded: Encoded,
        targets: torch.Tensor | None = None,
        max_len: int | None = None,
    ) -> DecodeResult:
        if targets is None or self.input_feeding or max_len is not None:
            return super().decode(encoded, targets, max_len)
        check_ndim("targets", targets, "(batch, T)", ndim=2)
        batch, steps = targets.shape
        if batch != encoded.states.shape[0] or steps < 1:
            raise ValueError(
                "targets must have shape (batch, T) with batch ="
                f" {encoded.states.shape[0]} and T >= 1, got {shape_of(targets)}"
            )
        state = self.decode_init(encoded)
        previous = torch.cat(
            [torch.full((batch, 1), self.bos_id, dtype=torch.long), targets[:, :-1]],
            dim=1,
        )
        # every h_t at once: (B, T, d_h)
        h, _ = self.run_rnn(state["hidden"], self.embedding(previous))
        context, weights = self.attention(
            h, state, torch.arange(steps).expand(batch, steps)
        )
        _, logits = self.readout(h, context)
        return DecodeResult(logits, self.choose(logits).argmax(-1), weights)


# Local attention: only a window of 2D + 1 source positions around a centre p_t is
# scored.


def window_positions(centre: torch.Tensor, half_width: int) -> torch.Tensor:
    """The ``2D + 1`` integer positions ``round(p_t) - D, ..., round(p_t) + D``
    around each centre ``p_t``.

    centre ``(...)`` real or integer positions (``round`` is ``floor(p + 1/2)``);
    returns a long tensor ``(..., 2D + 1)``. Positions that fall outside a sequence
    (below 0, past its end) are returned as they are:
    :func:`local_window` gives them weight 0 through its mask and
    :func:`gather_positions` reads them clamped.
    """
    check_tensor("centre", centre)
    if half_width < 0:
        raise ValueError(f"half_width D must be >= 0, got {half_width}")
    middle = torch.floor(centre.detach().to(torch.float64) + 0.5).long()
    return middle.unsqueeze(-1) + torch.arange(
        -half_width, half_width + 1, device=centre.device
    )


def gather_positions(values: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Read ``values (B, S, d)`` at ``positions (B, ..., W)``: returns ``(B, ..., W,
    d)``.

    Positions are clamped to ``0 .. S-1`` (a window hanging over an edge reads the
    edge word; give those positions weight 0). The cost is that of the positions
    read, whatever ``S`` is.
    """
    check_ndim("values", values, "(batch, S, d)", ndim=3)
    check_ndim("positions", positions, "(batch, ..., W)", min_ndim=2)
    if positions.shape[0] != values.shape[0]:
        raise ValueError(
            "positions must have shape (batch, ..., W) with batch ="
            f" {values.shape[0]} like values {shape_of(values)}, got"
            f" {shape_of(positions)}"
        )
    if values.shape[1] == 0:
        raise ValueError(
            f"values must hold at least one position, got {shape_of(values)}"
        )
    index = positions.clamp(0, values.shape[1] - 1).flatten(1)  # (B, n)
    # (B, n, d)
    picked = values.gather(1, index.unsqueeze(-1).expand(-1, -1, values.shape[-1]))
    return picked.view(*positions.shape, values.shape[-1])


def local_window(
    scores: torch.Tensor,
    centre: torch.Tensor,
    half_width: int,
    *,
    positions: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
    gaussian: bool = True,
    sigma: float | None = None,
) -> torch.Tensor:
    """Luong's local attention weights over a window ``[p_t - D, p_t + D]`` of source
    positions.

    ``scores (..., K)`` are the scores of ``K`` source positions ``positions (...,
    K)`` (integers; default ``0 .. K-1``, i.e. the scores of the whole source). A
    position is *inside* the window when
    ``|s - round(p_t)| <= D`` and ``mask`` (boolean ``(..., K)``, ``True`` at real
    words) allows it. Returns

    ``a_t(s) = softmax_{s' inside}(score_{s'})[s] * exp(-(s - p_t)^2 / (2 sigma^2))``
    inside, ``0`` outside,

    with ``sigma = D / 2`` unless given; ``gaussian=False`` drops the Gaussian factor
    (local-m in the paper). ``centre (...)`` is ``p_t`` (the weights are
    differentiable in it through the Gaussian). The window can be given densely (all
    ``S`` positions) or as the ``2D + 1`` positions of :func:`window_positions`: both
    give the same weights at the same positions. A window with no real word inside
    gets all-zero weights.
    """
    check_ndim("scores", scores, "(..., K)", min_ndim=1)
    check_tensor("centre", centre)
    if half_width < 0:
        raise ValueError(f"half_width D must be >= 0, got {half_width}")
    if centre.shape != scores.shape[:-1]:
        raise ValueError(
            f"centre must have shape {shape_of(scores)[:-1]} (the scores"
            f" {shape_of(scores)} without their last axis), got {shape_of(centre)}"
        )
    if positions is None:
        positions = torch.arange(scores.shape[-1], device=scores.device).expand_as(
            scores
        )
    elif positions.shape != scores.shape or positions.dtype.is_floating_point:
        raise ValueError(
            "positions must be an integer tensor shaped like scores"
            f" {shape_of(scores)}, got {shape_of(positions)} of dtype"
            f" {positions.dtype}"
        )
    middle = torch.floor(centre.detach().to(torch.float64) + 0.5).long()
    inside = (positions - middle.unsqueeze(-1)).abs() <= half_width
    if mask is not None:
        if mask.dtype != torch.bool or mask.shape != scores.shape:
            raise ValueError(
                "mask must be a boolean tensor shaped like scores"
                f" {shape_of(scores)}, got {shape_of(mask)} of dtype {mask.dtype}"
            )
        inside = inside & mask
    weights = masked_softmax(scores, inside)
    if not gaussian:
        return weights
    sigma = half_width / 2 if sigma is None else sigma
    if not sigma > 0:
        raise ValueError(
            f"the Gaussian needs sigma > 0, got sigma = {sigma} (half_width D ="
            f" {half_width}; with D = 0 pass sigma explicitly or gaussian=False)"
        )
    distance = positions.to(scores.dtype) - centre.unsqueeze(-1).to(scores.dtype)
    return weights * torch.exp(-distance.pow(2) / (2 * sigma**2))


class LocalAttentionDecoder(LuongDecoder):
    """Luong's local attention: each step scores only the ``2D + 1`` source positions
    around a centre ``p_t``.

    ``centre="monotonic"`` (local-m): ``p_t = t``, the target position, and the
    weights are the softmax inside the window. ``centre="predictive"`` (local-p):
    ``p_t = S * sigmoid(v_p^T tanh(W_p h_t))`` with ``S`` the source length, and the
    softmax is multiplied by a Gaussian ``exp(-(s - p_t)^2 / (2 sigma^2))``, ``sigma
    = D / 2`` (:func:`local_window`). The window's keys are gathered before scoring,
    so a step costs the same whatever the source length. ``score`` is ``"dot"``,
    ``"general"`` or ``"concat"``.

    The weights come back over the whole source ``(B, S)`` (zero outside the window)
    for plotting and evaluation; that scatter is the only part of a step that touches
    all ``S`` positions, and ``dense_weights=False`` skips it, returning the window
    weights ``(B, 2D + 1)`` instead.
    """

    CENTRES = ("monotonic", "predictive")

    def __init__(
        self,
        vocab_size: int,
        embed_size: int,
        hidden_size: int,
        context_size: int,
        *,
        half_width: int,
        centre: str = "predictive",
        score: str | Score | nn.Module = "general",
        dense_weights: bool = True,
        input_feeding: bool = True,
        attention_size: int | None = None,
        cell: str = "gru",
        pad_id: int = 0,
        bos_id: int = 1,
        eos_id: int = 2,
    ) -> None:
        if score == "location":
            raise ValueError(
                "local attention scores the words inside its window; the location"
                " score ignores them, use 'dot', 'general' or 'concat'"
            )
        if centre not in self.CENTRES:
            raise ValueError(f"centre must be one of {self.CENTRES}, got {centre!r}")
        if half_width < 0:
            raise ValueError(f"half_width D must be >= 0, got {half_width}")
        if centre == "predictive" and half_width == 0:
            raise ValueError(
                "local-p needs half_width D >= 1: its Gaussian has sigma = D / 2"
            )
        super().__init__(
            vocab_size,
            embed_size,
            hidden_size,
            context_size,
            score=score,
            input_feeding=input_feeding,
            attention_size=attention_size,
            cell=cell,
            pad_id=pad_id,
            bos_id=bos_id,
            eos_id=eos_id,
        )
        self.half_width, self.centre, self.dense_weights = (
            half_width,
            centre,
            dense_weights,
        )
        if centre == "predictive":
            # v_p^T tanh(W_p h_t)
            self.position = nn.Sequential(
                nn.Linear(hidden_size, hidden_size),
                nn.Tanh(),
                nn.Linear(hidden_size, 1),
            )

    def decode_init(self, encoded: Encoded) -> State:
        state = super().decode_init(encoded)
        # t, for local-m
        state["step"] = torch.zeros(encoded.states.shape[0], dtype=torch.long)
        state["lengths"] = encoded.mask.sum(-1)  # S of each sentence, counted once
        return state

    def centres(
        self, queries: torch.Tensor, state: State, steps: torch.Tensor
    ) -> torch.Tensor:
        """``p_t (B, T)``: the target positions ``steps`` (local-m) or ``S *
        sigmoid(v_p^T tanh(W_p h_t))``."""
        if self.centre == "monotonic":
            return steps.to(queries.dtype)
        return state["lengths"][:, None].to(queries.dtype) * torch.sigmoid(
            self.position(queries)[..., 0]
        )

    @torch.no_grad()
    def centre_trace(self, encoded: Encoded, targets: torch.Tensor) -> torch.Tensor:
        """The window centres ``p_t (B, T)`` of a teacher-forced pass on ``targets
        (B, T)`` (for plots)."""
        check_ndim("targets", targets, "(batch, T)", ndim=2)
        state = self.decode_init(encoded)
        x = torch.full((targets.shape[0],), self.bos_id, dtype=torch.long)
        centres = []
        for t in range(targets.shape[1]):
            step = state["step"]
            _, state, _ = self.decode_step(state, x)
            h = self.output_state(state["hidden"])
            centres.append(self.centres(h[:, None], state, step[:, None])[:, 0])
            x = targets[:, t]
        return torch.stack(centres, dim=1)

    def window_attention(
        self, queries: torch.Tensor, state: State, steps: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(contexts (B, T, d_enc), window weights (B, T, 2D + 1), window positions
        (B, T, 2D + 1))``."""
        centre = self.centres(queries, state, steps)
        positions = window_positions(centre, self.half_width)  # (B, T, W)
        keys = gather_positions(state["memory"], positions)  # (B, T, W, d_enc)
        # real words (a prefix)
        inside = (positions >= 0) & (positions < state["lengths"][:, None, None])
        projected = state.get("projected_keys")
        score = (
            self.score
            if projected is None
            else partial(
                self.score, projected_keys=gather_positions(projected, positions)
            )
        )
        # one query against its own window: (B, T, W)
        scores = score(queries[..., None, :], keys)[..., 0, :]
        weights = local_window(
            scores,
            centre,
            self.half_width,
            positions=positions,
            mask=inside,
            gaussian=self.centre == "predictive",
        )
        context = (weights[..., None] * keys).sum(-2)
        return context, weights, positions

    def attention(
        self, queries: torch.Tensor, state: State, steps: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        context, weights, positions = self.window_attention(queries, state, steps)
        if not self.dense_weights:
            return context, weights
        dense = weights.new_zeros(
            *positions.shape[:-1], state["memory"].shape[1] + 1
        )
        clipped = positions.clamp(0, state["memory"].shape[1]).masked_fill(
            weights == 0, dense.shape[-1] - 1
        )
        return context, dense.scatter(-1, clipped, weights)[..., :-1]
