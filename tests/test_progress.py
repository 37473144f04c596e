from attnlab.progress import progress
from attnlab.runmode import quick, scaled


def test_line_mode_prints_a_few_plain_lines(monkeypatch, capsys):
    monkeypatch.setenv("ATTNLAB_PROGRESS", "lines")
    with progress(100, "demo") as bar:
        for _ in range(100):
            bar.update(1)
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.strip()]
    assert "\r" not in out
    assert 3 <= len(lines) <= 8
    assert lines[-1].startswith("demo: 100%")


def test_quick_mode_scales_budgets(monkeypatch):
    monkeypatch.setenv("ATTNLAB_QUICK", "1")
    assert quick() and scaled(1000, 3) == 3
    monkeypatch.setenv("ATTNLAB_QUICK", "0")
    assert not quick() and scaled(1000, 3) == 1000
