"""The step-by-step pointing charts (attnlab.explorable.pointing, chapters 11 and 12): data equal to the pointer
network's greedy decoding, and controls that move the drawn chart in headless Chromium."""

import pytest
import torch

from attnlab import explorable
from attnlab.pointer import PointerNet
from attnlab.tasks import tour_length, tsp_data
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
    """The model, the instances, their optimal tours, the tours followed besides the optimal one, the chart."""
    model, points, optimal = tsp_model_and_instances()
    with torch.no_grad():
        beams, _ = model.beam_search(points, 3)
    tours = {"greedy decoding": model.greedy(points).indices, "a beam's most probable": beams[:, 0]}
    return model, points, optimal, tours, explorable.tour_steps(model, points, INSTANCES, optimal, tours)


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


def tour_expected(touring, which: int, tour: str, step: int) -> dict:
    """What the chart should show at ``step`` of ``tour`` on instance ``which``, from the model fed that tour's
    cities one instance at a time, and the optimal tour's edges counted by hand."""
    model, points, optimal, tours = touring[:4]
    order = (optimal if tour == "the optimal tour" else tours[tour])[which]
    with torch.no_grad():
        log_p = model(points[which : which + 1], order[None])[0]  # (n, n)
        probability = model.log_likelihood(points[which : which + 1], order[None]).exp().item()
    order = order.tolist()
    cycle = optimal[which].tolist()
    best = {frozenset((cycle[k], cycle[(k + 1) % len(cycle)])) for k in range(len(cycle))}
    kind = ["the first city"] + ["an edge of the optimal tour" if frozenset(order[k - 1 : k + 1]) in best
                                 else "not in the optimal tour" for k in range(1, len(order))]
    length = tour_length(points[which][None], torch.tensor(order)[None]).item()
    return {
        "order": order,
        "p": log_p[step - 1].exp().tolist(),
        "taken": [log_p[k, order[k]].exp().item() for k in range(len(order))],
        "kind": kind,
        "status": ["chosen at this step" if j == order[step - 1] else "chosen before" if j in order[: step - 1]
                   else "not chosen yet" for j in range(len(order))],
        "length": length,
        "gap": length / tour_length(points[which][None], optimal[which][None]).item() - 1,
        "best": best,
        "probability": probability,
    }


@pytest.mark.parametrize(("which", "tour", "step"), [(0, "greedy decoding", 1), (1, "greedy decoding", 4),
                                                     (1, "a beam's most probable", 7),
                                                     (0, "the optimal tour", 5), (1, "the optimal tour", 7)])
def test_tour_steps_data_are_the_models_pointing(touring, which, tour, step):
    points, chart = touring[1], touring[4]
    expected = tour_expected(touring, which, tour, step)
    at = {"which": INSTANCES[which], "tour": tour}
    (row,) = pick(rows_of(chart, "cities_0"), **at, step=step)
    assert row["city"] == list(range(points.shape[1]))
    assert row["x"] == pytest.approx(points[which, :, 0].tolist(), abs=1e-6)
    assert row["y"] == pytest.approx(points[which, :, 1].tolist(), abs=1e-6)
    assert row["p"] == pytest.approx(expected["p"], abs=1e-6)
    assert row["status"] == expected["status"]
    assert row["before"] == [int(s == "chosen before") for s in expected["status"]]
    taken = sorted(pick(rows_of(chart, "taken"), **at), key=lambda r: r["k"])
    assert [r["p"] for r in taken] == pytest.approx(expected["taken"], abs=1e-6)
    assert [r["edge"] for r in taken] == expected["kind"]
    # the edges: each reaches the city of its step, the way back closes the tour at the last step
    order, n = expected["order"], points.shape[1]

    def city(x: float, y: float) -> int:
        return int((points[which] - torch.tensor([x, y])).norm(dim=-1).argmin())

    drawn = sorted((e["k"], city(e["x"], e["y"]), city(e["x2"], e["y2"]), e["edge"])
                   for e in pick(rows_of(chart, "edges_0"), **at))
    kind = {True: "an edge of the optimal tour", False: "not in the optimal tour"}
    assert drawn == sorted((min(k, n), a, b, kind[frozenset((a, b)) in expected["best"]])
                           for k, (a, b) in enumerate(zip(order, order[1:] + order[:1], strict=True), start=2))
    assert [e[3] for e in drawn if e[2] != order[0]] == expected["kind"][1:]
    (summary,) = pick(rows_of(chart, "summary"), **at)
    assert summary["length"] == pytest.approx(expected["length"], abs=1e-6)
    assert summary["gap"] == pytest.approx(expected["gap"], abs=1e-6)
    assert summary["probability"] == pytest.approx(expected["probability"], rel=1e-5)


