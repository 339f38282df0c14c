"""One experiment under load: steady-state baseline → inject → observe → revert → recover.

Chaos-Toolkit shaped: the workload runs for the whole experiment, every phase is a step
on the timeline (and an Allure step through `phase`), faults go through the harness run's
lifecycle (journal, guards, guaranteed revert), and the findings are computed afterwards
from the timeline and the series alone. What is observed beside the workload (resync,
copies, metro states, platform observers, the replication mode) is one watcher each
(`harness.watchers`), sampled by one scheduler: the experiment keeps the workloads, the
phases and the findings.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from types import TracebackType

from faults.base import FaultSpec, Operation, OperationProgress
from faults.contract import ClusterPart, Observer
from faults.metro import MetroWatch, ObservesMetro
from harness.analysis.align import align
from harness.analysis.impact import Impact, impact
from harness.analysis.phases import FailoverPhases, failover_phases
from harness.analysis.redundancy import CopiesPoint, RiskSpan, promised_copies, risk_spans, time_at_risk
from harness.analysis.replication import AFTER, BEFORE, DURING, START, ReplicationReading, weaker_than_policy
from harness.analysis.resync import ResyncPoint, completed_at, progress
from harness.analysis.slo import SloCheck
from harness.analysis.steady import SteadyBand
from harness.clusters import (
    Cluster,
    CountsCopies,
    FailoverForecast,
    Forecasting,
    ReadsReplication,
    ReplicationState,
)
from harness.phases import PhaseDurations
from harness.progress import Progress
from harness.safety.guards import Guard, ThroughputFloor
from harness.safety.run import HarnessRun
from harness.safety.runner import ActiveFault
from harness.watchers import CopiesWatch, ObserverWatch, ReplicationWatch, ResyncWatch, Watches
from harness_kernel.errors import HarnessError, StopConditionTripped
from harness_kernel.history import EventKind
from harness_kernel.history.series import MetricSeries, TransactionSeries
from harness_kernel.history.timeline import Timeline
from workloads.base import CatchesUp, LedgerReport, Monitored, StopReport, Workload

log = logging.getLogger(__name__)

PhaseStep = Callable[[str, str], AbstractContextManager[None]]
REPLICATION_SETTLE_S = 30.0  # how long a recovery waits for the replication mode it put back to be in effect


@contextmanager
def no_step(name: str, detail: str) -> Iterator[None]:
    yield


@dataclass
class Findings:
    """What one fault did, computed from the timeline and the series after the run."""

    spec: FaultSpec
    in_effect_t: float
    revert_t: float
    healthy_t: float | None
    primary_before: str
    primary_after: str
    impact: Impact
    phases: FailoverPhases
    resync: list[ResyncPoint]
    resync_done_t: float | None
    forecast: FailoverForecast | None = None  # what the cluster predicted before the fault
    # fewer in-sync copies than before the fault, from the cluster's own probe; None: the cluster gave no count
    at_risk: list[RiskSpan] | None = None
    end_t: float = 0.0  # the trial's last moment (after its settle): an open span counts up to it

    @property
    def at_risk_s(self) -> float | None:
        """Seconds with fewer copies than promised (None: the cluster said nothing of its copies)."""
        return None if self.at_risk is None else time_at_risk(self.at_risk, self.end_t)


@dataclass
class Experiment:
    harness_run: HarnessRun
    cluster: Cluster
    timeline: Timeline
    progress: Progress
    workloads: Sequence[Workload]  # the first writes `series` (TPS); others (fio) run beside it
    durations: PhaseDurations = field(default_factory=PhaseDurations)
    step: PhaseStep = no_step
    series: TransactionSeries = field(default_factory=TransactionSeries)
    parts: Sequence[ClusterPart] = ()  # platforms from plug-ins: judged with the cluster before a fault
    observers: Mapping[str, Observer] = field(default_factory=dict)  # sampled every second beside the resync
    ledger: LedgerReport | None = None
    stop_report: StopReport | None = None
    degraded_on_purpose: bool = False  # N-1: started while a fault the test holds keeps the cluster degraded
    repeats: int = 1  # trials of each fault case (`--repeat`)
    halted: list[str] = field(default_factory=list)  # trials a guard stopped early, and why
    _running: bool = False
    _start_wall: float = 0.0
    watches: Watches = field(default_factory=Watches)
    _resync: ResyncWatch = field(init=False)
    _observed: ObserverWatch = field(init=False)
    _copies: CopiesWatch | None = None  # from the first trial on, where the cluster counts its copies
    _metro: MetroWatch | None = None  # where something reads a metro storage's states
    _replication: ReplicationWatch = field(init=False)
    found_replication: ReplicationState | None = None  # as the experiment found it: what each recovery puts back
    accept_weaker_replication: bool = False  # `--accept-weaker-replication`: judge lost commits all the same
    put_back: list[str] = field(default_factory=list)  # replication settings a recovery had to put back, as said

    def __post_init__(self) -> None:
        self._resync = ResyncWatch(self.cluster, self.timeline)
        self._observed = ObserverWatch(self.observers, self.timeline)
        self._replication = ReplicationWatch(self.cluster, self.timeline)

    # -- what is watched, as the findings and the report read it ------------------------
    @property
    def resync_bytes(self) -> MetricSeries:
        return self._resync.bytes_left

    @property
    def resync_eta(self) -> list[float | None]:
        return self._resync.eta

    @property
    def observed(self) -> dict[str, MetricSeries]:
        """"<observer>: <figure>" -> its series."""
        return self._observed.series

    @property
    def copies(self) -> list[CopiesPoint]:
        """The cluster's copies probe, about once a second (empty: not probed)."""
        return self._copies.readings() if self._copies is not None else []

    @property
    def replication(self) -> list[ReplicationReading]:
        """The replication mode the cluster said it ran with, before, during and after each fault."""
        return self._replication.readings

    # -- workload lifetime -------------------------------------------------------------
    def __enter__(self) -> Experiment:
        if not self.degraded_on_purpose:
            self._preflight()
        self._start_wall = time.time()
        if self.degraded_on_purpose:  # N-1: a fault the test holds is in effect already
            self.read_replication(DURING)
        else:
            self.found_replication = self.read_replication(START)
        for workload in self.workloads:
            workload.start()
        self._running = True
        self.watches.start(self._resync)
        self.watches.start(self._observed)
        self._watch_metro({n: o for n, o in self.observers.items() if isinstance(o, ObservesMetro)})
        return self

    def _count_copies(self) -> None:
        """Start probing the cluster's in-sync copies (once, from the first trial's baseline on): only experiments
        that judge the time at risk pay for the probe's queries."""
        if self._copies is None and isinstance(self.cluster, CountsCopies):
            self._copies = CopiesWatch(self.cluster, self.timeline)
            self.watches.start(self._copies)

    def watch_metro(self) -> bool:
        """Read the cluster's own metro states too (the lab's HA manager, in the metro state set) from now on:
        only experiments about what the storage decides pay for its queries. Observers that read a metro
        storage (a VPLEX's) are watched from the start. False: nothing here reads a metro storage's states."""
        if isinstance(self.cluster, ObservesMetro):
            self._watch_metro({"cluster": self.cluster})
        return self._metro is not None

    def _watch_metro(self, sources: Mapping[str, ObservesMetro]) -> None:
        if not sources:
            return
        if self._metro is None:
            self._metro = MetroWatch({}, self.timeline)
        self._metro.sources.update(sources)
        self._metro.sample()
        self.watches.start(self._metro)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        """Finish whatever ended the block; an error while finishing goes with the block's own error (a verdict or
        a revert failure), never in its place."""
        if exc is None:
            self.finish()
            return
        try:
            self.finish()
        except Exception as late:
            log.error("while finishing the experiment after %s: %s", type(exc).__name__, late)
            exc.add_note(f"and while finishing the experiment: {type(late).__name__}: {late}")

    def finish(self) -> None:
        """Stop the workload, prove the ledger, and put the HA manager's events on the timeline."""
        if not self._running:
            return
        self.watches.stop()
        self._running = False
        reports = [workload.stop() for workload in self.workloads]
        self.stop_report = reports[0] if reports else None
        keeper = next((w for w in self.workloads if w.keeps_ledger), None)
        if keeper is None:
            return  # observe-only: no lost-commit verdict, and the report says so
        if self.workload_problem() is not None:
            return  # a load generator lost: the run is a harness error already, no ledger verdict
        with contextlib.suppress(Exception):
            self.ledger = keeper.verify()
        if self.ledger is None:
            self.cluster.wait_healthy(self.durations.recover_timeout_s)
            self.ledger = keeper.verify()

    @property
    def keeps_ledger(self) -> bool:
        """A workload of this experiment proves which acknowledged commits survived."""
        return any(w.keeps_ledger for w in self.workloads)

    # -- phases ------------------------------------------------------------------------
    def measure(self, what: str, seconds: float, *, until: Callable[[], bool] | None = None) -> None:
        """Keep the load running for `seconds`, or until `until()` holds (the watchers sample meanwhile); a workload
        that can no longer be trusted (a load generator lost) ends the experiment as a harness error, never as an
        outage."""
        self.progress.wait(what, seconds, interval_s=1.0,
                           abort=lambda: self.workload_problem() is not None or (until is not None and until()))
        problem = self.workload_problem()
        if problem is not None:
            raise HarnessError(problem)

    def catch_up(self) -> None:
        """Every workload's commit gaps on the timeline up to now: a trial's phases are read while the load runs
        on (the next trial's), so a workload that reports late is asked first."""
        for workload in self.workloads:
            if isinstance(workload, CatchesUp):
                workload.catch_up()
        problem = self.workload_problem()
        if problem is not None:
            raise HarnessError(problem)

    def workload_problem(self) -> str | None:
        for workload in self.workloads:
            if isinstance(workload, Monitored) and (problem := workload.problem()) is not None:
                return problem
        return None

    def sample_observers(self) -> None:
        """One sample of each observer into its series, now (the scheduler takes one about every second)."""
        self._observed.sample()

    def _preflight(self) -> None:
        self.cluster.preflight()
        for part in self.parts:
            part.preflight()

    # -- replication: read, never assumed; put back when a run changed it ----------------
    def read_replication(self, when: str) -> ReplicationState | None:
        """The cluster's replication now, into `replication` and the history (None: the cluster cannot say)."""
        return self._replication.read(when)

    def restore_replication(self, before: ReplicationState | None) -> None:
        """After recovery the cluster replicates as the experiment found it (`before`): settings changed since are
        put back (`ReadsReplication.restore_replication`), and a mode still not as before fails the recovery,
        named."""
        if before is None or not isinstance(self.cluster, ReadsReplication):
            return
        restored = self.cluster.restore_replication(before) if before.mode != "unknown" else []
        if restored:
            self.put_back += restored
            self.timeline.record(EventKind.REPLICATION, "experiment", when=AFTER, mode="restoring",
                                 read_from="; ".join(restored), restored=restored)
            # the HA manager applies a changed setting through a state of its own (pg_auto_failover's primary passes
            # apply_settings): healthy again, with the settings and the mode as found
            self.progress.until("replication as the experiment found it", lambda: self._replicates_as(before),
                                REPLICATION_SETTLE_S, interval_s=0.5)
        after = self.read_replication(AFTER)
        if before.mode != "unknown" and after is not None and after.mode != before.mode:
            raise HarnessError(f"cluster not recovered: it replicates {after.describe()} after the run, "
                               f"{before.describe()} when the experiment started")

    def _restore_replication_on_failure(self) -> None:
        """The settings found put back on a trial that failed (its recovery or its fault block raised): said on the
        timeline and in the log, never raised over the trial's own error."""
        try:
            self.restore_replication(self.found_replication)
        except Exception as exc:
            log.error("replication not as the experiment found it after a failed trial: %s", exc)
            self.timeline.record(EventKind.REPLICATION, "experiment", when=AFTER, mode="unknown",
                                 read_from=f"not put back after a failed trial: {exc}")

    def _replicates_as(self, before: ReplicationState) -> bool:
        assert isinstance(self.cluster, ReadsReplication)
        try:
            now = self.cluster.replication()
        except HarnessError:
            return False
        return now.mode == before.mode and dict(now.settings) == dict(before.settings) and self._healthy()

    @property
    def weaker_replication(self) -> str | None:
        """Why this run met a replication weaker than the topology's policy, if it did (for the first screen)."""
        databases = self.harness_run.topology.databases
        return weaker_than_policy(databases[0].replication, self.replication) if databases else None

    def lost_commits_check(self) -> SloCheck:
        """The lost-commit SLO as this run can judge it: no ledger, or a weaker replication than the policy
        with none lost (unless accepted), is said instead of passed."""
        lost = self.ledger.lost_count if self.ledger is not None else None
        return SloCheck.lost_commits(lost, self.harness_run.topology.slo.lost_commits_max,
                                     weaker=self.weaker_replication, accepted=self.accept_weaker_replication)

    def baseline(self) -> None:
        with self.step("baseline", f"{self.durations.baseline_s:.0f} s of steady load"):
            self.timeline.record(EventKind.BASELINE_START, "experiment")
            self.measure("baseline", self.durations.baseline_s)

    @contextmanager
    def fault(self, spec: FaultSpec, *, guards: Sequence[Guard] = (),
              duration_s: float | None = None) -> Iterator[ActiveFault]:
        with self.step("inject", f"{spec.kind} on {spec.target}"), \
                self.harness_run.inject(self.timeline, spec, guards=guards, duration_s=duration_s) as active:
            yield active
        self.timeline.record(EventKind.FAULT_ENDED, "experiment", fault=spec.kind, target=spec.target)

    def await_operation(self, active: ActiveFault, timeout_s: float) -> tuple[OperationProgress, float]:
        """Keep the load running until the fault's operation (a backup) ends, at most `timeout_s`; what it
        reported and when it ended on the timeline (now, if it is still running: the revert stops it)."""
        operation, spec = active.fault, active.fault.spec
        if not isinstance(operation, Operation):
            raise HarnessError(f"{spec.kind} on {spec.target} is not an operation with an end")
        self.progress.until(f"{spec.kind} of {spec.target}", lambda: not operation.progress().running, timeout_s,
                            interval_s=0.5)
        done = operation.progress()
        ended = self.timeline.t_of_wall(done.finished_wall) if done.finished_wall is not None else self.timeline.now()
        error = done.error or (f"still running after {timeout_s:g} s" if done.running else None)
        self.timeline.record(EventKind.OPERATION_DONE, "experiment", t=ended, fault=spec.kind, target=spec.target,
                             completed=done.completed, bytes=done.bytes_done, error=error)
        return done, ended

    def throughput_guard(self, baseline_tps: float) -> ThroughputFloor:
        """Stop the experiment once TPS has stayed under 10 % of baseline longer than a failover may take
        (the SLO is violated by then): it can trip whenever the fault lasts longer than that."""
        return ThroughputFloor.during_fault(
            recent_tps=lambda s: self.series.recent_tps(s, self.timeline.now()), baseline_tps=baseline_tps,
            failover_max_s=self.harness_run.topology.slo.failover_max_s, clock=self.timeline.now)

    def recover(self) -> float | None:
        """Wait for the cluster to be healthy again (resync included); the time it was."""
        with self.step("recover", "until healthy, then settle"):
            healthy = self.progress.until(
                "cluster healthy and resynced", self._healthy, self.durations.recover_timeout_s,
                interval_s=1.0, eta=self._resync.eta_now)
            if not healthy:
                raise HarnessError(f"cluster not healthy {self.durations.recover_timeout_s:.0f} s after revert")
            healthy_t = self.timeline.record(EventKind.HEALTHY, "experiment").t
            done = completed_at([(p.t, p.value) for p in self.resync_bytes.points()])
            if done is not None:
                self.timeline.record(EventKind.RESYNC_DONE, "experiment", t=done)
            self.measure("settle", self.durations.settle_s)
            return healthy_t

    def _healthy(self) -> bool:
        return self._unhealthy() is None

    def _unhealthy(self) -> str | None:
        """Why the cluster is not whole now (its own words), or None."""
        try:
            self._preflight()
        except HarnessError as exc:
            return str(exc)
        return None

    def _protected_baseline(self) -> None:
        """The baseline, ending on a cluster as whole as it promises: one that lost a copy meanwhile (a standby
        behind, the primary going on alone) would make the fault's figures the cluster's state at inject, not its
        failover (a switchover then promotes a node that lacks the last commits). Such a cluster is waited for,
        bounded, and the baseline taken again."""
        self.baseline()
        why = None if self.degraded_on_purpose else self._unhealthy()
        if why is None:
            return
        with self.step("protected", f"before the fault the cluster was not whole: {why}"):
            whole = self.progress.until("cluster whole again before the fault", self._healthy,
                                        self.durations.recover_timeout_s, interval_s=1.0)
        if not whole:
            raise HarnessError(f"the cluster was not whole before the fault, nor {self.durations.recover_timeout_s:.0f} s "
                               f"later: {self._unhealthy() or why}; no fault injected")
        self.baseline()

    # -- one failure, start to end -------------------------------------------------------
    def run_failure(self, choose: Callable[[Cluster], FaultSpec], *, observe_s: float | None = None,
                    hold_until: Callable[[], bool] | None = None) -> Findings:
        """Baseline, inject the fault `choose` picks on the live cluster, observe (at most `observe_s`, and only
        until `hold_until()` holds when given: the cluster's own state, never a guessed time), revert, recover."""
        return self.run_failures(choose, observe_s=observe_s, repeats=1, hold_until=hold_until)[0]

    def run_failures(self, choose: Callable[[Cluster], FaultSpec], *, observe_s: float | None = None,
                     repeats: int | None = None, hold_until: Callable[[], bool] | None = None) -> list[Findings]:
        """`repeats` trials (default: the run's `--repeat`), each a baseline and then the fault, so a slow drift
        of the cluster falls on both sides of every comparison. Each trial waits, bounded, for the cluster to be
        healthy and resynced (quiet) before the next one; the workload runs through all of them and its ledger
        proves them together."""
        trials = [self._trial(choose, observe_s, hold_until) for _ in range(repeats or self.repeats)]
        self.finish()
        return trials

    def _trial(self, choose: Callable[[Cluster], FaultSpec], observe_s: float | None,
               hold_until: Callable[[], bool] | None = None) -> Findings:
        self._count_copies()
        self._protected_baseline()
        baseline_tps = _mean_tps(self.series, self.timeline.now() - self.durations.baseline_s, self.timeline.now())
        primary_before = self.cluster.primary_node()
        spec = choose(self.cluster)
        forecast = self._forecast()
        self.read_replication(BEFORE)
        offset = self.cluster.clock_offset()
        since_wall = time.time() + offset - 1.0
        observe = observe_s if observe_s is not None else self.durations.observe_s
        try:
            try:
                with self.fault(spec, guards=[self.throughput_guard(baseline_tps)], duration_s=observe) as active, \
                        self.step("observe", f"{observe:.0f} s with the fault in effect"):
                    self.measure(f"observe {spec.kind}", observe, until=hold_until)
                    self.read_replication(DURING)
            except StopConditionTripped as exc:  # a guard reverted the fault early: the trial is measured all the
                self.halted.append(f"{spec.kind} on {spec.target}: {exc}")  # same, and the scenario fails with it
            revert = self.timeline.last(EventKind.REVERT)
            revert_t = revert.t if revert is not None else self.timeline.now()
            healthy_t = self.recover()
        except BaseException:
            self._restore_replication_on_failure()  # the next experiment must not start from a weaker mode
            raise
        self.restore_replication(self.found_replication)
        align(self.cluster.ha_events(since_wall, primary_before), offset, self.timeline)
        # A planned operation is in effect only once it completed; the outage starts at inject.
        in_effect = active.injected_at
        samples, reported_eta = self._resync.readings()
        self.catch_up()
        phases = failover_phases(self.timeline, in_effect)
        if phases.first_commit is not None:
            self.timeline.record(EventKind.FIRST_COMMIT, "experiment", t=phases.first_commit)
        end_t = self.timeline.now()
        return Findings(
            spec=spec, in_effect_t=in_effect, revert_t=revert_t, healthy_t=healthy_t,
            primary_before=primary_before, primary_after=self.cluster.primary_node(),
            impact=impact(self.series.points(), in_effect, revert_t, baseline_s=int(self.durations.baseline_s) - 2,
                          band=SteadyBand(sustain_s=self.durations.steady_window_s), stopped_t=self.timeline.now(),
                          commit_gaps=self.timeline.commit_gaps()),
            phases=phases,
            resync=progress(samples, reported_eta=reported_eta), resync_done_t=completed_at(samples),
            forecast=forecast, at_risk=self._at_risk(in_effect, end_t), end_t=end_t,
        )

    def _at_risk(self, since: float, until: float) -> list[RiskSpan] | None:
        """The trial's spans with fewer copies than the cluster held before the fault, each on the timeline."""
        points = self.copies
        promised = promised_copies(points, since)
        if promised is None:
            return None
        spans = risk_spans(points, promised, since, until)
        for span in spans:
            self.timeline.record(EventKind.REDUCED_REDUNDANCY, "cluster", t=span.start, start=span.start, end=span.end,
                                 fewest=span.fewest, promised=span.promised, states=span.reduced_states,
                                 restored_states=span.restored_states, modelled=span.modelled)
        return spans

    def _forecast(self) -> FailoverForecast | None:
        """The cluster's own prediction, if it makes one; a forecast that cannot be read is only missing."""
        if not isinstance(self.cluster, Forecasting):
            return None
        try:
            return self.cluster.failover_forecast()
        except HarnessError as exc:
            self.progress.write(f"[note] no failover forecast from {self.cluster.name}: {exc}\n")
            return None


def _mean_tps(series: TransactionSeries, start: float, end: float) -> float:
    points = series.points(int(start), int(end))
    return sum(p.tps for p in points) / len(points) if points else 0.0
