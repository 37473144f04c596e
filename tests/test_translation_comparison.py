"""build_model and TranslationComparison: the model factory and the training-and-scoring helper that chapters 5
and 6 share."""

import pytest
import torch

from attnlab.hard_attention import HardAttentionDecoder, hard_attention_loss
from attnlab.luong import LocalAttentionDecoder, LuongDecoder
from attnlab.seq2seq import Decoder, Encoder, Seq2Seq
from attnlab.tasks.translation import (
    SOURCE_VOCAB,
    TARGET_VOCAB,
    TrainedModel,
    TranslationComparison,
    build_model,
    evaluate_translation,
    examples_per_length,
    train_translation,
    translation_model,
)
from attnlab.train import seed_everything


def same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    first, second = a.state_dict(), b.state_dict()
    return first.keys() == second.keys() and all(torch.equal(first[k], second[k]) for k in first)


def by_hand(decoder_class, seed, embed, hidden, **options):
    """The factory written out: seed, the bidirectional encoder, then the decoder."""
    seed_everything(seed)
    encoder = Encoder(len(SOURCE_VOCAB), embed, hidden // 2, bidirectional=True)
    decoder = decoder_class(len(TARGET_VOCAB), embed, hidden, encoder.output_size, pad_id=TARGET_VOCAB.pad,
                            bos_id=TARGET_VOCAB.bos, eos_id=TARGET_VOCAB.eos, **options)
    return Seq2Seq(encoder, decoder)


@pytest.mark.parametrize(
    ("decoder_class", "options"),
    [(LuongDecoder, {"score": "dot", "input_feeding": False}),
     (LuongDecoder, {"score": "general", "input_feeding": True}),
     (LocalAttentionDecoder, {"half_width": 2, "centre": "predictive", "score": "general", "input_feeding": False}),
     (HardAttentionDecoder, {"score": "dot", "baseline": "average"})],
    ids=["global-dot", "general-feeding", "local-p", "hard"],
)
def test_build_model_draws_the_weights_of_the_model_written_out(decoder_class, options):
    built = build_model(decoder_class, seed=3, embed_size=6, hidden_size=8, **options)
    assert isinstance(built.decoder, decoder_class)
    assert built.encoder.output_size == 8 and built.decoder.hidden_size == 8
    assert same_weights(built, by_hand(decoder_class, 3, 6, 8, **options))
    assert not same_weights(built, build_model(decoder_class, seed=4, embed_size=6, hidden_size=8, **options))


def test_build_model_without_a_decoder_class_is_the_model_without_attention():
    built = build_model(seed=1, embed_size=6, hidden_size=8)
    assert type(built.decoder) is Decoder
    seed_everything(1)
    assert same_weights(built, translation_model(attention=False, hidden_size=8, embed_size=6))


def test_build_model_defaults_are_the_luong_chapters_sizes():
    built = build_model(LuongDecoder, score="dot", input_feeding=False)
    assert built.encoder.embedding.embedding_dim == 32 and built.decoder.hidden_size == 64
    assert same_weights(built, by_hand(LuongDecoder, 0, 32, 64, score="dot", input_feeding=False))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: build_model(LuongDecoder, hidden_size=7), "hidden_size must be even"),
        (lambda: build_model(LuongDecoder, hidden_size=0), "hidden_size must be > 0"),
        (lambda: build_model(LuongDecoder, embed_size=-1), "embed_size must be > 0"),
        (lambda: build_model(Encoder), "decoder_class must be a decoder class"),
        (lambda: build_model("LuongDecoder"), "decoder_class must be a decoder class"),
        (lambda: build_model(None, score="dot"), "takes no decoder options"),
    ],
    ids=["odd", "zero", "negative", "not-a-decoder", "a-name", "options-without-attention"],
)
def test_build_model_rejects_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.fixture(scope="module")
def test_set():
    return examples_per_length(1, 5, 14, seed=2)