def test_greedy_decoding_takes_the_most_probable_city_and_the_optimal_tour_has_no_gap(touring):
    model, points, _, tours, chart = touring
    decoded = model.greedy(points)
    for which, name in enumerate(INSTANCES):
        for row in pick(rows_of(chart, "cities_0"), which=name, tour="greedy decoding"):
            chosen = row["status"].index("chosen at this step")
            assert chosen == max(range(len(row["p"])), key=row["p"].__getitem__)
            # fed its own cities, the model gives greedy decoding's distributions
            assert row["p"] == pytest.approx(decoded.probs[which, row["step"] - 1].tolist(), abs=1e-6)
        (best,) = pick(rows_of(chart, "summary"), which=name, tour="the optimal tour")
        assert best["gap"] == pytest.approx(0, abs=1e-6)
        assert all(r["edge"] != "not in the optimal tour"
                   for r in pick(rows_of(chart, "taken"), which=name, tour="the optimal tour"))


def test_greedy_decoding_is_the_default_tour(touring):
    model, points, optimal = touring[:3]
    chart = explorable.tour_steps(model, points, INSTANCES, optimal)
    assert chart.to_dict()["params"][1]["bind"]["options"] == ["greedy decoding", "the optimal tour"]
    (row,) = pick(rows_of(chart, "cities_0"), which=INSTANCES[1], tour="greedy decoding", step=3)
    assert row["p"] == pytest.approx(model.greedy(points).probs[1, 2].tolist(), abs=1e-6)


def test_every_control_has_a_visible_label(sorting, touring):
    for chart in (sorting[2], touring[4]):
        params = chart.to_dict()["params"]
        assert params and all(param["bind"]["name"].strip() for param in params)


def test_the_charts_refuse_what_they_cannot_draw(sorting, touring):
    with pytest.raises(ValueError, match=r"inputs must have shape \(lists, n, 1\)"):
        explorable.pointer_steps(sorting[0], torch.rand(2, 5, 2), ["a", "b"])
    with pytest.raises(ValueError, match="names must be 2 distinct names"):
        explorable.pointer_steps(sorting[0], torch.rand(2, 5, 1), ["a", "a"])
    with pytest.raises(ValueError, match="end token"):
        explorable.pointer_steps(PointerNet(1, 8, end_token=True), torch.rand(1, 5, 1), ["a"])
    model, points, optimal = touring[:3]
    with pytest.raises(ValueError, match=r"points must have shape \(instances, n, 2\)"):
        explorable.tour_steps(model, torch.rand(2, 5, 1), ["a", "b"], optimal)
    with pytest.raises(ValueError, match="optimal must have shape"):
        explorable.tour_steps(model, torch.rand(2, 5, 2), ["a", "b"], torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match=r"tours\['beam'\] must have shape"):
        explorable.tour_steps(model, points, INSTANCES, optimal, {"beam": optimal[:, :-1]})
    with pytest.raises(ValueError, match="the optimal tour"):
        explorable.tour_steps(model, points, INSTANCES, optimal, {"the optimal tour": optimal})


