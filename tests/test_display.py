import sys

from attnlab.display import glue, show_source
from attnlab.memory import SoftDict


def test_show_source_returns_the_code_of_the_object():
    code = show_source(SoftDict.lookup)
    assert "def lookup" in code.data and code.language == "python"


def test_glue_records_a_hidden_output(monkeypatch):
    shown = []
    monkeypatch.setattr("myst_nb.ext.glue.ipy_display", lambda *args, **kwargs: shown.append((args, kwargs)))
    glue("answer", 0.5)
    assert shown, "glue displayed nothing"
    bundle = shown[0][0][0]
    assert all(key.startswith("application/papermill.record/") for key in bundle)
    assert shown[0][1]["metadata"]["scrapbook"]["name"] == "answer"


def test_glue_without_myst_nb_does_nothing(monkeypatch):
    monkeypatch.setitem(sys.modules, "myst_nb", None)
    assert glue("answer", 0.5) is None


def test_glue_pastes_numpy_and_torch_numbers_as_plain_numbers(monkeypatch):
    import numpy as np
    import torch

    shown = []
    monkeypatch.setattr("myst_nb.ext.glue.ipy_display", lambda *args, **kwargs: shown.append(args[0]))
    glue("a", np.float64(0.25))
    glue("b", torch.tensor(0.5))
    assert [bundle["application/papermill.record/text/plain"] for bundle in shown] == ["0.25", "0.5"]
