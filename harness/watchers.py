"""What an experiment watches beside its workload: each observation one `Watcher`, all driven by one `Watches`.

A watcher takes one reading at a time (`sample`) and keeps what it read; a reading that fails
leaves a gap, never an error (watchers only read). The scheduler samples each watcher about
once a second in a thread of its own, so a probe that waits out a gone node's timeout delays
only itself, from `start` until `stop`. A watcher that reads at phase boundaries rather than on
a clock (the replication mode before, during and after a fault) is read by the experiment when
the phase begins. A new observation is a new watcher; the experiment keeps the workloads, the
phases and the findings.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from faults.contract import Observer
from harness.analysis.redundancy import CopiesPoint
from harness.analysis.replication import ReplicationReading
from harness.analysis.resync import progress
from harness.clusters import Cluster, CountsCopies, ReadsReplication, ReplicationState
from harness_kernel.errors import HarnessError
from harness_kernel.history import EventKind
from harness_kernel.history.series import MetricSeries
from harness_kernel.history.timeline import Timeline

log = logging.getLogger(__name__)

SAMPLE_EVERY_S = 1.0
JOIN_TIMEOUT_S = 15.0


class Watcher(Protocol):
    """One observation of the cluster, sampled on the scheduler's clock."""

    @property
    def name(self) -> str: ...

    def sample(self) -> None:
        """One reading; a reading that fails leaves a gap and never raises."""


class Watches:
    """The one scheduler of an experiment's watchers: each sampled every `interval_s` in a thread of its own."""

    def __init__(self, interval_s: float = SAMPLE_EVERY_S) -> None:
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._threads: dict[str, threading.Thread] = {}

    def start(self, watcher: Watcher) -> None:
        """Sample `watcher` from now on (once: a watcher already started is left as it is)."""
        if watcher.name in self._threads or self._stop.is_set():
            return
        thread = threading.Thread(target=self._run, args=(watcher,), name=f"watch-{watcher.name}", daemon=True)
        self._threads[watcher.name] = thread
        thread.start()

    def watching(self, name: str) -> bool:
        return name in self._threads

    def _run(self, watcher: Watcher) -> None:
        while not self._stop.wait(self.interval_s):
            watcher.sample()

    def stop(self) -> None:
        """No more samples: every watcher's last reading is in before this returns (bounded)."""
        self._stop.set()
        for thread in self._threads.values():
            thread.join(timeout=JOIN_TIMEOUT_S)


@dataclass
class ResyncWatch:
    """The control plane's resync: bytes left and its own ETA, for the whole experiment (rebuilds run through
    revert waits too)."""

    cluster: Cluster
    timeline: Timeline
    name: str = "resync"
    bytes_left: MetricSeries = field(default_factory=lambda: MetricSeries("resync bytes left", "bytes"))
    eta: list[float | None] = field(default_factory=list)  # the control plane's own ETA, per sample
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def sample(self) -> None:
        try:
            sample = self.cluster.resync()
        except HarnessError:
            return
        with self._lock:
            self.bytes_left.add(self.timeline.now(), sample.bytes_left if sample else 0.0)
            self.eta.append(sample.eta_s if sample else None)

    def readings(self) -> tuple[list[tuple[float, float]], list[float | None]]:
        """(t, bytes left) of every sample so far, and the ETA the control plane gave with each."""
        with self._lock:
            return [(p.t, p.value) for p in self.bytes_left.points()], list(self.eta)

    def eta_now(self) -> float | None:
        points = progress(self.readings()[0])
        return points[-1].eta_s if points else None


@dataclass
class ObserverWatch:
    """Each plug-in platform's observer (a figure the platform reports: its own resync, its failures tolerable),
    one series per figure."""

    observers: Mapping[str, Observer]
    timeline: Timeline
    name: str = "observers"
    series: dict[str, MetricSeries] = field(default_factory=dict)  # "<observer>: <figure>" -> its series

    def sample(self) -> None:
        for name, observer in self.observers.items():
            try:
                figures = observer.sample()
            except Exception as exc:  # a read-only sampler's failure must not stop the experiment
                log.debug("observer %s: no sample (%s)", name, exc)
                continue
            now = self.timeline.now()
            for figure, value in figures.items():
                key = f"{name}: {figure}"
                self.series.setdefault(key, MetricSeries(key, "")).add(now, float(value))


@dataclass
class CopiesWatch:
    """The cluster's in-sync copies of the data (only experiments that judge the time at risk pay for its probe)."""

    cluster: CountsCopies
    timeline: Timeline
    name: str = "copies"
    points: list[CopiesPoint] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def sample(self) -> None:
        try:
            sample = self.cluster.copies()
        except HarnessError as exc:
            log.debug("copies probe: no sample (%s)", exc)
            return
        with self._lock:
            self.points.append(CopiesPoint(self.timeline.now(), sample.in_sync, sample.states, sample.modelled))

    def readings(self) -> list[CopiesPoint]:
        with self._lock:
            return list(self.points)


@dataclass
class ReplicationWatch:
    """The replication mode the cluster says it runs with, read at each phase boundary into the history."""

    cluster: Cluster
    timeline: Timeline
    readings: list[ReplicationReading] = field(default_factory=list)

    def read(self, when: str) -> ReplicationState | None:
        """The mode now, as `when` (START, BEFORE, DURING, AFTER); None: the cluster cannot say."""
        if not isinstance(self.cluster, ReadsReplication):
            return None
        try:
            state = self.cluster.replication()
        except HarnessError as exc:
            state = ReplicationState("unknown", f"the cluster, which did not answer ({exc})")
        event = self.timeline.record(EventKind.REPLICATION, "cluster", when=when, mode=state.mode,
                                     read_from=state.read_from)
        self.readings.append(ReplicationReading(event.t, when, state.mode, state.read_from))
        return state
