"""Pointer network: shapes, masking, decoding, likelihood against brute force, errors, gradients."""

import itertools

import numpy as np
import pytest
import torch

from attnlab.attention import AdditiveScore, masked_softmax
from attnlab.pointer import PAD, PointerNet, masked_log_softmax


def make(d_input=2, d_hidden=8, end_token=False, seed=0, dtype=torch.float64):
    torch.manual_seed(seed)
    return PointerNet(d_input, d_hidden, end_token=end_token).to(dtype)


def points(batch, n, d=2, seed=1):
    return torch.rand(batch, n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def is_permutation(rows: torch.Tensor, n: int) -> bool:
    return bool((rows.sort(dim=-1).values == torch.arange(n)).all())


def test_masked_log_softmax_is_the_log_of_masked_softmax():
    scores = torch.randn(4, 6, dtype=torch.float64)
    allowed = torch.rand(4, 6) > 0.4
    allowed[:, 0] = True
    expected = masked_softmax(scores, allowed)
    torch.testing.assert_close(masked_log_softmax(scores, allowed).exp(), expected)
    assert torch.isneginf(masked_log_softmax(scores, allowed)[~allowed]).all()


def test_uses_the_additive_score_of_the_attention_module():
    model = make()
    assert isinstance(model.score, AdditiveScore)
    x = points(3, 5)
    encoded = model.encode(x)
    decoder_states = torch.randn(3, 2, 8, dtype=torch.float64)
    u = model.pointer_scores(decoder_states, encoded)
    # u[b, t, j] = v^T tanh(W1 h_j + b + W2 s_t), written out by hand
    w1, b1 = model.score.key_proj.weight, model.score.key_proj.bias
    w2, v = model.score.query_proj.weight, model.score.v
    for b, t, j in itertools.product(range(3), range(2), range(5)):
        by_hand = v @ torch.tanh(w1 @ encoded.keys[b, j] + b1 + w2 @ decoder_states[b, t])
        torch.testing.assert_close(u[b, t, j], by_hand)


def test_teacher_forced_shapes_and_normalisation():
    model = make()
    x = points(3, 6)
    targets = torch.stack([torch.randperm(6) for _ in range(3)])
    log_probs = model(x, targets)
    assert log_probs.shape == (3, 6, 6)
    torch.testing.assert_close(log_probs.exp().sum(-1), torch.ones(3, 6, dtype=torch.float64))
    assert model.log_likelihood(x, targets).shape == (3,)


def test_masking_in_teacher_forcing():
    model = make()
    x = points(2, 5)
    targets = torch.tensor([[3, 1, 4, 0, 2], [0, 1, 2, 3, 4]])
    probs = model(x, targets).exp()
    for b, t in itertools.product(range(2), range(5)):
        earlier = targets[b, :t]
        assert (probs[b, t, earlier] == 0).all()
        later = targets[b, t:]
        assert (probs[b, t, later] > 0).all()
    assert torch.allclose(probs[:, -1].max(-1).values, torch.ones(2, dtype=torch.float64))  # one left: certain


@pytest.mark.parametrize("n", [1, 3, 4])
def test_probabilities_of_all_permutations_sum_to_one(n):
    model = make()
    x = points(1, n)
    perms = torch.tensor(list(itertools.permutations(range(n))))
    likelihood = model.log_likelihood(x.expand(len(perms), -1, -1), perms).exp()
    torch.testing.assert_close(likelihood.sum(), torch.tensor(1.0, dtype=torch.float64))


def test_log_likelihood_matches_a_step_by_step_brute_force():
    model = make()
    x = points(2, 4)
    targets = torch.tensor([[2, 0, 3, 1], [1, 3, 0, 2]])
    expected = torch.zeros(2, dtype=torch.float64)
    for b in range(2):  # one sequence at a time, one step at a time, the softmax over the unchosen written out
        keys, (h, c) = model.encoder(model.embed(x[b : b + 1]))
        state, previous, chosen = (h, c), model.start.view(1, 1, -1), []
        for t in range(4):
            out, state = model.decoder(previous, state)
            u = model.score(out, keys)[0, 0]
            unchosen = [j for j in range(4) if j not in chosen]
            expected[b] += u[targets[b, t]] - torch.logsumexp(u[unchosen], dim=0)
            chosen.append(int(targets[b, t]))
            previous = model.embed(x[b : b + 1, targets[b, t]]).view(1, 1, -1)
    torch.testing.assert_close(model.log_likelihood(x, targets), expected)



@pytest.mark.parametrize("end_token", [False, True])
def test_without_the_mask_each_step_is_the_plain_softmax_over_all_positions(end_token):
    model = make(end_token=end_token)
    n = 4
    x = points(2, n)
    targets = torch.tensor([[2, 0, 3, 1, n], [1, 3, 0, 2, n]]) if end_token else torch.tensor([[2, 0, 3, 1],
                                                                                            [1, 3, 0, 2]])
    unmasked = model(x, targets, mask_chosen=False).exp()
    masked = model(x, targets).exp()
    for b in range(2):  # one sequence at a time, one step at a time, the plain softmax written out
        keys, (h, c) = model.encoder(model.embed(x[b : b + 1]))
        if end_token:
            keys = torch.cat([keys, model.end_key.view(1, 1, -1)], dim=1)
        state, previous = (h, c), model.start.view(1, 1, -1)
        for t in range(targets.shape[1]):
            out, state = model.decoder(previous, state)
            u = model.score(out, keys)[0, 0]
            torch.testing.assert_close(unmasked[b, t], u.exp() / u.exp().sum())
            earlier = targets[b, :t]
            assert (masked[b, t, earlier] == 0).all() and (unmasked[b, t, earlier] > 0).all()
            previous = model.embed(x[b : b + 1, targets[b, t].clamp(max=n - 1)]).view(1, 1, -1)
    # the loss is the mean negative log-probability of the targets under those distributions
    expected = -unmasked.gather(2, targets.unsqueeze(-1)).log().mean()
    torch.testing.assert_close(model.loss(x, targets, mask_chosen=False), expected)
    assert model.loss(x, targets, mask_chosen=False) > model.loss(x, targets)  # the mask only adds probability


def test_without_the_mask_all_n_to_the_n_sequences_sum_to_one():
    model = make()
    n = 3
    x = points(1, n)
    every = torch.tensor(list(itertools.product(range(n), repeat=n)))  # 27 sequences, repeats included
    likelihood = model.log_likelihood(x.expand(len(every), -1, -1), every, mask_chosen=False).exp()
    torch.testing.assert_close(likelihood.sum(), torch.tensor(1.0, dtype=torch.float64))
    repeats = torch.tensor([len(set(row)) < n for row in every.tolist()])
    assert 0 < likelihood[~repeats].sum() < 1  # the permutations get only part of it
    with pytest.raises(ValueError, match="already chose"):  # with the mask a repeat is impossible
        model.log_likelihood(x, every[repeats][:1])


@pytest.mark.parametrize("end_token", [False, True])
def test_greedy_without_mask_reports_the_unmasked_likelihood(end_token):
    model = make(end_token=end_token)
    x = points(12, 5)
    decoded = model.greedy(x, mask_chosen=False)
    torch.testing.assert_close(decoded.log_prob, model.log_likelihood(x, decoded.indices, mask_chosen=False))


def test_training_without_the_mask_passes_gradcheck():
    model = make(end_token=True)
    x = points(3, 4).requires_grad_(True)
    targets = torch.tensor([[1, 2, 4, PAD, PAD], [0, 3, 3, 1, 4], [3, 0, 1, 4, PAD]])  # a repeat is allowed
    model.loss(x, targets, mask_chosen=False).backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name
    assert torch.autograd.gradcheck(lambda inputs: model.log_likelihood(inputs, targets, mask_chosen=False), (x,))

def test_end_token_sequences_sum_to_one_and_padding_is_ignored():
    model = make(end_token=True)
    n = 3
    x = points(1, n)
    rows = [list(p) + [n] + [PAD] * (n - k) for k in range(n + 1) for p in itertools.permutations(range(n), k)]
    targets = torch.tensor(rows)
    assert model(x.expand(len(rows), -1, -1), targets).shape == (len(rows), n + 1, n + 1)
    torch.testing.assert_close(model.log_likelihood(x.expand(len(rows), -1, -1), targets).exp().sum(),
                               torch.tensor(1.0, dtype=torch.float64))
    short = torch.tensor([[2, 0, n, PAD]])
    longer = torch.tensor([[2, 0, n]])
    torch.testing.assert_close(model.log_likelihood(x, short), model.log_likelihood(x, longer))


@pytest.mark.parametrize("end_token", [False, True])
def test_greedy_never_repeats_and_reports_its_likelihood(end_token):
    model = make(end_token=end_token)
    x = points(16, 7)
    decoded = model.greedy(x)
    steps = 8 if end_token else 7
    assert decoded.indices.shape == (16, steps) and decoded.probs.shape == (16, steps, 7 + end_token)
    for row in decoded.indices:
        chosen = row[(row >= 0) & (row < 7)]
        assert len(chosen.unique()) == len(chosen)
    if not end_token:
        assert is_permutation(decoded.indices, 7)
    torch.testing.assert_close(decoded.log_prob, model.log_likelihood(x, decoded.indices))
    # each step picks the most probable allowed input
    live = decoded.indices >= 0
    picked = decoded.probs.gather(2, decoded.indices.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    assert (picked[live] == decoded.probs.max(-1).values[live]).all()


def test_greedy_without_mask_can_repeat_an_input():
    model = make()
    with torch.no_grad():  # every score becomes v^T tanh(0) = 0: all inputs tie at every step
        model.score.key_proj.weight.zero_()
        model.score.key_proj.bias.zero_()
        model.score.query_proj.weight.zero_()
    x = points(4, 5)
    assert (model.greedy(x, mask_chosen=False).indices == 0).all()  # argmax takes the first of the ties
    torch.testing.assert_close(model.greedy(x).indices, torch.arange(5).expand(4, 5))


@pytest.mark.parametrize("end_token", [False, True])
def test_beam_search_never_repeats_and_is_sorted(end_token):
    model = make(end_token=end_token)
    x = points(6, 6)
    indices, scores = model.beam_search(x, width=4)
    assert indices.shape == (6, 4, 7 if end_token else 6) and scores.shape == (6, 4)
    assert (scores[:, :-1] >= scores[:, 1:]).all()
    for b, w in itertools.product(range(6), range(4)):
        row = indices[b, w]
        chosen = row[(row >= 0) & (row < 6)]
        assert len(chosen.unique()) == len(chosen)
        torch.testing.assert_close(scores[b, w], model.log_likelihood(x[b : b + 1], row[None])[0])
    # the beams of one input are distinct sequences
    for b in range(6):
        assert len({tuple(r.tolist()) for r in indices[b]}) == 4


@pytest.mark.parametrize("end_token", [False, True])
def test_beam_width_one_is_greedy(end_token):
    model = make(end_token=end_token)
    x = points(10, 6)
    indices, scores = model.beam_search(x, width=1)
    greedy = model.greedy(x)
    torch.testing.assert_close(indices[:, 0], greedy.indices)
    torch.testing.assert_close(scores[:, 0], greedy.log_prob)


def test_full_beam_finds_the_most_probable_permutation_of_three():
    model = make()
    x = points(5, 3)
    perms = torch.tensor(list(itertools.permutations(range(3))))
    best, _ = model.beam_search(x, width=3)
    for b in range(5):
        likelihood = model.log_likelihood(x[b : b + 1].expand(6, -1, -1), perms)
        # width 3 keeps every prefix of length 1, and each has only two completions: the search is exhaustive
        torch.testing.assert_close(best[b, 0], perms[likelihood.argmax()])


def test_errors_on_bad_shapes_and_targets():
    model = make()
    x = points(2, 4)
    with pytest.raises(ValueError, match=r"\(batch, n, d_input\)"):
        model.greedy(x[0])
    with pytest.raises(ValueError, match="size 2 in dimension 2"):
        model.greedy(points(2, 4, d=3))
    with pytest.raises(ValueError, match=r"\(batch, T\)"):
        model.log_likelihood(x, torch.tensor([0, 1, 2, 3]))
    with pytest.raises(ValueError, match="same batch size"):
        model.log_likelihood(x, torch.tensor([[0, 1, 2, 3]]))
    with pytest.raises(ValueError, match="positions in 0..3"):
        model.log_likelihood(x, torch.tensor([[0, 1, 2, 4], [0, 1, 2, 3]]))
    with pytest.raises(ValueError, match="already chose"):
        model.log_likelihood(x, torch.tensor([[0, 1, 1, 3], [0, 1, 2, 3]]))
    with pytest.raises(ValueError, match="integer"):
        model.log_likelihood(x, torch.zeros(2, 4))
    with pytest.raises(ValueError, match="width must be between 1 and"):
        model.beam_search(x, width=5)
    with pytest.raises(ValueError, match="d_hidden must be > 0"):
        PointerNet(2, 0)
    with_end = make(end_token=True)
    for bad in ([[0, PAD, 4, PAD, PAD], [0, 1, 2, 3, 4]], [[0, 4, 1, PAD, PAD], [0, 1, 2, 3, 4]]):
        with pytest.raises(ValueError, match="exactly after the end"):
            with_end.log_likelihood(x, torch.tensor(bad))


def test_gradient_reaches_every_parameter_and_passes_gradcheck():
    model = make(end_token=True)
    x = points(3, 4)
    targets = torch.tensor([[1, 2, 4, PAD, PAD], [0, 3, 2, 1, 4], [3, 0, 1, 4, PAD]])
    model.loss(x, targets).backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name
    x = x.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda inputs: model.log_likelihood(inputs, targets), (x,))


def test_training_learns_to_sort_three_numbers():
    torch.manual_seed(0)
    model = PointerNet(1, 16)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(0)
    for _ in range(150):
        values = torch.rand(64, 3, 1, generator=gen)
        loss = model.loss(values, values.squeeze(-1).argsort(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    values = torch.rand(500, 3, 1, generator=gen)
    accuracy = (model.greedy(values).indices == values.squeeze(-1).argsort(-1)).all(-1).float().mean()
    assert accuracy > 0.9


def test_pointer_distributions_figure_marks_the_chosen_inputs():
    import matplotlib

    matplotlib.use("Agg")
    from attnlab.plot import pointer_distributions

    model = make(end_token=True)
    decoded = model.greedy(points(1, 4))
    ax = pointer_distributions(decoded.probs[0], chosen=decoded.indices[0])
    marked = ax.collections[-1].get_offsets()
    live = decoded.indices[0][(decoded.indices[0] >= 0) & (decoded.indices[0] <= 4)]
    assert len(marked) == len(live)  # padding after the end token is not marked
    assert ax.get_xlabel() == "input position j" and ax.get_ylabel() == "output step t"


TOY_TSP = {"steps": 4, "hidden": 8, "train_size": 64, "val_size": 16, "test_size": 40, "beam": 3, "batch_size": 16}


def test_full_scale_tsp_record_at_toy_size_keeps_each_seeds_best_weights_and_gaps(tmp_path, monkeypatch, capsys):
    from attnlab.experiments import pointer_tsp, record

    for key, value in TOY_TSP.items():
        monkeypatch.setitem(pointer_tsp.SETTINGS, key, value)
    path = tmp_path / "tsp.json"
    with pytest.raises(SystemExit, match="contradicts"):  # four toy steps are not within 1%
        pointer_tsp.main(["--seeds", "2", "--json", str(path)])
    data = record.load(path)
    runs = data["results"]["runs"]
    assert [run["seed"] for run in runs] == [0, 1]
    for run in runs:
        assert 1 <= run["best_step"] <= 4
        gap = {name: row["mean_gap"] for name, row in run["methods"].items()}
        assert list(gap) == ["optimal (Held-Karp)", "pointer network, greedy", "pointer network, beam 3 (most probable)",
                             "pointer network, beam 3 (shortest)", "nearest neighbour", "2-opt (from nearest neighbour)",
                             "2-opt (best of 3 starts)", "2-opt (from the greedy tours)"]
        assert gap["optimal (Held-Karp)"] == 0  # the optimum has no gap
        assert all(g >= -1e-6 for g in gap.values())  # nothing beats the optimum
        assert gap["pointer network, beam 3 (shortest)"] <= gap["pointer network, beam 3 (most probable)"]
        assert gap["2-opt (best of 3 starts)"] <= gap["2-opt (from nearest neighbour)"]  # start 0 is one of the 3
        for row in run["methods"].values():
            assert row["low"] <= row["mean_gap"] <= row["high"]
    assert runs[0]["methods"] != runs[1]["methods"]  # another seed, other instances
    table = pointer_tsp.markdown(data)
    greedy = [run["methods"]["pointer network, greedy"] for run in runs]
    mean = (greedy[0]["mean_gap"] + greedy[1]["mean_gap"]) / 2
    assert f"| pointer network, greedy | {mean:.2%} " in table
    assert f"{greedy[1]['mean_gap']:.2%} ({greedy[1]['low']:.2%} to {greedy[1]['high']:.2%}) |" in table
    assert "does not hold: greedy decoding within 1% of the optimum" in capsys.readouterr().out


def test_tsp_mean_gap_has_students_t_interval_over_the_instances():
    from scipy import stats

    from attnlab.experiments import pointer_tsp

    lengths, optimal = np.array([1.1, 1.2, 1.3, 1.0]), np.ones(4)
    interval = stats.t.interval(0.95, 3, loc=0.15, scale=np.std([0.1, 0.2, 0.3, 0.0], ddof=1) / 2)
    row = pointer_tsp.mean_gap(lengths, optimal)
    assert np.allclose([row["mean_gap"], row["low"], row["high"]], [0.15, *interval])
    assert pointer_tsp.mean_gap(np.ones(3), np.ones(3))["low"] == 0.0  # no spread: no interval


def _tsp_run(seed, greedy, shortest, two_opt):
    """A hand-made run of the pointer-tsp record: (mean gap, low, high) per method."""
    rows = {"pointer network, greedy": greedy, "pointer network, beam 10 (shortest)": shortest,
            "2-opt (best of 10 starts)": two_opt}
    return {"seed": seed, "methods": {n: dict(zip(("mean_gap", "low", "high"), r, strict=True)) for n, r in rows.items()}}


def test_tsp_conclusions_hold_only_when_every_seed_bears_them():
    from attnlab.experiments import pointer_tsp

    def failed(*runs):
        verdicts = pointer_tsp.conclusions({"settings": {"beam": 10}, "runs": list(runs)})
        return [claim.split(" ")[0] + " " + claim.split(" ")[1] for claim, holds in verdicts.items() if not holds]

    good = _tsp_run(0, (0.008, 0.007, 0.009), (0.0002, 0.0001, 0.0003), (0.0001, 0.0, 0.0002))
    assert failed(good, _tsp_run(1, (0.009, 0.008, 0.0099), (0.001, 0.0, 0.002), (0.0, 0.0, 0.0))) == []
    assert failed(good, _tsp_run(1, (0.009, 0.008, 0.0101), (0.001, 0.0, 0.002), (0.0, 0.0, 0.0))) == ["greedy decoding"]
    assert failed(good, _tsp_run(1, (0.009, 0.008, 0.0099), (0.005, 0.002, 0.008), (0.0, 0.0, 0.0))) == ["the shortest"]
    assert failed(good, _tsp_run(1, (0.009, 0.008, 0.0099), (0.001, 0.0, 0.002), (0.003, 0.0, 0.004))) == ["2-opt from"]


def test_training_without_the_mask_learns_to_avoid_repeats_and_the_mask_never_hurts_greedy():
    torch.manual_seed(0)
    model = PointerNet(1, 16)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(0)
    test = torch.rand(500, 3, 1, generator=torch.Generator().manual_seed(9))
    order = test.squeeze(-1).argsort(-1)
    for step in range(1, 151):
        values = torch.rand(64, 3, 1, generator=gen)
        loss = model.loss(values, values.squeeze(-1).argsort(-1), mask_chosen=False)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step in (40, 150):
            unmasked, masked = model.greedy(test, mask_chosen=False).indices, model.greedy(test).indices
            valid = (unmasked.sort(dim=1).values == torch.arange(3)).all(dim=1)
            # the mask changes a step only where the unmasked argmax is an input already chosen: where the
            # unmasked output is a permutation, the masked one is the same, so the mask never lowers accuracy
            torch.testing.assert_close(masked[valid], unmasked[valid])
            assert (masked == order).all(-1).sum() >= (unmasked == order).all(-1).sum()
            if step == 40:  # half-trained: some outputs repeat an input, some do not
                assert 0.2 < valid.float().mean() < 0.95
    assert valid.float().mean() > 0.9  # the model learned by itself not to repeat an input
    assert (unmasked == order).all(-1).float().mean() > 0.85


def test_longer_hull_record_at_toy_size_sets_each_seed_beside_the_chapters_budget(tmp_path, monkeypatch, capsys):
    from attnlab.experiments import pointer_hull_longer, pointer_networks, record

    monkeypatch.setitem(pointer_hull_longer.SETTINGS, "hull_steps", 3)
    monkeypatch.setitem(pointer_networks.SETTINGS, "hull_sets", 20)
    path = tmp_path / "hull.json"
    with pytest.raises(SystemExit, match="contradicts"):  # three toy steps do not beat the chapter's 1,600
        pointer_hull_longer.main(["--seeds", "2", "--json", str(path)])
    data = record.load(path)
    runs = data["results"]["runs"]
    assert [run["seed"] for run in runs] == [0, 1]
    for run in runs:
        assert sorted(run["hull"]["sizes"], key=int) == ["5", "10", "20", "50"]
        for measures in run["hull"]["sizes"].values():
            assert 0 <= measures["accuracy"] <= 1 and 0 <= measures["coverage"] <= 1 + 1e-6
    assert runs[0]["hull"] != runs[1]["hull"]  # another seed, other point sets
    table = pointer_hull_longer.markdown(data)
    chapter = pointer_networks.hull_band(pointer_networks.chapter_runs(runs), 10, "accuracy")
    assert f"| 10 | {chapter.mean:.3f} " in table
    assert "does not hold: five times as long: more exact hulls at 10 points on every seed" in capsys.readouterr().out


def test_wider_hull_record_at_toy_size_trains_the_wider_model_and_reports_both_widths(
    tmp_path, monkeypatch, capsys
):
    from attnlab.experiments import pointer_hull_wider, pointer_networks, record
    from attnlab.experiments.pointer_networks import chapter_runs

    monkeypatch.setitem(pointer_hull_wider.SETTINGS, "hull_steps", 3)
    monkeypatch.setitem(pointer_networks.SETTINGS, "hull_sets", 20)
    validation, _ = pointer_networks.hull_sets()
    model, _ = pointer_networks.train_hull(validation, steps=1, d_hidden=8)
    assert model.d_hidden == 8  # the width asked for, not the chapter's 64
    path = tmp_path / "wider.json"
    with pytest.raises(SystemExit, match="contradicts"):  # three toy steps find no hull at any size
        pointer_hull_wider.main(["--seeds", "2", "--json", str(path)])
    data = record.load(path)
    assert data["results"]["settings"]["d_hidden"] == 256
    runs = data["results"]["runs"]
    assert [run["seed"] for run in runs] == [0, 1]
    assert sorted(runs[0]["hull"]["sizes"], key=int) == ["5", "10", "20", "50"]
    table = pointer_hull_wider.markdown(data)
    chapter = pointer_networks.hull_band(chapter_runs(runs), 10, "accuracy")
    assert f"| 10 | {chapter.mean:.3f} " in table and "256 units" in table
    out = capsys.readouterr().out
    assert "holds: 256 units: still below the paper's about 87% at 10 points" in out
    assert "does not hold: 256 units: exact accuracy falls from 10 to 20 to 50 points" in out


def test_hull_sizes_record_at_toy_size_trains_on_the_sizes_it_names(tmp_path, monkeypatch, capsys):
    from attnlab.experiments import pointer_hull_sizes, pointer_networks, record

    monkeypatch.setitem(pointer_hull_sizes.SETTINGS, "hull_steps", 3)
    monkeypatch.setitem(pointer_networks.SETTINGS, "hull_sets", 20)
    seen = []
    original = pointer_networks.convex_hull_data

    def noting(count, n, generator):
        seen.append(n)
        return original(count, n, generator)

    monkeypatch.setattr(pointer_networks, "convex_hull_data", noting)
    validation, _ = pointer_networks.hull_sets()
    seen.clear()
    pointer_networks.train_hull(validation, steps=4, d_hidden=8, sizes=[5, 40])
    assert sorted(seen) == [5, 5, 40, 40] and seen[0] != seen[1]  # one size per batch, cycling through the sizes
    path = tmp_path / "sizes.json"
    with pytest.raises(SystemExit, match="contradicts"):  # three toy steps find no hull at any size
        pointer_hull_sizes.main(["--seeds", "2", "--json", str(path)])
    data = record.load(path)
    assert data["results"]["settings"]["hull_sizes"] == list(range(5, 51))
    runs = data["results"]["runs"]
    assert [run["seed"] for run in runs] == [0, 1]
    assert sorted(runs[0]["hull"]["sizes"], key=int) == ["5", "10", "20", "50"]
    assert "trained on 5 to 50 points" in pointer_hull_sizes.markdown(data)
    assert "holds: 5 to 50 points: still below the paper's about 87% at 10 points" in capsys.readouterr().out
