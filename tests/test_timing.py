import math
import time

import pytest
import torch

from attnlab.timing import StepTimes, decoding_step_seconds, fastest_seconds


def test_times_are_seconds_per_call_and_keep_their_order():
    times = fastest_seconds(
        {"short": lambda: time.sleep(0.001), "long": lambda: time.sleep(0.004)},
        rounds=2,
        min_run_time=0.05,
    )
    assert list(times) == ["short", "long"]
    # sleep never returns early; a busy machine only makes it longer
    assert 0.001 <= times["short"] < 0.004 <= times["long"] < 0.02


def test_a_slow_spell_in_one_round_does_not_decide_the_time():
    # the first round of a 20 ms call at 0.05 s a round makes 4 calls
    calls = {"n": 0}

    def slow_in_the_first_round():
        calls["n"] += 1
        time.sleep(0.02 if calls["n"] <= 4 else 0.001)

    one_round = fastest_seconds(
        {"call": slow_in_the_first_round}, rounds=1, min_run_time=0.05
    )
    calls["n"] = 0
    three_rounds = fastest_seconds(
        {"call": slow_in_the_first_round}, rounds=3, min_run_time=0.05
    )
    assert one_round["call"] >= 0.02
    assert three_rounds["call"] < 0.01


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rounds": 0}, "rounds must be at least 1, got 0"),
        ({"min_run_time": 0.0}, "min_run_time must be positive, got 0.0"),
    ],
)
def test_bad_settings_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        fastest_seconds({"call": lambda: None}, **kwargs)


def test_nothing_to_time_is_an_error():
    with pytest.raises(ValueError, match="at least one call"):
        fastest_seconds({})


def _tiny_transformer_and_source():
    from attnlab.transformer import Transformer

    torch.manual_seed(0)
    model = Transformer(9, 11, d_model=8, n_heads=2, n_layers=1)
    src = torch.randint(3, 9, (2, 4))
    return model, src, torch.ones(2, 4, dtype=torch.bool)


def test_decoding_step_seconds_times_each_length_with_and_without_the_cache():
    model, src, src_mask = _tiny_transformer_and_source()
    model.train()
    times = decoding_step_seconds(
        model, src, src_mask, [2, 5], rounds=1, min_run_time=0.002
    )
    assert times.lengths == (2, 5)
    assert len(times.cached) == len(times.uncached) == len(times.ratios) == 2
    seconds = [*times.cached, *times.uncached, times.overhead]
    assert all(math.isfinite(s) and s > 0 for s in seconds)
    assert model.training  # the model is handed back in the mode it came in


@pytest.mark.parametrize("lengths", [[], [0, 3], [4, 2], [2, 2]])
def test_decoding_step_seconds_names_bad_lengths(lengths):
    model, src, src_mask = _tiny_transformer_and_source()
    with pytest.raises(
        ValueError, match="lengths must be increasing output lengths"
    ):
        decoding_step_seconds(model, src, src_mask, lengths)


def test_the_length_where_the_cache_pays_is_interpolated_in_log_length():
    times = StepTimes((1, 10, 100), (1.0, 1.0, 1.0), (1.0, 1.5, 3.0), overhead=1.0)
    assert times.ratios == pytest.approx((1.0, 1.5, 3.0))
    # the ratio 2 lies a third of the way from 1.5 to 3: a third of a decade above 10
    assert times.length_where(2.0) == pytest.approx(10 ** (4 / 3))
    assert times.length_where(1.0) == 1.0
    assert times.length_where(4.0) is None


def test_importing_the_timer_logs_nothing_on_a_cpu_machine_with_nvcc(tmp_path):
    """Colab's CPU runtime has nvcc: torch.utils.cpp_extension, which the benchmark timer imports, logs
    "No CUDA runtime is found" there (torch 2.11). A chapter's imports show no such line, nor does timing."""
    import os
    import subprocess
    import sys

    nvcc = tmp_path / "cuda" / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.5'\n")
    nvcc.chmod(0o755)
    env = {**os.environ, "PATH": f"{nvcc.parent}:{os.environ['PATH']}"}
    code = ("import sys, logging\n"
            "import attnlab.timing as t\n"
            "assert 'torch.utils.benchmark' not in sys.modules, 'the timer is imported with attnlab.timing'\n"
            "t.fastest_seconds({'a': lambda: None}, rounds=1, min_run_time=0.01)\n"
            "assert 'torch.utils.benchmark' in sys.modules\n"
            "level = logging.getLogger('torch.utils.cpp_extension').level\n"
            "assert level == logging.NOTSET, level\n")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "CUDA" not in result.stderr + result.stdout, result.stderr
