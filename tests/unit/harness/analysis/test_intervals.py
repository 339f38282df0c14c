"""The interval method, judged by what it promises: a 95 % interval covers the true mean about 95 % of the time.

On synthetic AR(1) series (x_t = phi x_{t-1} + e_t around a known mean), the shape of per-second throughput:
a slow second is followed by slow seconds. 500 series per case, fixed seeds.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.analysis import intervals
from harness.analysis.intervals import block_length, mean_interval, t_quantile

MEAN = 1000.0
TRIALS = 500


def ar1(n: int, phi: float, rng: np.random.Generator) -> np.ndarray:
    noise = rng.normal(0.0, 50.0, n + 200)
    x = np.empty_like(noise)
    x[0] = noise[0]
    for i in range(1, len(noise)):
        x[i] = phi * x[i - 1] + noise[i]
    return MEAN + x[200:]  # the first 200 let the series forget its start


def coverage(n: int, phi: float, seed: int) -> float:
    rng = np.random.default_rng(seed)
    return sum(mean_interval(ar1(n, phi, rng), seed=trial).contains(MEAN) for trial in range(TRIALS)) / TRIALS


@pytest.mark.parametrize(("n", "phi"), [(120, 0.3), (300, 0.6)], ids=["2-min-window-mild", "5-min-window-strong"])
def test_the_95_percent_interval_covers_the_true_mean_in_90_to_98_percent_of_trials(n: int, phi: float) -> None:
    covered = coverage(n, phi, seed=20261126)
    print(f"\nn={n} phi={phi}: coverage {covered:.3f} over {TRIALS} series")
    assert 0.90 <= covered <= 0.98


def test_the_check_can_fail_an_iid_bootstrap_covers_too_little(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of one second (an i.i.d. bootstrap) ignore the autocorrelation: the same check fails."""
    monkeypatch.setattr(intervals, "block_length", lambda series: 1)
    monkeypatch.setattr(intervals, "_dependence", lambda series: None)
    covered = coverage(300, 0.6, seed=20261126)
    print(f"\ni.i.d. bootstrap, n=300 phi=0.6: coverage {covered:.3f}")
    assert covered < 0.90


def test_the_block_grows_with_the_autocorrelation_and_is_one_for_white_noise() -> None:
    rng = np.random.default_rng(3)
    blocks = {phi: block_length(ar1(600, phi, rng)) for phi in (0.0, 0.4, 0.8)}
    assert blocks[0.0] == 1 and blocks[0.0] < blocks[0.4] < blocks[0.8], blocks


def test_an_interval_says_how_it_was_made_and_is_repeatable() -> None:
    series = ar1(120, 0.3, np.random.default_rng(5))
    first, again = mean_interval(series, seed=1), mean_interval(series, seed=1)
    assert first == again and first.low < first.value < first.high
    assert (first.level, first.n, first.method) == (0.95, 120, intervals.METHOD)
    assert first.df == pytest.approx(120 / first.block - 1)


def test_a_constant_series_has_no_width_and_two_samples_span_their_range() -> None:
    assert mean_interval([5.0] * 30).width == 0.0
    assert (mean_interval([1.0, 3.0]).low, mean_interval([1.0, 3.0]).high) == (1.0, 3.0)
    with pytest.raises(ValueError, match="at least one sample"):
        mean_interval([])


@pytest.mark.parametrize(("df", "exact"), [(1, 12.7062), (2, 4.3027), (5, 2.5706), (9, 2.2622), (30, 2.0423)])
def test_t_quantiles_match_the_tables(df: float, exact: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(exact, abs=1e-3)
