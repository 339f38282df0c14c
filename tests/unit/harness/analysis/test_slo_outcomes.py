"""A verdict is PASS, FAIL or INCONCLUSIVE by where the figure's 95 % interval lies against its threshold."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from harness.analysis.intervals import Interval, mean_interval, ratio_interval
from harness.analysis.slo import InconclusiveVerdict, SloCheck, assert_verdicts

ROOT = Path(__file__).parents[4]


def around(value: float, half: float) -> Interval:
    return Interval(value, value - half, value + half, 0.95, 60, 4, 14.0)


@pytest.mark.parametrize(("value", "half", "outcome"), [
    (0.95, 0.03, "PASS"),  # all of [0.92, 0.98] meets >= 0.8
    (0.60, 0.05, "FAIL"),  # none of [0.55, 0.65] does
    (0.82, 0.05, "INCONCLUSIVE"),  # 0.8 lies inside [0.77, 0.87]
])
def test_a_ratio_is_judged_by_its_whole_interval(value: float, half: float, outcome: str) -> None:
    check = SloCheck("TPS after / before", value, ">=", 0.8, interval=around(value, half))
    assert check.outcome == outcome
    assert check.passed is (outcome != "FAIL")


def test_an_inconclusive_verdict_shows_its_interval_and_what_would_settle_it() -> None:
    shown = SloCheck("TPS after / before", 0.82, ">=", 0.8, interval=around(0.82, 0.05)).render()
    assert shown.startswith("TPS after / before: 0.82 [0.77, 0.87] (required >= 0.8) INCONCLUSIVE; ")
    assert "longer windows or repeated trials would settle it" in shown


def test_one_lost_commit_fails_and_a_count_is_never_inconclusive() -> None:
    assert SloCheck.lost_commits(1, 0).outcome == "FAIL"
    assert SloCheck.lost_commits(0, 0).outcome == "PASS"
    assert SloCheck.lost_commits(None, 0).outcome == "NOT JUDGED"


def test_a_fail_raises_and_an_inconclusive_is_warned_about_and_returned() -> None:
    unsure = SloCheck("TPS after / before", 0.82, ">=", 0.8, interval=around(0.82, 0.05))
    with pytest.raises(AssertionError, match="SLO violated: failover"):
        assert_verdicts([unsure, SloCheck("failover", 41.0, "<=", 35.0, " s")])
    with pytest.warns(InconclusiveVerdict, match="TPS after / before: 0.82"):
        assert assert_verdicts([unsure, SloCheck("failover", 12.0, "<=", 35.0, " s")]) == [unsure]


def test_the_ratio_interval_covers_the_true_ratio_of_two_autocorrelated_windows() -> None:
    """Two AR(1) windows (phi 0.3, 90 s each, means 1000 and 800): the ratio's 95 % interval holds 0.8 in
    90-99 % of 400 pairs (measured 0.925). It can fail: the numerator's uncertainty alone covers 0.84."""
    rng = np.random.default_rng(7)

    def window(mean: float) -> np.ndarray:
        e = rng.normal(0, 60, 90)
        x = np.empty(90)
        x[0] = e[0]
        for i in range(1, 90):
            x[i] = 0.3 * x[i - 1] + e[i]
        return mean + x

    covered = 0
    for trial in range(400):
        found = ratio_interval(mean_interval(window(800.0), seed=trial), mean_interval(window(1000.0), seed=trial))
        assert found is not None
        covered += found.low <= 0.8 <= found.high
    assert 0.90 <= covered / 400 <= 0.99, covered / 400


SUITE = textwrap.dedent("""\
    import pytest
    from harness.analysis.intervals import Interval
    from harness.analysis.slo import SloCheck, assert_verdicts

    @pytest.mark.scenario("S2")
    def test_unsure():
        assert_verdicts([SloCheck("TPS after / before", 0.82, ">=", 0.8,
                                  interval=Interval(0.82, 0.77, 0.87, 0.95, 60, 4, 14.0))])
    """)


@pytest.mark.parametrize(("policy", "code", "said"), [
    ("flag", 0, "INCONCLUSIVE (not failed: --inconclusive fail)"),
    ("fail", 1, "FAIL  (SLO violated)"),
])
def test_a_run_flags_an_inconclusive_verdict_or_fails_it_for_go_live_acceptance(
        tmp_path: Path, policy: str, code: int, said: str) -> None:
    suite = tmp_path / "test_inconclusive_suite.py"
    suite.write_text(SUITE)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "harness.plugin",
                           str(suite), "--inconclusive", policy, "--rootdir", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == code, done.stdout[-2000:]
    assert said in done.stdout
    assert "TPS after / before: 0.82 [0.77, 0.87]" in done.stdout


OUTAGE_SUITE = textwrap.dedent("""\
    import warnings

    import pytest
    from harness.analysis.slo import Finding

    @pytest.mark.scenario("S1")
    def test_steady_step():
        warnings.warn(Finding("S1 · latency sweep on link: 4 ms step: 9 s without any commit"))
    """)


def test_an_outage_inside_a_steady_window_makes_a_pass_one_with_findings_listed_beside_it(tmp_path: Path) -> None:
    suite = tmp_path / "test_outage_suite.py"
    suite.write_text(OUTAGE_SUITE)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "harness.plugin",
                           str(suite), "--rootdir", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stdout[-2000:]
    assert "finding: S1 · latency sweep on link: 4 ms step: 9 s without any commit" in done.stdout
    assert "S1   PASS with findings" in done.stdout and "1 passed with findings" in done.stdout