def small(decoder_class=LuongDecoder, **options):
    return build_model(decoder_class, embed_size=6, hidden_size=8, **options)


def test_a_run_is_the_training_and_evaluation_it_stands_for(test_set, capsys):
    comparison = TranslationComparison(test_set, steps=3, batch_size=4, lr=1e-2, train_lengths=(5, 12),
                                       buckets=((5, 9), (10, 14)), eval_every=2)
    result = comparison.run("dot", small(score="dot", input_feeding=False), seed=1)
    assert comparison.results == {"dot": result} and isinstance(result, TrainedModel)
    assert [e["step"] for e in result.history.evals] == [2.0, 3.0] and len(result.history.loss) == 3
    assert result.ms_per_step == pytest.approx(1000 * result.history.seconds / 3)
    # the same model trained by hand, with the same seeds, gives the same losses and the same scores
    model = small(score="dot", input_feeding=False)
    history = train_translation(model, 3, batch_size=4, lr=1e-2, seed=1, min_len=5, max_len=12, eval_every=2)
    assert history.loss == result.history.loss and history.evals == result.history.evals
    rows = evaluate_translation(model, test_set).by_bucket([(5, 9), (10, 14)])
    assert result.accuracy == {r["bucket"]: r["token_accuracy"] for r in rows}
    assert list(result.accuracy) == ["5-9", "10-14"]
    # the summary is printed on a line of its own (the progress bar may print too, where it writes to stdout)
    line = result.summary("dot")
    assert line in capsys.readouterr().out.splitlines()
    assert line.startswith(" " * 21 + "dot:") and "5-9: " in line
    assert "ms" not in line  # no timing in the lesson's output


def test_run_options_reach_the_training(test_set, capsys):
    comparison = TranslationComparison(test_set, steps=2, batch_size=4, train_lengths=(5, 12), eval_every=5)
    hard = comparison.run("hard", small(HardAttentionDecoder, score="dot", baseline="none"),
                          loss_fn=hard_attention_loss, eval_every=1, clip=None, report=False)
    assert [e["step"] for e in hard.history.evals] == [1.0, 2.0]
    assert hard.summary("hard") not in capsys.readouterr().out  # report=False prints no summary
    assert list(hard.accuracy) == ["5-10", "11-20"]  # the default buckets that hold test sentences


def test_runs_are_reproducible(test_set):
    comparison = TranslationComparison(test_set, steps=2, batch_size=4, train_lengths=(5, 12))
    first = comparison.run("a", small(score="general", input_feeding=False), report=False)
    second = comparison.run("b", small(score="general", input_feeding=False), report=False)
    assert first.history.loss == second.history.loss and first.accuracy == second.accuracy
    assert same_weights(first.model, second.model)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"steps": 0}, "steps must be > 0"),
        ({"steps": 2, "batch_size": 0}, "batch_size must be > 0"),
        ({"steps": 2, "lr": 0.0}, "lr must be > 0"),
        ({"steps": 2, "eval_every": 0}, "eval_every must be > 0"),
        ({"steps": 2, "train_lengths": (30, 5)}, r"train_lengths must be \(shortest, longest\)"),
        ({"steps": 2, "train_lengths": (2, 30)}, r"train_lengths must be \(shortest, longest\)"),
        ({"steps": 2, "buckets": []}, "buckets must be a non-empty list"),
        ({"steps": 2, "buckets": [(10, 5)]}, "buckets must be a non-empty list"),
    ],
    ids=["steps", "batch", "lr", "eval-every", "reversed-lengths", "too-short", "no-buckets", "reversed-bucket"],
)
def test_comparison_rejects_bad_settings(test_set, options, message):
    with pytest.raises(ValueError, match=message):
        TranslationComparison(test_set, **options)


def test_comparison_needs_a_test_set():
    with pytest.raises(ValueError, match="test_set must hold at least one example"):
        TranslationComparison([], steps=2)
