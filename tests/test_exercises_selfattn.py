import random
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attnlab.attention import attend, dot_score, masked_softmax
from attnlab.exercises import (
    ExerciseError,
    check_head_experiment,
    check_multi_head_attention,
    check_parameterized_attention,
    check_scaled_simple_decoder,
    check_simple_attention,
    check_split_heads,
)
from attnlab.exercises import selfattn as selfattn_checks
from attnlab.selfattention import (
    MultiHeadAttention,
    ProjectedAttention,
    SelfAttentionEncoder,
)
from attnlab.simple_attention import SimpleAttentionDecoder
from attnlab.tasks.neighbours import NeighbourTagger, train_tagger
from attnlab.tasks.translation import (
    SOURCE_VOCAB,
    make_batch,
    make_example,
    random_sentence,
)

# --- correct answers, written as a student would ----------------------------------------------------------------


def good_simple(y_d, Y_e, mask):
    scores = (Y_e @ y_d[..., None])[..., 0].masked_fill(~mask, float("-inf"))  # (B, S)
    a = torch.softmax(scores, dim=-1)
    return (a[:, None] @ Y_e)[:, 0], a


def by_hand_softmax_simple(y_d, Y_e, mask):
    """Another right answer: the softmax written out, the largest score subtracted, padding set to 0 by hand."""
    scores = torch.einsum("bsd,bd->bs", Y_e, y_d)
    scores = torch.where(mask, scores, scores.min() - 1e4)
    e = torch.exp(scores - scores.amax(-1, keepdim=True)) * mask
    a = e / e.sum(-1, keepdim=True)
    return torch.einsum("bs,bsd->bd", a, Y_e), a


def masked_softmax_simple(y_d, Y_e, mask):
    """Another right answer: the masked softmax of the first chapter is allowed."""
    a = masked_softmax((Y_e @ y_d[..., None])[..., 0], mask)
    return (a[:, None] @ Y_e)[:, 0], a


def good_parameterized(y_d, Y_e, W_q, W_k, W_v):
    query, keys, values = y_d @ W_q.T, Y_e @ W_k.T, Y_e @ W_v.T  # (B, d), (B, S, d), (B, S, d_v)
    a = torch.softmax((keys @ query[..., None])[..., 0], dim=-1)
    return (a[:, None] @ values)[:, 0], a


def good_split(x, n_heads):
    batch, length, d = x.shape
    return x.reshape(batch, length, n_heads, d // n_heads).transpose(1, 2)


def good_merge(x):
    batch, n_heads, length, d_head = x.shape
    return x.transpose(1, 2).reshape(batch, length, n_heads * d_head)


def good_multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, n_heads):
    q, k, v = good_split(x_q @ W_q.T, n_heads), good_split(x_kv @ W_k.T, n_heads), good_split(x_kv @ W_v.T, n_heads)
    weights = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
    return good_merge(weights @ v) @ W_o.T


def multi_head_with_attend(x_q, x_kv, W_q, W_k, W_v, W_o, n_heads):
    """Another right answer: the per-head attention through `attend` (only the heads are the exercise)."""
    q, k, v = good_split(x_q @ W_q.T, n_heads), good_split(x_kv @ W_k.T, n_heads), good_split(x_kv @ W_v.T, n_heads)
    context, _ = attend(q / q.shape[-1] ** 0.5, k, v)
    return good_merge(context) @ W_o.T


def in_float64(fn):
    def answer(*args):
        out = fn(*(a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args))
        if isinstance(out, tuple):
            return tuple(o.double() if isinstance(o, torch.Tensor) else o for o in out)
        return out.double()

    return answer


def check_split_with(split):
    return lambda merge, **kwargs: check_split_heads(split, merge, **kwargs)


def check_split(split, **kwargs):
    check_split_heads(split, good_merge, **kwargs)


def check_merge(merge, **kwargs):
    check_split_heads(good_split, merge, **kwargs)


CORRECT = [
    (check_simple_attention, good_simple), (check_simple_attention, by_hand_softmax_simple),
    (check_simple_attention, masked_softmax_simple),
    (check_parameterized_attention, good_parameterized),
    (check_split, good_split), (check_merge, good_merge),
    (check_multi_head_attention, good_multi_head), (check_multi_head_attention, multi_head_with_attend),
]
CORRECT_IDS = ["simple", "simple-by-hand-softmax", "simple-masked-softmax", "parameterized", "split", "merge",
               "multi-head", "multi-head-with-attend"]


