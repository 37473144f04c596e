"""Encoder-decoder RNNs: an encoder, decoders without and with (Bahdanau) attention,
greedy and beam decoding.

Every decoder follows the same loop, written as three methods:

* * ``decode_init(encoded) -> state``: the decoder's starting state, built from the
  encoder's output;
* * ``decode_step(state, x) -> (logits, state, weights)``: read the previous word
  ``x``, update the state, score every next word; ``weights (B, S)`` are the
  attention weights over the source (``None`` without attention);
* * ``decode(encoded, targets=None, max_len=None)``: run the steps, feeding the true
  previous word (teacher forcing, when ``targets`` are given) or the model's own
  prediction (inference).

A state is a ``dict`` of tensors (or tuples of tensors) whose first dimension is the
batch, so greedy and beam search can work with any decoder: beam search only copies
and reorders rows of the state. Token ids: ``pad_id`` pads, ``bos_id`` starts every
output, ``eos_id`` ends it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from attnlab._validate import check_ndim, check_positive, check_shape, shape_of
from attnlab.attention import (
    AdditiveScore,
    GeneralScore,
    LocationScore,
    Score,
    attend,
    dot_score,
    gather_positions,
    local_window,
    window_positions,
)

State = dict[str, Any]
_RNNS = {"gru": (nn.GRU, nn.GRUCell), "lstm": (nn.LSTM, nn.LSTMCell)}


def _check_cell(cell: str) -> None:
    if cell not in _RNNS:
        raise ValueError(f"cell must be one of {sorted(_RNNS)}, got {cell!r}")


def map_state(state: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """Apply ``fn`` to every tensor of a (nested) decoder state: dicts, tuples and
    lists are walked through."""
    if isinstance(state, torch.Tensor):
        return fn(state)
    if isinstance(state, dict):
        return {k: map_state(v, fn) for k, v in state.items()}
    if isinstance(state, (tuple, list)):
        return type(state)(map_state(v, fn) for v in state)
    return state


def check_source(src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
    """Check ``src (B, S)`` and ``src_mask (B, S)`` (True at real words, padding only
    at the end of a row).

    Returns the lengths ``(B,)``.
    """
    check_ndim("src", src, "(batch, S)", ndim=2)
    check_shape("src_mask", src_mask, tuple(src.shape), "(batch, S) like src")
    if src_mask.dtype != torch.bool:
        raise ValueError(
            "src_mask must be a boolean tensor (True = real word), got dtype"
            f" {src_mask.dtype}"
        )
    lengths = src_mask.sum(-1)
    if src.shape[0] and lengths.min() < 1:
        raise ValueError(
            "every source sequence needs at least one word; src_mask has an"
            " all-False row"
        )
    prefix = torch.arange(src.shape[1]) < lengths[:, None]
    if not torch.equal(prefix, src_mask):
        raise ValueError(
            "src_mask must be True on a prefix of each row (padding only at the end)"
        )
    return lengths


@dataclass
class Encoded:
    """The encoder's output: ``states (B, S, d_enc)`` (zero at padding), ``final (B,
    d_enc)``, ``mask (B, S)``."""

    states: torch.Tensor
    final: torch.Tensor
    mask: torch.Tensor


class Encoder(nn.Module):
    """Embedding + GRU or LSTM over the source, one or both directions.

    ``forward(src (B, S), src_mask (B, S)) -> Encoded``. With ``bidirectional=True``
    each state is the concatenation ``[forward state; backward state]`` (``d_enc = 2
    * hidden_size``) and ``final`` joins the forward direction's last state (after
    the last real word) with the backward direction's last state (after reading back
    to the first word). Padding never enters the recurrence.
    """

    def __init__(
        self,
        vocab_size: int,
        embed_size: int,
        hidden_size: int,
        *,
        cell: str = "gru",
        bidirectional: bool = True,
        pad_id: int = 0,
    ) -> None:
        super().__init__()
        _check_cell(cell)
        for name, value in [
            ("vocab_size", vocab_size),
            ("embed_size", embed_size),
            ("hidden_size", hidden_size),
        ]:
            check_positive(name, value)
        self.cell, self.bidirectional = cell, bidirectional
        self.embedding = nn.Embedding(vocab_size, embed_size, padding_idx=pad_id)
        self.rnn = _RNNS[cell][0](
            embed_size, hidden_size, batch_first=True, bidirectional=bidirectional
        )
        self.output_size = hidden_size * (2 if bidirectional else 1)

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor) -> Encoded:
        lengths = check_source(src, src_mask)
        packed = nn.utils.rnn.pack_padded_sequence(
            self.embedding(src),
            lengths.cpu(),
            batch_first=True,
            enforce_sorted=False,
        )
        outputs, last = self.rnn(packed)
        states, _ = nn.utils.rnn.pad_packed_sequence(
            outputs, batch_first=True, total_length=src.shape[1]
        )
        h_n = (
            last[0] if self.cell == "lstm" else last
        )  # (directions, B, hidden); an LSTM's cell state stays inside
        final = torch.cat(list(h_n), dim=-1)
        return Encoded(states, final, src_mask)


@dataclass
class DecodeResult:
    """What :meth:`DecoderBase.decode` returns.

    logits ``(B, T, V)``; tokens ``(B, T)`` the argmax words (``pad_id`` after a
    row's ``<eos>`` in inference); weights ``(B, T, S)`` attention weights per output
    step, or ``None`` for a decoder without attention.
    """

    logits: torch.Tensor
    tokens: torch.Tensor
    weights: torch.Tensor | None


class DecoderBase(nn.Module):
    """The decoder loop shared by every decoder; subclasses define ``decode_init``
    and ``decode_step``."""

    def __init__(
        self, vocab_size: int, *, pad_id: int = 0, bos_id: int = 1, eos_id: int = 2
    ) -> None:
        super().__init__()
        check_positive("vocab_size", vocab_size)
        self.vocab_size, self.pad_id, self.bos_id, self.eos_id = (
            vocab_size,
            pad_id,
            bos_id,
            eos_id,
        )

    def decode_init(self, encoded: Encoded) -> State:
        """The state before the first output word."""
        raise NotImplementedError

    def decode_step(
        self, state: State, x: torch.Tensor
    ) -> tuple[torch.Tensor, State, torch.Tensor | None]:
        """Read the previous words ``x (B,)``; return ``(logits (B, V), new state,
        weights (B, S) or None)``."""
        raise NotImplementedError

    def choose(self, logits: torch.Tensor) -> torch.Tensor:
        """Log-probabilities ``(..., V)`` with padding and ``<bos>`` excluded (-inf):
        the words a search may emit."""
        log_probs = torch.log_softmax(logits, dim=-1)
        return log_probs.index_fill(
            -1, torch.tensor([self.pad_id, self.bos_id]), -torch.inf
        )

    def decode(
        self,
        encoded: Encoded,
        targets: torch.Tensor | None = None,
        max_len: int | None = None,
    ) -> DecodeResult:
        """Run the decoder: teacher forcing on ``targets (B, T)`` or greedy inference
        for up to ``max_len`` steps.

        With targets, step ``t`` reads the true word ``targets[:, t-1]`` (``<bos>``
        at ``t = 0``) and the logits score ``targets[:, t]``. Without them, step
        ``t`` reads the word the model chose at ``t - 1``; the loop stops early once
        every row has produced ``<eos>``.
        """
        if (targets is None) == (max_len is None):
            raise ValueError(
                "give either targets (teacher forcing) or max_len (inference), not"
                " both or neither"
            )
        batch = encoded.states.shape[0]
        if targets is not None:
            check_ndim("targets", targets, "(batch, T)", ndim=2)
            if targets.shape[0] != batch:
                raise ValueError(
                    f"targets must have shape (batch, T) with batch = {batch}, got"
                    f" {shape_of(targets)}"
                )
        steps = targets.shape[1] if targets is not None else max_len
        check_positive("the number of decoding steps", steps)

        state = self.decode_init(encoded)
        x = torch.full((batch,), self.bos_id, dtype=torch.long)
        logits, weights, tokens = [], [], []
        finished = torch.zeros(batch, dtype=torch.bool)
        for t in range(steps):
            step_logits, state, step_weights = self.decode_step(state, x)
            logits.append(step_logits)
            weights.append(step_weights)
            if targets is not None:
                x = targets[:, t]  # training: teacher forcing feeds the correct word
            else:
                x = self.choose(step_logits).argmax(
                    -1
                )  # inference: the prediction becomes the next input
                tokens.append(x)
                finished |= x == self.eos_id
                if finished.all():
                    break
        logits = torch.stack(logits, dim=1)
        attention = None if weights[0] is None else torch.stack(weights, dim=1)
        if targets is not None:
            return DecodeResult(logits, self.choose(logits).argmax(-1), attention)
        tokens = torch.stack(tokens, dim=1)
        is_eos = (
            tokens == self.eos_id
        ).long()  # blank out everything after a row's first <eos>
        tokens = tokens.masked_fill(is_eos.cumsum(1) - is_eos > 0, self.pad_id)
        return DecodeResult(logits, tokens, attention)


class Decoder(DecoderBase):
    """The RNN encoder-decoder without attention (Cho et al., 2014): the context is
    the encoder's final state.

    The state starts at ``tanh(W_init c)``; every step reads ``[embedding(x); c]``
    and scores the next word from ``[h_t; c; embedding(x)]`` through a tanh layer, so
    the one vector ``c`` is all the decoder knows about the source. ``context_size``
    is the encoder's ``output_size``.
    """

    def __init__(
        self,
        vocab_size: int,
        embed_size: int,
        hidden_size: int,
        context_size: int,
        *,
        cell: str = "gru",
        pad_id: int = 0,
        bos_id: int = 1,
        eos_id: int = 2,
    ) -> None:
        super().__init__(vocab_size, pad_id=pad_id, bos_id=bos_id, eos_id=eos_id)
        _check_cell(cell)
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
        self.embedding = nn.Embedding(vocab_size, embed_size, padding_idx=pad_id)
        self.init = nn.Linear(context_size, hidden_size)
        self.rnn = _RNNS[cell][1](embed_size + context_size, hidden_size)
        self.readout = nn.Sequential(
            nn.Linear(hidden_size + context_size + embed_size, hidden_size),
            nn.Tanh(),
            nn.Linear(hidden_size, vocab_size),
        )

    def initial_hidden(
        self, encoded: Encoded
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """``tanh(W_init final)``, plus a zero cell state for an LSTM."""
        check_ndim("encoded.final", encoded.final, "(batch, d_enc)", ndim=2)
        if encoded.final.shape[-1] != self.context_size:
            raise ValueError(
                "the encoder's final state must have shape (batch,"
                f" {self.context_size}), got {shape_of(encoded.final)}"
            )
        h = torch.tanh(self.init(encoded.final))
        return (h, torch.zeros_like(h)) if self.cell == "lstm" else h

    @staticmethod
    def output_state(
        hidden: torch.Tensor | tuple[torch.Tensor, torch.Tensor],
    ) -> torch.Tensor:
        """The state ``h (B, hidden)`` that the readout and attention see (an LSTM's
        ``h``, not its cell)."""
        return hidden[0] if isinstance(hidden, tuple) else hidden

    def step(
        self, hidden: Any, x: torch.Tensor, context: torch.Tensor
    ) -> tuple[Any, torch.Tensor]:
        """Update the RNN with ``[embedding(x); context]``; return ``(hidden, logits
        (B, V))``."""
        embedded = self.embedding(x)
        hidden = self.rnn(torch.cat([embedded, context], dim=-1), hidden)
        logits = self.readout(
            torch.cat([self.output_state(hidden), context, embedded], dim=-1)
        )
        return hidden, logits

    def decode_init(self, encoded: Encoded) -> State:
        return {"hidden": self.initial_hidden(encoded), "context": encoded.final}

    def decode_step(
        self, state: State, x: torch.Tensor
    ) -> tuple[torch.Tensor, State, None]:
        hidden, logits = self.step(
            state["hidden"], x, state["context"]
        )  # the same context at every step
        return logits, {**state, "hidden": hidden}, None


class AttentionDecoder(Decoder):
    """Bahdanau attention: at every step a new context, the attention-weighted
    average of all encoder states.

    Step ``t`` scores the previous state ``h_{t-1}`` (the query) against every
    encoder state (keys = values) with ``score`` (default:
    :class:`~attnlab.attention.AdditiveScore` with ``attention_size`` hidden units),
    normalises over the real source words, and uses the context ``c_t`` exactly where
    :class:`Decoder` uses its fixed ``c``. A score with a ``project_keys`` method has
    its key side computed once per source sequence.
    """

    def __init__(
        self,
        vocab_size: int,
        embed_size: int,
        hidden_size: int,
        context_size: int,
        *,
        score: Score | nn.Module | None = None,
        attention_size: int | None = None,
        cell: str = "gru",
        pad_id: int = 0,
        bos_id: int = 1,
        eos_id: int = 2,
    ) -> None:
        super().__init__(
            vocab_size,
            embed_size,
            hidden_size,
            context_size,
            cell=cell,
            pad_id=pad_id,
            bos_id=bos_id,
            eos_id=eos_id,
        )
        self.score = (
            score
            if score is not None
            else AdditiveScore(
                hidden_size, context_size, attention_size or hidden_size
            )
        )

    def decode_init(self, encoded: Encoded) -> State:
        state = {
            "hidden": self.initial_hidden(encoded),
            "memory": encoded.states,
            "mask": encoded.mask,
        }
        if hasattr(self.score, "project_keys"):
            state["projected_keys"] = self.score.project_keys(encoded.states)
        return state

    def attention(
        self, query: torch.Tensor, state: State
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Context ``(B, d_enc)`` and weights ``(B, S)`` for ``query (B, d_q)`` over
        the state's memory."""
        score = self.score
        if "projected_keys" in state:
            score = partial(self.score, projected_keys=state["projected_keys"])
        context, weights = attend(
            query[:, None],
            state["memory"],
            state["memory"],
            score=score,
            mask=state["mask"][:, None],
        )
        return context[:, 0], weights[:, 0]

    def decode_step(
        self, state: State, x: torch.Tensor
    ) -> tuple[torch.Tensor, State, torch.Tensor]:
        context, weights = self.attention(
            self.output_state(state["hidden"]), state
        )  # query: h_{t-1}
        hidden, logits = self.step(state["hidden"], x, context)
        return logits, {**state, "hidden": hidden}, weights


class Seq2Seq(nn.Module):
    """An :class:`Encoder` and a decoder: ``forward(src, src_mask, targets)`` decodes
    with teacher forcing."""

    def __init__(self, encoder: Encoder, decoder: DecoderBase) -> None:
        super().__init__()
        self.encoder, self.decoder = encoder, decoder

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> Encoded:
        return self.encoder(src, src_mask)

    def forward(
        self, src: torch.Tensor, src_mask: torch.Tensor, targets: torch.Tensor
    ) -> DecodeResult:
        return self.decoder.decode(self.encode(src, src_mask), targets=targets)

    def greedy(
        self, src: torch.Tensor, src_mask: torch.Tensor, max_len: int | None = None
    ) -> DecodeResult:
        """Greedy inference, at most ``max_len`` words (default ``2 S + 10``)."""
        return self.decoder.decode(
            self.encode(src, src_mask), max_len=max_len or 2 * src.shape[1] + 10
        )

    def beam_search(
        self,
        src: torch.Tensor,
        src_mask: torch.Tensor,
        beam_size: int,
        max_len: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:func:`beam_search` on this model's encoding of ``src``; returns ``(tokens
        (B, T), log-probs (B,))``."""
        return beam_search(
            self.decoder,
            self.encode(src, src_mask),
            beam_size,
            max_len or 2 * src.shape[1] + 10,
        )

    def log_prob(
        self, src: torch.Tensor, src_mask: torch.Tensor, tokens: torch.Tensor
    ) -> torch.Tensor:
        """``log p(tokens | src)`` per row ``(B,)``, summed up to the first ``<eos>``
        (teacher forced)."""
        return sequence_log_prob(self.decoder, self.encode(src, src_mask), tokens)


def sequence_log_prob(
    decoder: DecoderBase, encoded: Encoded, tokens: torch.Tensor
) -> torch.Tensor:
    """``log p(tokens)`` per row ``(B,)``, summed over the words up to and including
    the first ``<eos>``."""
    check_ndim("tokens", tokens, "(batch, T)", ndim=2)
    log_probs = torch.log_softmax(
        decoder.decode(encoded, targets=tokens).logits, dim=-1
    )
    picked = log_probs.gather(-1, tokens[..., None])[..., 0]
    is_eos = (tokens == decoder.eos_id).long()
    counted = ((is_eos.cumsum(1) - is_eos) == 0) & (
        tokens != decoder.pad_id
    )  # words up to the first <eos>
    return (picked * counted).sum(-1)


def _greedy_log_prob(
    decoder: DecoderBase, encoded: Encoded, max_len: int
) -> tuple[torch.Tensor, torch.Tensor]:
    result = decoder.decode(encoded, max_len=max_len)
    log_probs = torch.log_softmax(result.logits, dim=-1).gather(
        -1, result.tokens[..., None]
    )[..., 0]
    return result.tokens, log_probs.masked_fill(
        result.tokens == decoder.pad_id, 0.0
    ).sum(-1)


def beam_search(
    decoder: DecoderBase, encoded: Encoded, beam_size: int, max_len: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The most likely output found by keeping the ``beam_size`` best partial outputs
    at every step.

    A hypothesis' score is its log-probability (the sum of its words'
    log-probabilities, ``<eos>`` included). Finished hypotheses stay in the beam with
    their score; the search stops when every beam has finished, when a finished
    hypothesis beats every unfinished one (their scores can only fall), or after
    ``max_len`` words. Pruning can drop the greedy output and end with something less
    likely; the greedy output is therefore kept as a candidate, so the answer is
    never less likely than greedy's. ``beam_size=1`` is greedy decoding.

    Returns ``(tokens (B, T), scores (B,))`` with ``pad_id`` after each ``<eos>``.
    """
    check_positive("beam_size", beam_size)
    check_positive("max_len", max_len)
    batch, k = encoded.states.shape[0], beam_size
    state = map_state(
        decoder.decode_init(encoded), lambda s: s.repeat_interleave(k, dim=0)
    )  # (B*K, ...)
    scores = torch.full((batch, k), -torch.inf)
    scores[:, 0] = 0.0  # one live hypothesis at the start: <bos>
    tokens = torch.zeros(batch, k, 0, dtype=torch.long)
    finished = torch.zeros(batch, k, dtype=torch.bool)
    x = torch.full((batch * k,), decoder.bos_id, dtype=torch.long)
    only_pad = torch.full((decoder.vocab_size,), -torch.inf)
    only_pad[decoder.pad_id] = (
        0.0  # a finished hypothesis can only grow by padding, at no cost
    )
    for _ in range(max_len):
        logits, state, _ = decoder.decode_step(state, x)
        log_probs = decoder.choose(logits).view(batch, k, -1)
        log_probs = torch.where(finished[..., None], only_pad, log_probs)
        top, index = (scores[..., None] + log_probs).view(batch, -1).topk(k, dim=-1)
        beam, word = index // decoder.vocab_size, index % decoder.vocab_size
        tokens = torch.cat(
            [
                tokens.gather(1, beam[..., None].expand(-1, -1, tokens.shape[-1])),
                word[..., None],
            ],
            -1,
        )
        finished = finished.gather(1, beam) | (word == decoder.eos_id)
        scores = top
        rows = (beam + torch.arange(batch)[:, None] * k).view(-1)
        state = map_state(state, partial(torch.index_select, dim=0, index=rows))
        x = word.view(-1)
        best_finished = scores.masked_fill(~finished, -torch.inf).max(-1).values
        best_open = scores.masked_fill(finished, -torch.inf).max(-1).values
        if (best_finished >= best_open).all():
            break
    best = scores.argmax(-1)
    out, out_scores = (
        tokens[torch.arange(batch), best],
        scores[torch.arange(batch), best],
    )
    greedy_tokens, greedy_scores = _greedy_log_prob(decoder, encoded, max_len)
    use_greedy = greedy_scores > out_scores
    if use_greedy.any():
        width = max(out.shape[1], greedy_tokens.shape[1])
        out = F.pad(out, (0, width - out.shape[1]), value=decoder.pad_id)
        greedy_tokens = F.pad(
            greedy_tokens, (0, width - greedy_tokens.shape[1]), value=decoder.pad_id
        )
        out = torch.where(use_greedy[:, None], greedy_tokens, out)
        out_scores = torch.where(use_greedy, greedy_scores, out_scores)
    return out, out_scores


# Luong attention (Luong, Pham and Manning, 2015): global and local attention from
# the current decoder state.

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
        _check_cell(cell)
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
        self.rnn = _RNNS[cell][0](
            embed_size + (hidden_size if input_feeding else 0),
            hidden_size,
            batch_first=True,
        )
        self.combine = nn.Linear(
            context_size + hidden_size, hidden_size, bias=False
        )  # W_c
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
        h, hidden = self.run_rnn(
            state["hidden"], inputs[:, None]
        )  # h: (B, 1, d_h), the current state h_t
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
        h, _ = self.run_rnn(
            state["hidden"], self.embedding(previous)
        )  # every h_t at once: (B, T, d_h)
        context, weights = self.attention(
            h, state, torch.arange(steps).expand(batch, steps)
        )
        _, logits = self.readout(h, context)
        return DecodeResult(logits, self.choose(logits).argmax(-1), weights)


class LocalAttentionDecoder(LuongDecoder):
    """Luong's local attention: each step scores only the ``2D + 1`` source positions
    around a centre ``p_t``.

    ``centre="monotonic"`` (local-m): ``p_t = t``, the target position, and the
    weights are the softmax inside the window. ``centre="predictive"`` (local-p):
    ``p_t = S * sigmoid(v_p^T tanh(W_p h_t))`` with ``S`` the source length, and the
    softmax is multiplied by a Gaussian ``exp(-(s - p_t)^2 / (2 sigma^2))``, ``sigma
    = D / 2`` (:func:`~attnlab.attention.local_window`). The window's keys are
    gathered before scoring, so a step costs the same whatever the source length.
    ``score`` is ``"dot"``, ``"general"`` or ``"concat"``.

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
            self.position = nn.Sequential(
                nn.Linear(hidden_size, hidden_size),
                nn.Tanh(),
                nn.Linear(hidden_size, 1),
            )  # v_p^T tanh(W_p h_t)

    def decode_init(self, encoded: Encoded) -> State:
        state = super().decode_init(encoded)
        state["step"] = torch.zeros(
            encoded.states.shape[0], dtype=torch.long
        )  # t, for local-m
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
        inside = (positions >= 0) & (
            positions < state["lengths"][:, None, None]
        )  # real words (a prefix)
        projected = state.get("projected_keys")
        score = (
            self.score
            if projected is None
            else partial(
                self.score, projected_keys=gather_positions(projected, positions)
            )
        )
        scores = score(queries[..., None, :], keys)[
            ..., 0, :
        ]  # one query against its own window: (B, T, W)
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
