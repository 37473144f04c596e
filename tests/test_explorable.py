"""The explorable figures (attnlab.explorable): local scripts only, data equal to attnlab's, and controls that
move the drawn chart in headless Chromium, without building the book."""

import re
import subprocess
import sys

import altair as alt
import pytest
import torch

from attnlab import explorable
from attnlab.attention import attend, cosine_score, dot_score, scaled_dot_score
from attnlab.memory import SoftDict
from attnlab.ntm import address
from tests.browser import (
    VENDOR,
    after,
    check_local_and_ready,
    choose,
    explorable_page,
    pick,
    rows_of,
    signal,
    slide,
)
from tests.browser import drawn as drawn_now

CITIES = ["Lima", "Nairobi", "Paris", "Tokyo"]
COUNTRIES = ["France", "Japan", "Kenya", "Peru"]
SCORES = {"dot": dot_score, "scaled dot": scaled_dot_score, "cosine": cosine_score}
KERNELS = {"stay": (0.0, 1.0, 0.0), "one row on": (0.0, 0.0, 1.0), "blur": (0.25, 0.5, 0.25)}


@pytest.fixture(scope="module")
def memory() -> tuple[SoftDict, torch.Tensor]:
    keys = torch.linalg.qr(torch.randn(16, 4, generator=torch.Generator().manual_seed(0))).Q.T  # (4, 16)
    values = torch.tensor([[float(CITIES.index(c))] for c in ["Paris", "Tokyo", "Nairobi", "Lima"]])
    return SoftDict(keys, values), keys


@pytest.fixture(scope="module")
def charts(memory):
    soft, keys = memory
    plane_keys = torch.tensor([[1.0, 0.0], [2.0, 2.0], [0.0, 0.0], [-1.0, 0.2]])
    gen = torch.Generator().manual_seed(1)
    ntm_memory, w_prev = torch.randn(8, 5, generator=gen), torch.softmax(torch.randn(8, generator=gen), -1)
    return {
        "soft": explorable.soft_dictionary(soft, keys[1], keys[3], COUNTRIES, CITIES, "Peru's key"),
        "scores": explorable.score_menu(SCORES, plane_keys, list("ABCD")),
        "ntm": explorable.ntm_addressing(ntm_memory, ntm_memory[2], w_prev, [1.0, 5.0, 20.0],
                                         [0.0, 0.5, 1.0], KERNELS, [1.0, 2.0, 5.0]),
        "inputs": (plane_keys, ntm_memory, w_prev),
    }


def soft_expected(memory, mix: float, log_tau: float) -> tuple[list[float], float]:
    soft, keys = memory
    value, weights = soft.lookup((1 - mix) * keys[1] + mix * keys[3], temperature=10.0**log_tau)
    return weights.tolist(), value.item()


def score_expected(plane_keys, score: str, angle: float, length: float) -> list[float]:
    a = torch.deg2rad(torch.tensor(angle))
    query = length * torch.stack([torch.cos(a), torch.sin(a)])[None]
    return attend(query, plane_keys, plane_keys, score=SCORES[score])[1][0].tolist()


def ntm_expected(inputs, beta: float, g: float, kernel: str, gamma: float) -> list[float]:
    _, ntm_memory, w_prev = inputs
    return address(ntm_memory[None], w_prev[None], ntm_memory[2][None], torch.tensor([beta]), torch.tensor([g]),
                   torch.tensor([KERNELS[kernel]]), torch.tensor([gamma]))[0].tolist()


def test_vendored_versions_are_those_altair_expects():
    assert explorable.VENDORED["vega-lite"] == alt.VEGALITE_VERSION
    assert explorable.VENDORED["vega"].split(".")[0] == alt.VEGA_VERSION.split(".")[0]
    assert explorable.VENDORED["vega-embed"].split(".")[0] == alt.VEGAEMBED_VERSION.split(".")[0]
    for package, version in explorable.VENDORED.items():
        assert (VENDOR / f"{package}-{version}.min.js").is_file(), f"run scripts/vendor_vega.py: {package}"


