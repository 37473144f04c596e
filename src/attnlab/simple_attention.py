"""RNN decoders with *simple* (parameter-free) and *parameterized* (query/key/value)
attention.

Both follow the equations of chapter 7, with encoder states
``Y_e = [y_e(1) ... y_e(S)]`` and the decoder state ``y_d(t)``:

* the decoder RNN reads its previous output word, ``y_d(t) = RNN(y_d(t-1),
  y(t-1))``;
* simple attention: ``a(t) = softmax(Y_e^T y_d(t))`` and ``y_a(t) = Y_e a(t)`` (no
  attention parameters);
* parameterized attention: ``a(t) = softmax((W^K Y_e)^T (W^Q y_d(t)))`` and
  ``y_a(t) = (W^V Y_e) a(t)``;
* the output: ``y(t) = softmax(W^o [y_d(t); y_a(t)])``.

Unlike :class:`~attnlab.seq2seq.AttentionDecoder` (Bahdanau), the query is the
*current* state ``y_d(t)``, and the attention vector goes only into the output, not
back into the recurrence. Both decoders plug into :class:`~attnlab.seq2seq.Seq2Seq`
and its greedy and beam decoding.
"""

from __future__ import annotations

import torch
from torch import nn

from attnlab._validate import check_ndim, check_positive, shape_of
from attnlab.attention import attend, dot_score
from attnlab.selfattention import ProjectedAttention
from attnlab.seq2seq import (
    RNNS,
    DecoderBase,
    Encoded,
    Encoder,
    Seq2Seq,
    State,
    check_cell,
)
from attnlab.tasks.translation import SOURCE_VOCAB, TARGET_VOCAB


