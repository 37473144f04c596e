from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnlab import metrics
from attnlab.exercises import (
    ExerciseError,
    check_alignment_accuracy,
    check_alignment_run,
    check_bahdanau_context,
    check_greedy_decode,
    check_sequence_loss,
    check_source_reversal,
    check_teacher_forcing,
)
from attnlab.exercises import seq2seq as checks
from attnlab.exercises.seq2seq import check_attention_map
from attnlab.tasks.translation import (
    attention_maps,
    train_translation,
    translation_loss,
    translation_model,
)
from attnlab.teaching.release import exercises, notebook_imports
from attnlab.train import seed_everything
from tests.notebook_files import ROOT, read
from tests.wrong_answers.seq2seq import WRONG


def stub(*args):
    raise NotImplementedError()


# ----- the teacher-forced decoder loop -----


def good_loop(decoder, encoded, targets):
    state = decoder.decode_init(encoded)
    x = torch.full((targets.shape[0],), decoder.bos_id)
    logits = []
    for t in range(targets.shape[1]):
        step_logits, state, _ = decoder.decode_step(state, x)
        logits.append(step_logits)
        x = targets[:, t]
    return torch.stack(logits, dim=1)


def feeds_predictions(decoder, encoded, targets):
    state = decoder.decode_init(encoded)
    x = torch.full((targets.shape[0],), decoder.bos_id)
    logits = []
    for _ in range(targets.shape[1]):
        step_logits, state, _ = decoder.decode_step(state, x)
        logits.append(step_logits)
        x = step_logits.argmax(-1)
    return torch.stack(logits, dim=1)


def reads_the_answer(decoder, encoded, targets):
    state = decoder.decode_init(encoded)
    logits = []
    for t in range(targets.shape[1]):
        step_logits, state, _ = decoder.decode_step(state, targets[:, t])
        logits.append(step_logits)
    return torch.stack(logits, dim=1)


def forgets_the_state(decoder, encoded, targets):
    start = decoder.decode_init(encoded)
    x = torch.full((targets.shape[0],), decoder.bos_id)
    logits = []
    for t in range(targets.shape[1]):
        step_logits, _, _ = decoder.decode_step(start, x)
        logits.append(step_logits)
        x = targets[:, t]
    return torch.stack(logits, dim=1)


def time_first(decoder, encoded, targets):
    return good_loop(decoder, encoded, targets).transpose(0, 1)


def under_no_grad(decoder, encoded, targets):
    with torch.no_grad():
        return good_loop(decoder, encoded, targets)


def detached_steps(decoder, encoded, targets):
    return good_loop(decoder, encoded, targets).detach()


def changes_the_targets(decoder, encoded, targets):
    targets[:, 0] = decoder.bos_id
    return good_loop(decoder, encoded, targets)


@pytest.mark.parametrize("answer", [good_loop, lambda d, e, t: good_loop(d, e, t).double()],
                         ids=["float32", "float64"])
def test_teacher_forcing_accepts_the_reference(answer, capsys):
    check_teacher_forcing(answer)
    check_teacher_forcing(answer, seed=None)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (feeds_predictions, "own prediction"),
        (reads_the_answer, "very word it has to predict"),
        (forgets_the_state, "initial state"),
        (time_first, r"shape \(\d+, \d+, 9\) but expected"),
        (under_no_grad, "carry no gradient.*no_grad"),
        (detached_steps, "carry no gradient"),
        (lambda d, e, t: d.decode(e, targets=t).logits, "the library's own version"),
        (changes_the_targets, "changed its input `targets` in place"),
        (stub, "not implemented yet"),
    ],
    ids=["feeds-predictions", "off-by-one", "no-state", "time-first", "no-grad", "detached", "delegates",
         "in-place", "stub"],
)
def test_teacher_forcing_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_teacher_forcing(wrong)


# ----- the loss over padded targets -----


def good_loss(logits, targets, pad_id):
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=pad_id)


def manual_loss(logits, targets, pad_id):
    log_probs = torch.log_softmax(logits.double(), dim=-1).gather(-1, targets[..., None])[..., 0]
    real = targets != pad_id
    return -(log_probs * real).sum() / real.sum()


def unmasked_loss(logits, targets, pad_id):
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def summed_loss(logits, targets, pad_id):
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=pad_id, reduction="sum")


