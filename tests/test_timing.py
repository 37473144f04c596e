import time

import pytest

from attnlab.timing import fastest_seconds


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
