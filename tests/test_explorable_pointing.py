"""The step-by-step pointing charts (attnlab.explorable.pointing, chapters 10 and 11): data equal to the pointer
network's greedy decoding, and controls that move the drawn chart in headless Chromium."""

import pytest
import torch

from attnlab import explorable
from attnlab.pointer import PointerNet
from attnlab.tasks import tsp_data
from tests.browser import (
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

LISTS = ["list 1", "list 2", "list 3"]
INSTANCES = ["instance 1", "instance 2"]


def sorter_and_lists(n: int = 6, count: int = 3) -> tuple[PointerNet, torch.Tensor]:
    torch.manual_seed(0)
    model = PointerNet(d_input=1, d_hidden=16).eval()
    return model, torch.rand(count, n, 1, generator=torch.Generator().manual_seed(1))


def tsp_model_and_instances(n: int = 7, count: int = 2) -> tuple[PointerNet, torch.Tensor, torch.Tensor]:
    torch.manual_seed(2)
    model = PointerNet(d_input=2, d_hidden=16).eval()
    points, tours = tsp_data(count, n, torch.Generator().manual_seed(3))
    return model, points, tours


@pytest.fixture(scope="module")
def sorting():
    model, lists = sorter_and_lists()
    return model, lists, explorable.pointer_steps(model, lists, LISTS)


@pytest.fixture(scope="module")
def touring():
    model, points, tours = tsp_model_and_instances()
    return model, points, tours, explorable.tour_steps(model, points, INSTANCES, optimal=tours)


def greedy(model: PointerNet, inputs: torch.Tensor, which: int, mask: str = "on"):
    """Greedy decoding of one input alone: (positions (n,), distributions (n, N))."""
    decoded = model.greedy(inputs[which : which + 1], mask_chosen=mask == "on")
    return decoded.indices[0].tolist(), decoded.probs[0]


def expected_steps(sorting, which: int, mask: str, step: int) -> tuple[list[float], list[str], list[float], list[int]]:
    """The pointer distribution of ``step``, each input's status, the values output up to it, and which inputs
    were chosen before it."""
    model, lists, _ = sorting
    order, probs = greedy(model, lists, which, mask)
    status = ["chosen at this step" if j == order[step - 1] else "chosen before" if j in order[: step - 1]
              else "not chosen yet" for j in range(lists.shape[1])]
    before = [int(j in order[: step - 1]) for j in range(lists.shape[1])]
    return probs[step - 1].tolist(), status, [lists[which, j, 0].item() for j in order[:step]], before


def flattened(row: dict, fields: list[str]) -> list[dict]:
    return [dict(zip(fields, values, strict=True)) for values in zip(*(row[f] for f in fields), strict=True)]


# ---- the data --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("which", "mask", "step"), [(0, "on", 1), (1, "on", 4), (2, "off", 5), (0, "off", 6)])
def test_pointer_steps_data_are_greedy_decoding(sorting, which, mask, step):
    _, lists, chart = sorting
    p, status, output, before = expected_steps(sorting, which, mask, step)
    (row,) = pick(rows_of(chart, "pointer"), which=LISTS[which], mask=mask, step=step)
    assert row["position"] == list(range(lists.shape[1]))
    assert row["input"] == [f"{v:.3f}" for v in lists[which, :, 0].tolist()]
    assert row["p"] == pytest.approx(p, abs=1e-6)
    assert row["status"] == status
    assert row["before"] == before
    outputs = [r for r in pick(rows_of(chart, "output"), which=LISTS[which], mask=mask) if r["k"] <= step]
    assert [r["value"] for r in sorted(outputs, key=lambda r: r["k"])] == pytest.approx(output, abs=1e-6)


def test_with_the_mask_chosen_inputs_get_nothing_and_without_it_some(sorting):
    chart = sorting[2]
    for mask in ("on", "off"):
        rows = pick(rows_of(chart, "pointer"), mask=mask)
        before = [p for row in rows for p, b in zip(row["p"], row["before"], strict=True) if b]
        assert (max(before) == 0.0) == (mask == "on")


@pytest.mark.parametrize(("which", "step"), [(0, 1), (1, 4), (1, 7)])
def test_tour_steps_data_are_greedy_decoding(touring, which, step):
    model, points, tours, chart = touring
    order, probs = greedy(model, points, which)
    (row,) = pick(rows_of(chart, "cities"), which=INSTANCES[which], step=step)
    assert row["x"] == pytest.approx(points[which, :, 0].tolist(), abs=1e-6)
    assert row["y"] == pytest.approx(points[which, :, 1].tolist(), abs=1e-6)
    assert row["p"] == pytest.approx(probs[step - 1].tolist(), abs=1e-6)
    (ring,) = pick(rows_of(chart, "choice"), which=INSTANCES[which], step=step)
    assert ring["city"] == order[step - 1]
    line = sorted(pick(rows_of(chart, "tour"), which=INSTANCES[which], tour="greedy, so far"), key=lambda r: r["k"])
    assert [v for r in line for v in (r["x"], r["y"])] == pytest.approx(points[which, order].flatten().tolist(),
                                                                        abs=1e-6)
    best = sorted(pick(rows_of(chart, "tour"), which=INSTANCES[which], tour="optimal"), key=lambda r: r["k"])
    closed = [*tours[which].tolist(), int(tours[which, 0])]
    assert [v for r in best for v in (r["x"], r["y"])] == pytest.approx(points[which, closed].flatten().tolist(),
                                                                        abs=1e-6)


def test_every_control_has_a_visible_label(sorting, touring):
    for chart in (sorting[2], touring[3]):
        params = chart.to_dict()["params"]
        assert params and all(param["bind"]["name"].strip() for param in params)


def test_the_charts_refuse_what_they_cannot_draw(sorting, touring):
    with pytest.raises(ValueError, match=r"inputs must have shape \(lists, n, 1\)"):
        explorable.pointer_steps(sorting[0], torch.rand(2, 5, 2), ["a", "b"])
    with pytest.raises(ValueError, match="names must be 2 distinct names"):
        explorable.pointer_steps(sorting[0], torch.rand(2, 5, 1), ["a", "a"])
    with pytest.raises(ValueError, match="end token"):
        explorable.pointer_steps(PointerNet(1, 8, end_token=True), torch.rand(1, 5, 1), ["a"])
    with pytest.raises(ValueError, match=r"points must have shape \(instances, n, 2\)"):
        explorable.tour_steps(touring[0], torch.rand(2, 5, 1), ["a", "b"])
    with pytest.raises(ValueError, match="optimal must have shape"):
        explorable.tour_steps(touring[0], torch.rand(2, 5, 2), ["a", "b"], optimal=torch.zeros(2, 4, dtype=torch.long))


def test_html_size_at_the_chapters_sizes():
    """Chapter 10 shows four lists of ten numbers, chapter 11 three instances of ten cities."""
    model, lists = sorter_and_lists(n=10, count=4)
    tsp, points, tours = tsp_model_and_instances(n=10, count=3)
    pages = {
        "chapter 10": explorable.html(explorable.pointer_steps(model, lists, [f"list {i}" for i in range(4)]),
                                      "pointer-steps", "The pointer distribution step by step.").data,
        "chapter 11": explorable.html(explorable.tour_steps(tsp, points, ["a", "b", "c"], optimal=tours),
                                      "tour-steps", "The greedy tour step by step.").data,
    }
    for page, text in pages.items():
        print(f"{page}: {len(text) / 1000:.0f} KB")
        assert len(text) <= 300_000, f"{page}: {len(text) / 1000:.0f} KB"


# ---- in the browser -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def page(sorting, touring):
    with explorable_page({"pointer-steps": sorting[2], "tour-steps": touring[3]}) as opened:
        yield opened


def test_page_is_local_and_ready_within_a_second(page):
    check_local_and_ready(page, charts=2)
    tab = page[0]
    for name in ("pointer-steps", "tour-steps"):
        labels = tab.locator(f"#{name} .vega-bindings label .vega-bind-name")
        assert labels.count() >= 2 and all(labels.nth(i).inner_text().strip() for i in range(labels.count()))


def test_pointer_steps_controls(page, sorting):
    tab = page[0]
    n = sorting[1].shape[1]
    for action, setting in [(slide(tab, "pointer-steps", "decoding step", "ArrowRight"), ("list 1", "on", 4)),
                            (choose(tab, "pointer-steps", "mask at decoding", "off"), ("list 1", "off", 4)),
                            (choose(tab, "pointer-steps", "list", "list 3"), ("list 3", "off", 4)),
                            (slide(tab, "pointer-steps", "decoding step", "ArrowLeft"), ("list 3", "off", 3))]:
        drawn, seconds = after(tab, action, "pointer-steps", "pointer_layer_1_marks")
        assert seconds < 1.0, f"the chart took {seconds:.2f} s to follow the control"
        assert [signal(tab, "pointer-steps", name) for name in ("which", "mask", "step")] == list(setting)
        which, mask, step = setting
        p, status, output, _ = expected_steps(sorting, LISTS.index(which), mask, step)
        drawn = sorted(drawn, key=lambda d: d["position"])
        assert [d["position"] for d in drawn] == list(range(n))
        assert [d["p"] for d in drawn] == pytest.approx(p, abs=1e-6)
        assert [d["status"] for d in drawn] == status
        shown = sorted(drawn_now(tab, "pointer-steps", "output_layer_0_marks"), key=lambda d: d["k"])
        assert [d["value"] for d in shown] == pytest.approx(output, abs=1e-6)


def test_tour_steps_controls(page, touring):
    tab = page[0]
    model, points = touring[:2]
    for action, setting in [(slide(tab, "tour-steps", "decoding step", "ArrowRight"), ("instance 1", 5)),
                            (choose(tab, "tour-steps", "test instance", "instance 2"), ("instance 2", 5)),
                            (slide(tab, "tour-steps", "decoding step", "ArrowLeft"), ("instance 2", 4))]:
        drawn, seconds = after(tab, action, "tour-steps", "cities_marks")
        assert seconds < 1.0, f"the chart took {seconds:.2f} s to follow the control"
        assert [signal(tab, "tour-steps", name) for name in ("which", "step")] == list(setting)
        which, step = INSTANCES.index(setting[0]), setting[1]
        order, probs = greedy(model, points, which)
        drawn = sorted(drawn, key=lambda d: d["city"])
        assert [d["city"] for d in drawn] == list(range(points.shape[1]))
        assert [d["p"] for d in drawn] == pytest.approx(probs[step - 1].tolist(), abs=1e-6)
        assert [d["x"] for d in drawn] == pytest.approx(points[which, :, 0].tolist(), abs=1e-6)
        (ring,) = drawn_now(tab, "tour-steps", "choice_marks")
        assert ring["city"] == order[step - 1]
        line = [d for d in drawn_now(tab, "tour-steps", "tour_marks") if d["tour"] == "greedy, so far"]
        assert sorted(d["k"] for d in line) == list(range(1, step))