@pytest.mark.parametrize(("check", "answer"), CORRECT, ids=CORRECT_IDS)
def test_checks_accept_correct_answers(check, answer, capsys):
    check(answer)
    assert "passed all" in capsys.readouterr().out


@pytest.mark.parametrize(("check", "answer"), CORRECT, ids=CORRECT_IDS)
def test_checks_accept_float64_answers(check, answer, capsys):
    check(in_float64(answer))
    assert "passed all" in capsys.readouterr().out


@pytest.mark.parametrize(("check", "answer"), CORRECT, ids=CORRECT_IDS)
def test_checks_accept_correct_answers_on_fresh_random_inputs(check, answer, capsys):
    for _ in range(3):
        check(answer, seed=None)
    assert "passed all" in capsys.readouterr().out


def test_numpy_answers_are_accepted_where_no_gradient_is_needed(capsys):
    check_simple_attention(lambda y, Y, m: tuple(t.numpy() for t in good_simple(y, Y, m)))
    check_split(lambda x, h: good_split(x, h).numpy())
    assert capsys.readouterr().out.count("passed all") == 2


# --- answers that hand the work to the library, change their inputs, or are not written yet -------------------------


def simple_with_attend(y_d, Y_e, mask):
    y_a, a = attend(y_d[:, None], Y_e, Y_e, score=dot_score, mask=mask[:, None])
    return y_a[:, 0], a[:, 0]


def parameterized_with_module(y_d, Y_e, W_q, W_k, W_v):
    module = ProjectedAttention(W_q.shape[1], W_k.shape[1], W_v.shape[1], W_q.shape[0])
    module.value_proj = nn.Linear(W_v.shape[1], W_v.shape[0], bias=False)
    with torch.no_grad():
        for proj, weight in [(module.query_proj, W_q), (module.key_proj, W_k), (module.value_proj, W_v)]:
            proj.weight.copy_(weight)
    y_a, a = module(y_d[:, None], Y_e, Y_e)
    return y_a[:, 0], a[:, 0]


def parameterized_with_attend(y_d, Y_e, W_q, W_k, W_v):
    y_a, a = attend((y_d @ W_q.T)[:, None], Y_e @ W_k.T, Y_e @ W_v.T)
    return y_a[:, 0], a[:, 0]


def split_with_module(x, n_heads):
    return MultiHeadAttention(x.shape[-1], n_heads).split_heads(x)


def multi_head_with_module(x_q, x_kv, W_q, W_k, W_v, W_o, n_heads):
    module = MultiHeadAttention(x_q.shape[-1], n_heads, bias=False)
    for proj, weight in [(module.query_proj, W_q), (module.key_proj, W_k), (module.value_proj, W_v),
                         (module.out_proj, W_o)]:
        proj.weight = nn.Parameter(weight)
    return module(x_q, x_kv, x_kv)[0]


@pytest.mark.parametrize(("check", "answer"), [
    (check_simple_attention, simple_with_attend), (check_simple_attention, selfattn_checks._reference_simple),
    (check_parameterized_attention, parameterized_with_module), (check_parameterized_attention,
                                                                 parameterized_with_attend),
    (check_parameterized_attention, selfattn_checks._reference_parameterized),
    (check_split, split_with_module), (check_merge, MultiHeadAttention.merge_heads),
    (check_multi_head_attention, multi_head_with_module),
    (check_multi_head_attention, selfattn_checks._reference_multi_head),
], ids=["simple-attend", "simple-reference", "parameterized-module", "parameterized-attend",
        "parameterized-reference", "split-module", "merge-library", "multi-head-module", "multi-head-reference"])
def test_checks_reject_delegation_to_the_library(check, answer):
    with pytest.raises(ExerciseError, match="library's own version"):
        check(answer)


def simple_in_place(y_d, Y_e, mask):
    out = good_simple(y_d, Y_e, mask)
    Y_e.mul_(0.5)
    return out


def parameterized_in_place(y_d, Y_e, W_q, W_k, W_v):
    y_d /= y_d.norm(dim=-1, keepdim=True)
    return good_parameterized(y_d, Y_e, W_q, W_k, W_v)


def split_in_place(x, n_heads):
    out = good_split(x.clone(), n_heads)
    x.zero_()
    return out


def multi_head_in_place(x_q, x_kv, W_q, W_k, W_v, W_o, n_heads):
    out = good_multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, n_heads)
    x_q.add_(1.0)
    return out