def per_sentence_loss(logits, targets, pad_id):
    losses = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    real = targets != pad_id
    return ((losses * real).sum(1) / real.sum(1)).mean()


def pad_is_zero(logits, targets, pad_id):
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=0)


def log_of_softmax(logits, targets, pad_id):
    probs = torch.softmax(logits, dim=-1).gather(-1, targets[..., None])[..., 0]
    real = targets != pad_id
    return -(torch.log(probs) * real).sum() / real.sum()


def divides_by_all(logits, targets, pad_id):
    losses = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    return (losses * (targets != pad_id)).sum() / targets.numel()


def mask_in_place(logits, targets, pad_id):
    real = targets != pad_id
    targets[~real] = -100
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


@pytest.mark.parametrize("answer", [good_loss, manual_loss], ids=["float32", "float64"])
def test_sequence_loss_accepts_the_reference(answer, capsys):
    check_sequence_loss(answer)
    check_sequence_loss(answer, seed=None)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (unmasked_loss, "padding included: leave out"),
        (summed_loss, "sum over the words"),
        (per_sentence_loss, "average each sentence first"),
        (pad_is_zero, "index 0 as padding"),
        (log_of_softmax, "log_softmax"),
        (divides_by_all, "divide by the number of real target words"),
        (lambda lg, t, p: good_loss(lg, t, p).item(), "carries no gradient"),
        (lambda lg, t, p: good_loss(lg.detach(), t, p), "carries no gradient"),
        (lambda lg, t, p: F.cross_entropy(lg.transpose(1, 2), t, ignore_index=p, reduction="none"), "one number"),
        (lambda lg, t, p: checks._reference_sequence_loss(lg, t, p), "the library's own version"),
        (mask_in_place, "changed its input `targets` in place"),
        (stub, "not implemented yet"),
    ],
    ids=["no-mask", "sum", "per-sentence", "pad-zero", "log-softmax", "divides-by-all", "item", "detach",
         "per-word", "delegates", "in-place", "stub"],
)
def test_sequence_loss_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_sequence_loss(wrong)


# ----- the reversed source (experiment) -----


def reverse_source(batch):
    lengths = batch.src_mask.sum(-1, keepdim=True)
    index = (lengths - 1 - torch.arange(batch.src.shape[1])).clamp(min=0)
    return replace(batch, src=torch.where(batch.src_mask, batch.src.gather(1, index), batch.src))


def reversal_run(reverse, steps, test_batch, *, measure_reversed=None, bidirectional=False, number=float):
    seed_everything(0)
    model = translation_model(attention=False, bidirectional=bidirectional, hidden_size=16, embed_size=8)
    prepare = reverse_source if reverse else (lambda b: b)
    history = train_translation(model, steps, batch_size=8, max_len=10, eval_every=steps, desc="test",
                                loss_fn=lambda m, b: translation_loss(m, prepare(b)))
    measured = reverse if measure_reversed is None else measure_reversed
    with torch.no_grad():
        loss = translation_loss(model, reverse_source(test_batch) if measured else test_batch)
    return model, history, number(loss)


@pytest.mark.parametrize("number", [float, np.float32, lambda t: t, lambda t: t.double()],
                         ids=["float", "numpy", "tensor", "float64"])
def test_source_reversal_accepts_the_reference(number, capsys):
    check_source_reversal(lambda r, s, b: reversal_run(r, s, b, number=number))
    assert "passed" in capsys.readouterr().out


def test_source_reversal_with_a_fresh_draw(capsys):
    check_source_reversal(reversal_run, seed=None)
    assert "passed" in capsys.readouterr().out


def reverses_in_place(reverse, steps, test_batch):
    if reverse:
        test_batch.src.copy_(reverse_source(test_batch).src)
    return reversal_run(False, steps, test_batch)


def reverses_by_assignment(reverse, steps, test_batch):
    if reverse:
        test_batch.src = reverse_source(test_batch).src
    return reversal_run(False, steps, test_batch)