class SlideAttentionDecoder(DecoderBase):
    """The decoder loop shared by :class:`SimpleAttentionDecoder` and
    :class:`ParameterizedAttentionDecoder`.

    ``y_d(0) = tanh(W_init final)`` from the encoder's final state; step ``t`` embeds
    the previous word, updates the RNN cell, attends with :meth:`attention` and
    scores the next word with the single linear map ``W^o`` on ``[y_d(t); y_a(t)]``
    (the softmax is in the loss). ``attention_size`` is the size of ``y_a(t)``.
    """

    def __init__(
        self,
        vocab_size: int,
        embed_size: int,
        hidden_size: int,
        context_size: int,
        attention_size: int,
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
            ("attention_size", attention_size),
        ]:
            check_positive(name, value)
        self.cell, self.hidden_size, self.context_size = (
            cell,
            hidden_size,
            context_size,
        )
        self.embedding = nn.Embedding(vocab_size, embed_size, padding_idx=pad_id)
        self.init = nn.Linear(context_size, hidden_size)
        # y_d(t) from y_d(t-1) and y(t-1)
        self.rnn = RNNS[cell][1](embed_size, hidden_size)
        self.output = nn.Linear(hidden_size + attention_size, vocab_size)  # W^o

    def check_encoded(self, encoded: Encoded) -> None:
        """The encoder states must be ``(B, S, context_size)``."""
        check_ndim("encoded.states", encoded.states, "(batch, S, d_enc)", ndim=3)
        if encoded.states.shape[-1] != self.context_size:
            raise ValueError(
                "the encoder states must have shape (batch, S,"
                f" {self.context_size}), got {shape_of(encoded.states)}"
            )

    def memory(self, encoded: Encoded) -> dict[str, torch.Tensor]:
        """What the attention reads at every step, computed once per source."""
        raise NotImplementedError

    def attention(
        self, query: torch.Tensor, state: State
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(y_a(t) (B, attention_size), a(t) (B, S))`` for the query ``y_d(t) (B,
        hidden_size)``."""
        raise NotImplementedError

    def decode_init(self, encoded: Encoded) -> State:
        self.check_encoded(encoded)
        hidden = torch.tanh(self.init(encoded.final))
        if self.cell == "lstm":
            hidden = (hidden, torch.zeros_like(hidden))
        return {"hidden": hidden, "mask": encoded.mask, **self.memory(encoded)}

    def decode_step(
        self, state: State, x: torch.Tensor
    ) -> tuple[torch.Tensor, State, torch.Tensor]:
        hidden = self.rnn(self.embedding(x), state["hidden"])
        y_d = hidden[0] if self.cell == "lstm" else hidden
        y_a, a = self.attention(y_d, state)
        logits = self.output(torch.cat([y_d, y_a], dim=-1))
        return logits, {**state, "hidden": hidden}, a


class SimpleAttentionDecoder(SlideAttentionDecoder):
    """Simple attention: ``a(t) = softmax(Y_e^T y_d(t))``, ``y_a(t) = Y_e a(t)``, no
    attention parameters.

    The dot product compares the decoder state with the encoder states directly, so
    both must have the same size: the encoder's ``output_size`` must equal
    ``hidden_size``.
    """

    def __init__(
        self,
        vocab_size: int,
        embed_size: int,
        hidden_size: int,
        *,
        cell: str = "gru",
        pad_id: int = 0,
        bos_id: int = 1,
        eos_id: int = 2,
    ) -> None:
        super().__init__(
            vocab_size,
            embed_size,
            hidden_size,
            hidden_size,
            hidden_size,
            cell=cell,
            pad_id=pad_id,
            bos_id=bos_id,
            eos_id=eos_id,
        )

    def memory(self, encoded: Encoded) -> dict[str, torch.Tensor]:
        return {"memory": encoded.states}  # Y_e: keys and values at once

    def attention(
        self, query: torch.Tensor, state: State
    ) -> tuple[torch.Tensor, torch.Tensor]:
        y_a, a = attend(
            query[:, None],
            state["memory"],
            state["memory"],
            score=dot_score,
            mask=state["mask"][:, None],
        )
        return y_a[:, 0], a[:, 0]


class ParameterizedAttentionDecoder(SlideAttentionDecoder):
    """Parameterized attention with ``W^Q (d_model x hidden)``, ``W^K, W^V (d_model x
    d_enc)``.

    ``a(t) = softmax((W^K Y_e)^T (W^Q y_d(t)))``, ``y_a(t) = (W^V Y_e) a(t)`` through
    :class:`~attnlab.selfattention.ProjectedAttention`; ``W^K Y_e`` and ``W^V Y_e``
    are computed once per source sequence. ``context_size`` is the encoder's
    ``output_size``; ``d_model`` the size of the projections.
    """

    def __init__(
        self,
        vocab_size: int,
        embed_size: int,
        hidden_size: int,
        context_size: int,
        d_model: int,
        *,
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
            d_model,
            cell=cell,
            pad_id=pad_id,
            bos_id=bos_id,
            eos_id=eos_id,
        )
        self.projected = ProjectedAttention(
            hidden_size, context_size, context_size, d_model
        )

    def memory(self, encoded: Encoded) -> dict[str, torch.Tensor]:
        keys, values = self.projected.project_memory(encoded.states, encoded.states)
        return {"keys": keys, "values": values}  # W^K Y_e and W^V Y_e

    def attention(
        self, query: torch.Tensor, state: State
    ) -> tuple[torch.Tensor, torch.Tensor]:
        y_a, a = self.projected.attend_projected(
            query[:, None],
            state["keys"],
            state["values"],
            mask=state["mask"][:, None],
        )
        return y_a[:, 0], a[:, 0]


def slide_attention_model(
    parameterized: bool,
    *,
    hidden_size: int = 32,
    embed_size: int = 32,
    d_model: int | None = None,
    cell: str = "gru",
    simple_decoder: type[SimpleAttentionDecoder] = SimpleAttentionDecoder,
) -> Seq2Seq:
    """An encoder-decoder on the vocabularies of the translation task with one of the
    two decoders above (``simple_decoder``, a subclass of the simple one built with
    its arguments, in place of the simple one).

    The encoder is the bidirectional :class:`~attnlab.seq2seq.Encoder` with
    ``hidden_size / 2`` units per direction, so its states have ``hidden_size``
    features, as many as the decoder state: simple attention needs that for its dot
    product. ``d_model`` (default ``hidden_size``) is the size of the projections of
    the parameterized decoder.
    """
    if hidden_size % 2:
        raise ValueError(
            "a bidirectional encoder splits hidden_size in two halves; got odd"
            f" {hidden_size}"
        )
    encoder = Encoder(
        len(SOURCE_VOCAB),
        embed_size,
        hidden_size // 2,
        cell=cell,
        bidirectional=True,
    )
    ids = {
        "pad_id": TARGET_VOCAB.pad,
        "bos_id": TARGET_VOCAB.bos,
        "eos_id": TARGET_VOCAB.eos,
    }
    if parameterized and simple_decoder is not SimpleAttentionDecoder:
        raise ValueError(
            "simple_decoder replaces the simple decoder; the parameterized model has"
            f" none, got simple_decoder = {simple_decoder.__name__}"
        )
    if parameterized:
        decoder: SlideAttentionDecoder = ParameterizedAttentionDecoder(
            len(TARGET_VOCAB),
            embed_size,
            hidden_size,
            encoder.output_size,
            d_model or hidden_size,
            cell=cell,
            **ids,
        )
    else:
        if d_model is not None:
            raise ValueError(
                "d_model is only used with parameterized=True: simple attention has"
                " no projections"
            )
        decoder = simple_decoder(
            len(TARGET_VOCAB), embed_size, hidden_size, cell=cell, **ids
        )
    return Seq2Seq(encoder, decoder)
