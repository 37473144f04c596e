"""Encoder-decoder RNNs, chapters 3 and 4: an encoder, decoders without and with
(Bahdanau) attention, greedy and beam decoding.

Every decoder follows the same loop, written as three methods:

* ``decode_init(encoded) -> state``: the decoder's starting state, built from the
  encoder's output;
* ``decode_step(state, x) -> (logits, state, weights)``: read the previous word
  ``x``, update the state, score every next word; ``weights (B, S)`` are the
  attention weights over the source (``None`` without attention);
* ``decode(encoded, targets=None, max_len=None)``: run the steps, feeding the true
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
from attnlab.attention import AdditiveScore, Score, attend

State = dict[str, Any]
RNNS = {"gru": (nn.GRU, nn.GRUCell), "lstm": (nn.LSTM, nn.LSTMCell)}  # layer, cell


def check_cell(cell: str) -> None:
    """Raise ``ValueError`` unless ``cell`` names one of :data:`RNNS`."""
    if cell not in RNNS:
        raise ValueError(f"cell must be one of {sorted(RNNS)}, got {cell!r}")


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
        check_cell(cell)
        for name, value in [
            ("vocab_size", vocab_size),
            ("embed_size", embed_size),
            ("hidden_size", hidden_size),
        ]:
            check_positive(name, value)
        self.cell, self.bidirectional = cell, bidirectional
        self.embedding = nn.Embedding(vocab_size, embed_size, padding_idx=pad_id)
        self.rnn = RNNS[cell][0](
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
        # (directions, B, hidden); an LSTM's cell state stays inside
        h_n = last[0] if self.cell == "lstm" else last
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
                # inference: the prediction becomes the next input
                x = self.choose(step_logits).argmax(-1)
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
        self.embedding = nn.Embedding(vocab_size, embed_size, padding_idx=pad_id)
        self.init = nn.Linear(context_size, hidden_size)
        self.rnn = RNNS[cell][1](embed_size + context_size, hidden_size)
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
        # the same context at every step
        hidden, logits = self.step(state["hidden"], x, state["context"])
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
        # query: h_{t-1}
        context, weights = self.attention(self.output_state(state["hidden"]), state)
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
    # words up to the first <eos>
    counted = ((is_eos.cumsum(1) - is_eos) == 0) & (tokens != decoder.pad_id)
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
    # (B*K, ...)
    state = map_state(
        decoder.decode_init(encoded), lambda s: s.repeat_interleave(k, dim=0)
    )
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