def delegates_the_reversal(reverse, steps, test_batch):
    """Reverses with the library's record command instead of writing the reversal."""
    from attnlab.experiments.encoder_decoder import backwards

    global reverse_source
    mine = reverse_source
    reverse_source = backwards
    try:
        return reversal_run(reverse, steps, test_batch)
    finally:
        reverse_source = mine


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda r, s, b: reversal_run(r, s, b, measure_reversed=False), "reverse the test sources too"),
        (lambda r, s, b: reversal_run(r, s, b, measure_reversed=True), "only when asked"),
        (lambda r, s, b: reversal_run(r, s, b, bidirectional=True), "one-directional"),
        (lambda r, s, b: reversal_run(r, s, b)[::2], "triple"),
        (lambda r, s, b: reversal_run(r, s + 1, b), "its history has 3"),
        (lambda r, s, b: (*reversal_run(r, s, b)[:2], reversal_run(r, s, b)[1].loss[-1]), "last training batch"),
        (reverses_in_place, "changed its input `test_batch` in place"),
        (reverses_by_assignment, "changed its input `test_batch` in place"),
        (lambda r, s, b: reversal_run(r, s, b, number=lambda t: checks._reference_sequence_loss(
            torch.zeros(1, 1, 2), torch.zeros(1, 1, dtype=torch.long), 1)), "the library's own version"),
        (delegates_the_reversal, "the library's own version"),
        (stub, "not implemented yet"),
    ],
    ids=["test-not-reversed", "always-reversed", "bidirectional", "pair", "steps", "training-loss", "in-place",
         "field-replaced", "reference", "delegates", "stub"],
)
def test_source_reversal_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_source_reversal(wrong)


# ----- the Bahdanau context vector -----


def good_context(query, states, mask, w_q, w_k, v):
    scores = torch.tanh((query @ w_q.T)[:, None] + states @ w_k.T) @ v
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    return (weights[..., None] * states).sum(1), weights


def float64_context(query, states, mask, w_q, w_k, v):
    return good_context(query.double(), states.double(), mask, w_q.double(), w_k.double(), v.double())


def no_mask(query, states, mask, w_q, w_k, v):
    weights = torch.softmax(torch.tanh((query @ w_q.T)[:, None] + states @ w_k.T) @ v, dim=-1)
    return (weights[..., None] * states).sum(1), weights


def mask_after_softmax(query, states, mask, w_q, w_k, v):
    weights = torch.softmax(torch.tanh((query @ w_q.T)[:, None] + states @ w_k.T) @ v, dim=-1) * mask
    return (weights[..., None] * states).sum(1), weights


def naive_softmax(query, states, mask, w_q, w_k, v):
    scores = torch.tanh((query @ w_q.T)[:, None] + states @ w_k.T) @ v
    exp = torch.exp(scores) * mask
    weights = exp / exp.sum(-1, keepdim=True)
    return (weights[..., None] * states).sum(1), weights


def softmax_over_batch(query, states, mask, w_q, w_k, v):
    scores = torch.tanh((query @ w_q.T)[:, None] + states @ w_k.T) @ v
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=0).nan_to_num(0.0)
    return (weights[..., None] * states).sum(1), weights


def unnormalised_context(query, states, mask, w_q, w_k, v):
    scores = torch.tanh((query @ w_q.T)[:, None] + states @ w_k.T) @ v
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    return (scores.masked_fill(~mask, 0.0)[..., None] * states).sum(1), weights


def dot_product(query, states, mask, w_q, w_k, v):
    if query.shape[-1] != states.shape[-1]:
        return good_context(query, states, mask, w_q, w_k, v)
    weights = torch.softmax((states @ query[..., None])[..., 0].masked_fill(~mask, float("-inf")), dim=-1)
    return (weights[..., None] * states).sum(1), weights


def no_tanh(query, states, mask, w_q, w_k, v):
    scores = ((query @ w_q.T)[:, None] + states @ w_k.T) @ v
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    return (weights[..., None] * states).sum(1), weights


def masks_states_in_place(query, states, mask, w_q, w_k, v):
    states.mul_(mask[..., None])
    return good_context(query, states, mask, w_q, w_k, v)


def uses_attend(query, states, mask, w_q, w_k, v):
    from attnlab.attention import attend

    def score(q, k):
        return torch.tanh((q @ w_q.T)[..., :, None, :] + (k @ w_k.T)[..., None, :, :]) @ v

    context, weights = attend(query[:, None], states, states, score=score, mask=mask[:, None])
    return context[:, 0], weights[:, 0]


