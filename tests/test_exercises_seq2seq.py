import pytest
import torch

from attnlab.exercises import (
    ExerciseError,
    check_alignment_accuracy,
    check_bahdanau_context,
    check_teacher_forcing,
)

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


def test_teacher_forcing_accepts_the_reference(capsys):
    check_teacher_forcing(good_loop)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (feeds_predictions, "own prediction"),
        (reads_the_answer, "very word it has to predict"),
        (forgets_the_state, "initial state"),
        (time_first, r"shape \(\d+, \d+, 9\) but expected"),
    ],
    ids=["feeds-predictions", "off-by-one", "no-state", "time-first"],
)
def test_teacher_forcing_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_teacher_forcing(wrong)


# ----- the Bahdanau context vector -----


def good_context(query, states, mask, w_q, w_k, v):
    scores = torch.tanh((query @ w_q.T)[:, None] + states @ w_k.T) @ v
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    return (weights[..., None] * states).sum(1), weights


def no_mask(query, states, mask, w_q, w_k, v):
    weights = torch.softmax(torch.tanh((query @ w_q.T)[:, None] + states @ w_k.T) @ v, dim=-1)
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


def w_k_on_query(query, states, mask, w_q, w_k, v):  # no tanh
    scores = ((query @ w_q.T)[:, None] + states @ w_k.T) @ v
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    return (weights[..., None] * states).sum(1), weights


def test_bahdanau_context_accepts_the_reference(capsys):
    check_bahdanau_context(good_context)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (no_mask, "padded source positions"),
        (softmax_over_batch, "do not sum to 1"),
        (unnormalised_context, "although the weights are right"),
        (dot_product, "dot-product"),
        (w_k_on_query, "weights is wrong"),
        (lambda q, s, m, wq, wk, v: good_context(q, s, m, wq, wk, v)[0], "must return a pair"),
    ],
    ids=["no-mask", "softmax-over-batch", "unnormalised-context", "dot-product", "no-tanh", "not-a-pair"],
)
def test_bahdanau_context_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_bahdanau_context(wrong)


# ----- alignment accuracy -----


def good_accuracy(weights, alignment):
    counted = alignment >= 0
    return ((weights.argmax(-1) == alignment) & counted).sum().item() / counted.sum().item()


def test_alignment_accuracy_accepts_the_reference(capsys):
    check_alignment_accuracy(good_accuracy)
    check_alignment_accuracy(lambda w, a: ((w.argmax(-1) == a)[a >= 0]).float().mean())  # a tensor is fine too
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda w, a: (w.argmax(-1) == a).float().mean().item(), "divide by every position"),
        (lambda w, a: ((w.argmax(-1) == a) & (a >= 0)).sum().item(), "number of hits"),
        (lambda w, a: ((w.argmax(1)[:, : a.shape[1]] == a[:, : w.shape[2]])[a[:, : w.shape[2]] >= 0])
         .float().mean().item(), "argmax over the source positions"),
        (lambda w, a: "high", "must return a number"),
    ],
    ids=["counts-eos-and-padding", "returns-count", "argmax-over-targets", "not-a-number"],
)
def test_alignment_accuracy_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_alignment_accuracy(wrong)


def test_stubs_get_the_not_implemented_message():
    def stub(*args):
        raise NotImplementedError()

    for check in (check_teacher_forcing, check_bahdanau_context, check_alignment_accuracy):
        with pytest.raises(ExerciseError, match="not implemented yet"):
            check(stub)


def test_checks_leave_the_random_state_alone():
    before = torch.random.get_rng_state()
    check_teacher_forcing(good_loop)
    check_bahdanau_context(good_context)
    check_alignment_accuracy(good_accuracy)
    assert torch.equal(torch.random.get_rng_state(), before)
