import random

import pytest
import torch

from attnlab.seq2seq import AttentionDecoder, Decoder
from attnlab.tasks import (
    LENGTH_BUCKETS,
    SOURCE_VOCAB,
    TARGET_VOCAB,
    TranslationReport,
    Vocab,
    attention_maps,
    evaluate_translation,
    examples_per_length,
    make_batch,
    make_example,
    random_sentence,
    sample_examples,
    train_translation,
    training_batches,
    translate,
    translation_loss,
    translation_model,
)
from attnlab.tasks.translation import (
    DICTIONARY,
    LEXICON,
    WORD_CLASS,
    decay_in_second_half,
    warmup_cosine,
    warmup_inverse_sqrt,
)


def test_dictionary_is_one_to_one_and_the_vocabularies_hold_every_word():
    assert len(set(DICTIONARY.values())) == len(DICTIONARY)
    assert set(SOURCE_VOCAB.itos[1:]) == set(DICTIONARY)
    assert set(TARGET_VOCAB.itos[3:]) == set(DICTIONARY.values())
    assert (TARGET_VOCAB.pad, TARGET_VOCAB.bos, TARGET_VOCAB.eos) == (0, 1, 2) and SOURCE_VOCAB.pad == 0


@pytest.mark.parametrize(
    ("source", "target", "alignment"),
    [
        # main clause only, no adjective: word for word
        ("dogs see cats", "perros ven gatos", [0, 1, 2]),
        # the noun jumps in front of its two adjectives
        ("big red dogs see cats", "perros grandes rojos ven gatos", [2, 0, 1, 3, 4]),
        # a subordinate clause is written backwards after its subordinator
        ("dogs see cats because kings love birds", "perros ven gatos porque pájaros aman reyes",
         [0, 1, 2, 3, 6, 5, 4]),
        # swap first, then reverse: "old kings" -> "reyes viejos" -> backwards "viejos reyes"
        ("cats hear while old kings see", "gatos oyen mientras ven viejos reyes", [0, 1, 2, 5, 3, 4]),
        # "and" starts another main clause: no reversal
        ("dogs see and small fish hear", "perros ven y peces pequeños oyen", [0, 1, 2, 4, 3, 5]),
        # a main clause after a subordinate one is not reversed; each clause keeps its own order
        ("bears know when wolves see and boys call", "osos conocen cuando ven lobos y niños llaman",
         [0, 1, 2, 4, 3, 5, 6, 7]),
    ],
)
def test_rule_on_hand_examples(source, target, alignment):
    words, align = translate(source.split())
    assert words == target.split()
    assert align == alignment


def test_rule_accepts_any_sequence_of_known_words():
    # adjectives without a following noun stay where they are; an empty clause is fine
    assert translate(["red", "big"]) == (["rojos", "grandes"], [0, 1])
    assert translate(["because", "and"]) == (["porque", "y"], [0, 1])
    assert translate([]) == ([], [])


def test_unknown_word_is_rejected():
    with pytest.raises(ValueError, match="unknown source words"):
        translate(["unicorns", "see"])


@pytest.mark.parametrize("seed", range(5))
def test_rule_properties_on_random_sentences(seed):
    for e in sample_examples(200, 5, 60, seed=seed):
        assert len(e.target) == len(e.source)
        assert sorted(e.alignment) == list(range(len(e.source)))  # a permutation of the source positions
        assert all(e.target[j] == DICTIONARY[e.source[i]] for j, i in enumerate(e.alignment))
        # reordering is local: no word leaves its clause body (at most 7 words)
        assert max(abs(j - i) for j, i in enumerate(e.alignment)) <= 6