def test_html_loads_only_local_scripts(charts):
    page = explorable.html(charts["soft"], "soft-lookup", "Bar chart of the weights.").data
    sources = re.findall(r'<script[^>]*\bsrc="([^"]+)"', page)
    assert sources == [f"../_static/vega/{p}-{v}.min.js" for p, v in explorable.VENDORED.items()]
    assert not re.search(r"https?://(?!vega\.github\.io/schema/)", page), "a URL other than the schema's name"
    assert 'aria-describedby="soft-lookup-description"' in page and "Bar chart of the weights." in page
    with pytest.raises(ValueError, match="name"):
        explorable.html(charts["soft"], "no spaces", "x")


def test_show_is_html_only_for_the_static_book(charts, monkeypatch):
    monkeypatch.setenv("ATTNLAB_PROGRESS", "lines")
    assert "vegaEmbed" in explorable.show(charts["soft"], "soft-lookup", "d").data
    monkeypatch.delenv("ATTNLAB_PROGRESS")
    shown = explorable.show(charts["soft"], "soft-lookup", "d")
    assert isinstance(shown, alt.TopLevelMixin) and shown.to_dict()["description"] == "d"


def test_every_control_has_a_visible_label(charts):
    for name in ("soft", "scores", "ntm"):
        for param in charts[name].to_dict()["params"]:
            assert param["bind"]["name"].strip(), param


@pytest.mark.parametrize(("mix", "log_tau"), [(0.5, -0.5), (0.85, -1.75), (0.0, 1.0)])
def test_soft_dictionary_data_are_the_lookup(charts, memory, mix, log_tau):
    weights, value = soft_expected(memory, mix, log_tau)
    drawn = pick(rows_of(charts["soft"], "weights"), mix=mix, log_tau=log_tau)
    assert [r["key"] for r in drawn] == COUNTRIES
    assert [r["weight"] for r in drawn] == pytest.approx(weights, abs=1e-6)
    assert pick(rows_of(charts["soft"], "value"), mix=mix, log_tau=log_tau)[0]["value"] == pytest.approx(value, abs=1e-6)


@pytest.mark.parametrize(("score", "angle", "length"), [("dot", 0.0, 1.0), ("cosine", 105.0, 4.0),
                                                        ("scaled dot", 330.0, 0.5)])
def test_score_menu_data_are_attend(charts, score, angle, length):
    drawn = pick(rows_of(charts["scores"], "weights"), score=score, angle=angle, length=length)
    assert [r["weight"] for r in drawn] == pytest.approx(score_expected(charts["inputs"][0], score, angle, length),
                                                         abs=1e-6)


@pytest.mark.parametrize("setting", [(5.0, 0.5, "blur", 2.0), (20.0, 0.0, "one row on", 5.0)])
def test_ntm_data_are_the_addressing_pipeline(charts, setting):
    beta, g, kernel, gamma = setting
    (drawn,) = pick(rows_of(charts["ntm"], "step4"), beta=beta, g=g, shift=kernel, gamma=gamma)
    assert drawn["row"] == list(range(8))
    assert drawn["weight"] == pytest.approx(ntm_expected(charts["inputs"], *setting), abs=1e-6)


# ---- in the browser -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def page(charts):
    with explorable_page({"soft-lookup": charts["soft"], "score-menu": charts["scores"],
                          "ntm-addressing": charts["ntm"]}) as opened:
        yield opened


def test_page_is_local_and_ready_within_a_second(page):
    check_local_and_ready(page, charts=3)