@pytest.mark.parametrize("answer", [good_context, float64_context], ids=["float32", "float64"])
def test_bahdanau_context_accepts_the_reference(answer, capsys):
    check_bahdanau_context(answer)
    check_bahdanau_context(answer, seed=None)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (no_mask, "padded source positions"),
        (mask_after_softmax, "after the softmax"),
        (naive_softmax, "subtract the largest score"),
        (softmax_over_batch, "do not sum to 1"),
        (unnormalised_context, "although the weights are right"),
        (dot_product, "dot-product"),
        (no_tanh, "weights is wrong"),
        (lambda q, s, m, wq, wk, v: good_context(q, s, m, wq, wk, v)[0], "return the pair"),
        (lambda q, s, m, wq, wk, v: good_context(q, s, m, wq, wk, v)[::-1], "in the order"),
        (uses_attend, "the library's own version"),
        (lambda *args: checks._reference_context(*args), "the library's own version"),
        (masks_states_in_place, "changed its input `states` in place"),
        (stub, "not implemented yet"),
    ],
    ids=["no-mask", "mask-after-softmax", "overflow", "softmax-over-batch", "unnormalised-context", "dot-product",
         "no-tanh", "not-a-pair", "swapped", "attend", "reference", "in-place", "stub"],
)
def test_bahdanau_context_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_bahdanau_context(wrong)


# ----- the attention map of every output step at once (debugging) -----


def map_scores(queries, states, mask, w_q, w_k, v):
    scores = torch.tanh((queries @ w_q.T)[:, :, None] + (states @ w_k.T)[:, None]) @ v
    return scores.masked_fill(~mask[:, None], torch.finfo(scores.dtype).min)


def good_map(queries, states, mask, w_q, w_k, v):
    weights = torch.softmax(map_scores(queries, states, mask, w_q, w_k, v), dim=-1)
    return weights @ states, weights


def buggy_map(queries, states, mask, w_q, w_k, v):
    """The chapter's buggy_attention_map: the softmax of the one-step code, dim=1, kept for (B, T, S)."""
    weights = torch.softmax(map_scores(queries, states, mask, w_q, w_k, v), dim=1)
    return weights @ states, weights


def map_with(normalise, fill=float("-inf")):
    """An attention map whose scores are masked with ``fill`` (None: not masked) and normalised by ``normalise``."""
    def attention_map(queries, states, mask, w_q, w_k, v):
        scores = torch.tanh((queries @ w_q.T)[:, :, None] + (states @ w_k.T)[:, None]) @ v
        if fill is not None:
            scores = scores.masked_fill(~mask[:, None], fill)
        weights = normalise(scores)
        return weights @ states, weights

    return attention_map


def per_step_loop(queries, states, mask, w_q, w_k, v):
    """One output step at a time, as the decoder computes them, in float64 and returned as NumPy arrays."""
    contexts, rows = [], []
    for t in range(queries.shape[1]):
        scores = torch.tanh((queries[:, t] @ w_q.T)[:, None] + states @ w_k.T) @ v
        row = torch.softmax(scores.double().masked_fill(~mask, float("-inf")), dim=-1)
        rows.append(row)
        contexts.append((row[..., None] * states.double()).sum(1))
    return torch.stack(contexts, 1).numpy(), torch.stack(rows, 1).numpy()


def softmax_over_hidden_units(queries, states, mask, w_q, w_k, v):
    hidden = torch.tanh((queries @ w_q.T)[:, :, None] + (states @ w_k.T)[:, None])
    weights = (torch.softmax(hidden, dim=-1) @ v).masked_fill(~mask[:, None], 0.0)
    return weights @ states, weights


def renormalised_rows(queries, states, mask, w_q, w_k, v):
    """The buggy map with each row divided by its sum: the rows now sum to 1, the padding still gets weight."""
    _, weights = buggy_map(queries, states, mask, w_q, w_k, v)
    weights = weights / weights.sum(-1, keepdim=True)
    return weights @ states, weights


def mask_after_softmax_map(queries, states, mask, w_q, w_k, v):
    _, weights = map_with(lambda s: torch.softmax(s, dim=-1), fill=None)(queries, states, mask, w_q, w_k, v)
    weights = weights * mask[:, None]
    return weights @ states, weights