def test_reversed_clause_matches_a_brute_force_reading():
    rng = random.Random(3)
    for _ in range(100):
        source = random_sentence(rng.randint(5, 60), rng)
        target, _ = translate(source)
        # cut both sides at the connectors, which stay in place, and compare each clause
        cuts = [i for i, w in enumerate(source) if WORD_CLASS[w] in ("sub", "conj")]
        bounds = list(zip([-1, *cuts], [*cuts, len(source)], strict=True))
        for start, end in bounds:
            body = source[start + 1:end]
            swapped = []
            for w in body:  # naive swap: a noun goes in front of the adjectives just placed
                if WORD_CLASS[w] == "noun":
                    k = len(swapped)
                    while k > 0 and WORD_CLASS[swapped[k - 1]] == "adj":
                        k -= 1
                    swapped.insert(k, w)
                else:
                    swapped.append(w)
            expected = [DICTIONARY[w] for w in swapped]
            if start >= 0 and WORD_CLASS[source[start]] == "sub":
                expected = expected[::-1]
            assert target[start + 1:end] == expected


@pytest.mark.parametrize("length", range(5, 81))
def test_random_sentence_has_the_exact_length_and_grammar(length):
    rng = random.Random(length)
    for _ in range(20):
        words = random_sentence(length, rng)
        assert len(words) == length
        classes = [WORD_CLASS[w] for w in words]
        assert classes[0] in ("adj", "noun") and classes[-1] in ("noun", "verb")
        for i, c in enumerate(classes):
            if c == "adj":
                assert classes[i + 1] in ("adj", "noun")
            if c in ("sub", "conj"):
                assert classes[i + 1] in ("adj", "noun")
        n_clauses = 1 + sum(c in ("sub", "conj") for c in classes)
        assert classes.count("verb") == n_clauses


@pytest.mark.parametrize("length", [4, 81, 0])
def test_random_sentence_rejects_lengths_outside_5_to_60(length):
    with pytest.raises(ValueError, match="between 5 and 80"):
        random_sentence(length, random.Random(0))


def test_sampling_is_seeded_and_respects_the_length_range():
    a, b = sample_examples(50, 5, 40, seed=7), sample_examples(50, 5, 40, seed=7)
    assert a == b and a != sample_examples(50, 5, 40, seed=8)
    assert all(5 <= len(e.source) <= 40 for e in a)
    test = examples_per_length(3, 5, 60)
    assert [len(e.source) for e in test] == [n for n in range(5, 61) for _ in range(3)]


def test_length_buckets_cover_5_to_60_without_overlap():
    covered = [n for low, high in LENGTH_BUCKETS for n in range(low, high + 1)]
    assert covered == list(range(5, 61))


def test_batch_is_padded_batch_first_with_eos_and_alignment():
    examples = [make_example("dogs see red cats".split()),
                make_example("big red dogs see cats because old kings love small birds".split())]
    batch = make_batch(examples)
    assert batch.src.shape == (2, 11) and batch.tgt.shape == (2, 12) and len(batch) == 2
    assert batch.src_lengths.tolist() == [4, 11]
    assert batch.src[0, 4:].eq(SOURCE_VOCAB.pad).all() and not batch.src_mask[0, 4:].any()
    assert batch.src_mask[0, :4].all() and batch.src_mask[1].all()
    assert batch.tgt[0, 4] == TARGET_VOCAB.eos and batch.tgt[0, 5:].eq(TARGET_VOCAB.pad).all()
    assert batch.tgt[1, 11] == TARGET_VOCAB.eos
    assert batch.tgt_mask.sum(-1).tolist() == [5, 12]
    assert batch.alignment[0].tolist() == [0, 1, 3, 2] + [-1] * 8
    assert batch.alignment[1, :11].tolist() == [2, 0, 1, 3, 4, 5, 9, 10, 8, 6, 7] and batch.alignment[1, 11] == -1
    for row, e in zip(batch.tgt, examples, strict=True):
        assert TARGET_VOCAB.decode(row) == list(e.target)
    # the alignment points at the source word whose translation the target word is
    src_words = [SOURCE_VOCAB.itos[i] for i in batch.src[1].tolist()]
    tgt_words = [TARGET_VOCAB.itos[i] for i in batch.tgt[1, :11].tolist()]
    assert all(DICTIONARY[src_words[i]] == w for w, i in zip(tgt_words, batch.alignment[1, :11].tolist(), strict=True))


