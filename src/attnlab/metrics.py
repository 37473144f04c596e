"""How good is a translation: token accuracy, exact match, BLEU, and how well
attention finds the aligned word; and how sure a mean over test cases is
(``mean_interval``).

Predictions and references are sequences of words (or ids), one per sentence, without
``<eos>`` or padding.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from attnlab._validate import check_ndim, check_shape


def _check_pairs(predictions: Sequence, references: Sequence) -> None:
    if len(predictions) != len(references):
        raise ValueError(
            f"need one prediction per reference, got {len(predictions)} predictions"
            f" and {len(references)} references"
        )
    if not references:
        raise ValueError("need at least one reference")


def token_matches(prediction: Sequence, reference: Sequence) -> int:
    """Number of reference positions ``j`` where the prediction has the same word at
    position ``j``."""
    return sum(p == r for p, r in zip(prediction, reference, strict=False))


def token_accuracy(
    predictions: Sequence[Sequence], references: Sequence[Sequence]
) -> float:
    """Share of reference words predicted at their position (missing words count as
    wrong, extra words are ignored).

    Pooled over all words of all sentences, so long sentences weigh more than short
    ones.
    """
    _check_pairs(predictions, references)
    total = sum(len(r) for r in references)
    if total == 0:
        raise ValueError("the references contain no words")
    return (
        sum(
            token_matches(p, r) for p, r in zip(predictions, references, strict=True)
        )
        / total
    )


def exact_match(
    predictions: Sequence[Sequence], references: Sequence[Sequence]
) -> float:
    """Share of sentences predicted exactly (same words, same length)."""
    _check_pairs(predictions, references)
    return sum(
        list(p) == list(r) for p, r in zip(predictions, references, strict=True)
    ) / len(references)


def bleu(
    predictions: Sequence[Sequence[str]], references: Sequence[Sequence[str]]
) -> float:
    """Corpus BLEU (0-100) of Papineni et al. (2002), computed by sacreBLEU on the
    given words.

    The words are joined by spaces and not tokenized again (``tokenize="none"``), so
    every word counts as one token; one reference per sentence. BLEU needs 4-grams: a
    corpus of sentences shorter than 4 words scores 0, even when every translation is
    right.
    """
    # imported here: the course computes BLEU in few chapters, and sacreBLEU costs
    # every chapter half a second at import
    import sacrebleu

    _check_pairs(predictions, references)
    hyps = [" ".join(map(str, p)) for p in predictions]
    refs = [" ".join(map(str, r)) for r in references]
    return sacrebleu.corpus_bleu(hyps, [refs], tokenize="none").score


def alignment_accuracy(weights: torch.Tensor, alignment: torch.Tensor) -> float:
    """Share of target words whose most-attended source position is the true one.

    weights ``(B, T, S)`` attention of each target position over the source;
    alignment ``(B, T)`` the true source position of each target word, ``-1`` where
    there is none (``<eos>``, padding), which is not counted.
    """
    check_ndim("weights", weights, "(batch, T, S)", ndim=3)
    check_shape(
        "alignment", alignment, tuple(weights.shape[:2]), "(batch, T) like weights"
    )
    counted = alignment >= 0
    if not counted.any():
        raise ValueError(
            "alignment has no target word with a true source position (all -1)"
        )
    if alignment.max() >= weights.shape[-1]:
        raise ValueError(
            f"alignment refers to source position {int(alignment.max())} but weights"
            f" only has S = {weights.shape[-1]} positions"
        )
    hits = (weights.argmax(-1) == alignment) & counted
    return hits.sum().item() / counted.sum().item()


def in_bucket(length: int, bucket: tuple[int, int]) -> bool:
    """True if ``bucket[0] <= length <= bucket[1]``."""
    return bucket[0] <= length <= bucket[1]


def scores_by_bucket(
    lengths: Sequence[int],
    predictions: Sequence[Sequence[str]],
    references: Sequence[Sequence[str]],
    buckets: Sequence[tuple[int, int]],
) -> list[dict[str, float | str]]:
    """Token accuracy, exact match and BLEU of the sentences whose source length
    falls in each bucket.

    Returns one row per non-empty bucket: ``{"bucket": "31-40", "low": 31, "high":
    40, "n": ..., "token_accuracy": ..., "exact_match": ..., "bleu": ...}``
    (accuracies as fractions, BLEU 0-100).
    """
    _check_pairs(predictions, references)
    if len(lengths) != len(references):
        raise ValueError(
            f"need one length per sentence, got {len(lengths)} lengths and"
            f" {len(references)} sentences"
        )
    rows = []
    for bucket in buckets:
        chosen = [i for i, n in enumerate(lengths) if in_bucket(n, bucket)]
        if not chosen:
            continue
        preds, refs = (
            [predictions[i] for i in chosen],
            [references[i] for i in chosen],
        )
        rows.append(
            {
                "bucket": f"{bucket[0]}-{bucket[1]}",
                "low": bucket[0],
                "high": bucket[1],
                "n": len(chosen),
                "token_accuracy": token_accuracy(preds, refs),
                "exact_match": exact_match(preds, refs),
                "bleu": bleu(preds, refs),
            }
        )
    return rows


def mean_interval(
    values: Sequence[float] | np.ndarray | torch.Tensor, confidence: float = 0.95
) -> tuple[float, float, float]:
    """Mean of ``values`` ``(n,)`` and a Student-t confidence interval for it:
    ``(mean, low, high)``.

    The values are independent measurements, one per test case (an instance's
    optimality gap, say), ``n >= 2``. The interval is ``mean -+ t * s / sqrt(n)``,
    with ``s`` the sample standard deviation (``ddof=1``) and ``t`` the ``(1 +
    confidence) / 2`` quantile of Student's t distribution with ``n - 1`` degrees of
    freedom: it covers the true mean with probability ``confidence`` when the values
    are normal, and approximately so for any distribution once ``n`` is large. Equal
    values give an interval of width 0.
    """
    if not 0 < confidence < 1:
        raise ValueError(
            f"confidence must lie strictly between 0 and 1, got {confidence}"
        )
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or len(array) < 2:
        raise ValueError(
            f"values must have shape (n,) with n >= 2, got shape {array.shape}"
        )
    if not np.isfinite(array).all():
        raise ValueError("values must be finite (no NaN or infinity)")
    from scipy import stats  # imported here: it takes 0.6 s to import

    mean = float(array.mean())
    half = float(
        stats.t.ppf((1 + confidence) / 2, df=len(array) - 1)
        * array.std(ddof=1)
        / np.sqrt(len(array))
    )
    return mean, mean - half, mean + half
