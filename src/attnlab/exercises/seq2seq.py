"""Checks for the chapters "Encoder-decoder RNNs and the bottleneck" and "Bahdanau attention"."""

from __future__ import annotations

from collections.abc import Callable

import torch

from attnlab.exercises._checking import ExerciseError, call, expect_close, expect_tensor, passed
from attnlab.seq2seq import AttentionDecoder, Decoder, Encoded


def _small_decoders() -> list[Decoder]:
    """Three small decoders with fixed weights; the notebook's random state is left as it was."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return [Decoder(9, 4, 6, 8).eval(), AttentionDecoder(9, 4, 6, 8).eval(),
                Decoder(9, 4, 6, 8, cell="lstm").eval()]


def _encoded(batch: int, length: int, lengths: list[int], gen: torch.Generator) -> Encoded:
    mask = torch.arange(length) < torch.tensor(lengths)[:, None]
    states = torch.randn(batch, length, 8, generator=gen) * mask[..., None]
    return Encoded(states, torch.randn(batch, 8, generator=gen), mask)


def _loop(decoder: Decoder, encoded: Encoded, targets: torch.Tensor, feed: str) -> torch.Tensor:
    """The teacher-forced loop and its typical mistakes (``feed`` says what the next step reads)."""
    state = decoder.decode_init(encoded)
    first = decoder.decode_init(encoded)
    x = torch.full((targets.shape[0],), decoder.bos_id)
    logits = []
    for t in range(targets.shape[1]):
        step_logits, new_state, _ = decoder.decode_step(state if feed != "no-state" else first,
                                                        targets[:, t] if feed == "same-step" else x)
        state = new_state
        logits.append(step_logits)
        x = step_logits.argmax(-1) if feed == "prediction" else targets[:, t]
    return torch.stack(logits, dim=1)


def check_teacher_forcing(decode_teacher_forcing: Callable) -> None:
    """Check ``decode_teacher_forcing(decoder, encoded, targets) -> logits (B, T, V)``.

    Step ``t`` must read ``<bos>`` (t = 0) or the true word ``targets[:, t-1]``, carry the state on, and the
    logits of all steps are stacked along dimension 1.
    """
    name = "decode_teacher_forcing"
    gen = torch.Generator().manual_seed(0)
    cases = 0
    with torch.no_grad():
        for decoder in _small_decoders():
            for batch, length, lengths, steps in [(3, 5, [5, 2, 4], 6), (1, 3, [3], 1)]:
                encoded = _encoded(batch, length, lengths, gen)
                targets = torch.randint(3, 9, (batch, steps), generator=gen)
                out = call(decode_teacher_forcing, name, decoder, encoded, targets)
                expect_tensor(f"{name}'s logits", out, (batch, steps, decoder.vocab_size))
                reference = decoder.decode(encoded, targets=targets).logits
                if torch.allclose(out, reference, atol=1e-5):
                    cases += 1
                    continue
                for feed, hint in [
                    ("prediction", "you feed the model's own prediction back; in training, feed the true previous "
                                   "word targets[:, t-1] (teacher forcing)"),
                    ("same-step", "step t reads targets[:, t], the very word it has to predict; it must read the "
                                  "previous word (<bos> at t = 0)"),
                    ("no-state", "every step starts from the initial state; pass on the state that decode_step "
                                 "returns"),
                ]:
                    if torch.allclose(out, _loop(decoder, encoded, targets, feed), atol=1e-5):
                        raise ExerciseError(f"{name} is wrong: {hint}.")
                expect_close(f"{name}'s logits", out, reference,
                             f"for a {type(decoder).__name__} on {steps} target words")
    passed(name, cases)


def _reference_context(query, states, mask, w_q, w_k, v, use_mask=True):
    scores = torch.tanh((query @ w_q.T)[:, None, :] + states @ w_k.T) @ v  # (B, S)
    if use_mask:
        scores = scores.masked_fill(~mask, -torch.inf)
    weights = torch.softmax(scores, dim=-1)
    return (weights[:, :, None] * states).sum(1), weights


def check_bahdanau_context(bahdanau_context: Callable) -> None:
    """Check ``bahdanau_context(query (B, d_q), states (B, S, d_k), mask (B, S), W_q, W_k, v)``.

    It must return ``(context (B, d_k), weights (B, S))`` with scores ``v^T tanh(W_q q + W_k h_j)``, a softmax
    over the real source positions (``mask`` True) and the weighted average of the encoder states.
    """
    name = "bahdanau_context"
    gen = torch.Generator().manual_seed(2)
    cases = 0
    for batch, length, lengths, d_q, d_k, d_a in [(3, 6, [6, 2, 4], 5, 4, 3), (2, 4, [4, 3], 6, 6, 7),
                                                  (1, 5, [1], 2, 2, 2)]:
        query = torch.randn(batch, d_q, generator=gen)
        mask = torch.arange(length) < torch.tensor(lengths)[:, None]
        states = torch.randn(batch, length, d_k, generator=gen)
        w_q, w_k = torch.randn(d_a, d_q, generator=gen), torch.randn(d_a, d_k, generator=gen)
        v = torch.randn(d_a, generator=gen)
        out = call(bahdanau_context, name, query, states, mask, w_q, w_k, v)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise ExerciseError(f"{name} must return a pair (context, weights), got {type(out).__name__}")
        context, weights = out
        expect_tensor(f"{name}'s weights", weights, (batch, length))
        expect_tensor(f"{name}'s context", context, (batch, d_k))
        if (weights[~mask].abs() > 1e-6).any():
            raise ExerciseError("padded source positions (mask False) get attention: set their scores to -inf "
                                "before the softmax")
        if not torch.allclose(weights.sum(-1), torch.ones(batch), atol=1e-5):
            raise ExerciseError("the weights of a query do not sum to 1: take the softmax over the source "
                                "positions (the last dimension)")
        ref_context, ref_weights = _reference_context(query, states, mask, w_q, w_k, v)
        if d_q == d_k and not torch.allclose(weights, ref_weights, atol=1e-5):
            dot = torch.softmax((states @ query[:, :, None])[..., 0].masked_fill(~mask, -torch.inf), dim=-1)
            if torch.allclose(weights, dot, atol=1e-5):
                raise ExerciseError("these are dot-product weights; Bahdanau's score is v^T tanh(W_q q + W_k h_j)")
        expect_close(f"{name}'s weights", weights, ref_weights, f"for d_q={d_q}, d_k={d_k}, d_a={d_a}")
        expect_close(f"{name}'s context", context, ref_context,
                     "although the weights are right: return the weighted average sum_j alpha_j h_j")
        cases += 1
    passed(name, cases)


def _reference_alignment_accuracy(weights: torch.Tensor, alignment: torch.Tensor) -> float:
    counted = alignment >= 0
    return ((weights.argmax(-1) == alignment) & counted).sum().item() / counted.sum().item()


def check_alignment_accuracy(alignment_accuracy: Callable) -> None:
    """Check ``alignment_accuracy(weights (B, T, S), alignment (B, T)) -> float``.

    The share of target words (alignment >= 0; -1 marks ``<eos>`` and padding) whose most-attended source
    position is the true one.
    """
    name = "alignment_accuracy"
    gen = torch.Generator().manual_seed(3)
    hand = torch.tensor([[[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4]],
                         [[0.2, 0.8, 0.0], [0.9, 0.1, 0.0], [1.0, 0.0, 0.0]]])
    cases = [(hand, torch.tensor([[0, 1, -1], [1, 0, 0]]))]
    for batch, steps, length in [(4, 6, 5), (2, 9, 3), (1, 4, 7)]:
        weights = torch.softmax(3 * torch.randn(batch, steps, length, generator=gen), -1)
        alignment = torch.where(torch.rand(batch, steps, generator=gen) < 0.7,
                                weights.argmax(-1), torch.randint(0, length, (batch, steps), generator=gen))
        alignment[:, -2:] = -1
        cases.append((weights, alignment))
    for weights, alignment in cases:
        out = call(alignment_accuracy, name, weights.clone(), alignment.clone())
        if isinstance(out, torch.Tensor) and out.numel() == 1:
            out = out.item()
        if not isinstance(out, (float, int)):
            raise ExerciseError(f"{name} must return a number, got {type(out).__name__}")
        expected = _reference_alignment_accuracy(weights, alignment)
        hits = expected * (alignment >= 0).sum().item()
        if abs(out - hits / alignment.numel()) < 1e-6 and abs(out - expected) > 1e-6:
            raise ExerciseError("you divide by every position, <eos> and padding included: count only the target "
                                "words whose alignment is >= 0")
        if abs(out - hits) < 1e-6 and abs(out - expected) > 1e-6:
            raise ExerciseError("you return the number of hits: divide by the number of target words")
        if abs(out - expected) > 1e-6:
            raise ExerciseError(f"{name} returned {out:.4f} instead of {expected:.4f} for weights of shape "
                                f"{tuple(weights.shape)}: take the argmax over the source positions (last "
                                "dimension) and compare it with the alignment where the alignment is >= 0")
    passed(name, len(cases))