@pytest.mark.parametrize(("check", "answer", "argument"), [
    (check_simple_attention, simple_in_place, "Y_e"), (check_parameterized_attention, parameterized_in_place, "y_d"),
    (check_split, split_in_place, "x"), (check_multi_head_attention, multi_head_in_place, "x_q"),
], ids=["simple", "parameterized", "split", "multi-head"])
def test_checks_reject_answers_that_change_their_input(check, answer, argument):
    with pytest.raises(ExerciseError, match=f"changed its input `{argument}` in place"):
        check(answer)


def stub(*args):
    raise NotImplementedError()


@pytest.mark.parametrize("check", [check_simple_attention, check_parameterized_attention, check_split, check_merge,
                                   check_multi_head_attention],
                         ids=["simple", "parameterized", "split", "merge", "multi-head"])
def test_stub_gets_the_not_implemented_message(check):
    with pytest.raises(ExerciseError, match="not implemented yet"):
        check(stub)


# --- typical mistakes -------------------------------------------------------------------------------------------


def unmasked_simple(y_d, Y_e, mask):
    a = torch.softmax((Y_e @ y_d[..., None])[..., 0], dim=-1)
    return (a[:, None] @ Y_e)[:, 0], a


def zeroed_after_softmax(y_d, Y_e, mask):
    a = torch.softmax((Y_e @ y_d[..., None])[..., 0], dim=-1) * mask
    return (a[:, None] @ Y_e)[:, 0], a


def overflowing_softmax(y_d, Y_e, mask):
    e = torch.exp((Y_e @ y_d[..., None])[..., 0]) * mask
    a = e / e.sum(-1, keepdim=True)
    return (a[:, None] @ Y_e)[:, 0], a


def softmax_over_batch(y_d, Y_e, mask):
    a = torch.softmax((Y_e @ y_d[..., None])[..., 0].masked_fill(~mask, float("-inf")), dim=0)
    return (a[:, None] @ Y_e)[:, 0], a


def plain_average(y_d, Y_e, mask):
    _, a = good_simple(y_d, Y_e, mask)
    return (Y_e * mask[..., None]).sum(1) / mask.sum(1, keepdim=True), a


@pytest.mark.parametrize(("wrong", "message"), [
    (unmasked_simple, "weight to padding positions"),
    (zeroed_after_softmax, "zeroing the weights after it"),
    (overflowing_softmax, "Subtract each row's largest score"),
    (softmax_over_batch, "softmax over the S positions"),
    (plain_average, "plain average"),
    (lambda y, Y, m: good_simple(y, Y, m)[0], "return the pair"),
    (lambda y, Y, m: good_simple(y, Y, m)[::-1], "returned shape"),
], ids=["unmasked", "zeroed-after-softmax", "overflow", "softmax-over-batch", "plain-average", "only-y_a",
        "swapped-pair"])
def test_simple_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_simple_attention(wrong)


def no_query_projection(y_d, Y_e, W_q, W_k, W_v):
    keys, values = Y_e @ W_k.T, Y_e @ W_v.T
    a = torch.softmax((keys @ y_d[..., None])[..., 0], dim=-1)
    return (a[:, None] @ values)[:, 0], a


def keys_as_values(y_d, Y_e, W_q, W_k, W_v):
    _, a = good_parameterized(y_d, Y_e, W_q, W_k, W_v)
    return (a[:, None] @ (Y_e @ W_k.T))[:, 0], a


def states_as_values(y_d, Y_e, W_q, W_k, W_v):
    _, a = good_parameterized(y_d, Y_e, W_q, W_k, W_v)
    return (a[:, None] @ Y_e)[:, 0], a


def detached_parameterized(y_d, Y_e, W_q, W_k, W_v):
    with torch.no_grad():
        return good_parameterized(y_d, Y_e, W_q, W_k, W_v)


