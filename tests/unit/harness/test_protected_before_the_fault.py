"""A fault starts from the protection the cluster promises, or not at all.

A cluster can lose a copy during the baseline (a standby falls behind under load and the primary
goes on alone: pg_auto_failover's `wait_primary`). A switchover asked for then promotes a node
that lacks the last commits: the demo once measured 9,636 acknowledged commits lost that way,
the cluster's state at inject, not the product's failover. So after its baseline a trial reads
the cluster once more: unhealthy, it waits (bounded) for the cluster to be whole, takes a new
baseline, then injects; never whole again, it is a harness error naming the cluster's state,
with no fault injected.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from faults.base import FaultSpec
from harness.experiment import Experiment
from harness.phases import PhaseDurations
from harness.progress import Progress
from harness.safety.run import HarnessRun
from harness_kernel.errors import HarnessError
from harness_kernel.history import EventKind
from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.models import Topology
from tests.support.quiet_cluster import QuietCluster
from tests.support.victim import Victim
from workloads.base import LedgerReport, StopReport

FREEZE = FaultSpec(kind="process-freeze", target="process:victim")
UNPROTECTED = "node-a catchingup, node-b wait_primary"


@dataclass
class LosesACopyDuringTheBaseline(QuietCluster):
    """Healthy, except for `unhealthy_reads` reads once the first baseline has begun; each read is timed."""

    timeline: Timeline = field(default_factory=Timeline)
    unhealthy_reads: int = 0
    unhealthy_at: list[float] = field(default_factory=list)

    def preflight(self) -> None:
        if self.timeline.first(EventKind.BASELINE_START) is not None and len(self.unhealthy_at) < self.unhealthy_reads:
            self.unhealthy_at.append(self.timeline.now())
            raise HarnessError(f"not healthy: {UNPROTECTED}")


@dataclass
class SteadyLoad:
    """A commit every 20 ms into the series, whatever the cluster says: the figures are not this spec's subject."""

    timeline: Timeline
    series: TransactionSeries
    name: str = "steady-load"
    keeps_ledger: bool = False
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        threading.Thread(target=self._commit, daemon=True).start()

    def _commit(self) -> None:
        while not self._stop.wait(0.02):
            self.series.record(self.timeline.now(), 0.02, True)

    def stop(self) -> StopReport:
        self._stop.set()
        return StopReport(self.name, stuck=[], crashed=[])

    def verify(self) -> LedgerReport | None:
        return None


def experiment_on(cluster: LosesACopyDuringTheBaseline, topology: Topology, topology_file: Path,
                  state: Path, recover_timeout_s: float = 30.0) -> Experiment:
    series = TransactionSeries()
    return Experiment(harness_run=HarnessRun(topology=topology, topology_source=str(topology_file), state_dir=state,
                                         allow_destructive=True),
                      cluster=cluster,  # type: ignore[arg-type]
                      timeline=cluster.timeline, progress=Progress(lambda _: None, quiet=True),
                      workloads=[SteadyLoad(cluster.timeline, series)], series=series,
                      durations=PhaseDurations(baseline_s=1.0, observe_s=0.5, settle_s=0.2, steady_window_s=1,
                                               recover_timeout_s=recover_timeout_s))


@pytest.fixture
def victim_running(victim: Victim) -> Iterator[Victim]:
    yield victim
    assert victim.running(), "the fault was reverted (or never injected)"


@pytest.mark.reproducer("Y-protected-before-fault")
def test_a_copy_lost_during_the_baseline_is_waited_for_and_the_baseline_taken_again_before_the_fault(
        topology: Topology, topology_file: Path, state: Path, victim_running: Victim) -> None:
    cluster = LosesACopyDuringTheBaseline(Timeline(), unhealthy_reads=3)
    with experiment_on(cluster, topology, topology_file, state) as experiment:
        [trial] = experiment.run_failures(lambda _: FREEZE, repeats=1)
    baselines = [e.t for e in cluster.timeline.events(EventKind.BASELINE_START)]
    assert len(cluster.unhealthy_at) == 3
    assert len(baselines) == 2, "a new baseline once the cluster is whole again"
    assert baselines[1] > cluster.unhealthy_at[-1]
    assert trial.in_effect_t >= baselines[1] + 1.0, "the fault comes after a whole baseline of the protected cluster"


@pytest.mark.reproducer("Y-protected-before-fault")
def test_a_cluster_never_whole_again_is_a_harness_error_naming_its_state_and_nothing_is_injected(
        topology: Topology, topology_file: Path, state: Path, victim_running: Victim) -> None:
    cluster = LosesACopyDuringTheBaseline(Timeline(), unhealthy_reads=10_000)
    with pytest.raises(HarnessError, match="before the fault.*" + UNPROTECTED), \
            experiment_on(cluster, topology, topology_file, state, recover_timeout_s=2.0) as experiment:
        experiment.run_failures(lambda _: FREEZE, repeats=1)
    assert cluster.timeline.first(EventKind.INJECT) is None