def naive_map(queries, states, mask, w_q, w_k, v):
    scores = torch.tanh((queries @ w_q.T)[:, :, None] + (states @ w_k.T)[:, None]) @ v
    exp = torch.exp(scores) * mask[:, None]
    weights = exp / exp.sum(-1, keepdim=True)
    return weights @ states, weights


def summed_contexts(queries, states, mask, w_q, w_k, v):
    _, weights = good_map(queries, states, mask, w_q, w_k, v)
    return states.sum(1, keepdim=True).expand(-1, queries.shape[1], -1), weights


def masked_softmax_map(queries, states, mask, w_q, w_k, v):
    from attnlab.attention import masked_softmax

    scores = torch.tanh((queries @ w_q.T)[:, :, None] + (states @ w_k.T)[:, None]) @ v
    weights = masked_softmax(scores, mask[:, None])
    return weights @ states, weights


def attend_map(queries, states, mask, w_q, w_k, v):
    from attnlab.attention import attend

    def score(q, k):
        return torch.tanh((q @ w_q.T)[..., :, None, :] + (k @ w_k.T)[..., None, :, :]) @ v

    return attend(queries, states, states, score=score, mask=mask[:, None])


def masks_states_in_place_map(queries, states, mask, w_q, w_k, v):
    states.mul_(mask[..., None])
    return good_map(queries, states, mask, w_q, w_k, v)


@pytest.mark.parametrize(
    "answer",
    [good_map, lambda *a: good_map(*[x.double() if x.is_floating_point() else x for x in a]), per_step_loop],
    ids=["float32", "float64", "per-step-numpy"],
)
def test_attention_map_accepts_the_reference(answer, capsys):
    check_attention_map(answer)
    check_attention_map(answer, seed=None)
    assert capsys.readouterr().out.count("passed") == 2


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (buggy_map, "softmax runs over dim 1, which in the scores \\(B, T, S\\) of all the steps is the output steps"),
        (map_with(lambda s: torch.softmax(s, dim=1)), "softmax runs over dim 1"),  # -inf: NaN in the padded columns
        (map_with(lambda s: torch.softmax(s, dim=0)), "softmax runs over the batch"),
        (softmax_over_hidden_units, "softmax runs over the attention's hidden units"),
        (map_with(lambda s: torch.softmax(s[..., None], dim=-1)[..., 0], fill=-1e9), "dimension of size 1"),
        (map_with(lambda s: torch.softmax(s, dim=-1), fill=None), "padded source positions \\(mask False\\) get"),
        (renormalised_rows, "padded source positions \\(mask False\\) get"),
        (map_with(torch.sigmoid, fill=-1e9), "do not sum to 1 over the source positions"),
        (mask_after_softmax_map, "zeroes the padded positions after the softmax"),
        (naive_map, "NaN or infinite weights"),
        (summed_contexts, "although the weights are right"),
        (lambda *a: good_map(*a)[1], "return the pair"),
        (lambda *a: good_map(*a)[::-1], "in the order"),
        (lambda *a: (good_map(*a)[0], good_map(*a)[1].transpose(1, 2)), "put the output steps first"),
        (masked_softmax_map, "the library's own version"),
        (attend_map, "the library's own version"),
        (lambda *a: checks._reference_attention_map(*a), "the library's own version"),
        (masks_states_in_place_map, "changed its input `states` in place"),
        (stub, "not implemented yet"),
    ],
    ids=["given-bug", "given-bug-inf", "over-batch", "over-hidden-units", "over-size-one", "no-mask",
         "renormalised-rows", "sigmoid", "mask-after-softmax", "overflow", "summed-contexts", "not-a-pair", "swapped",
         "transposed", "masked-softmax", "attend", "reference", "in-place", "stub"],
)
def test_attention_map_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_attention_map(wrong)


def test_attention_map_names_the_given_bug_whatever_the_inputs():
    for seed in range(20):
        with pytest.raises(ExerciseError, match="the softmax runs over dim 1"):
            check_attention_map(buggy_map, seed=seed)