def exp_over_sum_parameterized(y_d, Y_e, W_q, W_k, W_v):
    e = torch.exp(((Y_e @ W_k.T) @ (y_d @ W_q.T)[..., None])[..., 0])
    a = e / e.sum(-1, keepdim=True)
    return (a[:, None] @ (Y_e @ W_v.T))[:, 0], a


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda y, Y, Wq, Wk, Wv: (good_parameterized(y, Y, Wq, Wk, Wv)[0],
                                   torch.exp((Y @ Wk.T @ (y @ Wq.T)[..., None])[..., 0])), "do not sum to 1"),
        (no_query_projection, "ignore W_q"),
        (lambda y, Y, Wq, Wk, Wv: good_parameterized(y, Y, Wq.T, Wk, Wv), "y_d W_q instead"),
        (lambda y, Y, Wq, Wk, Wv: good_parameterized(y / Wq.shape[0] ** 0.5, Y, Wq, Wk, Wv), "divided by sqrt"),
        (keys_as_values, "averages the keys"),
        (states_as_values, "encoder states themselves"),
        (lambda y, Y, Wq, Wk, Wv: good_parameterized(y, Y, Wq, Wk, Wv)[0], "return the pair"),
        (detached_parameterized, "carries no gradient"),
        (exp_over_sum_parameterized, "Subtract each row's largest score"),
    ],
    ids=["unnormalised", "no-query-projection", "transposed-query-weight", "scaled", "keys-as-values",
         "states-as-values", "no-pair", "no-grad", "overflow"],
)
def test_parameterized_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_parameterized_attention(wrong)


def buggy_split(x, n_heads):
    """The chapter's buggy split: the right shape, but positions mixed into heads."""
    batch, length, d = x.shape
    return x.reshape(batch, n_heads, length, d // n_heads)


def untransposed_split(x, n_heads):
    batch, length, d = x.shape
    return x.reshape(batch, length, n_heads, d // n_heads)


def strided_split(x, n_heads):
    batch, length, d = x.shape
    return x.reshape(batch, length, d // n_heads, n_heads).permute(0, 3, 1, 2)


def view_merge(x):
    batch, n_heads, length, d_head = x.shape
    return x.transpose(1, 2).view(batch, length, n_heads * d_head)


def straight_merge(x):
    batch, n_heads, length, d_head = x.shape
    return x.reshape(batch, length, n_heads * d_head)


@pytest.mark.parametrize(("check", "wrong", "message"), [
    (check_split, buggy_split, "mixes positions into heads"),
    (check_split, untransposed_split, "swap the T and head dimensions"),
    (check_split, strided_split, "every n_heads-th feature"),
    (check_split, lambda x, h: good_split(x, h)[:, :, :-1], "returned shape"),
    (check_merge, view_merge, "use .reshape"),
    (check_merge, straight_merge, "swap the head and T dimensions back"),
    (check_merge, lambda x: x.transpose(1, 2), "returned shape"),
], ids=["buggy-split", "no-transpose", "strided", "drops-a-position", "view-after-transpose", "straight-merge",
        "no-flatten"])
def test_split_heads_rejects_typical_mistakes(check, wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check(wrong)


def view_split_multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, n_heads):
    q, k, v = buggy_split(x_q @ W_q.T, n_heads), buggy_split(x_kv @ W_k.T, n_heads), buggy_split(x_kv @ W_v.T, n_heads)
    weights = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
    return good_merge(weights @ v) @ W_o.T


def scaled_by(factor):
    def answer(x_q, x_kv, W_q, W_k, W_v, W_o, n_heads):
        d = x_q.shape[-1]
        # rescaling the query changes the scale of the scores: sqrt(d_head) / factor in place of sqrt(d_head)
        return good_multi_head(x_q * (d // n_heads) ** 0.5 / factor(d, n_heads), x_kv, W_q, W_k, W_v, W_o, n_heads)
    return answer


def detached_multi_head(*args):
    return good_multi_head(*args).detach()


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (view_split_multi_head, "splits the heads wrongly"),
        (scaled_by(lambda d, h: 1.0), "does not scale the scores"),
        (scaled_by(lambda d, h: d**0.5), "divides by sqrt\\(d\\)"),
        (lambda x_q, x_kv, W_q, W_k, W_v, W_o, h: good_multi_head(x_q, x_kv, W_q, W_k, W_v, torch.eye(W_o.shape[0]), h),
         "leaves out the output projection"),
        (lambda x_q, x_kv, W_q, W_k, W_v, W_o, h: good_multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, 1),
         "is wrong for x_q"),
        (lambda x_q, x_kv, W_q, W_k, W_v, W_o, h: good_multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, h)[:, :1],
         "returned shape"),
        (lambda *args: (good_multi_head(*args), None), "returned a pair"),
        (detached_multi_head, "carries no gradient"),
    ],
    ids=["view-split", "unscaled", "scaled-by-d-model", "no-output-projection", "one-head-only", "wrong-shape",
         "pair", "detached"],
)
def test_multi_head_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_multi_head_attention(wrong)


def test_messages_do_not_give_the_expected_values():
    with pytest.raises(ExerciseError) as info:
        check_simple_attention(lambda y, Y, m: (good_simple(y, Y, m)[0] + 0.1, good_simple(y, Y, m)[1]))
    message = str(info.value)
    assert "y_a is wrong" in message and "largest difference from the reference is 0.1" in message
    assert "tensor(" not in message


def test_a_fresh_draw_names_its_seed():
    with pytest.raises(ExerciseError, match="seed="):
        check_simple_attention(unmasked_simple, seed=None)


# --- the experiment: the neighbour tagger with one head -----------------------------------------------------------

VOCAB = len(SOURCE_VOCAB)


class Tagger(nn.Module):
    def __init__(self, n_heads: int, positions: bool = True) -> None:
        super().__init__()
        self.encoder = SelfAttentionEncoder(VOCAB, 8, n_heads, d_ff=8, positions=positions)
        self.readout = nn.Linear(8, 2 * VOCAB)

    def forward(self, src, src_mask):
        return self.readout(self.encoder(src, src_mask).states).unflatten(-1, (2, VOCAB))


def labels_of(batch):
    labels = torch.stack([F.pad(batch.src[:, :-1], (1, 0)), F.pad(batch.src[:, 1:], (0, 1))], -1)
    return labels.masked_fill(~batch.src_mask[..., None], -100)


def accuracy_of(model, batch, *, padding=False):
    labels = labels_of(batch)
    with torch.no_grad():
        hits = model(batch.src, batch.src_mask).argmax(-1) == labels
    return hits.float().mean().item() if padding else hits[labels >= 0].float().mean().item()


@pytest.fixture(scope="module")
def test_batch():
    rng = random.Random(0)
    return make_batch([make_example(random_sentence(rng.randint(5, 8), rng)) for _ in range(32)])


def tagger_experiment(test_batch, *, heads=None, positions=True, report=accuracy_of):
    """An experiment answer without training (the check does not depend on the budget): build, evaluate."""
    def train_tagger(n_heads, steps):
        torch.manual_seed(0)
        model = Tagger(heads or n_heads, positions)
        return model, report(model, test_batch)
    return train_tagger


def test_experiment_accepts_a_consistent_answer(test_batch, capsys):
    check_head_experiment(tagger_experiment(test_batch), test_batch)
    check_head_experiment(tagger_experiment(test_batch, report=lambda m, b: torch.tensor(accuracy_of(m, b))),
                          test_batch, seed=None)
    out = capsys.readouterr().out
    assert out.count("passed all") == 2 and "neighbour accuracy" in out


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"heads": 2}, "heads, not 1"),
    ({"positions": False}, "no positional encoding"),
    ({"report": lambda m, b: 100 * accuracy_of(m, b)}, "not a percentage"),
    ({"report": lambda m, b: accuracy_of(m, b, padding=True)}, "counts the padding"),
    ({"report": lambda m, b: 1 - accuracy_of(m, b)}, "error rate"),
    ({"report": lambda m, b: accuracy_of(Tagger(1), b) + 0.01}, "not that of the returned model"),
], ids=["two-heads", "no-positions", "percent", "padding-counted", "error-rate", "other-model"])
def test_experiment_rejects_typical_mistakes(test_batch, kwargs, message):
    with pytest.raises(ExerciseError, match=message):
        check_head_experiment(tagger_experiment(test_batch, **kwargs), test_batch)


