"""The OLTP driver and its checkers against real failovers in the lab.

A crash under load shows as a zero-TPS gap whose reported length matches the timeline,
with no acknowledged commit lost while replication is synchronous; with replication made
asynchronous and the primary killed before its last commits reached the standby, the
ledger *finds* the loss.
"""

from __future__ import annotations

import signal
import time

from faults.base import FaultSpec
from harness.analysis.phases import failover_phases
from harness.safety.runner import FaultRunner
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.models import Topology
from harness_lab.controller import Lab
from tests.integration.lab.lab_support import FaultBuilder
from workloads.oltp import OltpDriver


def wait_for_commits(driver: OltpDriver, timeline: Timeline, seconds: float) -> None:
    time.sleep(seconds)
    assert driver.series.last_commit_t is not None and driver.series.last_commit_t > timeline.now() - 1.0


def test_a_crash_under_load_is_a_zero_tps_gap_whose_length_matches_the_timeline(
        lab: Lab, topology: Topology, runner: FaultRunner, factory: FaultBuilder, load: OltpDriver) -> None:
    timeline = runner.timeline
    wait_for_commits(load, timeline, 5)
    primary = lab.primary()
    spec = FaultSpec("host-crash", f"host:{primary.replace('node', 'host')}")
    with runner.inject(factory.build(spec, topology)) as active:
        active.sleep(15)
    lab.wait_healthy(90)
    wait_for_commits(load, timeline, 3)
    load.stop()
    ledger = load.verify()

    phases = failover_phases(timeline, active.injected_at)
    assert phases.last_commit is not None and phases.first_commit is not None
    assert active.injected_at - 1.0 <= phases.last_commit <= active.injected_at + 0.2, "the outage starts at the crash"
    assert phases.client_rto_s is not None and 2.0 <= phases.client_rto_s <= 20.0
    outage_seconds = [p for p in load.series.points(int(phases.last_commit) + 1, int(phases.first_commit)) if p.tps == 0]
    assert len(outage_seconds) >= int(phases.client_rto_s) - 1, "the per-second series shows the gap"
    assert lab.primary() != primary
    assert ledger.lost_count == 0, ledger.summary()


def test_the_ledger_finds_acknowledged_commits_lost_by_an_asynchronous_failover(
        lab: Lab, topology: Topology, load: OltpDriver) -> None:
    timeline = load.timeline
    primary = lab.primary()
    standby = "node-b" if primary == "node-a" else "node-a"
    lab.pg.set_replication_quorum(standby, False)  # asynchronous: the primary acknowledges alone
    try:
        wait_for_commits(load, timeline, 3)
        lab.signal_node(standby, signal.SIGSTOP)  # the standby stops receiving WAL...
        time.sleep(3)  # ...while the primary keeps acknowledging commits it alone holds
        lab.kill_node(primary)
        lab.signal_node(standby, signal.SIGCONT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            roles = {n.name: n.reportedstate for n in lab.nodes()}
            if roles.get(standby) in ("wait_primary", "primary", "single"):
                break
            time.sleep(0.5)
        assert roles.get(standby) in ("wait_primary", "primary", "single"), roles
        time.sleep(3)
        load.stop()
        ledger = load.verify()
        assert ledger.lost_count > 0, ledger.summary()
        print(ledger.summary())
    finally:
        lab.signal_node(standby, signal.SIGCONT)
        lab.start_node(primary)
        lab.pg.set_replication_quorum(standby, True)
        if not _heals(lab):
            lab.rebuild()


def _heals(lab: Lab) -> bool:
    """The old primary holds commits the new one lacks: pg_auto_failover rewinds it or the lab is rebuilt."""
    try:
        lab.wait_healthy(90)
    except Exception:
        return False
    return True