def test_soft_dictionary_controls(page, memory):
    tab = page[0]
    for action, setting in [(slide(tab, "soft-lookup", "share of Peru's key", "ArrowRight"), (0.55, -0.5)),
                            (slide(tab, "soft-lookup", "log10 temperature", "ArrowLeft"), (0.55, -0.75))]:
        drawn = after(tab, action, "soft-lookup", "weights_marks")
        mix, log_tau = signal(tab, "soft-lookup", "mix"), signal(tab, "soft-lookup", "log_tau")
        assert (mix, log_tau) == pytest.approx(setting, abs=1e-9)
        weights, value = soft_expected(memory, *setting)
        assert [d["key"] for d in drawn] == COUNTRIES
        assert [d["weight"] for d in drawn] == pytest.approx(weights, abs=1e-6)
        shown = drawn_now(tab, "soft-lookup", "value_marks")
        assert [d["value"] for d in shown] == pytest.approx([value], abs=1e-6)


def test_score_menu_controls(page, charts):
    tab = page[0]
    for action, setting in [(choose(tab, "score-menu", "score", "cosine"), ("cosine", 0.0, 1.0)),
                            (slide(tab, "score-menu", "angle of the query", "ArrowRight"), ("cosine", 15.0, 1.0)),
                            (choose(tab, "score-menu", "length of the query", "4"), ("cosine", 15.0, 4.0)),
                            (choose(tab, "score-menu", "score", "dot"), ("dot", 15.0, 4.0))]:
        drawn = after(tab, action, "score-menu", "weights_marks")
        assert [signal(tab, "score-menu", n) for n in ("score", "angle", "length")] == list(setting)
        expected = score_expected(charts["inputs"][0], *setting)
        assert [d["weight"] for d in drawn] == pytest.approx(expected, abs=1e-6)


def test_ntm_addressing_controls(page, charts):
    tab = page[0]
    for action, setting in [(choose(tab, "ntm-addressing", "key strength", "20"), (20.0, 0.5, "stay", 2.0)),
                            (slide(tab, "ntm-addressing", "gate g", "ArrowLeft"), (20.0, 0.0, "stay", 2.0)),
                            (choose(tab, "ntm-addressing", "shift weights", "blur"), (20.0, 0.0, "blur", 2.0)),
                            (choose(tab, "ntm-addressing", "sharpening", "5"), (20.0, 0.0, "blur", 5.0))]:
        drawn = after(tab, action, "ntm-addressing", "step4_marks")
        assert [signal(tab, "ntm-addressing", n) for n in ("beta", "g", "shift", "gamma")] == list(setting)
        assert [d["row"] for d in drawn] == list(range(8))
        assert [d["weight"] for d in drawn] == pytest.approx(ntm_expected(charts["inputs"], *setting), abs=1e-6)


def test_every_chapter_shows_an_explorable_the_book_test_moves():
    """Each chapter (1-12) shows at least one explorable figure, and tests/test_explorables_in_book.py moves its
    controls in the built book."""
    import ast

    from tests.notebook_files import CHAPTERS, ROOT, code_cells, read

    book_test = ast.parse((ROOT / "tests" / "test_explorables_in_book.py").read_text())
    listed = next(ast.literal_eval(node.value) for node in book_test.body
                  if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "EXPLORABLES")
    for path in CHAPTERS:
        names = [m for cell in code_cells(read(path)) if "explorable.show(" in cell.source
                 for m in re.findall(r'name="([\w-]+)"', cell.source)]
        assert names, f"{path.name} shows no explorable figure"
        assert set(names) <= set(listed.get(f"notebooks/{path.stem}.html", {})), f"{path.name}: {names} not in EXPLORABLES"


def test_altair_is_imported_without_the_iri_grammar():
    """jsonschema's check of the "iri" format (rfc3987-syntax, seconds to import)
    is left out when the explorables import Altair; the package still imports."""
    code = (
        "import sys, importlib.util, attnlab.explorable\n"
        "print('rfc3987_syntax' in sys.modules)\n"
        "installed = importlib.util.find_spec('rfc3987_syntax') is not None\n"
        "if installed:\n"
        "    import rfc3987_syntax\n"
        "print(installed, sys.modules.get('rfc3987_syntax') is not None)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    imported, installed, importable = out.split()
    assert imported == "False" and importable == installed