@pytest.mark.parametrize(("answer", "message"), [
    (lambda n_heads, steps: 0.9, "must return a pair"),
    (lambda n_heads, steps: (0.9, Tagger(1)), "the trained model"),
    (stub, "not implemented yet"),
], ids=["number-only", "swapped", "stub"])
def test_experiment_rejects_malformed_answers(test_batch, answer, message):
    with pytest.raises(ExerciseError, match=message):
        check_head_experiment(answer, test_batch)


def test_experiment_check_needs_no_fixed_test_batch_layout():
    batch = SimpleNamespace(src=torch.tensor([[3, 4, 5, 0]]), src_mask=torch.tensor([[True, True, True, False]]))
    check_head_experiment(tagger_experiment(batch), batch)


def test_the_library_s_tagger_run_is_what_the_experiment_asked_for(test_batch):
    """Chapter 7 runs train_tagger for its prediction exercise: the check of the
    experiment it replaced accepts it (one head, positions, the accuracy of the
    returned model on the test batch)."""
    check_head_experiment(lambda n_heads, steps: train_tagger(n_heads, steps, test_batch), test_batch)
    model, accuracy = train_tagger(2, 2, test_batch)
    assert isinstance(model, NeighbourTagger) and {m.n_heads for m in model.modules() if hasattr(m, "n_heads")} == {2}
    assert 0.0 <= accuracy <= 1.0


