"""A figure measured once tonight (one site failure a night) takes its interval from the spread of its last
nights: tonight's value plus or minus Student t times their standard deviation, which covers the true value
95 % of the time when the nights are draws of the same figure."""

from __future__ import annotations

import numpy as np
import pytest

from harness.analysis.intervals import NIGHTS_MAX, NIGHTS_METHOD, nights_interval
from harness.analysis.slo import SloCheck


@pytest.mark.parametrize("nights", [3, 5, 10])
def test_tonights_value_with_the_nights_spread_covers_the_true_value_about_95_in_100(nights: int) -> None:
    rng = np.random.default_rng(27)
    covered = 0
    for _ in range(2000):
        earlier = rng.normal(6.0, 0.4, size=nights)  # a failover's seconds, one trial a night
        tonight = float(rng.normal(6.0, 0.4))
        found = nights_interval(tonight, list(earlier))
        assert found is not None
        covered += found.contains(6.0)
    assert 0.93 <= covered / 2000 <= 0.97, covered / 2000


def test_under_three_nights_there_is_no_interval_and_only_the_last_ten_count() -> None:
    assert nights_interval(6.0, [5.9, 6.1]) is None
    wild_then_steady = [60.0, 1.0] + [6.0, 6.2] * (NIGHTS_MAX // 2)
    found = nights_interval(6.1, wild_then_steady)
    assert found is not None and found.n == NIGHTS_MAX and found.width < 1.0
    assert found.method == NIGHTS_METHOD and found.value == 6.1


def test_a_threshold_inside_the_nights_interval_is_inconclusive_and_says_repeats_would_settle_it() -> None:
    interval = nights_interval(29.0, [27.0, 31.0, 28.0, 30.5])
    check = SloCheck("failover duration", 29.0, "<=", 30.0, " s", interval=interval, trial_figure=True)
    assert check.outcome == "INCONCLUSIVE"
    assert "last 4 nights" in check.settle() and "--repeat" in check.settle()
