"""Stop conditions that can trip while the fault is in effect, and only on what happened since then."""

from __future__ import annotations

import time

import pytest

from harness.safety.guards import ThroughputFloor
from harness_kernel.history.series import TransactionSeries
from harness_kernel.topology.models import Slo


def test_the_floor_counts_only_seconds_since_the_fault_took_effect():
    """Throughput was already low before this fault (a previous one's recovery): that is not this fault's doing."""
    guard = ThroughputFloor(recent_tps=lambda seconds: [0.0] * int(seconds), baseline_tps=500, ratio=0.1,
                            longer_than_s=2)
    assert guard.evaluate() is None, "tripped on seconds before the fault took effect"
    time.sleep(1.0)
    assert guard.evaluate() is None
    time.sleep(2.2)
    assert guard.evaluate() == "TPS stayed below 50 (10% of baseline 500) for 2 s"


def outage_after_baseline(baseline_s: int = 15, tps: int = 100) -> TransactionSeries:
    series = TransactionSeries()
    for second in range(baseline_s):
        for k in range(tps):
            series.record(second + k / tps, 0.01, True)
    return series


@pytest.mark.parametrize("observe_s", [80.0, 2700.0])
def test_a_total_outage_trips_the_experiment_floor_within_the_observe_window(observe_s):
    """The p9 scenario: 15 s at 100 TPS, then nothing at all for the whole observe window."""
    slo = Slo()
    series = outage_after_baseline()
    now = 15.0
    guard = ThroughputFloor.during_fault(recent_tps=lambda s: series.recent_tps(s, now), baseline_tps=100.0,
                                         failover_max_s=slo.failover_max_s, clock=lambda: now)
    tripped_after = None
    while now <= 15.0 + observe_s:
        if guard.evaluate():
            tripped_after = now - 15.0
            break
        now += 0.25
    assert tripped_after is not None, f"a total outage of {observe_s:.0f} s never tripped it"
    assert slo.failover_max_s <= tripped_after <= 2 * slo.failover_max_s


def test_the_experiment_floor_never_trips_on_a_failover_within_the_slo_or_on_steady_load():
    slo = Slo()
    series = outage_after_baseline(baseline_s=15)
    for second in range(15 + 30, 200):  # 30 s without commits (within the 35 s SLO), then back to 100 TPS
        for k in range(100):
            series.record(second + k / 100, 0.01, True)
    now = 15.0
    guard = ThroughputFloor.during_fault(recent_tps=lambda s: series.recent_tps(s, now), baseline_tps=100.0,
                                         failover_max_s=slo.failover_max_s, clock=lambda: now)
    while now < 200:
        assert guard.evaluate() is None, f"tripped at {now - 15:.1f} s"
        now += 0.25