# --- the learned scale: ScaledSimpleDecoder ---------------------------------------------------------------------


class GoodScaled(SimpleAttentionDecoder):
    def __init__(self, vocab_size, embed_size, hidden_size, **options):
        super().__init__(vocab_size, embed_size, hidden_size, **options)
        self.beta = nn.Parameter(torch.ones(()))

    def attention(self, query, state):
        y_a, a = attend(query[:, None], state["memory"], state["memory"],
                        score=lambda q, k: self.beta * dot_score(q, k), mask=state["mask"][:, None])
        return y_a[:, 0], a[:, 0]


class ScaledQuery(SimpleAttentionDecoder):
    """Another right answer: beta times the query scales every dot product, a parameter of shape (1,)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.scale = nn.Parameter(torch.tensor([1.0]))

    def attention(self, query, state):
        return super().attention(self.scale * query, state)


class ByHandScaled(GoodScaled):
    """Another right answer: the masked softmax written out, in float64."""

    def attention(self, query, state):
        memory = state["memory"].double()
        scores = self.beta * torch.einsum("bsd,bd->bs", memory, query.double())
        scores = scores.masked_fill(~state["mask"], torch.finfo(torch.float64).min)
        a = torch.softmax(scores, -1)
        return torch.einsum("bs,bsd->bd", a, memory), a


class ScalesTheWeights(GoodScaled):
    def attention(self, query, state):
        y_a, a = super().attention(query, state)
        a = a / self.beta * self.beta**2  # beta times the softmax: rows sum to beta
        return (a[:, None] @ state["memory"])[:, 0], a


class PlainTensorBeta(SimpleAttentionDecoder):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.beta = torch.ones(())  # not a parameter: training never changes it

    def attention(self, query, state):
        return super().attention(self.beta * query, state)


class StartsAtZero(GoodScaled):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.beta = nn.Parameter(torch.zeros(()))


class OneBetaPerFeature(GoodScaled):
    def __init__(self, vocab_size, embed_size, hidden_size, **options):
        super().__init__(vocab_size, embed_size, hidden_size, **options)
        self.beta = nn.Parameter(torch.ones(hidden_size))

    def attention(self, query, state):
        return SimpleAttentionDecoder.attention(self, self.beta * query, state)


class BetaAsANumber(GoodScaled):
    def attention(self, query, state):
        beta = self.beta.item()  # a Python number: no gradient reaches beta
        y_a, a = attend(query[:, None], state["memory"], state["memory"],
                        score=lambda q, k: beta * dot_score(q, k), mask=state["mask"][:, None])
        return y_a[:, 0], a[:, 0]


class IgnoresTheBeta(GoodScaled):
    def attention(self, query, state):
        return SimpleAttentionDecoder.attention(self, query, state)


class Unmasked(GoodScaled):
    def attention(self, query, state):
        y_a, a = attend(query[:, None], state["memory"], state["memory"],
                        score=lambda q, k: self.beta * dot_score(q, k))
        return y_a[:, 0], a[:, 0]


class NotASimpleDecoder(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        self.beta = nn.Parameter(torch.ones(()))


class StubScaled(SimpleAttentionDecoder):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        raise NotImplementedError()


@pytest.mark.parametrize("answer", [GoodScaled, ScaledQuery, ByHandScaled], ids=["attend", "query", "by-hand"])
def test_scaled_decoder_check_accepts_right_answers(answer, capsys):
    check_scaled_simple_decoder(answer)
    check_scaled_simple_decoder(answer, seed=None)
    assert "passed all" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (ScalesTheWeights, "multiplies the weights"),
        (PlainTensorBeta, "no parameter of its own"),
        (StartsAtZero, "starts at 0: start it at 1"),
        (OneBetaPerFeature, "one learned number"),
        (BetaAsANumber, "no gradient reaches beta"),
        (IgnoresTheBeta, "do not change with beta"),
        (Unmasked, "padded positions"),
        (NotASimpleDecoder, "must derive from SimpleAttentionDecoder"),
        (GoodScaled(11, 6, 8), "pass the class ScaledSimpleDecoder itself"),
        (StubScaled, "not implemented yet"),
    ],
    ids=["weights", "tensor", "zero", "per-feature", "item", "ignored", "unmasked", "not-a-decoder", "instance",
         "stub"],
)
def test_scaled_decoder_check_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_scaled_simple_decoder(wrong)