def test_make_batch_equals_padding_one_example_at_a_time():
    """The batch built from rows of Python ints against a per-example reference."""
    examples = sample_examples(50, 5, 60, seed=11)
    batch = make_batch(examples)
    s_len, t_len = max(len(e.source) for e in examples), max(len(e.target) for e in examples) + 1
    for b, e in enumerate(examples):
        src = torch.full((s_len,), SOURCE_VOCAB.pad)
        src[: len(e.source)] = torch.tensor(SOURCE_VOCAB.encode(e.source))
        tgt = torch.full((t_len,), TARGET_VOCAB.pad)
        tgt[: len(e.target) + 1] = torch.tensor(TARGET_VOCAB.encode(e.target) + [TARGET_VOCAB.eos])
        alignment = torch.full((t_len,), -1)
        alignment[: len(e.alignment)] = torch.tensor(e.alignment)
        assert torch.equal(batch.src[b], src) and torch.equal(batch.tgt[b], tgt)
        assert torch.equal(batch.alignment[b], alignment)
    assert batch.src.dtype == batch.tgt.dtype == batch.alignment.dtype == torch.long


def _reference_sentence(length: int, rng: random.Random) -> list[str]:
    """random_sentence as first written: the bodies still under 7 words listed afresh for every word added."""
    from attnlab.tasks.translation import _WORDS, _clause_body

    fewest = -(-(length + 1) // 8)
    n = rng.randint(fewest, max(fewest, (length + 1) // 5))
    sizes = [2] * n
    for _ in range(length - (n - 1) - 2 * n):
        sizes[rng.choice([i for i, s in enumerate(sizes) if s < 7])] += 1
    words = _clause_body(sizes[0], rng)
    for size in sizes[1:]:
        words += [rng.choice(_WORDS["sub"] + _WORDS["conj"]), *_clause_body(size, rng)]
    return words


@pytest.mark.parametrize("length", [5, 6, 13, 40, 41, 79, 80])
def test_random_sentence_draws_what_the_reference_draws(length):
    for seed in range(30):
        assert random_sentence(length, random.Random(seed)) == _reference_sentence(length, random.Random(seed))


def test_make_batch_needs_examples():
    with pytest.raises(ValueError, match="at least one example"):
        make_batch([])


def test_training_batches_depend_only_on_the_step():
    first = training_batches(16, seed=3)
    second = training_batches(16, seed=3)
    b5 = first(5)
    for step in (1, 9, 5):  # a different order of calls
        second(step)
    assert torch.equal(second(5).src, b5.src) and torch.equal(first(12).tgt, second(12).tgt)
    assert not torch.equal(training_batches(16, seed=4)(5).src, b5.src)


def test_training_batches_hold_similar_lengths_and_cover_the_range():
    next_batch = training_batches(32, 5, 40, seed=0, pool=8)
    lengths = []
    for step in range(1, 81):
        batch = next_batch(step)
        assert len(batch) == 32
        n = batch.src_lengths
        assert 5 <= n.min() and n.max() <= 40
        assert n.max() - n.min() <= 15  # cut from a sorted pool
        lengths += n.tolist()
    counts = torch.bincount(torch.tensor(lengths), minlength=41)[5:]
    mean = counts.float().mean()
    assert 0.5 * mean < counts.min() and counts.max() < 1.5 * mean  # every length, about equally often


def test_vocab_round_trip_and_errors():
    vocab = Vocab(["x", "y"], specials=("<pad>", "<bos>", "<eos>"))
    ids = vocab.encode(["x", "y", "x"])
    assert ids == [3, 4, 3]
    assert vocab.decode([1, *ids, 2, 4, 0]) == ["x", "y", "x"]  # stops at <eos>, skips <bos>
    assert vocab.decode(torch.tensor([3, 0, 4])) == ["x", "y"]
    with pytest.raises(ValueError, match="unknown words"):
        vocab.encode(["z"])
    with pytest.raises(ValueError, match="first special token"):
        Vocab(["x"], specials=("<bos>",))
    with pytest.raises(ValueError, match="unique"):
        Vocab(["x", "x"])


def test_lexicon_classes_are_disjoint():
    words = [w for cls in LEXICON.values() for w in cls]
    assert len(words) == len(set(words)) == len(WORD_CLASS)


# ----- models, training and evaluation on the task -----


def test_translation_models_share_the_encoder_and_differ_in_the_context():
    plain, search = translation_model(attention=False), translation_model(attention=True)
    assert type(plain.decoder) is Decoder and type(search.decoder) is AttentionDecoder
    assert plain.encoder.output_size == search.encoder.output_size == 128
    assert search.decoder.score.d_hidden == 64
    one_way = translation_model(attention=False, bidirectional=False, hidden_size=32)
    assert one_way.encoder.output_size == 32 and not one_way.encoder.bidirectional
    with pytest.raises(ValueError, match="only used with attention=True"):
        translation_model(attention=False, score=lambda q, k: q @ k.transpose(-2, -1))
    with pytest.raises(ValueError, match="odd"):
        translation_model(hidden_size=33)


def test_translation_loss_is_the_cross_entropy_over_real_target_words():
    torch.manual_seed(0)
    model = translation_model(hidden_size=16, embed_size=8)
    batch = make_batch(sample_examples(4, 5, 12, seed=1))
    logits = model(batch.src, batch.src_mask, batch.tgt).logits
    log_probs = torch.log_softmax(logits, -1).gather(-1, batch.tgt[..., None])[..., 0]
    expected = -(log_probs * batch.tgt_mask).sum() / batch.tgt_mask.sum()
    torch.testing.assert_close(translation_loss(model, batch), expected)


def test_label_smoothing_mixes_the_target_with_the_uniform_distribution():
    torch.manual_seed(0)
    model = translation_model(hidden_size=16, embed_size=8, attention_size=8)
    batch = make_batch(sample_examples(4, 5, 8, seed=0))
    logits = model(batch.src, batch.src_mask, batch.tgt).logits
    log_probs = torch.log_softmax(logits, -1)
    smoothing = 0.1
    per_word = -(1 - smoothing) * log_probs.gather(-1, batch.tgt[..., None])[..., 0] - smoothing * log_probs.mean(-1)
    expected = (per_word * batch.tgt_mask).sum() / batch.tgt_mask.sum()
    torch.testing.assert_close(translation_loss(model, batch, label_smoothing=smoothing), expected)
    torch.testing.assert_close(translation_loss(model, batch, label_smoothing=0.0), translation_loss(model, batch))


def test_warmup_schedules():
    inverse = warmup_inverse_sqrt(100)
    assert inverse(0) == pytest.approx(0.01) and inverse(49) == pytest.approx(0.5)
    assert inverse(99) == pytest.approx(1.0) and inverse(399) == pytest.approx(0.5)
    cosine = warmup_cosine(1100, 100)
    assert cosine(0) == pytest.approx(0.01) and cosine(99) == pytest.approx(1.0)
    assert cosine(100) == pytest.approx(1.0) and cosine(600) == pytest.approx(0.5) and cosine(1100) == pytest.approx(0.0)
    assert all(cosine(s) >= cosine(s + 1) for s in range(100, 1200))
    with pytest.raises(ValueError, match="warmup must be < steps = 100, got 100"):
        warmup_cosine(100, 100)


def test_decay_in_second_half():
    factor = decay_in_second_half(100)
    assert [factor(s) for s in (0, 25, 50)] == [1.0, 1.0, 1.0]
    assert factor(75) == pytest.approx(0.5) and factor(100) == pytest.approx(0.1)


def test_training_evaluation_and_attention_maps_run_end_to_end():
    torch.manual_seed(0)
    model = translation_model(hidden_size=16, embed_size=8, attention_size=8)
    history = train_translation(model, 3, batch_size=8, eval_every=2, desc="test")
    assert len(history.loss) == 3 and [e["step"] for e in history.evals] == [2.0, 3.0]
    assert 0.0 <= history.evals[-1]["val_accuracy"] <= 1.0
    test = examples_per_length(2, 5, 12)
    report = evaluate_translation(model, test)
    assert len(report.predictions) == len(test) and report.lengths == [len(e.source) for e in test]
    assert [r["bucket"] for r in report.by_bucket()] == ["5-10", "11-20"] and report.row((5, 10))["n"] == 12
    with pytest.raises(ValueError, match="no test sentence"):
        report.row((41, 50))
    beams = evaluate_translation(model, test, beam_size=2)
    assert len(beams.predictions) == len(test)
    maps, accuracy = attention_maps(model, test)
    assert [tuple(m.shape) for m in maps] == [(len(e.target), len(e.source)) for e in test]
    hits = sum((m.argmax(-1) == torch.tensor(e.alignment)).sum().item() for m, e in zip(maps, test, strict=True))
    assert accuracy == pytest.approx(hits / sum(len(e.target) for e in test))
    with pytest.raises(ValueError, match="no attention weights"):
        attention_maps(translation_model(attention=False, hidden_size=16, embed_size=8), test)


def test_report_by_length_by_hand():
    refs = [["a"] * n for n in (5, 6, 9, 10, 12)]
    preds = [["a"] * 5, ["b"] * 6, ["a"] * 9, ["a"] * 9 + ["b"], ["a"] * 12]
    report = TranslationReport([5, 6, 9, 10, 12], preds, refs)
    centres, word, exact = report.by_length(width=5)
    assert centres == pytest.approx([20 / 3, 11.0])  # mean lengths of the bins 5-9 and 10-14
    assert word == pytest.approx([14 / 20, 21 / 22]) and exact == pytest.approx([2 / 3, 1 / 2])
    with pytest.raises(ValueError, match="width must be > 0"):
        report.by_length(width=0)


def test_train_translation_clips_the_gradient_norm_unless_told_not_to(monkeypatch):
    import attnlab.train

    norms: list[float] = []
    clip = attnlab.train.nn.utils.clip_grad_norm_

    def recording_clip(parameters, max_norm):
        norms.append(max_norm)
        return clip(parameters, max_norm)

    monkeypatch.setattr(attnlab.train.nn.utils, "clip_grad_norm_", recording_clip)
    torch.manual_seed(0)
    model = translation_model(hidden_size=16, embed_size=8, attention_size=8)
    train_translation(model, 2, batch_size=8, eval_every=2, desc="test")
    assert norms == [1.0, 1.0]
    train_translation(model, 2, batch_size=8, eval_every=2, desc="test", clip=None)
    assert norms == [1.0, 1.0]  # no further clipping
    train_translation(model, 1, batch_size=8, eval_every=1, desc="test", clip=5.0)
    assert norms == [1.0, 1.0, 5.0]


def test_rnnenc_plateau_record_holds_each_seed_by_bucket_and_rnnencs_curve(tmp_path, monkeypatch, capsys):
    from attnlab.experiments import record, rnnenc_plateau

    for key, value in {"steps": 2, "factor": 3, "eval_every": 1, "test_per_length": 1}.items():
        monkeypatch.setitem(rnnenc_plateau.SETTINGS, key, value)
    path = tmp_path / "plateau.json"
    with pytest.raises(SystemExit, match="contradicts"):  # two toy steps learn nothing
        rnnenc_plateau.main(["--seeds", "2", "--json", str(path)])
    data = record.load(path)
    runs = data["results"]["runs"]
    assert [run["seed"] for run in runs] == [0, 1]
    for run in runs:
        assert run["models"]["RNNenc"]["steps"] == 6 and run["models"]["RNNsearch"]["steps"] == 2
        assert len(run["models"]["RNNenc"]["val_accuracy"]) == 6  # an evaluation every step
        assert "val_accuracy" not in run["models"]["RNNsearch"]
    assert runs[0]["models"]["RNNenc"] != runs[1]["models"]["RNNenc"]  # another seed, another run
    text = rnnenc_plateau.markdown(data)
    assert "| 5-10 | 11-20 | 21-30 | 31-40 | 41-50 | 51-60 |" in text
    first = rnnenc_plateau.rnnenc_curve(runs, 0)
    assert first.values == tuple(run["models"]["RNNenc"]["val_accuracy"][0] for run in runs)
    assert "| over seeds | " + first.text() in text  # the curve's table starts at step 1
    assert "Gain over the last fifth" in text and "seed 1 " in text
    assert "does not hold: RNNsearch translates at least 0.3 more" in capsys.readouterr().out


def _plateau_run(seed, enc, search, curve):
    """A hand-made run of the rnnenc-plateau record: the same accuracy in every bucket."""
    buckets = ("5-10", "11-20", "21-30", "31-40", "41-50", "51-60")

    def scores(value):
        return {"token_accuracy": dict.fromkeys(buckets, value), "exact_match": dict.fromkeys(buckets, value)}

    return {"seed": seed, "models": {"RNNenc": {**scores(enc), "val_accuracy": curve}, "RNNsearch": scores(search)}}


def test_rnnenc_plateau_conclusions_hold_only_when_every_seed_bears_them(monkeypatch):
    from attnlab.experiments import rnnenc_plateau

    monkeypatch.setitem(rnnenc_plateau.SETTINGS, "steps", 2)
    monkeypatch.setitem(rnnenc_plateau.SETTINGS, "eval_every", 1)
    rising = [0.3, 0.5, 0.6, 0.7]  # the chapter's budget ends at the second evaluation
    runs = [_plateau_run(0, 0.4, 0.9, rising), _plateau_run(1, 0.5, 0.85, rising)]
    assert all(rnnenc_plateau.conclusions({"runs": runs}).values())
    runs[1] = _plateau_run(1, 0.6, 0.85, rising)  # a gap of 0.25 on one seed
    verdicts = rnnenc_plateau.conclusions({"runs": runs})
    assert [claim for claim, holds in verdicts.items() if not holds] == [
        "RNNsearch translates at least 0.3 more of the 31-40-word sentences exactly, on every seed"
    ]
    runs[1] = _plateau_run(1, 0.5, 0.85, [0.3, 0.5, 0.55, 0.6])  # rose by 0.1 only
    assert not rnnenc_plateau.conclusions({"runs": runs})[
        "RNNenc's validation accuracy rises by more than 0.1 after the chapter's budget, on every seed"
    ]


def test_last_fifth_gain_compares_the_best_of_the_last_fifth_with_the_best_before():
    from attnlab.experiments.rnnenc_plateau import last_fifth_gain

    curve = [0.1, 0.5, 0.4, 0.45, 0.6, 0.55, 0.5, 0.52, 0.58, 0.62]
    # last fifth: 0.58, 0.62 (best 0.62); before: best 0.6
    assert last_fifth_gain(curve) == pytest.approx(0.02)
    with pytest.raises(ValueError, match="at least 2 evaluations, got 1"):
        last_fifth_gain([0.5])


def test_report_by_position_by_hand():
    report = TranslationReport(
        [5, 6, 9],
        [list("abcde"), list("abxdefq"), list("zzzzzzzzz")],
        [list("abcde"), list("abcdef"), list("abcdefghi")],
    )
    # sentences of 5 and 6 words: positions 1-5 hold both, position 6 only the second
    assert report.by_position(5, 6) == [1.0, 1.0, 0.5, 1.0, 1.0, 1.0]
    assert report.by_position(9, 9) == [0.0] * 9
    with pytest.raises(ValueError, match="no test sentence has a source length in 31..40"):
        report.by_position(31, 40)


def test_teacher_forced_by_bucket_counts_like_a_loop_over_sentences():
    from attnlab.tasks.translation import teacher_forced_by_bucket

    torch.manual_seed(0)
    model = translation_model(attention=True, hidden_size=16, embed_size=8).eval()
    examples = examples_per_length(2, 5, 25, seed=4)
    buckets = [(5, 10), (11, 20), (21, 30)]
    got = teacher_forced_by_bucket(model, examples, buckets, batch_size=7)
    hits, counts = {}, {}
    with torch.no_grad():
        for e in examples:  # one sentence at a time, no padding
            one = make_batch([e])
            tokens = model(one.src, one.src_mask, one.tgt).tokens[0, : len(e.target)]
            right = (tokens == one.tgt[0, : len(e.target)]).sum().item()
            key = next(f"{lo}-{hi}" for lo, hi in buckets if lo <= len(e.source) <= hi)
            hits[key] = hits.get(key, 0) + right
            counts[key] = counts.get(key, 0) + len(e.target)
    assert list(got) == ["5-10", "11-20", "21-30"]  # 21-25 only: the bucket holds examples
    for key, value in got.items():
        assert value == pytest.approx(hits[key] / counts[key], abs=1e-12)