def test_the_kept_wrong_answer_loses_its_points():
    """The wrong answer that the grading run submits for this exercise fails the chapter's own check cell."""
    nb = read(ROOT / "notebooks" / "04_bahdanau_attention.ipynb")
    exercise = next(e for e in exercises(nb) if e.label == "ex-bahdanau-attention-map")
    namespace: dict = {}
    exec(notebook_imports(nb), namespace)
    exec(WRONG["ex-bahdanau-attention-map"], namespace)
    with pytest.raises(ExerciseError, match="padded source positions"):
        exec(nb.cells[exercise.check].source, namespace)


# ----- alignment accuracy -----


def good_accuracy(weights, alignment):
    counted = alignment >= 0
    return ((weights.argmax(-1) == alignment) & counted).sum().item() / counted.sum().item()


@pytest.mark.parametrize(
    "answer",
    [
        good_accuracy,
        lambda w, a: np.float64(good_accuracy(w, a)),
        lambda w, a: ((w.argmax(-1) == a)[a >= 0]).float().mean(),
        lambda w, a: ((w.double().argmax(-1) == a)[a >= 0]).double().mean().reshape(1),
    ],
    ids=["float", "numpy", "tensor-0d", "tensor-1-element"],
)
def test_alignment_accuracy_accepts_the_reference(answer, capsys):
    check_alignment_accuracy(answer)
    check_alignment_accuracy(answer, seed=None)
    assert "passed" in capsys.readouterr().out


def argmax_in_place(weights, alignment):
    alignment[alignment < 0] = 0
    return good_accuracy(weights, alignment)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda w, a: (w.argmax(-1) == a).float().mean().item(), "divide by every position"),
        (lambda w, a: ((w.argmax(-1) == a) & (a >= 0)).sum().item(), "number of hits"),
        (lambda w, a: 100 * good_accuracy(w, a), "percentage"),
        (lambda w, a: 1 - good_accuracy(w, a), "share of misses"),
        (lambda w, a: ((w.argmax(1)[:, : a.shape[1]] == a[:, : w.shape[2]])[a[:, : w.shape[2]] >= 0])
         .float().mean().item(), "argmax over the source positions"),
        (lambda w, a: "high", "must return"),
        (metrics.alignment_accuracy, "the library's own version"),
        (argmax_in_place, "changed its input `alignment` in place"),
        (stub, "not implemented yet"),
    ],
    ids=["counts-eos-and-padding", "returns-count", "percentage", "misses", "argmax-over-targets", "not-a-number",
         "library", "in-place", "stub"],
)
def test_alignment_accuracy_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_alignment_accuracy(wrong)


def test_alignment_accuracy_never_shows_the_expected_share():
    with pytest.raises(ExerciseError) as info:
        check_alignment_accuracy(lambda w, a: good_accuracy(w, a) + 0.01)
    assert "instead of" not in str(info.value)
    shares = {round(checks._reference_alignment_accuracy(w, a), 4) for w, a in [
        (torch.tensor([[[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4]],
                       [[0.2, 0.8, 0.0], [0.9, 0.1, 0.0], [1.0, 0.0, 0.0]]]), torch.tensor([[0, 1, -1], [1, 0, 0]]))]}
    assert not any(f"{s:.4f}" in str(info.value) or f"{s:.3f}" in str(info.value) for s in shares)


# ----- greedy decoding that stops at <eos> -----


def good_greedy(decoder, encoded, max_len):
    state = decoder.decode_init(encoded)
    x = torch.full((encoded.states.shape[0],), decoder.bos_id)
    finished = torch.zeros_like(x, dtype=torch.bool)
    words = []
    for _ in range(max_len):
        logits, state, _ = decoder.decode_step(state, x)
        x = decoder.choose(logits).argmax(-1)
        words.append(torch.where(finished, torch.full_like(x, decoder.pad_id), x))
        finished = finished | (x == decoder.eos_id)
        if finished.all():
            break
    return torch.stack(words, dim=1)


def greedy_variant(mistake):
    def greedy(decoder, encoded, max_len):
        state = decoder.decode_init(encoded)
        x = torch.full((encoded.states.shape[0],), decoder.bos_id)
        finished = torch.zeros_like(x, dtype=torch.bool)
        words = []
        for _ in range(max_len):
            logits, state, _ = decoder.decode_step(state, x)
            x = decoder.choose(logits).argmax(-1)
            if mistake == "feeds-bos":
                words.append(x)
                x = torch.full_like(x, decoder.bos_id)
            else:
                words.append(x)
            finished = finished | (words[-1] == decoder.eos_id)
            if (finished.any() if mistake == "stops-early" else finished.all()) and mistake != "never-stops":
                break
        tokens = torch.stack(words, dim=1)
        is_eos = (tokens == decoder.eos_id).long()
        if mistake == "drops-eos":
            return tokens.masked_fill(is_eos.cumsum(1) > 0, decoder.pad_id)
        if mistake == "keeps-words":
            return tokens
        return tokens.masked_fill(is_eos.cumsum(1) - is_eos > 0, decoder.pad_id)

    return greedy


