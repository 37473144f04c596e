"""Chapter 8's explorable heads (attnlab.explorable.transformer_heads): the maps of every place, layer and head equal
the model's own, computed one sentence at a time, and every menu moves the drawn heatmap in headless Chromium."""

import pytest
import torch

from attnlab import explorable
from attnlab.explorable.heads import PLACES, labels
from attnlab.tasks.translation import (
    SOURCE_VOCAB,
    TARGET_VOCAB,
    make_batch,
    make_example,
)
from attnlab.train import seed_everything
from attnlab.transformer import Transformer, causal_mask
from tests.browser import (
    after,
    check_local_and_ready,
    choose,
    explorable_page,
    pick,
    rows_of,
    signal,
)

SENTENCES = ["big red dogs see cats because old kings love small birds",
             "cats see dogs and dogs see cats",  # words that occur twice
             "young wolves follow horses"]


@pytest.fixture(scope="module")
def model() -> Transformer:
    seed_everything(0)
    return Transformer(len(SOURCE_VOCAB), len(TARGET_VOCAB), d_model=16, n_heads=2, n_layers=2, d_ff=32, pad_id=TARGET_VOCAB.pad,
                       bos_id=TARGET_VOCAB.bos, eos_id=TARGET_VOCAB.eos).eval()


@pytest.fixture(scope="module")
def examples():
    return [make_example(s.split()) for s in SENTENCES]


@pytest.fixture(scope="module")
def chart(model, examples):
    return explorable.transformer_heads(model, examples)


def expected(model, example, place: str, layer: int, head: int) -> torch.Tensor:
    """The map of one sentence, alone in its batch: the encoder's kept weights, the cross-attention the model returns,
    and the decoder's self-attention from its layers run one after the other."""
    batch = make_batch([example])
    with torch.no_grad():
        encoded = model.encode(batch.src, batch.src_mask)
        if place == PLACES[0]:
            return model.encoder.last_weights[layer][0, head]
        if place == PLACES[2]:
            return model(batch.src, batch.src_mask, batch.tgt).cross_weights[layer][0, head]
        previous = torch.cat([torch.full((1, 1), model.decoder.bos_id), batch.tgt[:, :-1]], 1)
        h = model.decoder.embed(previous)
        for index, decoder_layer in enumerate(model.decoder.layers):
            h, self_weights, _ = decoder_layer(h, encoded.states, tgt_mask=causal_mask(previous.shape[1]),
                                               memory_key_padding_mask=encoded.mask)
            if index == layer:
                return self_weights[0, head]
    raise AssertionError("no such layer")


def matrix(cells: list[dict]) -> list[list[float]]:
    """The drawn cells (query index qi, key index ki, weight) as a matrix."""
    rows = 1 + max(c["qi"] for c in cells)
    keys = 1 + max(c["ki"] for c in cells)
    out = [[None] * keys for _ in range(rows)]
    for c in cells:
        out[c["qi"]][c["ki"]] = c["weight"]
    return out


def test_labels_name_every_word_once():
    assert labels(["cats", "see", "dogs", "and", "dogs"]) == ["cats", "see", "dogs (3)", "and", "dogs (5)"]


@pytest.mark.parametrize(("sentence", "place", "layer", "head"), [(0, PLACES[0], 1, 0), (1, PLACES[1], 0, 1),
                                                                  (2, PLACES[2], 1, 1), (1, PLACES[2], 0, 0)])
def test_data_are_the_models_weights(chart, model, examples, sentence, place, layer, head):
    (row,) = pick(rows_of(chart, "weights"), sentence=sentence, place=place, layer=layer, head=head)
    example = examples[sentence]
    want = expected(model, example, place, layer, head)
    assert torch.tensor(row["weight"]).shape == want.shape
    assert (torch.tensor(row["weight"]) - want).abs().max() < 1e-6
    source = labels(example.source)
    decoder_queries = labels([*example.target, "<eos>"])
    axes = {PLACES[0]: (source, source), PLACES[1]: (decoder_queries, labels(["<bos>", *example.target])),
            PLACES[2]: (decoder_queries, source)}
    assert (row["query"], row["key"]) == axes[place]


def test_the_causal_mask_shows(chart):
    for row in pick(rows_of(chart, "weights"), place=PLACES[1]):
        weights = torch.tensor(row["weight"])
        assert torch.equal(weights.triu(1), torch.zeros_like(weights))
        assert torch.allclose(weights.sum(-1), torch.ones(len(weights)), atol=1e-5)


def test_starts_at_the_shown_head(model, examples):
    model.decoder.shown_head = (1, 1)
    try:
        params = {p["name"]: p["value"] for p in explorable.transformer_heads(model, examples[:1]).to_dict()["params"]}
    finally:
        model.decoder.shown_head = None
    assert params == {"place": "cross-attention", "layer": 1, "head": 1, "sentence": 0}


def test_every_control_has_a_visible_label_and_the_page_is_small(chart):
    for param in chart.to_dict()["params"]:
        assert param["bind"]["name"].strip(), param
    assert len(explorable.html(chart, "transformer-heads", "d").data) < 300_000


def test_the_model_is_left_as_it_was(model, examples):
    model.train()
    explorable.transformer_heads(model, examples[:1])
    assert model.training
    model.eval()


# ---- in the browser -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def page(chart):
    with explorable_page({"transformer-heads": chart}) as opened:
        yield opened


def test_page_is_local_and_ready(page):
    check_local_and_ready(page, charts=1)


def test_every_menu_moves_the_heatmap(page, model, examples):
    tab = page[0]
    names = ("place", "layer", "head", "sentence")
    assert [signal(tab, "transformer-heads", n) for n in names] == [PLACES[2], 0, 0, 0]
    for action, setting in [(choose(tab, "transformer-heads", "attention", PLACES[0]), (PLACES[0], 0, 0, 0)),
                            (choose(tab, "transformer-heads", "layer", "1"), (PLACES[0], 1, 0, 0)),
                            (choose(tab, "transformer-heads", "head", "1"), (PLACES[0], 1, 1, 0)),
                            (choose(tab, "transformer-heads", "sentence", "1"), (PLACES[0], 1, 1, 1)),
                            (choose(tab, "transformer-heads", "attention", PLACES[1]), (PLACES[1], 1, 1, 1))]:
        drawn = after(tab, action, "transformer-heads", "weights_marks")
        assert [signal(tab, "transformer-heads", n) for n in names] == list(setting)
        place, layer, head, sentence = setting
        want = expected(model, examples[sentence], place, layer, head)
        got = torch.tensor(matrix(drawn))
        assert got.shape == want.shape and (got - want).abs().max() < 1e-6
        queries = {c["qi"]: c["query"] for c in drawn}
        assert [queries[i] for i in range(len(queries))] == (
            labels(examples[sentence].source) if place == PLACES[0] else labels([*examples[sentence].target, "<eos>"]))
