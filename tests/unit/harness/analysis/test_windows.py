"""Windows that mean what their names say: before is the baseline, after the steady state while the fault holds,
recovered the one after the revert; whole seconds only; each says what its mean hides."""

from __future__ import annotations

import pytest

from harness.analysis.impact import impact, window_gaps
from harness_kernel.history.series import SecondPoint


def seconds(*stretches: tuple[float, int]) -> list[SecondPoint]:
    values = [level for level, n in stretches for _ in range(n)]
    return [SecondPoint(t, round(v), 0, None, None, None, {}) for t, v in enumerate(values)]


def test_after_is_the_steady_state_while_the_fault_holds_not_after_its_revert() -> None:
    site_lost = seconds((1000, 20), (0, 5), (800, 15), (1000, 20))  # reverted at 40, back to 1000
    result = impact(site_lost, fault_t=20.0, revert_t=40.0, baseline_s=15, settle_s=2)
    assert result.after is not None and (result.after.start, result.after.end) == (25, 40)
    assert result.after.mean == pytest.approx(800)
    assert result.drop_pct == pytest.approx(20.0), "the recovered 1000 TPS would have hidden the drop"
    assert result.recovered is not None and result.recovered.mean == pytest.approx(1000)


def test_the_seconds_the_fault_began_and_was_reverted_in_are_not_part_of_any_window() -> None:
    points = seconds((1000, 20), (600, 20), (1000, 20))
    result = impact(points, fault_t=20.4, revert_t=40.6, baseline_s=15)
    assert result.before.end == 20 and result.after is not None and result.after.start >= 21
    assert result.after.end == 40, "second 40 holds the revert"


def test_a_last_partial_second_is_left_out_of_the_recovered_window() -> None:
    points = seconds((1000, 20), (600, 20), (1000, 19), (300, 1))  # the workload stopped 0.3 s into second 59
    stopped = impact(points, fault_t=20.0, revert_t=40.0, baseline_s=15, stopped_t=59.3)
    whole = impact(points, fault_t=20.0, revert_t=40.0, baseline_s=15)
    assert stopped.recovered is not None and stopped.recovered.end == 59
    assert stopped.recovered.mean == pytest.approx(1000)
    assert whole.recovered is not None and whole.recovered.mean < 1000, "counted whole, the partial second skews it"


def test_each_window_says_its_seconds_without_commit_and_its_longest_commit_gap() -> None:
    stalled = seconds((1000, 10), (0, 2), (1000, 18), (500, 30))  # two silent seconds inside the baseline
    result = impact(stalled, fault_t=30.0, revert_t=60.0, baseline_s=25, commit_gaps=[(9.8, 12.1), (30.2, 30.9)])
    assert result.gaps["before"].seconds_without_commit == 2
    assert result.gaps["before"].longest_gap_s == pytest.approx(2.3)
    assert result.outages == ["before: 2 s without any commit"]
    assert result.gaps["after"].seconds_without_commit == 0 and result.gaps["after"].longest_gap_s == pytest.approx(0.7)


def test_a_gap_still_open_at_the_stop_counts_to_the_windows_end() -> None:
    gaps = window_gaps([0, 1, 2, 3], [10.0, 10.0, 0.0, 0.0], 0, 4, [(1.5, float("inf"))])
    assert gaps.seconds_without_commit == 2 and gaps.longest_gap_s == pytest.approx(2.5)
