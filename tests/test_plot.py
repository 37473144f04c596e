"""The attention heat map of attnlab.plot: the weights as drawn, a colour bar, and tick labels that do not collide."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from attnlab.plot import heatmap  # noqa: E402


def test_heatmap_draws_the_weights_with_a_colour_bar():
    weights = torch.softmax(torch.randn(3, 5, generator=torch.Generator().manual_seed(0)), dim=-1)
    ax = heatmap(weights, x_labels=list("abcde"), y_labels=list("xyz"))
    assert np.allclose(ax.images[0].get_array(), weights.numpy())
    assert [t.get_text() for t in ax.get_xticklabels()] == list("abcde")
    assert ax.figure.axes[-1].get_ylabel() == "attention weight"  # the colour bar says what colour means
    plt.close(ax.figure)
    with pytest.raises(ValueError, match=r"shape \(Tq, Tk\), got \(5,\)"):
        heatmap(np.ones(5))


def test_heatmap_turns_its_labels_upright_only_where_they_fit():
    short = heatmap(np.eye(4), x_labels=["a", "b", "c", "d"])
    assert {t.get_rotation() for t in short.get_xticklabels()} == {0}
    # eight long words under a narrow axis would collide upright
    _, ax = plt.subplots(1, 3, figsize=(9, 3))
    words = ["cats", "because", "old", "dogs", "sleep", "whenever", "tired", "mice"]
    long = heatmap(np.eye(8), x_labels=words, ax=ax[0])
    assert {t.get_rotation() for t in long.get_xticklabels()} == {90}
    plt.close("all")
