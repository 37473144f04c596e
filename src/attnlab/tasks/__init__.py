"""Synthetic data sets with their ground truth (alignments, copies, hulls, optimal
tours).

One module per family of tasks; the names the chapters use are re-exported here.
"""

from attnlab.tasks.copy import (  # noqa: F401
    bits_per_sequence,
    copy_batch,
    copy_loss,
    copy_sampler,
    evaluate_lengths,
    train_copy,
)
from attnlab.tasks.geometry import *  # noqa: F403 (the names in geometry.__all__)
from attnlab.tasks.retrieval import *  # noqa: F403 (retrieval.__all__)
from attnlab.tasks.reversal import *  # noqa: F403 (the names in reversal.__all__)
from attnlab.tasks.translation import *  # noqa: F403 (translation.__all__)
