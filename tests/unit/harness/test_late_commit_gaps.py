"""A failover's phases are measured from a workload whose commit gaps reach the timeline late.

Load spread over several machines (`--load-workers`, `--load-scheduler`) learns of its commit
gaps about once a second, from each generator. With `--repeat` the experiment reads each trial's
phases while the load still runs, so it must first ask such a workload for what it has settled:
otherwise the first commit after the outage is missing and the failover is "not measured".

The fault is real (SIGSTOP of a process tree); the workload commits while that process runs.
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
from harness_kernel.history import EventKind
from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.models import Topology
from tests.support.quiet_cluster import QuietCluster
from tests.support.victim import Victim
from workloads.base import LedgerReport, StopReport
from workloads.oltp.gaps import CommitGapDetector

FREEZE = FaultSpec(kind="process-freeze", target="process:victim")
COMMIT_EVERY_S = 0.02


@dataclass
class RemoteLoad:
    """Commits while the victim runs, as a remote generator would: its gaps are kept on a timeline of its own and
    reach the experiment's only when handed over (at stop, or when the experiment asks it to catch up)."""

    victim: Victim
    timeline: Timeline
    series: TransactionSeries
    own: Timeline = field(init=False)
    gaps: CommitGapDetector = field(init=False)
    handed: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.own = Timeline(self.timeline.origin_monotonic, self.timeline.origin_wall)
        self.gaps = CommitGapDetector(self.own, "remote-load", threshold_s=0.2)

    name = "remote-load"
    keeps_ledger = False

    def start(self) -> None:
        self._thread = threading.Thread(target=self._commit, daemon=True)
        self._thread.start()

    def _commit(self) -> None:
        while not self._stop.wait(COMMIT_EVERY_S):
            if self.victim.running():
                t = self.timeline.now()
                self.series.record(t, COMMIT_EVERY_S, True)
                self.gaps.committed(t)

    def catch_up(self) -> None:
        with self._lock:
            closed = self.own.events(EventKind.COMMIT_GAP)[self.handed:]
            self.handed += len(closed)
        for gap in closed:
            self.timeline.record(EventKind.COMMIT_GAP, self.name, t=gap.t, **gap.attrs)

    def stop(self) -> StopReport:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self.gaps.close(self.timeline.now())
        self.catch_up()
        return StopReport(self.name, stuck=[], crashed=[])

    def verify(self) -> LedgerReport | None:
        return None


@pytest.fixture
def experiment(topology: Topology, topology_file: Path, state: Path, victim: Victim) -> Iterator[Experiment]:
    timeline, series = Timeline(), TransactionSeries()
    run = Experiment(harness_run=HarnessRun(topology=topology, topology_source=str(topology_file), state_dir=state,
                                        allow_destructive=True),
                     cluster=QuietCluster(),  # type: ignore[arg-type]
                     timeline=timeline, progress=Progress(lambda _: None, quiet=True),
                     workloads=[RemoteLoad(victim, timeline, series)], series=series,
                     durations=PhaseDurations(baseline_s=2.5, observe_s=1.5, settle_s=1.0, steady_window_s=1))
    with run:
        yield run


@pytest.mark.reproducer("AF-1")
def test_every_trial_measures_its_first_commit_from_gaps_a_workload_hands_over_late(experiment: Experiment) -> None:
    trials = experiment.run_failures(lambda cluster: FREEZE, repeats=2)
    for trial in trials:
        phases = trial.phases
        assert phases.last_commit is not None and phases.first_commit is not None, phases
        assert phases.total_s is not None and 1.3 < phases.total_s < 1.5 + 1.0, phases
        # the last commit lands within a few ms of the freeze taking effect, on either side of it
        assert phases.client_rto_s is not None and abs(phases.client_rto_s - phases.total_s) < 0.3, phases
        assert experiment.timeline.first(EventKind.FIRST_COMMIT, after=trial.in_effect_t) is not None
