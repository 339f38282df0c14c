"""The checkers turn a history into numbers; each definition is pinned down here."""

from __future__ import annotations

import random

import pytest

from harness.analysis.align import align
from harness.analysis.impact import impact
from harness.analysis.phases import failover_phases
from harness.analysis.resync import completed_at, eta_accuracy, mean_rate_bps, progress
from harness.analysis.slo import SloCheck, assert_verdicts
from harness.analysis.steady import SteadyBand, recovered_at, segments
from harness_kernel.history import EventKind
from harness_kernel.history.series import SecondPoint
from harness_kernel.history.server import ServerEvent, measure_offset
from harness_kernel.history.timeline import Timeline


def series(*stretches: tuple[float, int], noise: float = 0.04, seed: int = 7) -> list[SecondPoint]:
    """Per-second points made of (level, seconds) stretches with proportional noise."""
    rng = random.Random(seed)
    values = [max(0.0, lvl + rng.gauss(0, noise * lvl)) if lvl else 0.0 for lvl, n in stretches for _ in range(n)]
    return [SecondPoint(t, round(v), 0, None, None, None, {}) for t, v in enumerate(values)]


CRASH = series((520, 30), (0, 6), (900, 20), (520, 30))  # the lab's crash shape: async until the rejoin


def test_a_crash_splits_into_baseline_outage_async_and_rejoined_segments():
    found = segments([p.t for p in CRASH], [p.tps for p in CRASH], SteadyBand())
    assert [(s.start, s.end) for s in found] == [(0, 30), (30, 36), (36, 56), (56, 86)]
    assert [s.mean for s in found] == pytest.approx([520, 0, 900, 520], rel=0.05)


def test_time_to_recover_is_the_start_of_the_first_steady_window_after_the_fault():
    result = impact(CRASH, fault_t=30.0, revert_t=56.0, baseline_s=20)
    assert result.recovered_at == 36
    assert result.time_to_recover_s == pytest.approx(6.0)
    assert result.outage_s == 6
    assert result.before.mean == pytest.approx(520, rel=0.05)
    assert result.after is not None and result.after.mean == pytest.approx(900, rel=0.05), "while the fault held"
    assert result.recovered is not None and result.recovered.mean == pytest.approx(520, rel=0.05)
    assert result.drop_pct == pytest.approx(-73, abs=5)  # faster while asynchronous: a negative drop


def test_a_degraded_but_steady_state_is_a_recovery_at_a_lower_level():
    degraded = series((1800, 60), (300, 5), (1640, 120))
    result = impact(degraded, fault_t=60.0, revert_t=None, baseline_s=60)
    assert result.time_to_recover_s == pytest.approx(5.0)
    assert result.drop_pct == pytest.approx(100 * (1800 - 1640) / 1800, abs=2)
    assert result.recovered is None


def test_no_recovery_is_reported_as_none_not_as_a_number():
    dead = series((500, 30), (0, 60))
    result = impact(dead, fault_t=30.0, revert_t=None, baseline_s=30)
    assert result.recovered_at is None and result.time_to_recover_s is None and result.after is None


def test_a_noisy_window_is_not_steady():
    values = [500.0, 100.0] * 10
    assert recovered_at(list(range(20)), values, 0, SteadyBand()) is None


def test_failover_phases_come_from_exact_commit_times_and_aligned_server_events():
    timeline = Timeline(origin_monotonic=0.0, origin_wall=1000.0)
    timeline.record(EventKind.IN_EFFECT, "runner", t=10.0)
    timeline.record(EventKind.COMMIT_GAP, "oltp", t=16.5, start=9.98, end=16.5, first_error=10.2, errors=40)
    timeline.record(EventKind.COMMIT_GAP, "oltp", t=30.0, start=29.0, end=29.6, first_error=None, errors=0)
    server_clock_ahead = 2.0
    events = [ServerEvent(1000 + 12.0 + server_clock_ahead, EventKind.DETECTED, "monitor", "node-a unhealthy"),
              ServerEvent(1000 + 15.1 + server_clock_ahead, EventKind.PROMOTED, "monitor", "node-b primary")]
    assert align(events, server_clock_ahead, timeline) == 2
    phases = failover_phases(timeline, in_effect=10.0)
    assert phases.detect_s == pytest.approx(2.0)
    assert phases.promote_s == pytest.approx(3.1)
    assert phases.first_commit_after_promote_s == pytest.approx(1.4)
    assert phases.total_s == pytest.approx(6.5)
    assert phases.client_rto_s == pytest.approx(6.52)


def test_clock_offset_uses_the_round_trip_with_the_least_delay():
    clock = iter([0.0, 10.0, 1.0, 1.04, 2.0, 3.0])
    server = iter([110.0, 101.02, 111.0])
    offset = measure_offset(lambda: next(server), lambda: next(clock), samples=3)
    assert offset == pytest.approx(101.02 - 1.02)


def test_resync_rate_eta_and_eta_accuracy():
    samples = [(float(t), max(0.0, 6e9 - 1e8 * t)) for t in range(0, 65, 5)]
    points = progress(samples, window_s=10)
    assert completed_at(samples) == 60.0
    assert points[3].rate_bps == pytest.approx(1e8)
    assert points[3].eta_s == pytest.approx((6e9 - 1.5e9) / 1e8)
    accuracy = eta_accuracy(points, done_t=60.0)
    assert accuracy is not None and accuracy.worst_error_s == pytest.approx(0.0, abs=1e-6)
    assert mean_rate_bps(samples) == pytest.approx(1e8)


def test_slo_verdicts_fail_with_every_miss_named():
    verdicts = [SloCheck("failover", 41.0, "<=", 35, " s"), SloCheck("lost commits", 0, "<=", 0),
                SloCheck("TPS after / before", None, ">=", 0.8)]
    with pytest.raises(AssertionError) as caught:
        assert_verdicts(verdicts)
    message = str(caught.value)
    assert "failover: 41.00 s (required <= 35 s) VIOLATED" in message
    assert "TPS after / before: not measured" in message
    assert "lost commits" not in message


def test_an_outage_that_never_ended_has_no_first_commit_and_no_rto():
    timeline = Timeline(origin_monotonic=0.0, origin_wall=0.0)
    timeline.record(EventKind.COMMIT_GAP, "oltp", t=9.9, start=9.9, end=None, first_error=10.1, errors=12)
    phases = failover_phases(timeline, in_effect=10.0)
    assert phases.last_commit == 9.9 and phases.first_commit is None
    assert phases.total_s is None and phases.client_rto_s is None


def test_a_recovery_reached_only_after_revert_still_counts():
    host_down = series((600, 30), (0, 12), (590, 30))
    result = impact(host_down, fault_t=30.0, revert_t=38.0, baseline_s=20)
    assert result.recovered_at == 42 and result.time_to_recover_s == pytest.approx(12.0)
    assert result.after is None and result.recovered is not None, "no steady state while the fault held"