@pytest.mark.parametrize("answer", [good_greedy, lambda d, e, m: good_greedy(d, e, m).numpy()],
                         ids=["tensor", "numpy"])
def test_greedy_decode_accepts_the_reference(answer, capsys):
    check_greedy_decode(answer)
    check_greedy_decode(answer, seed=None)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (greedy_variant("never-stops"), "stop the loop once every row"),
        (greedy_variant("stops-early"), "as soon as one sentence has ended"),
        (greedy_variant("keeps-words"), "keeps words after"),
        (greedy_variant("drops-eos"), "loses the <eos>"),
        (greedy_variant("feeds-bos"), "feed back the word chosen"),
        (lambda d, e, m: d.decode(e, max_len=m).tokens, "the library's own version"),
        (lambda d, e, m: (good_greedy(d, e, m), None), "tokens \\(B, T\\) only"),
        (stub, "not implemented yet"),
    ],
    ids=["never-stops", "stops-early", "keeps-words", "drops-eos", "feeds-bos", "delegates", "pair", "stub"],
)
def test_greedy_decode_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_greedy_decode(wrong)


# ----- the alignment with one or two directions (experiment) -----


def alignment_run(bidirectional, steps, test_examples, *, number=float, fixed=None, measure=None):
    seed_everything(0)
    model = translation_model(attention=True, bidirectional=bidirectional if fixed is None else fixed,
                              hidden_size=16, embed_size=8, attention_size=8)
    history = train_translation(model, steps, batch_size=8, max_len=10, eval_every=steps, desc="test")
    accuracy = attention_maps(model, test_examples)[1] if measure is None else measure(model, history)
    return model, history, number(accuracy)


@pytest.mark.parametrize("number", [float, np.float64, torch.tensor], ids=["float", "numpy", "tensor"])
def test_alignment_run_accepts_the_reference(number, capsys):
    check_alignment_run(lambda b, s, e: alignment_run(b, s, e, number=number))
    assert "passed" in capsys.readouterr().out


def test_alignment_run_with_a_fresh_draw(capsys):
    check_alignment_run(alignment_run, seed=None)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda b, s, e: alignment_run(b, s, e, fixed=True), "with a bidirectional encoder with bidirectional=False"),
        (lambda b, s, e: alignment_run(b, s, e, measure=lambda m, h: h.evals[-1]["val_accuracy"]),
         "validation word accuracy"),
        (lambda b, s, e: alignment_run(b, s, e, measure=lambda m, h: attention_maps(m, e[:4])[1]),
         "alignment accuracy is wrong"),
        (lambda b, s, e: alignment_run(b, s, e, measure=lambda m, h: 100 * attention_maps(m, e)[1]),
         "not a share"),
        (lambda b, s, e: alignment_run(b, s, e, measure=lambda m, h: checks._reference_alignment_accuracy(
            torch.ones(1, 1, 2), torch.zeros(1, 1, dtype=torch.long))), "the library's own version"),
        (lambda b, s, e: alignment_run(b, s, e)[0], "triple"),
        (stub, "not implemented yet"),
    ],
    ids=["setting-ignored", "val-accuracy", "other-sentences", "percent", "reference", "model-only", "stub"],
)
def test_alignment_run_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_alignment_run(wrong)


# ----- every check -----


def test_checks_leave_the_random_state_alone():
    before = torch.random.get_rng_state()
    check_teacher_forcing(good_loop)
    check_sequence_loss(good_loss)
    check_source_reversal(reversal_run)
    check_bahdanau_context(good_context)
    check_attention_map(good_map)
    check_alignment_accuracy(good_accuracy)
    check_greedy_decode(good_greedy)
    check_alignment_run(alignment_run)
    assert torch.equal(torch.random.get_rng_state(), before)
