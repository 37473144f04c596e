import pytest
import torch
from torch import nn

from attnlab.train import History, seed_everything, train


def regression_problem(seed: int = 0):
    gen = seed_everything(seed)
    true_w = torch.randn(3, 1, generator=gen)

    def next_batch(step: int):
        x = torch.randn(16, 3, generator=gen)
        return x, x @ true_w

    def loss_fn(model, batch):
        x, y = batch
        return nn.functional.mse_loss(model(x), y)

    return nn.Linear(3, 1), next_batch, loss_fn


def test_training_reduces_the_loss_and_records_history():
    model, next_batch, loss_fn = regression_problem()
    history = train(model, next_batch, loss_fn, steps=200, batch_size=16, lr=0.05, desc="test")
    assert len(history.loss) == 200 and history.examples == 200 * 16 and history.seconds > 0
    assert history.loss[-1] < 0.01 * history.loss[0]
    assert len(history.smoothed_loss(10)) == 200


def test_same_seed_same_run():
    runs = []
    for _ in range(2):
        model, next_batch, loss_fn = regression_problem(seed=5)
        runs.append(train(model, next_batch, loss_fn, steps=20, batch_size=16).loss)
    assert runs[0] == runs[1]


def test_best_checkpoint_is_restored():
    model, next_batch, loss_fn = regression_problem()
    counter = iter(range(100))

    def evaluate(m):  # pretend the second evaluation was the best
        i = next(counter)
        return {"score": 1.0 if i == 1 else 0.0, "weight": m.weight.sum().item()}

    history = train(model, next_batch, loss_fn, steps=40, batch_size=16, lr=0.05, evaluate=evaluate,
                    eval_every=10, best=("score", "max"))
    assert history.best_step == 20
    steps, weights = history.metric("weight")
    assert steps == [10, 20, 30, 40]
    assert model.weight.sum().item() == pytest.approx(weights[1])


def test_lr_factor_changes_the_learning_rate():
    model, next_batch, loss_fn = regression_problem()
    frozen = train(model, next_batch, loss_fn, steps=5, batch_size=16, lr_factor=lambda step: 0.0)
    assert isinstance(frozen, History)
    before = model.weight.detach().clone()
    train(model, next_batch, loss_fn, steps=5, batch_size=16, lr_factor=lambda step: 0.0)
    torch.testing.assert_close(model.weight.detach(), before)


def test_non_finite_loss_stops_training():
    model, next_batch, _ = regression_problem()
    with pytest.raises(FloatingPointError, match="loss became nan at step 1"):
        train(model, next_batch, lambda m, b: torch.tensor(float("nan"), requires_grad=True), steps=3, batch_size=1)


def test_bad_arguments_are_explained():
    model, next_batch, loss_fn = regression_problem()
    with pytest.raises(ValueError, match="steps must be >= 1, got 0"):
        train(model, next_batch, loss_fn, steps=0, batch_size=1)
    with pytest.raises(ValueError, match="best needs an evaluate function"):
        train(model, next_batch, loss_fn, steps=1, batch_size=1, best=("loss", "min"))
