"""Explorable decoding: the next-word probabilities of an encoder-decoder without
attention at every output step, under teacher forcing and greedy inference
(chapter 3)."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import torch

from attnlab.explorable.controls import example_names, slider, slider_ranges
from attnlab.explorable.page import OKABE_ITO
from attnlab.seq2seq import Seq2Seq
from attnlab.tasks.translation import TARGET_VOCAB, Example, make_batch

DIGITS = 7  # probabilities are rounded to 7 decimals
# the menu's options: what the decoder reads as its previous word
READS = {
    "forced": "the true previous words (teacher forcing)",
    "greedy": "its own previous words (greedy)",
}
RIGHT, OTHER = "the reference word", "another word"


@torch.no_grad()
def step_probabilities(
    model: Seq2Seq, example: Example, reads: str
) -> tuple[torch.Tensor, list[str]]:
    """The probabilities of the next word at every output step ``(T, V)`` (from the
    decoder's :meth:`~attnlab.seq2seq.DecoderBase.choose`, so padding and ``<bos>``
    get 0), and the reference word of each step (``<eos>`` after the last word,
    ``""`` past it), when the decoder reads the true previous words
    (``reads="forced"``) or its own greedy choices (``"greedy"``)."""
    batch = make_batch([example])
    model.eval()
    if reads == "forced":
        result = model(batch.src, batch.src_mask, batch.tgt)
    elif reads == "greedy":
        result = model.greedy(batch.src, batch.src_mask)
    else:
        raise ValueError(f"reads must be one of {sorted(READS)}, got {reads!r}")
    probabilities = model.decoder.choose(result.logits[0]).exp()
    reference = [*example.target, TARGET_VOCAB.itos[TARGET_VOCAB.eos]]
    reference += [""] * (len(probabilities) - len(reference))
    return probabilities, reference[: len(probabilities)]


def decoder_steps(
    model: Seq2Seq,
    examples: Sequence[Example],
    names: Sequence[str] | None = None,
    top: int = 5,
) -> alt.HConcatChart:
    """Chapter 3: the ``top`` most likely next words at one output step (a slider),
    for a sentence (a menu) read either with teacher forcing or greedily (a menu),
    beside the probability of the reference word and of the chosen word at every
    step.

    ``model`` is an encoder-decoder on the translation task; ``examples`` are
    translated one at a time (:func:`step_probabilities`); ``names`` label them in
    the menu (default ``"<S> words"``). The chosen word is the most likely one, the
    top bar.
    """
    names = example_names(examples, names)
    top_rows, curve_rows = [], []
    steps = {}  # output steps of each sentence and reading, for the slider's range
    for name, example in zip(names, examples, strict=True):
        for reads, label in READS.items():
            probabilities, reference = step_probabilities(model, example, reads)
            steps[f"{name}|{label}"] = len(probabilities)
            values, words = probabilities.topk(top, dim=-1)
            for t, (p, w, right) in enumerate(
                zip(values.tolist(), words.tolist(), reference, strict=True)
            ):
                words_t = [TARGET_VOCAB.itos[i] for i in w]
                top_rows.append(
                    {
                        "sentence": name,
                        "reads": label,
                        "step": t + 1,
                        "last": len(probabilities),
                        "word": words_t,
                        "p": [round(v, DIGITS) for v in p],
                        "kind": [RIGHT if v == right else OTHER for v in words_t],
                    }
                )
                p_right = (
                    probabilities[t, TARGET_VOCAB.stoi[right]].item()
                    if right
                    else None
                )
                at = {"sentence": name, "reads": label, "step": t + 1}
                curve_rows.append(
                    {**at, "series": "chosen word", "p": round(p[0], DIGITS)}
                )
                if right:  # past the reference's <eos> there is no reference word
                    curve_rows.append(
                        {
                            **at,
                            "series": "reference word",
                            "p": round(p_right, DIGITS),
                        }
                    )
    sentence = alt.param(
        name="sentence",
        value=names[0],
        bind=alt.binding_select(options=names, name="sentence "),
    )
    reads = alt.param(
        name="reads",
        value=READS["forced"],
        bind=alt.binding_select(
            options=list(READS.values()), name="the decoder reads "
        ),
    )
    step = slider("step", "output step", list(range(1, max(steps.values()) + 1)), 1)
    this_run = "datum.sentence == sentence && datum.reads == reads"
    colour = alt.Scale(domain=[RIGHT, OTHER], range=[OKABE_ITO[2], "grey"])
    probability = alt.Scale(domain=[0, 1])
    bars = (
        alt.Chart(
            alt.Data(values=top_rows),
            name="top_words",
            # two lines, so that the chart can narrow to a phone's width
            title=[f"the {top} most likely next words", "(the top one is chosen)"],
        )
        .transform_filter(f"{this_run} && datum.step == min(step, datum.last)")
        .transform_flatten(["word", "p", "kind"])
        .mark_bar()
        .encode(
            x=alt.X("p:Q", scale=probability, title="probability"),
            y=alt.Y("word:N", sort="-x", title="next word"),
            color=alt.Color("kind:N", scale=colour, title=None),
            tooltip=["word:N", alt.Tooltip("p:Q", format=".3f")],
        )
        .properties(width=220, height=22 * top)
    )
    series = alt.Scale(
        domain=["reference word", "chosen word"], range=[OKABE_ITO[2], OKABE_ITO[0]]
    )
    curves = (
        alt.Chart(alt.Data(values=curve_rows))
        .transform_filter(this_run)
        .mark_line(point=True)
        .encode(
            x=alt.X("step:Q", title="output step"),
            y=alt.Y("p:Q", scale=probability, title="probability"),
            color=alt.Color("series:N", scale=series, title="probability of the"),
            tooltip=["step:Q", "series:N", alt.Tooltip("p:Q", format=".3f")],
        )
    )
    now = (
        alt.Chart(alt.Data(values=[{}]))
        .transform_calculate(now="step")
        .mark_rule(color="black", strokeDash=[4, 3], clip=True)
        .encode(x=alt.X("now:Q", title="output step"))
    )
    over_steps = alt.layer(
        curves, now, title="at every step of the sentence"
    ).properties(width=320, height=22 * top)
    chart = (
        alt.hconcat(bars, over_steps)
        .add_params(sentence, reads, step)
        .resolve_scale(color="independent")
    )
    return slider_ranges(chart, "step", ["sentence", "reads"], steps)