def test_html_size_at_the_chapters_sizes():
    """Chapter 11 shows four lists of ten numbers, chapter 12 three instances of ten cities and three tours."""
    model, lists = sorter_and_lists(n=10, count=4)
    tsp, points, tours = tsp_model_and_instances(n=10, count=3)
    pages = {
        "chapter 11": explorable.html(explorable.pointer_steps(model, lists, [f"list {i}" for i in range(4)]),
                                      "pointer-steps", "The pointer distribution step by step.").data,
        "chapter 12": explorable.html(explorable.tour_steps(tsp, points, ["a", "b", "c"], tours, {
            "greedy decoding": tsp.greedy(points).indices, "shortest of a beam of 10": tsp.beam_search(points, 10)[0][:, 0]
        }), "tour-steps", "The tour step by step.").data,
    }
    for page, text in pages.items():
        print(f"{page}: {len(text) / 1000:.0f} KB")
        assert len(text) <= 300_000, f"{page}: {len(text) / 1000:.0f} KB"


# ---- in the browser -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def page(sorting, touring):
    with explorable_page({"pointer-steps": sorting[2], "tour-steps": touring[4]}) as opened:
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
        drawn = after(tab, action, "pointer-steps", "pointer_layer_1_marks")
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
    points = touring[1]
    n = points.shape[1]
    assert [signal(tab, "tour-steps", name) for name in ("which", "tour", "step")] == ["instance 1", "greedy decoding", 4]
    for action, setting in [(slide(tab, "tour-steps", "decoding step", "ArrowRight"), ("instance 1", "greedy decoding", 5)),
                            (choose(tab, "tour-steps", "test instance", "instance 2"), ("instance 2", "greedy decoding", 5)),
                            (choose(tab, "tour-steps", "tour followed", "the optimal tour"),
                             ("instance 2", "the optimal tour", 5)),
                            (choose(tab, "tour-steps", "tour followed", "a beam's most probable"),
                             ("instance 2", "a beam's most probable", 5)),
                            (slide(tab, "tour-steps", "decoding step", "End"), ("instance 2", "a beam's most probable", n)),
                            (slide(tab, "tour-steps", "decoding step", "Home"), ("instance 2", "a beam's most probable", 1))]:
        drawn = after(tab, action, "tour-steps", "cities_0_marks")
        assert [signal(tab, "tour-steps", name) for name in ("which", "tour", "step")] == list(setting)
        which, tour, step = INSTANCES.index(setting[0]), setting[1], setting[2]
        expected = tour_expected(touring, which, tour, step)
        drawn = sorted(drawn, key=lambda d: d["city"])
        assert [d["city"] for d in drawn] == list(range(n))
        assert [d["p"] for d in drawn] == pytest.approx(expected["p"], abs=1e-6)
        assert [d["status"] for d in drawn] == expected["status"]
        assert [d["x"] for d in drawn] == pytest.approx(points[which, :, 0].tolist(), abs=1e-6)
        (ring,) = drawn_now(tab, "tour-steps", "choice_0_marks")
        assert ring["city"] == expected["order"][step - 1]
        edges = drawn_now(tab, "tour-steps", "edges_0_marks")
        assert len(edges) == (step - 1 if step < n else n)
        bars = sorted(drawn_now(tab, "tour-steps", "pointer_layer_1_marks"), key=lambda d: d["city"])
        assert [d["p"] for d in bars] == pytest.approx(expected["p"], abs=1e-6)
        taken = sorted(drawn_now(tab, "tour-steps", "taken_layer_0_marks"), key=lambda d: d["k"])
        assert [d["p"] for d in taken] == pytest.approx(expected["taken"], abs=1e-6)
        assert [d["edge"] for d in taken] == expected["kind"]
        (frame,) = drawn_now(tab, "tour-steps", "taken_layer_1_marks")
        assert frame["k"] == step
        (summary,) = drawn_now(tab, "tour-steps", "summary_marks")
        assert summary["text"].startswith(f"length {expected['length']:.3f}, ")
