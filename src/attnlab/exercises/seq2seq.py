"""Checks for the chapters "Encoder-decoder RNNs and the bottleneck" and "Bahdanau
attention".

Chapter 3: the teacher-forced decoder loop, the padded sequence loss and a greedy
decoder that stops at ``<eos>`` (two debugging exercises) and the reversed source (an
experiment). Chapter 4: Bahdanau's context vector, the attention map of all output
steps at once (debugging), the alignment accuracy and the alignment learnt by a one-
or two-directional encoder (an experiment).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from attnlab import metrics
from attnlab.attention import AdditiveScore, attend, masked_softmax
from attnlab.exercises._checking import (
    ExerciseError,
    as_tensor,
    call,
    close,
    exercise_check,
    expect_close,
    expect_number,
    expect_tensor,
    generator,
    passed,
)
from attnlab.experiments.encoder_decoder import backwards
from attnlab.seq2seq import AttentionDecoder, Decoder, DecoderBase, Encoded, Seq2Seq
from attnlab.tasks.translation import (
    TranslationBatch,
    attention_maps,
    examples_per_length,
    make_batch,
    translation_loss,
)


@contextmanager
def _random_state_kept() -> Iterator[None]:
    """Run a block (e.g. the student's training) and put Python's, NumPy's and
    torch's random state back."""
    python_state, numpy_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng():
        try:
            yield
        finally:
            random.setstate(python_state)
            np.random.set_state(numpy_state)


def _seed_from(gen: torch.Generator) -> int:
    return int(torch.randint(0, 2**31 - 1, (1,), generator=gen))


# -----------------------------------------------------------------------------------
# Chapter 3: the teacher-forced loop


def _small_decoders() -> list[Decoder]:
    """Three small decoders with fixed weights; the notebook's random state is left
    as it was."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return [
            Decoder(9, 4, 6, 8).eval(),
            AttentionDecoder(9, 4, 6, 8).eval(),
            Decoder(9, 4, 6, 8, cell="lstm").eval(),
        ]


def _encoded(
    batch: int, length: int, lengths: list[int], gen: torch.Generator
) -> Encoded:
    mask = torch.arange(length) < torch.tensor(lengths)[:, None]
    states = torch.randn(batch, length, 8, generator=gen) * mask[..., None]
    return Encoded(states, torch.randn(batch, 8, generator=gen), mask)


def _loop(
    decoder: Decoder, encoded: Encoded, targets: torch.Tensor, feed: str
) -> torch.Tensor:
    """The teacher-forced loop and its typical mistakes (``feed`` says what the next
    step reads)."""
    state = decoder.decode_init(encoded)
    first = decoder.decode_init(encoded)
    x = torch.full((targets.shape[0],), decoder.bos_id)
    logits = []
    for t in range(targets.shape[1]):
        step_logits, new_state, _ = decoder.decode_step(
            state if feed != "no-state" else first,
            targets[:, t] if feed == "same-step" else x,
        )
        state = new_state
        logits.append(step_logits)
        x = step_logits.argmax(-1) if feed == "prediction" else targets[:, t]
    return torch.stack(logits, dim=1)


@exercise_check(DecoderBase.decode)
def check_teacher_forcing(
    decode_teacher_forcing: Callable, seed: int | None = 0
) -> None:
    """Check ``decode_teacher_forcing(decoder, encoded, targets) -> logits (B, T,
    V)``.

    Step ``t`` must read ``<bos>`` (t = 0) or the true word ``targets[:, t-1]``,
    carry the state on, and the logits of all steps are stacked along dimension 1.
    Training back-propagates through them, so the logits must carry the gradient of
    the decoder's parameters.
    """
    name = "decode_teacher_forcing"
    gen = generator(seed)
    cases = 0
    for decoder in _small_decoders():
        for batch, length, lengths, steps in [(3, 5, [5, 2, 4], 6), (1, 3, [3], 1)]:
            encoded = _encoded(batch, length, lengths, gen)
            targets = torch.randint(3, 9, (batch, steps), generator=gen)
            out = call(decode_teacher_forcing, name, decoder, encoded, targets)
            if isinstance(out, np.ndarray) or (
                isinstance(out, torch.Tensor) and not out.requires_grad
            ):
                raise ExerciseError(
                    f"{name}'s logits carry no gradient: the loop runs under"
                    " torch.no_grad(), or detaches the logits (.detach(), .numpy(),"
                    " .data). This loop is what training back-propagates through,"
                    " so keep the gradient: no no_grad, no detach"
                )
            logits = expect_tensor(
                f"{name}'s logits", out, (batch, steps, decoder.vocab_size)
            )
            grads = torch.autograd.grad(
                out.sum(), list(decoder.parameters()), allow_unused=True
            )
            if all(g is None or not g.abs().sum() > 0 for g in grads):
                raise ExerciseError(
                    f"no gradient reaches the decoder's weights from {name}'s"
                    " logits: compute them with decoder.decode_step and do not"
                    " detach them"
                )
            with torch.no_grad():
                reference = decoder.decode(encoded, targets=targets).logits
                if close(logits, reference):
                    cases += 1
                    continue
                for feed, hint in [
                    (
                        "prediction",
                        (
                            "you feed the model's own prediction back; in training,"
                            " feed the true previous word targets[:, t-1] (teacher"
                            " forcing)"
                        ),
                    ),
                    (
                        "same-step",
                        (
                            "step t reads targets[:, t], the very word it has to"
                            " predict; it must read the previous word (<bos> at t"
                            " = 0)"
                        ),
                    ),
                    (
                        "no-state",
                        (
                            "every step starts from the initial state; pass on the"
                            " state that decode_step returns"
                        ),
                    ),
                ]:
                    if close(logits, _loop(decoder, encoded, targets, feed)):
                        raise ExerciseError(f"{name} is wrong: {hint}.")
            expect_close(
                f"{name}'s logits",
                logits,
                reference,
                f"for a {type(decoder).__name__} on {steps} target words",
            )
    passed(name, cases)


# -----------------------------------------------------------------------------------
# Chapter 3: the loss over padded targets (debugging)


def _reference_sequence_loss(
    logits: torch.Tensor, targets: torch.Tensor, pad_id: int
) -> torch.Tensor:
    log_probs = torch.log_softmax(logits.double(), dim=-1).gather(
        -1, targets[..., None]
    )[..., 0]
    real = targets != pad_id
    return -(log_probs * real).sum() / real.sum()


def _word_losses(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return -torch.log_softmax(logits.double(), dim=-1).gather(
        -1, targets[..., None]
    )[..., 0]


@exercise_check(translation_loss)
def check_sequence_loss(sequence_loss: Callable, seed: int | None = 0) -> None:
    """Check ``sequence_loss(logits (B, T, V), targets (B, T), pad_id) -> loss`` (a
    scalar tensor).

    The mean cross-entropy over the target positions that are not padding (``targets
    != pad_id``), with the gradient kept for training.
    """
    name = "fixed_sequence_loss"
    gen = generator(seed)
    cases = [
        (4, 7, 6, [7, 3, 5, 1], 0, 2.0),
        (3, 5, 9, [5, 5, 2], 4, 2.0),
        (2, 6, 5, [6, 2], 0, 1000.0),
    ]
    for batch, steps, vocab, lengths, pad_id, scale in cases:
        what = f"for targets (B={batch}, T={steps}) with pad_id={pad_id}"
        logits = (
            scale * torch.randn(batch, steps, vocab, generator=gen)
        ).requires_grad_()
        words = torch.randint(0, vocab - 1, (batch, steps), generator=gen)
        # real words are never the padding index
        words = words + (words >= pad_id).long()
        real = torch.arange(steps) < torch.tensor(lengths)[:, None]
        targets = torch.where(real, words, torch.full_like(words, pad_id))
        out = call(sequence_loss, name, logits, targets, pad_id)
        if isinstance(out, tuple | list):
            raise ExerciseError(
                f"{name} must return one number, the loss, got a"
                f" {type(out).__name__}"
            )
        if not isinstance(out, torch.Tensor) or not out.requires_grad:
            raise ExerciseError(
                f"{name}'s loss carries no gradient (.item(), float(), .detach() or"
                " torch.no_grad()): training calls loss.backward(), so return the"
                " tensor"
            )
        value = (
            expect_number(name, out)
            if torch.isfinite(out.detach()).all()
            else float("nan")
        )
        if value != value:
            raise ExerciseError(
                f"{name} returned NaN or infinity for logits of size about"
                f" {scale:g}: take the log-probabilities with torch.log_softmax (or"
                " F.cross_entropy), not log(softmax(...)), which overflows and"
                " underflows"
            )
        expected = _reference_sequence_loss(logits.detach(), targets, pad_id).item()
        if abs(value - expected) <= 1e-5 * max(1.0, abs(expected)):
            continue
        losses = _word_losses(logits.detach(), targets)
        real_words = targets != pad_id
        wrong = [
            (
                losses.mean(),
                (
                    "you average over every position, padding included: leave out"
                    " the positions where targets == pad_id (their words are not"
                    " part of any sentence)"
                ),
            ),
            (
                (losses * real_words).sum() / losses.numel(),
                (
                    "you divide by the number of all positions, padding "
                    "included: divide by the number of real target words"
                ),
            ),
            (
                (losses * real_words).sum(),
                (
                    "you return the sum over the words: the loss is their mean, so"
                    " that it does not grow with the batch"
                ),
            ),
            (
                ((losses * real_words).sum(1) / real_words.sum(1)).mean(),
                (
                    "you average each sentence first and then the sentences: average"
                    " over all real target words of the batch, so that every word"
                    " counts the same"
                ),
            ),
            (
                losses[targets != 0].mean(),
                "you treat index 0 as padding: use the pad_id argument",
            ),
        ]
        for candidate, hint in wrong:
            if abs(value - candidate.item()) <= 1e-5 * max(
                1.0, abs(candidate.item())
            ):
                raise ExerciseError(f"{name} is wrong {what}: {hint}.")
        raise ExerciseError(
            f"{name} is wrong {what}: it differs by {abs(value - expected):.3g} from"
            " the mean cross-entropy over the real target words"
        )
    passed(name, len(cases))


# -----------------------------------------------------------------------------------
# Chapter 3: greedy decoding that stops at <eos> (debugging)


class _ScriptedDecoder(DecoderBase):
    """A decoder whose row ``b`` writes ``script[b, t]`` at step ``t`` whatever it
    reads (to test stopping)."""

    def __init__(self, script: torch.Tensor) -> None:
        super().__init__(7, pad_id=0, bos_id=1, eos_id=2)
        self.script = script

    def decode_init(self, encoded: Encoded) -> dict[str, torch.Tensor]:
        batch = encoded.states.shape[0]
        return {
            "row": torch.arange(batch),
            "t": torch.zeros(batch, dtype=torch.long),
        }

    def decode_step(
        self, state: dict[str, torch.Tensor], x: torch.Tensor
    ) -> tuple[torch.Tensor, dict, None]:
        t = state["t"].clamp(max=self.script.shape[1] - 1)
        logits = (
            5.0 * F.one_hot(self.script[state["row"], t], self.vocab_size).float()
        )
        return logits, {**state, "t": state["t"] + 1}, None


def _scripted(rows: list[list[int]]) -> tuple[_ScriptedDecoder, Encoded]:
    script = torch.tensor(rows)
    batch = script.shape[0]
    encoded = Encoded(
        torch.zeros(batch, 1, 1),
        torch.zeros(batch, 1),
        torch.ones(batch, 1, dtype=torch.bool),
    )
    return _ScriptedDecoder(script), encoded


@exercise_check(DecoderBase.decode, Seq2Seq.greedy)
def check_greedy_decode(greedy_decode: Callable, seed: int | None = 0) -> None:
    """Check ``greedy_decode(decoder, encoded, max_len) -> tokens (B, T)``.

    Greedy decoding that feeds back each chosen word, stops once every row has
    produced ``<eos>`` (or after ``max_len`` steps), and writes ``pad_id`` after each
    row's first ``<eos>`` (the ``<eos>`` itself stays).
    """
    name = "fixed_greedy"
    gen = generator(seed)
    shift = int(torch.randint(0, 3, (1,), generator=gen))
    cases: list[tuple[DecoderBase, Encoded, int, str]] = []
    for rows, max_len in [
        (
            [
                [3, 4, 2, 5, 6, 2, 3, 4],
                [3, 3, 3, 4, 2, 5, 5, 5],
                [4, 5, 6, 2, 2, 3, 3, 3],
            ],
            8,
        ),
        ([[5, 2, 3, 4, 5, 6], [3, 4, 5, 6, 3, 4]], 5),
    ]:
        # the sentences end a few steps later
        rows = [row[:1] * shift + row for row in rows]
        decoder, encoded = _scripted(rows)
        cases.append(
            (
                decoder,
                encoded,
                max_len + shift,
                (
                    "for sentences that end at different steps (max_len="
                    f"{max_len + shift})"
                ),
            )
        )
    for decoder in _small_decoders()[:2]:
        encoded = _encoded(4, 5, [5, 2, 4, 3], gen)
        cases.append(
            (
                decoder,
                encoded,
                7,
                (
                    f"for a {type(decoder).__name__} (the next word depends on the"
                    " last)"
                ),
            )
        )
    for decoder, encoded, max_len, what in cases:
        with torch.no_grad():
            reference = decoder.decode(encoded, max_len=max_len).tokens
            out = call(greedy_decode, name, decoder, encoded, max_len)
        if isinstance(out, tuple | list):
            raise ExerciseError(
                f"{name} must return the tokens (B, T) only, got a"
                f" {type(out).__name__}"
            )
        if (
            not isinstance(out, torch.Tensor | np.ndarray)
            or out.ndim != 2
            or out.shape[0] != reference.shape[0]
        ):
            got = tuple(out.shape) if hasattr(out, "shape") else type(out).__name__
            raise ExerciseError(
                f"{name} must return a tensor of words (B, T) with B ="
                f" {reference.shape[0]}, got {got}"
            )
        tokens = (
            torch.as_tensor(np.asarray(out)).long()
            if isinstance(out, np.ndarray)
            else out.detach().long()
        )
        steps, wanted = tokens.shape[1], reference.shape[1]
        if steps > wanted:
            raise ExerciseError(
                f"{name} runs {steps} steps {what}, although every sentence had"
                " ended after fewer: stop the loop once every row has produced"
                " <eos>"
            )
        if steps < wanted:
            ended = (tokens == decoder.eos_id).any(-1)
            hint = (
                "it stops as soon as one sentence has ended, cutting the others off:"
                " stop only once EVERY row has produced <eos>"
                if ended.any() and not ended.all()
                else "run until every row has produced <eos>, or max_len steps"
            )
            raise ExerciseError(
                f"{name} returns {steps} words per row {what}, too few: {hint}"
            )
        if torch.equal(tokens, reference):
            continue
        is_eos = (reference == decoder.eos_id).long()
        after = (is_eos.cumsum(1) - is_eos) > 0
        if torch.equal(tokens[~after], reference[~after]):
            if (tokens[after] != decoder.pad_id).any():
                raise ExerciseError(
                    f"{name} keeps words after a row's first <eos> {what}: replace"
                    " them with decoder.pad_id"
                )
        if torch.equal(
            tokens[~after & (reference != decoder.eos_id)],
            reference[~after & (reference != decoder.eos_id)],
        ):
            raise ExerciseError(
                f"{name} loses the <eos> of a row {what}: keep the <eos> itself and"
                " pad only the words after it"
            )
        raise ExerciseError(
            f"{name} writes other words than greedy decoding {what}: at each step"
            " feed back the word chosen at the step before"
            " (decoder.choose(logits).argmax(-1)), starting from <bos>, and carry"
            " the state on"
        )
    passed(name, len(cases))


# -----------------------------------------------------------------------------------
# Chapter 3: the reversed source (experiment)


def _reversed_source(batch: TranslationBatch) -> TranslationBatch:
    lengths = batch.src_mask.sum(-1, keepdim=True)
    index = (lengths - 1 - torch.arange(batch.src.shape[1])).clamp(min=0)
    return replace(
        batch, src=torch.where(batch.src_mask, batch.src.gather(1, index), batch.src)
    )


def _test_loss(model: Seq2Seq, batch: TranslationBatch) -> float:
    model.eval()
    with torch.no_grad():
        return translation_loss(model, batch).item()


def _unpack_run(name: str, out: Any, steps: int) -> tuple[Seq2Seq, Any, float]:
    """``(model, history, number)`` from an experiment's answer, with a useful
    message when it is not that."""
    if not isinstance(out, tuple | list) or len(out) != 3:
        size = f" of {len(out)}" if isinstance(out, tuple | list) else ""
        raise ExerciseError(
            f"{name} must return the triple (model, history, measurement), got "
            f"{type(out).__name__}{size}"
        )
    model, history, measured = out
    if not isinstance(model, Seq2Seq):
        raise ExerciseError(
            f"the first thing {name} returns must be the trained model (a Seq2Seq"
            f" from translation_model), got {type(model).__name__}"
        )
    loss = getattr(history, "loss", None)
    if not isinstance(loss, list):
        raise ExerciseError(
            f"the second thing {name} returns must be the History that"
            f" train_translation returns, got {type(history).__name__}"
        )
    if len(loss) != steps:
        raise ExerciseError(
            f"{name} was asked for {steps} training steps but its history has"
            f" {len(loss)}: train for exactly `steps` steps"
        )
    return model, history, expect_number(f"{name}'s measurement", measured)


@exercise_check(backwards)
def check_source_reversal(reversal_run: Callable, seed: int | None = 0) -> None:
    """Check ``reversal_run(reverse, steps, test_batch) -> (model, history,
    test_loss)``.

    The model is a one-directional encoder-decoder without attention, trained for
    ``steps`` steps on sources given backwards (``reverse=True``) or as they are;
    ``test_loss`` is its teacher-forced cross-entropy per target word on
    ``test_batch``, whose sources it reads the way it was trained. The check runs two
    short trainings and measures the returned models itself.
    """
    name = "reversal_run"
    gen = generator(seed)
    test_batch = make_batch(examples_per_length(1, 5, 16, seed=_seed_from(gen)))
    steps = 2
    for reverse in (True, False):
        given = copy.deepcopy(test_batch)  # call() rejects changing it in place
        with _random_state_kept():
            out = call(reversal_run, name, reverse, steps, given)
        model, history, measured = _unpack_run(name, out, steps)
        what = f"with reverse={reverse}"
        if model.encoder.bidirectional:
            raise ExerciseError(
                f"{name} trains a bidirectional encoder {what}: the experiment is"
                " about a one-directional encoder (bidirectional=False), the only"
                " one for which the order of reading matters"
            )
        if isinstance(model.decoder, AttentionDecoder) or not isinstance(
            model.decoder, Decoder
        ):
            raise ExerciseError(
                f"{name} trains a model with attention {what}: use the plain"
                " encoder-decoder of this chapter (attention=False)"
            )
        expected = _test_loss(
            model, _reversed_source(test_batch) if reverse else test_batch
        )
        if abs(measured - expected) <= 1e-4 * max(1.0, abs(expected)):
            continue
        other = _test_loss(
            model, test_batch if reverse else _reversed_source(test_batch)
        )
        if abs(measured - other) <= 1e-4 * max(1.0, abs(other)):
            hint = (
                "the test sentences were given to the model in their original order"
                " although it was trained on reversed sources: reverse the test"
                " sources too"
                if reverse
                else (
                    "you reverse the sources although reverse=False: reverse them"
                    " only when asked"
                )
            )
            raise ExerciseError(f"{name}'s test loss is wrong {what}: {hint}.")
        if history.loss and abs(measured - history.loss[-1]) <= 1e-6 * max(
            1.0, abs(measured)
        ):
            raise ExerciseError(
                f"{name} returns the loss of the last training batch {what}: measure"
                " the returned model on test_batch"
            )
        both = _test_loss(
            model,
            replace(
                _reversed_source(test_batch),
                tgt=_reversed_source(
                    replace(
                        test_batch, src=test_batch.tgt, src_mask=test_batch.tgt_mask
                    )
                ).src,
            ),
        )
        if reverse and abs(measured - both) <= 1e-4 * max(1.0, abs(both)):
            raise ExerciseError(
                f"{name} reverses the targets as well {what}: reverse the source"
                " only, the translation is still written from its first word"
            )
        raise ExerciseError(
            f"{name}'s test loss is wrong {what}: it differs by"
            f" {abs(measured - expected):.3g} from the teacher-forced cross-entropy"
            " per target word of the returned model on test_batch (sources reversed"
            " when reverse=True)"
        )
    passed(name, 2)


# -----------------------------------------------------------------------------------
# Chapter 4: the Bahdanau context vector


def _reference_context(query, states, mask, w_q, w_k, v, use_mask=True):
    scores = torch.tanh((query @ w_q.T)[:, None, :] + states @ w_k.T) @ v  # (B, S)
    if use_mask:
        scores = scores.masked_fill(~mask, -torch.inf)
    weights = torch.softmax(scores, dim=-1)
    return (weights[:, :, None] * states).sum(1), weights


@exercise_check(AdditiveScore.forward, AttentionDecoder.attention, attend)
def check_bahdanau_context(bahdanau_context: Callable, seed: int | None = 0) -> None:
    """Check ``bahdanau_context(query (B, d_q), states (B, S, d_k), mask (B, S), W_q,
    W_k, v)``.

    It must return ``(context (B, d_k), weights (B, S))`` with scores ``v^T tanh(W_q
    q + W_k h_j)``, a softmax over the real source positions (``mask`` True) and the
    weighted average of the encoder states.
    """
    name = "bahdanau_context"
    gen = generator(seed)
    cases = 0
    for batch, length, lengths, d_q, d_k, d_a, v_scale in [
        (3, 6, [6, 2, 4], 5, 4, 3, 1.0),
        (2, 4, [4, 3], 6, 6, 7, 1.0),
        (1, 5, [1], 2, 2, 2, 1.0),
        (2, 5, [5, 3], 3, 4, 6, 1000.0),
    ]:
        what = f"for d_q={d_q}, d_k={d_k}, d_a={d_a}" + (
            " and a v of size about 1000" if v_scale > 1 else ""
        )
        query = torch.randn(batch, d_q, generator=gen)
        mask = torch.arange(length) < torch.tensor(lengths)[:, None]
        states = torch.randn(batch, length, d_k, generator=gen)
        w_q, w_k = (
            torch.randn(d_a, d_q, generator=gen),
            torch.randn(d_a, d_k, generator=gen),
        )
        v = v_scale * torch.randn(d_a, generator=gen)
        out = call(bahdanau_context, name, query, states, mask, w_q, w_k, v)
        if isinstance(out, torch.Tensor | np.ndarray):
            raise ExerciseError(
                f"{name} returned one tensor of shape {tuple(out.shape)}: return the"
                " pair (context, weights); the decoder reads the first, the"
                " heatmaps show the second"
            )
        if not (isinstance(out, tuple | list) and len(out) == 2):
            raise ExerciseError(
                f"{name} must return a pair (context, weights), got"
                f" {type(out).__name__}"
            )
        shapes = [
            tuple(x.shape) if isinstance(x, torch.Tensor | np.ndarray) else None
            for x in out
        ]
        if shapes == [(batch, length), (batch, d_k)]:
            raise ExerciseError(
                f"{name} returns (weights, context): return them in the order"
                " (context, weights)"
            )
        for x in out:
            if (
                isinstance(x, torch.Tensor | np.ndarray)
                and not np.isfinite(
                    np.asarray(
                        x.detach() if isinstance(x, torch.Tensor) else x,
                        dtype=np.float64,
                    )
                ).all()
            ):
                raise ExerciseError(
                    f"{name} returned NaN or infinite values {what}: a softmax"
                    " written as exp(e) / sum(exp(e)) overflows on large scores;"
                    " subtract the largest score first, or use torch.softmax"
                    " (masked positions at -inf are fine there)"
                )
        weights = expect_tensor(f"{name}'s weights", out[1], (batch, length))
        context = expect_tensor(f"{name}'s context", out[0], (batch, d_k))
        ref_context, ref_weights = _reference_context(
            query, states, mask, w_q, w_k, v
        )
        if (weights[~mask].abs() > 1e-6).any():
            raise ExerciseError(
                "padded source positions (mask False) get attention: set their"
                " scores to -inf before the softmax"
            )
        if not torch.allclose(weights.sum(-1), torch.ones(batch), atol=1e-5):
            unmasked = _reference_context(
                query, states, mask, w_q, w_k, v, use_mask=False
            )[1]
            if close(weights, unmasked * mask):
                raise ExerciseError(
                    "you zero the padded positions after the softmax, so the weights"
                    " of a query no longer sum to 1: mask the scores (set them to"
                    " -inf) before the softmax"
                )
            raise ExerciseError(
                "the weights of a query do not sum to 1: take the softmax over the"
                " source positions (the last dimension)"
            )
        if d_q == d_k and not close(weights, ref_weights):
            dot = torch.softmax(
                (states @ query[:, :, None])[..., 0].masked_fill(~mask, -torch.inf),
                dim=-1,
            )
            if close(weights, dot):
                raise ExerciseError(
                    "these are dot-product weights; Bahdanau's score is v^T tanh(W_q"
                    " q + W_k h_j)"
                )
        expect_close(f"{name}'s weights", weights, ref_weights, what)
        expect_close(
            f"{name}'s context",
            context,
            ref_context,
            "although the weights are right: return the weighted average sum_j"
            " alpha_j h_j",
        )
        cases += 1
    passed(name, cases)


# -----------------------------------------------------------------------------------
# Chapter 4: the attention map of every output step at once (debugging)


def _reference_attention_map(
    queries: torch.Tensor,
    states: torch.Tensor,
    mask: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    v: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Contexts ``(B, T, d_k)`` and weights ``(B, T, S)``, in float64."""
    weights = torch.softmax(
        _reference_map_scores(queries, states, mask, w_q, w_k, v), dim=-1
    )
    return weights @ states.double(), weights


def _reference_map_hidden(
    queries: torch.Tensor, states: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor
) -> torch.Tensor:
    """``tanh(W_q s_t + W_k h_j)`` for every pair: ``(B, T, S, d_a)``, in float64."""
    return torch.tanh(
        (queries.double() @ w_q.double().T)[:, :, None]
        + (states.double() @ w_k.double().T)[:, None]
    )


def _reference_map_scores(
    queries: torch.Tensor,
    states: torch.Tensor,
    mask: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    v: torch.Tensor,
    fill: bool = True,
) -> torch.Tensor:
    """Additive scores ``(B, T, S)`` of every query against every state, in float64;
    padded positions at the smallest float where ``fill``."""
    scores = _reference_map_hidden(queries, states, w_q, w_k) @ v.double()
    if not fill:
        return scores
    return scores.masked_fill(~mask[:, None], torch.finfo(torch.float64).min)


def _wrong_axes(
    queries: torch.Tensor,
    states: torch.Tensor,
    mask: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    v: torch.Tensor,
) -> list[tuple[torch.Tensor, str]]:
    """Weights ``(B, T, S)`` of the typical mistakes on the axis of the softmax, each
    with what it says."""
    scores = _reference_map_scores(queries, states, mask, w_q, w_k, v)
    hidden = _reference_map_hidden(queries, states, w_q, w_k)
    return [
        (
            torch.softmax(scores, dim=1),
            "each source word's weights sum to 1 over the output steps, not each"
            " output step's over the source words: the softmax runs over dim 1,"
            " which in the scores (B, T, S) of all the steps is the output steps T"
            " (in the one-step scores (B, S) it was the source positions). Take it"
            " over the last dimension, the source positions",
        ),
        (
            torch.softmax(scores, dim=0),
            "the softmax runs over the batch (dim 0): the sentences compete for"
            " attention. Take it over the source positions of each output step (the"
            " last dimension)",
        ),
        (
            torch.softmax(hidden, dim=-1) @ v.double(),
            "the softmax runs over the attention's hidden units (the last dimension"
            " of tanh(W_q s + W_k h_j)), before v: first reduce them with v to one"
            " score per source word, then take the softmax over the source"
            " positions",
        ),
        (
            torch.ones_like(scores),
            "every weight of a real source word is 1: the softmax ran over a"
            " dimension of size 1 (scores of shape (..., 1)). Take it over the"
            " source positions of scores of shape (B, T, S)",
        ),
    ]


def _weights_answer(
    name: str, weights: Any, shape: tuple[int, int, int]
) -> torch.Tensor:
    """The answer's weights as float64 (NaN kept), after checking their shape."""
    if not isinstance(weights, torch.Tensor | np.ndarray):
        raise ExerciseError(
            f"{name}'s weights must be a torch.Tensor, got {type(weights).__name__}"
        )
    batch, steps, length = shape
    got = tuple(weights.shape)
    if got == (batch, length, steps) and steps != length:
        raise ExerciseError(
            f"{name}'s weights have shape {got}, (B, S, T): put the output steps"
            f" first, {shape} = (B, T, S), so that row t holds the weights of output"
            " step t"
        )
    if got != shape:
        raise ExerciseError(
            f"{name}'s weights have shape {got} but expected (B, T, S) = {shape}"
        )
    return as_tensor(f"{name}'s weights", weights, torch.float64)


@exercise_check(
    AdditiveScore.forward, AttentionDecoder.attention, attend, masked_softmax
)
def check_attention_map(attention_map: Callable, seed: int | None = 0) -> None:
    """Check ``attention_map(queries (B, T, d_q), states (B, S, d_k), mask (B, S),
    W_q, W_k, v)``.

    It must return ``(contexts (B, T, d_k), weights (B, T, S))``: row ``t`` of the
    weights is the softmax over the real source positions (``mask`` True) of the
    scores ``v^T tanh(W_q s_t + W_k h_j)`` of query ``t``, and context ``t`` the
    weighted average of the states with that row.
    """
    name = "fixed_attention_map"
    gen = generator(seed)
    cases = 0
    for batch, steps, length, lengths, d_q, d_k, d_a, v_scale in [
        (2, 4, 6, [6, 3], 5, 4, 3, 1.0),
        (3, 7, 4, [4, 2, 3], 6, 5, 7, 1.0),
        (1, 1, 5, [2], 3, 2, 4, 1.0),
        (2, 5, 5, [5, 4], 4, 3, 6, 1.0),
        (2, 3, 6, [6, 4], 3, 4, 6, 1000.0),
    ]:
        # float32 rounding of scores of size 1000 moves near ties by more than 1e-5
        atol = 1e-3 if v_scale > 1 else 1e-5
        what = f"for T={steps} output steps over S={length} source positions" + (
            " and a v of size about 1000" if v_scale > 1 else ""
        )
        queries = torch.randn(batch, steps, d_q, generator=gen)
        states = torch.randn(batch, length, d_k, generator=gen)
        mask = torch.arange(length) < torch.tensor(lengths)[:, None]
        w_q = torch.randn(d_a, d_q, generator=gen)
        w_k = torch.randn(d_a, d_k, generator=gen)
        v = v_scale * torch.randn(d_a, generator=gen)
        out = call(attention_map, name, queries, states, mask, w_q, w_k, v)
        if isinstance(out, torch.Tensor | np.ndarray):
            raise ExerciseError(
                f"{name} returned one tensor of shape {tuple(out.shape)}: return the"
                " pair (contexts, weights)"
            )
        if not (isinstance(out, tuple | list) and len(out) == 2):
            raise ExerciseError(
                f"{name} must return a pair (contexts, weights), got"
                f" {type(out).__name__}"
            )
        shapes = [getattr(x, "shape", None) for x in out]
        if shapes[0] is not None and tuple(shapes[0]) == (batch, steps, length):
            if shapes[1] is not None and tuple(shapes[1]) == (batch, steps, d_k):
                raise ExerciseError(
                    f"{name} returns (weights, contexts): return them in the order"
                    " (contexts, weights)"
                )
        shape = (batch, steps, length)
        weights = _weights_answer(name, out[1], shape)
        ref_contexts, ref_weights = _reference_attention_map(
            queries, states, mask, w_q, w_k, v
        )
        real = mask[:, None, :].expand(shape)
        if not close(weights, ref_weights, atol):
            seen = weights.nan_to_num(0.0)[real]
            for candidate, hint in _wrong_axes(queries, states, mask, w_q, w_k, v):
                if close(seen, candidate[real], atol):
                    raise ExerciseError(f"{name} is wrong {what}: {hint}.")
        if not torch.isfinite(weights).all():
            raise ExerciseError(
                f"{name} returned NaN or infinite weights {what}: a softmax written"
                " as exp(e) / sum(exp(e)) overflows on large scores (subtract the"
                " largest score first, or use torch.softmax), and one taken over an"
                " axis along which every score is -inf gives NaN"
            )
        if (weights[~real].abs() > 1e-6).any():
            raise ExerciseError(
                f"padded source positions (mask False) get attention {what}: set"
                " their scores to -inf (or the smallest float) before the softmax"
            )
        if not torch.allclose(
            weights.sum(-1), torch.ones(batch, steps, dtype=torch.float64), atol=1e-5
        ):
            unmasked = torch.softmax(
                _reference_map_scores(
                    queries, states, mask, w_q, w_k, v, fill=False
                ),
                dim=-1,
            )
            if close(weights, unmasked * real, atol):
                raise ExerciseError(
                    f"{name} zeroes the padded positions after the softmax {what},"
                    " so the weights of an output step no longer sum to 1: mask the"
                    " scores before the softmax"
                )
            raise ExerciseError(
                f"the weights of an output step do not sum to 1 over the source"
                f" positions {what}: each row of the map is a softmax over the real"
                " source words"
            )
        expect_close(f"{name}'s weights", weights, ref_weights, what, atol)
        contexts = expect_tensor(
            f"{name}'s contexts", out[0], (batch, steps, d_k), torch.float64
        )
        expect_close(
            f"{name}'s contexts",
            contexts,
            ref_contexts,
            "although the weights are right: the context of output step t is sum_j"
            " alpha_tj h_j, with row t of the weights",
            atol,
        )
        cases += 1
    passed(name, cases)


# -----------------------------------------------------------------------------------
# Chapter 4: alignment accuracy


def _reference_alignment_accuracy(
    weights: torch.Tensor, alignment: torch.Tensor
) -> float:
    counted = alignment >= 0
    return (
        (weights.argmax(-1) == alignment) & counted
    ).sum().item() / counted.sum().item()


@exercise_check(metrics.alignment_accuracy)
def check_alignment_accuracy(
    alignment_accuracy: Callable, seed: int | None = 0
) -> None:
    """Check ``alignment_accuracy(weights (B, T, S), alignment (B, T)) -> float``.

    The share of target words (alignment >= 0; -1 marks ``<eos>`` and padding) whose
    most-attended source position is the true one. A Python float, a NumPy number or
    a one-element tensor is accepted.
    """
    name = "alignment_accuracy"
    gen = generator(seed)
    hand = torch.tensor(
        [
            [[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4]],
            [[0.2, 0.8, 0.0], [0.9, 0.1, 0.0], [1.0, 0.0, 0.0]],
        ]
    )
    cases = [
        (hand, torch.tensor([[0, 1, -1], [1, 0, 0]]), "on a small hand-made case")
    ]
    for batch, steps, length in [(4, 6, 5), (2, 9, 3), (1, 4, 7)]:
        weights = torch.softmax(
            3 * torch.randn(batch, steps, length, generator=gen), -1
        )
        alignment = torch.where(
            torch.rand(batch, steps, generator=gen) < 0.7,
            weights.argmax(-1),
            torch.randint(0, length, (batch, steps), generator=gen),
        )
        alignment[:, -2:] = -1
        alignment[0, 0] = int(weights[0, 0].argmax())  # at least one hit
        alignment[-1, 1] = int(weights[-1, 1].argmin())  # and one miss
        cases.append(
            (weights, alignment, f"for weights of shape {tuple(weights.shape)}")
        )
    for weights, alignment, what in cases:
        value = expect_number(
            name, call(alignment_accuracy, name, weights, alignment)
        )
        expected = _reference_alignment_accuracy(weights, alignment)
        if abs(value - expected) <= 1e-6:
            continue
        counted = alignment >= 0
        hits = ((weights.argmax(-1) == alignment) & counted).sum().item()
        if abs(value - hits / alignment.numel()) < 1e-6:
            raise ExerciseError(
                "you divide by every position, <eos> and padding included: count"
                " only the target words whose alignment is >= 0"
            )
        if abs(value - hits) < 1e-6:
            raise ExerciseError(
                "you return the number of hits: divide by the number of target words"
            )
        if abs(value - 100 * expected) < 1e-4:
            raise ExerciseError(
                "you return a percentage: return the share, a number between 0 and 1"
            )
        if abs(value - (1 - expected)) < 1e-6:
            raise ExerciseError(
                "you return the share of misses: count the words whose peak IS the"
                " true position"
            )
        raise ExerciseError(
            f"{name} is wrong {what} (difference {abs(value - expected):.3g}): take"
            " the argmax over the source positions (the last dimension) and compare"
            " it with the alignment where the alignment is >= 0"
        )
    passed(name, len(cases))


# -----------------------------------------------------------------------------------
# Chapter 4: the alignment learnt with one or two directions (experiment)


@exercise_check()
def check_alignment_run(alignment_run: Callable, seed: int | None = 0) -> None:
    """Check ``alignment_run(bidirectional, steps, test_examples) -> (model, history,
    alignment accuracy)``.

    The model is an attention model (``translation_model(attention=True, ...)``)
    whose encoder reads in both directions or in one, trained for ``steps`` steps;
    the accuracy is the share of target words of ``test_examples`` whose
    teacher-forced attention peaks on the aligned source word. The check runs two
    short trainings and measures the returned models itself.
    """
    name = "alignment_run"
    gen = generator(seed)
    test_examples = examples_per_length(2, 5, 16, seed=_seed_from(gen))
    steps = 2
    for bidirectional in (False, True):
        what = f"with bidirectional={bidirectional}"
        given = list(test_examples)
        with _random_state_kept():
            out = call(alignment_run, name, bidirectional, steps, given)
        model, history, measured = _unpack_run(name, out, steps)
        if not isinstance(model.decoder, AttentionDecoder):
            raise ExerciseError(
                f"{name} trains a model without attention {what}: the experiment"
                " measures where the attention looks (attention=True)"
            )
        if model.encoder.bidirectional != bidirectional:
            kind = (
                "bidirectional" if model.encoder.bidirectional else "one-directional"
            )
            raise ExerciseError(
                f"{name} returns a model with a {kind} encoder {what}: pass the"
                " setting on to translation_model"
            )
        if not 0.0 <= measured <= 1.0:
            raise ExerciseError(
                f"{name} returns {measured:.4g} {what}, not a share between 0 and 1"
            )
        with torch.no_grad(), _random_state_kept():
            maps, expected = attention_maps(model, test_examples)
        if abs(measured - expected) <= 1e-6:
            continue
        if (
            history.evals
            and abs(measured - history.evals[-1].get("val_accuracy", -1.0)) <= 1e-6
        ):
            raise ExerciseError(
                f"{name} returns the validation word accuracy of the history {what}:"
                " measure the alignment accuracy, where the attention peaks, on"
                " test_examples"
            )
        per_sentence = float(
            np.mean(
                [
                    (w.argmax(-1) == torch.tensor(e.alignment))
                    .double()
                    .mean()
                    .item()
                    for w, e in zip(maps, test_examples, strict=True)
                ]
            )
        )
        if abs(measured - per_sentence) <= 1e-6:
            raise ExerciseError(
                f"{name} averages the accuracy per sentence {what}: count over all"
                " target words, so that a long sentence counts as many words as"
                " it has"
            )
        raise ExerciseError(
            f"{name}'s alignment accuracy is wrong {what}: it differs by"
            f" {abs(measured - expected):.3g} from the share measured on the"
            " returned model and test_examples (teacher forced, <eos> left out)"
        )
    passed(name, 2)


__all__ = [
    "check_alignment_accuracy",
    "check_alignment_run",
    "check_attention_map",
    "check_bahdanau_context",
    "check_greedy_decode",
    "check_sequence_loss",
    "check_source_reversal",
    "check_teacher_forcing",
]
