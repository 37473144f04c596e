import pytest

from attnlab.progress import progress
from attnlab.runmode import quick, scaled


def test_line_mode_prints_one_summary_line_with_the_last_postfix(monkeypatch, capsys):
    monkeypatch.setenv("ATTNLAB_PROGRESS", "lines")
    with progress(100, "demo") as bar:
        for step in range(100):
            bar.set_postfix({"loss": f"{1 / (step + 1):.3g}"}, refresh=False)
            bar.update(1)
            assert capsys.readouterr().out == ""  # nothing while the loop runs
    out = capsys.readouterr().out
    assert "\r" not in out and out.count("\n") == 1
    assert out == "demo: 100 steps (loss 0.01)\n", out  # no seconds: the build machine's time


def test_line_mode_says_how_far_a_stopped_loop_got(monkeypatch, capsys):
    monkeypatch.setenv("ATTNLAB_PROGRESS", "lines")
    with progress(10, "short") as bar:
        bar.update(3)
    assert capsys.readouterr().out == "short: 3 of 10 steps\n"


def test_quick_mode_scales_budgets(monkeypatch):
    monkeypatch.setenv("ATTNLAB_QUICK", "1")
    assert quick() and scaled(1000, 3) == 3
    monkeypatch.setenv("ATTNLAB_QUICK", "0")
    assert not quick() and scaled(1000, 3) == 1000


@pytest.mark.parametrize("mode", ["lines", ""])
def test_quiet_shows_nothing_and_ends_with_its_block(monkeypatch, capsys, mode):
    from attnlab.progress import progress, quiet

    monkeypatch.setenv("ATTNLAB_PROGRESS", mode)
    with quiet():
        with progress(3, "inner") as bar:
            bar.update(3)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
    monkeypatch.setenv("ATTNLAB_PROGRESS", "lines")
    with progress(2, "after") as bar:
        bar.update(2)
    assert capsys.readouterr().out.startswith("after: 2 steps")
