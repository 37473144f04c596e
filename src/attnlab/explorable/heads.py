"""Explorable heads of a trained Transformer: every layer and head of its three
places of attention, on a few sentences (chapter 8)."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import torch

from attnlab.tasks.translation import BOS, EOS, Example, make_batch
from attnlab.transformer import Transformer

#: The three places of attention, as the chapter names them.
PLACES = (
    "encoder self-attention",
    "masked decoder self-attention",
    "cross-attention",
)
#: What the rows (queries) and columns (keys) of each place's map are.
READING = {
    "encoder self-attention": "rows and columns: the source words",
    "masked decoder self-attention": "rows: the word each target position writes;"
    " columns: the word each position reads (the one written before it)",
    "cross-attention": "rows: the word each target position writes;"
    " columns: the source words",
}


def labels(words: Sequence[str]) -> list[str]:
    """Axis labels: the words, a word that occurs twice followed by its position
    (from 1), so that every row and column has a name of its own."""
    return [
        word if list(words).count(word) == 1 else f"{word} ({i + 1})"
        for i, word in enumerate(words)
    ]


def transformer_weights(
    model: Transformer, examples: Sequence[Example]
) -> dict[str, list[torch.Tensor]]:
    """The attention weights of one teacher-forced pass of ``model`` over
    ``examples`` (their reference translations fed in, as in training).

    Returns, for each place of :data:`PLACES`, one tensor per layer: encoder
    self-attention ``(B, h, S, S)``, masked decoder self-attention ``(B, h, T, T)``
    and cross-attention ``(B, h, T, S)``, with ``T`` the longest target plus
    ``<eos>``. The decoder's self-attention weights are what each
    :class:`~attnlab.transformer.DecoderLayer` returns, read by a forward hook.
    """
    batch = make_batch(examples)
    decoder_self: list[torch.Tensor] = []
    hooks = [
        layer.register_forward_hook(
            lambda _layer, _inputs, out: decoder_self.append(out[1].detach())
        )
        for layer in model.decoder.layers
    ]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            result = model(batch.src, batch.src_mask, batch.tgt)
    finally:
        for hook in hooks:
            hook.remove()
        model.train(was_training)
    return {
        PLACES[0]: list(model.encoder.last_weights),
        PLACES[1]: decoder_self,
        PLACES[2]: [w.detach() for w in result.cross_weights],
    }


def transformer_heads(
    model: Transformer,
    examples: Sequence[Example],
    start: tuple[str, int, int] | None = None,
) -> alt.VConcatChart:
    """Chapter 8: the attention map of every place, layer and head of ``model`` on
    each of ``examples``, chosen from menus; a heatmap of query word x key word,
    colour = weight, hover for both words and the weight.

    The weights are those of :func:`transformer_weights` (one teacher-forced pass),
    each example's ``(queries, keys)`` block without padding, rounded to 7 decimals.
    Decoder positions are named by the word they write (``<eos>`` last); the keys
    of the decoder's self-attention by the word they read (``<bos>`` first).
    ``start = (place, layer, head)`` is shown first (default: the cross-attention
    head of ``model.decoder.shown_head``, else layer 0, head 0); layers and heads
    count from 0.
    """
    weights = transformer_weights(model, examples)
    n_layers, n_heads = len(model.decoder.layers), model.decoder.n_heads
    rows = []
    for i, example in enumerate(examples):
        source = labels(example.source)
        reads = labels([BOS, *example.target])
        writes = labels([*example.target, EOS])
        names = {
            PLACES[0]: (source, source),
            PLACES[1]: (writes, reads),
            PLACES[2]: (writes, source),
        }
        for place, (queries, keys) in names.items():
            for layer in range(n_layers):
                block = weights[place][layer][i, :, : len(queries), : len(keys)]
                for head in range(n_heads):
                    rows.append(
                        {
                            "sentence": i,
                            "place": place,
                            "layer": layer,
                            "head": head,
                            "query": queries,
                            "key": keys,
                            "weight": [
                                [round(w, 7) for w in row]
                                for row in block[head].tolist()
                            ],
                        }
                    )
    if start is None:
        layer, head = model.decoder.shown_head or (0, 0)
        start = (PLACES[2], layer, head)
    place_menu = alt.param(
        name="place",
        value=start[0],
        bind=alt.binding_select(options=list(PLACES), name="attention "),
    )
    layer_menu = alt.param(
        name="layer",
        value=start[1],
        bind=alt.binding_select(options=list(range(n_layers)), name="layer "),
    )
    head_menu = alt.param(
        name="head",
        value=start[2],
        bind=alt.binding_select(options=list(range(n_heads)), name="head "),
    )
    sentence_menu = alt.param(
        name="sentence",
        value=0,
        bind=alt.binding_select(
            options=list(range(len(examples))),
            labels=[" ".join(e.source) for e in examples],
            name="sentence ",
        ),
    )
    heatmap = (
        alt.Chart(alt.Data(values=rows), name="weights")
        .mark_rect()
        .encode(
            x=alt.X(
                "key:N",
                sort=alt.EncodingSortField(field="ki", op="min"),
                title="key (the word attended to)",
                axis=alt.Axis(labelAngle=-45),
            ),
            y=alt.Y(
                "query:N",
                sort=alt.EncodingSortField(field="qi", op="min"),
                title="query (the word attending)",
            ),
            color=alt.Color(
                "weight:Q",
                scale=alt.Scale(scheme="viridis", domain=[0, 1]),
                title="weight",
            ),
            tooltip=[
                alt.Tooltip("query:N", title="query"),
                alt.Tooltip("key:N", title="key"),
                alt.Tooltip("weight:Q", title="weight", format=".3f"),
            ],
        )
        .transform_filter(
            "datum.sentence == sentence && datum.place == place"
            " && datum.layer == layer && datum.head == head"
        )
        # one row per query, then one per (query, key)
        .transform_calculate(qi="sequence(length(datum.query))")
        .transform_flatten(["weight", "query", "qi"])
        .transform_calculate(ki="sequence(length(datum.key))")
        .transform_flatten(["weight", "key", "ki"])
    )
    reading = (
        alt.Chart(
            alt.Data(values=[{"place": p, "text": t} for p, t in READING.items()]),
            name="reading",
        )
        .mark_text(align="left", baseline="top", lineBreak="; ")
        .encode(x=alt.value(0), y=alt.value(0), text="text:N")
        .transform_filter("datum.place == place")
        .properties(width=380, height=30, view=alt.ViewBackground(stroke=None))
    )
    return alt.vconcat(
        reading, heatmap.properties(width=380, height=380)
    ).add_params(place_menu, layer_menu, head_menu, sentence_menu)
