"""The checks of the two Transformer chapters accept right answers and explain typical wrong ones."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from attnlab import alibi, transformer
from attnlab.exercises import (
    ExerciseError,
    check_alibi_bias,
    check_attention_masks,
    check_causal_mask,
    check_decoder_layer,
    check_learned_positions,
    check_norm_experiment,
    check_sinusoidal_positions,
)
from attnlab.experiments.transformer_translation import norm_experiment
from attnlab.tasks.translation import (
    SOURCE_VOCAB,
    TARGET_VOCAB,
    make_batch,
    sample_examples,
    teacher_forced_accuracy,
)
from attnlab.teaching.release import exercises
from tests.notebook_files import ROOT, read
from tests.wrong_answers.transformer import WRONG

CHAPTERS = [ROOT / "notebooks" / "08_transformer.ipynb", ROOT / "notebooks" / "09_positions_and_cost.ipynb"]

# --- the causal mask ----------------------------------------------------------------------------------------------


def good_mask(size):
    return torch.tril(torch.ones(size, size, dtype=torch.bool))


def loop_mask(size):
    return torch.tensor([[j <= i for j in range(size)] for i in range(size)])


@pytest.mark.parametrize("seed", [0, 3, None])
@pytest.mark.parametrize("answer", [good_mask, loop_mask], ids=["tril", "loop"])
def test_causal_mask_accepts_right_answers(answer, seed, capsys):
    check_causal_mask(answer, seed=seed)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize(("wrong", "message"), [
    (lambda n: ~good_mask(n), "True and False are swapped"),
    (lambda n: good_mask(n).T, "upper triangle"),
    (lambda n: torch.tril(torch.ones(n, n, dtype=torch.bool), -1), "diagonal is False"),
    (lambda n: torch.tril(torch.ones(n, n)), "must be boolean"),
    (lambda n: torch.ones(n, n, dtype=torch.bool), "wrong in"),
    (lambda n: good_mask(n + 1), "shape"),
], ids=["inverted", "future", "no-diagonal", "float", "all-true", "shape"])
def test_causal_mask_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_causal_mask(wrong)


def test_causal_mask_rejects_delegation_and_stubs():
    with pytest.raises(ExerciseError, match="library's own version"):
        check_causal_mask(lambda n: transformer.causal_mask(n))

    def stub(size):
        raise NotImplementedError()

    with pytest.raises(ExerciseError, match="not implemented yet"):
        check_causal_mask(stub)


# --- sinusoidal positions ----------------------------------------------------------------------------------------


def good_positions(length, d_model, dtype=torch.float32):
    t = torch.arange(length, dtype=dtype)[:, None]
    angles = t / 10_000 ** (torch.arange(0, d_model, 2, dtype=dtype) / d_model)
    table = torch.zeros(length, d_model, dtype=dtype)
    table[:, 0::2], table[:, 1::2] = angles.sin(), angles.cos()
    return table


def loop_positions(length, d_model):
    return [[math.sin(t / 10_000 ** ((j - j % 2) / d_model)) if j % 2 == 0
             else math.cos(t / 10_000 ** ((j - j % 2) / d_model)) for j in range(d_model)] for t in range(length)]


def good_add(x):
    return x + good_positions(x.shape[1], x.shape[2])


@pytest.mark.parametrize("seed", [0, 5, None])
@pytest.mark.parametrize("answer", [good_positions, lambda n, d: good_positions(n, d, torch.float64),
                                    lambda n, d: torch.tensor(loop_positions(n, d))],
                         ids=["float32", "float64", "loop"])
def test_sinusoidal_positions_accepts_right_answers(answer, seed, capsys):
    check_sinusoidal_positions(answer, good_add, seed=seed)
    assert "passed" in capsys.readouterr().out


def swapped(length, d_model):
    return good_positions(length, d_model).view(length, -1, 2).flip(-1).flatten(1)


def per_dimension(length, d_model):
    angles = torch.arange(length)[:, None] / 10_000 ** (torch.arange(d_model) / d_model)
    table = angles.clone()
    table[:, 0::2], table[:, 1::2] = angles[:, 0::2].sin(), angles[:, 1::2].cos()
    return table


def in_place_add(x):
    x += good_positions(x.shape[1], x.shape[2])
    return x


@pytest.mark.parametrize(("wrong", "add", "message"), [
    (swapped, good_add, "sine and cosine are swapped"),
    (per_dimension, good_add, "frequency exponent is wrong"),
    (lambda n, d: torch.cat([good_positions(n, d)[:, 0::2], good_positions(n, d)[:, 1::2]], -1), good_add,
     "two halves"),
    (lambda n, d: good_positions(n + 1, d)[1:], good_add, "start at 1"),
    (lambda n, d: good_positions(n, d) * 2, good_add, "wrong for length"),
    (good_positions, in_place_add, "changed its input `x` in place"),
    (good_positions, lambda x: x + good_positions(x.shape[1], x.shape[2]).flip(0), "upside down"),
], ids=["swapped", "per-dimension-frequency", "halves", "from-one", "scaled", "in-place", "flipped"])
def test_sinusoidal_positions_rejects_typical_mistakes(wrong, add, message):
    with pytest.raises(ExerciseError, match=message):
        check_sinusoidal_positions(wrong, add)


def test_sinusoidal_positions_rejects_delegation_and_stubs():
    with pytest.raises(ExerciseError, match="library's own version"):
        check_sinusoidal_positions(lambda n, d: transformer.sinusoidal_positions(n, d), good_add)

    def stub(length, d_model):
        raise NotImplementedError()

    with pytest.raises(ExerciseError, match="not implemented yet"):
        check_sinusoidal_positions(stub, good_add)


# --- learned positions -------------------------------------------------------------------------------------------


class GoodPositions(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.max_len = max_len
        self.table = nn.Parameter(0.1 * torch.randn(max_len, d_model))

    def forward(self, length):
        if length > self.max_len:
            raise ValueError(f"length {length} > max_len {self.max_len}")
        return self.table[:length]


class EmbeddingPositions(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d_model)

    def forward(self, length):
        if length > self.embedding.num_embeddings:
            raise ValueError("too long")
        return self.embedding(torch.arange(length))


@pytest.mark.parametrize("seed", [0, 1, None])
@pytest.mark.parametrize("answer", [GoodPositions, EmbeddingPositions], ids=["parameter", "embedding"])
def test_learned_positions_accepts_right_answers(answer, seed, capsys):
    check_learned_positions(answer, seed=seed)
    assert "passed" in capsys.readouterr().out


class Detached(GoodPositions):
    def forward(self, length):
        return super().forward(length).detach()


class ZeroStart(GoodPositions):
    def __init__(self, max_len, d_model):
        super().__init__(max_len, d_model)
        self.table = nn.Parameter(torch.zeros(max_len, d_model))


class NoLimit(GoodPositions):
    def forward(self, length):
        return self.table[:length]


class NotRegistered(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.table = 0.1 * torch.randn(max_len, d_model, requires_grad=True)

    def forward(self, length):
        return self.table[:length]


class FromTheEnd(GoodPositions):
    def forward(self, length):
        super().forward(length)
        return self.table[self.max_len - length:]


class Delegating(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.inner = transformer.LearnedPositions(max_len, d_model)

    def forward(self, length):
        return self.inner(length)


@pytest.mark.parametrize(("wrong", "message"), [
    (Detached, "without gradient"),
    (ZeroStart, "same vector"),
    (NoLimit, "did not raise"),
    (NotRegistered, "trainable numbers"),
    (FromTheEnd, "first"),
    (Delegating, "library's own version"),
], ids=["detached", "zero-init", "no-limit", "not-a-parameter", "from-the-end", "delegates"])
def test_learned_positions_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_learned_positions(wrong)


def test_learned_positions_stub():
    class Stub(nn.Module):
        def __init__(self, max_len, d_model):
            raise NotImplementedError()

    with pytest.raises(ExerciseError, match="not implemented yet"):
        check_learned_positions(Stub)


# --- the pre-norm / post-norm experiment ---------------------------------------------------------------------------

HELD_OUT = make_batch(sample_examples(256, 5, 20, seed=2024))
IDS = {"pad_id": TARGET_VOCAB.pad, "bos_id": TARGET_VOCAB.bos, "eos_id": TARGET_VOCAB.eos}


def small(norm_first):
    torch.manual_seed(0)
    return transformer.Transformer(len(SOURCE_VOCAB), len(TARGET_VOCAB), d_model=16, n_heads=2, n_layers=1,
                                   norm_first=norm_first, **IDS)


def measured(model):
    model.eval()
    with torch.no_grad():
        return teacher_forced_accuracy(model, HELD_OUT)


def good_experiment(steps):
    models = {"post": small(False), "pre": small(True)}
    return {key: (model, measured(model)) for key, model in models.items()}


def test_norm_experiment_accepts_a_right_answer(capsys):
    check_norm_experiment(good_experiment, steps=1)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize(("wrong", "message"), [
    (lambda steps: {"post": good_experiment(steps)["post"]}, "keys 'post' and 'pre'"),
    (lambda steps: {"post": (small(True), 0.0), "pre": (small(True), 0.0)}, "needs norm_first = False"),
    (lambda steps: {key: (m, a + 0.1) for key, (m, a) in good_experiment(steps).items()}, "not the model's"),
    (lambda steps: {"post": (nn.Linear(2, 2), 0.0), "pre": (small(True), 0.0)}, "attnlab Transformer"),
    (lambda steps: {"post": good_experiment(steps)["post"], "pre": 0.5}, "pair"),
], ids=["missing-key", "wrong-order", "wrong-accuracy", "not-a-transformer", "not-a-pair"])
def test_norm_experiment_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_norm_experiment(wrong, steps=1)


def test_the_library_s_norm_experiment_is_what_the_exercise_asked_for(capsys):
    """Chapter 8 runs norm_experiment for its prediction exercise: the check of the
    experiment it replaced accepts it (each order in every layer, each accuracy the
    model's own on the held-out sentences)."""
    check_norm_experiment(norm_experiment, steps=2)
    assert "passed" in capsys.readouterr().out


def test_norm_experiment_stub():
    def stub(steps):
        raise NotImplementedError()

    with pytest.raises(ExerciseError, match="not implemented yet"):
        check_norm_experiment(stub, steps=1)


# --- the wrong answers kept for the grading tool ---------------------------------------------------------------


@pytest.mark.parametrize("label", sorted(WRONG))
def test_wrong_solution_cells_are_rejected_by_their_check_cell(label):
    nb, exercise = next((nb, e) for nb in map(read, CHAPTERS) for e in exercises(nb) if e.label == label)
    namespace = {"torch": torch, "nn": nn}
    exec("from attnlab.exercises import *", namespace)
    exec(WRONG[label], namespace)
    with pytest.raises(ExerciseError):
        exec(nb.cells[exercise.check].source, namespace)


# --- ALiBi's bias ------------------------------------------------------------------------------------------------


def good_alibi(n_heads, length, causal, dtype=torch.float32):
    slopes = 2.0 ** (-8.0 * torch.arange(1, n_heads + 1, dtype=dtype) / n_heads)
    i = torch.arange(length, dtype=dtype)
    bias = -slopes[:, None, None] * (i[:, None] - i[None, :]).abs()
    if causal:
        bias = bias.masked_fill(i[None, :] > i[:, None], -math.inf)
    return bias


def loop_alibi(n_heads, length, causal):
    """float64 lists, a large negative number instead of -inf"""
    return torch.tensor([
        [[-1e9 if causal and j > i else -(2 ** (-8 * h / n_heads)) * abs(i - j) for j in range(length)]
         for i in range(length)]
        for h in range(1, n_heads + 1)
    ], dtype=torch.float64)


@pytest.mark.parametrize("seed", [0, 5, None])
@pytest.mark.parametrize("answer", [
    good_alibi, loop_alibi, lambda n, t, c: good_alibi(n, t, c, torch.float64).numpy(),
], ids=["torch", "loop-float64", "numpy"])
def test_alibi_bias_accepts_right_answers(answer, seed, capsys):
    check_alibi_bias(answer, seed=seed)
    assert "passed" in capsys.readouterr().out


def with_slopes(slopes_of, n_heads, length, causal):
    i = torch.arange(length, dtype=torch.float32)
    bias = -slopes_of(n_heads)[:, None, None] * (i[:, None] - i[None, :]).abs()
    return bias.masked_fill(i[None, :] > i[:, None], -math.inf) if causal else bias


def geometric(n):
    return 2.0 ** (-8.0 * torch.arange(1, n + 1) / n)


@pytest.mark.parametrize(("wrong", "message"), [
    (lambda n, t, c: -good_alibi(n, t, False) if not c else good_alibi(n, t, c).neg().masked_fill(
        torch.ones(t, t, dtype=torch.bool).triu(1), -math.inf), "must be subtracted"),
    (lambda n, t, c: good_alibi(n, t, c).transpose(1, 2), "hides the past"),
    (lambda n, t, c: good_alibi(n, t, False), "see the keys after it"),
    (lambda n, t, c: -geometric(n)[:, None, None] * (torch.arange(t)[:, None] - torch.arange(t)[None, :]).float()
     if not c else good_alibi(n, t, c), "use the distance"),
    (lambda n, t, c: with_slopes(lambda k: torch.full((k,), 2.0 ** (-8.0 / k)), n, t, c), "same slope"),
    (lambda n, t, c: with_slopes(lambda k: geometric(k).flip(0), n, t, c), "reverse order"),
    (lambda n, t, c: with_slopes(lambda k: 2.0 ** (-8.0 * torch.arange(k) / k), n, t, c), "counted from 0"),
    (lambda n, t, c: with_slopes(lambda k: 2.0 ** -torch.arange(1.0, k + 1), n, t, c), "halve"),
    (lambda n, t, c: good_alibi(n, t, c)[:, :, :-1], "shape"),
    (lambda n, t, c: good_alibi(n, t, c) * 0, "wrong for"),
], ids=["sign", "past-hidden", "no-causal-mask", "no-abs", "one-slope", "reversed", "from-zero", "halving",
        "shape", "zeros"])
def test_alibi_bias_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_alibi_bias(wrong)


def test_alibi_bias_rejects_the_library_and_stubs():
    def library(n_heads, length, causal):
        return alibi.alibi_bias(alibi.alibi_slopes(n_heads), length, length, causal=causal)

    with pytest.raises(ExerciseError, match="library's own version"):
        check_alibi_bias(library)

    def stub(n_heads, length, causal):
        raise NotImplementedError()

    with pytest.raises(ExerciseError, match="not implemented yet"):
        check_alibi_bias(stub)


# --- the masks of the three places ---------------------------------------------------------------------------------


def good_masks(src_mask, tgt_len):
    keys = src_mask[:, None, :]
    batch, length = src_mask.shape
    causal = torch.ones(tgt_len, tgt_len, dtype=torch.bool).tril()
    return keys.expand(batch, length, length), causal.expand(batch, tgt_len, tgt_len), keys.expand(batch, tgt_len, length)


def loop_masks(src_mask, tgt_len):
    """NumPy booleans built entry by entry"""
    real = src_mask.numpy()
    batch, length = real.shape
    encoder = np.array([[[real[b, j] for j in range(length)] for _ in range(length)] for b in range(batch)])
    decoder = np.array([[[j <= i for j in range(tgt_len)] for i in range(tgt_len)] for _ in range(batch)])
    cross = np.array([[[real[b, j] for j in range(length)] for _ in range(tgt_len)] for b in range(batch)])
    return encoder, decoder, cross


@pytest.mark.parametrize("seed", [0, 2, None])
@pytest.mark.parametrize("answer", [good_masks, loop_masks], ids=["tensor", "numpy"])
def test_attention_masks_accepts_right_answers(answer, seed, capsys):
    check_attention_masks(answer, seed=seed)
    assert "passed" in capsys.readouterr().out


def _replace(index, make):
    def answer(src_mask, tgt_len):
        masks = list(good_masks(src_mask, tgt_len))
        masks[index] = make(src_mask, tgt_len, masks[index])
        return tuple(masks)

    return answer


@pytest.mark.parametrize(("wrong", "message"), [
    (_replace(0, lambda s, t, m: m & s[:, :, None]), "hides the padding positions' rows"),
    (_replace(0, lambda s, t, m: s[:, :, None].expand_as(m)), "instead of padding columns"),
    (_replace(0, lambda s, t, m: torch.ones_like(m)), "read the padding"),
    (_replace(1, lambda s, t, m: m.transpose(1, 2)), "transposed causal mask"),
    (_replace(1, lambda s, t, m: torch.ones_like(m)), "read the future"),
    (_replace(2, lambda s, t, m: torch.ones_like(m)), "source's padding"),
    (_replace(2, lambda s, t, m: m.transpose(1, 2)), "wrong shape"),
    (_replace(1, lambda s, t, m: m.float()), "boolean"),
    (lambda s, t: good_masks(s, t)[:2], "three masks"),
], ids=["rows-too", "rows", "no-padding", "future", "no-causal", "cross-padding", "cross-shape", "float", "two"])
def test_attention_masks_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_attention_masks(wrong)


def test_attention_masks_rejects_delegation_and_stubs():
    with pytest.raises(ExerciseError, match="library's own version"):
        check_attention_masks(lambda s, t: transformer.attention_masks(s, t))

    def stub(src_mask, tgt_len):
        raise NotImplementedError()

    with pytest.raises(ExerciseError, match="not implemented yet"):
        check_attention_masks(stub)


def test_attention_masks_messages_never_state_the_masks():
    for wrong in (_replace(1, lambda s, t, m: ~m), _replace(0, lambda s, t, m: ~m)):
        with pytest.raises(ExerciseError) as caught:
            check_attention_masks(wrong)
        assert "tensor(" not in str(caught.value) and "True," not in str(caught.value)


# --- the decoder layer to debug ------------------------------------------------------------------------------------


def good_decoder(layer, x, memory, memory_mask, *, future=False, residual=True, padding=True, as_numpy=False):
    causal = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril()
    mixed, _ = layer.self_attention(x, x, x, attn_mask=causal.T if future else causal)
    x = layer.norm1(x + mixed)
    read, _ = layer.cross_attention(x, memory, memory, key_padding_mask=memory_mask if padding else None)
    x = layer.norm2(x + read if residual else read)
    out = layer.norm3(x + layer.feed_forward(x))
    return out.detach().numpy() if as_numpy else out


@pytest.mark.parametrize("seed", [0, 4, None])
@pytest.mark.parametrize("answer", [good_decoder, lambda *a: good_decoder(*a, as_numpy=True)], ids=["tensor", "numpy"])
def test_decoder_layer_accepts_right_answers(answer, seed, capsys):
    check_decoder_layer(answer, seed=seed)
    assert "passed" in capsys.readouterr().out


def pre_norm_decoder(layer, x, memory, memory_mask):
    causal = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril()
    h = layer.norm1(x)
    x = x + layer.self_attention(h, h, h, attn_mask=causal)[0]
    h = layer.norm2(x)
    x = x + layer.cross_attention(h, memory, memory, key_padding_mask=memory_mask)[0]
    return x + layer.feed_forward(layer.norm3(x))


@pytest.mark.parametrize(("wrong", "message"), [
    (lambda *a: good_decoder(*a, future=True), "transposed causal mask"),
    (lambda *a: good_decoder(*a, residual=False), "cross-attention's output replaces x"),
    (lambda *a: good_decoder(*a, padding=False), "source's padding"),
    (lambda *a: good_decoder(*a, future=True, residual=False), "post-norm order"),
    (pre_norm_decoder, "post-norm order"),
    (lambda *a: (good_decoder(*a), None), "alone"),
], ids=["future", "no-residual", "no-padding", "both-bugs", "pre-norm", "tuple"])
def test_decoder_layer_rejects_typical_mistakes(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_decoder_layer(wrong)


def delegated_decoder_layer(layer, x, memory, memory_mask):
    mask = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril()
    return layer(x, memory, tgt_mask=mask, memory_key_padding_mask=memory_mask)[0]


def test_decoder_layer_rejects_delegation_and_stubs():
    with pytest.raises(ExerciseError, match="library's own version"):
        check_decoder_layer(delegated_decoder_layer)

    def stub(layer, x, memory, memory_mask):
        raise NotImplementedError()

    with pytest.raises(ExerciseError, match="not implemented yet"):
        check_decoder_layer(stub)
