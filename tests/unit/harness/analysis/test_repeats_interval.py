"""A figure repeated over independent trials: the median with an interval that covers the true value 95 % of the
time, measured here on normal and heavy-tailed trials."""

from __future__ import annotations

import numpy as np
import pytest

from harness.analysis.intervals import repeats_interval


@pytest.mark.parametrize("n", [3, 5, 9])
def test_the_interval_of_repeated_trials_covers_the_true_value_about_95_in_100(n: int) -> None:
    rng = np.random.default_rng(26)
    covered = 0
    for _ in range(1000):
        trials = rng.normal(6.5, 0.8, size=n)  # a failover's seconds, trial by trial
        found = repeats_interval(list(trials))
        assert found is not None
        covered += found.contains(6.5)
    assert 0.92 <= covered / 1000 <= 0.995, covered / 1000


def test_one_trial_has_no_interval_and_the_value_is_the_median() -> None:
    assert repeats_interval([7.0]) is None
    found = repeats_interval([6.0, 6.4, 9.9])
    assert found is not None and found.value == 6.4 and found.n == 3 and found.low < 6.4 < found.high
