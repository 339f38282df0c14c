"""The OLTP workload spread over several load generators, on Dask distributed, as one `Workload`.

Each Dask worker hosts one `LoadGenerator` actor for the experiment's duration. At start the
harness measures each worker's clock offset, gives each generator its own range of ledger ids
(so the ledgers merge without collisions) and starts them; every second it collects the
seconds each generator has completed into the experiment's series (the stop conditions and
the progress bar read it live) and the commit gaps each has closed, and records an outage the
database caused (the intersection of every generator's gaps) as soon as every generator has
committed past its end, so the experiment measures a failover's phases while the load still
runs (`catch_up` collects on demand); at stop it takes the rest and merges the ledger books,
so lost and in-doubt commits are checked across all of them. The offset is measured again at the end: its drift is
reported.

A generator that stops answering (its machine or process died: Dask's heartbeat loses it, or a
call times out) is *load generator lost*, a harness error naming the worker, never a database
outage. The credentials travel inside the pickled connection settings of one actor call (the
password a `Secret`, whose repr is masked), never in a task name, a log line or a file.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness_kernel.errors import HarnessError
from harness_kernel.history import EventKind
from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from harness_kernel.odbc.settings import ConnectionSettings
from workloads.base import LedgerReport, StopReport
from workloads.load.generator import Handback, LoadGenerator, Settled
from workloads.load.merge import ClockOffset, GapMerger, common_gaps, measure_offset
from workloads.oltp.dialect import Dialect
from workloads.oltp.driver import DriverConfig, first_free_user_id, verify_books

log = logging.getLogger(__name__)

CALL_TIMEOUT_S = 10.0
POLL_S = 1.0


class LoadGeneratorLost(HarnessError):
    """A load generator stopped answering: the run is broken, and the database was not judged by it."""


@dataclass
class Generator:
    worker: str  # the Dask worker's address
    actor: Any
    offset: ClockOffset
    handback: Handback | None = None


@dataclass(frozen=True)
class DistributedStopReport(StopReport):
    generators: int
    drift_s: dict[str, float] = field(default_factory=dict)  # per worker: clock offset at stop minus at start


class DistributedOltp:
    """`--load-workers N` (a local cluster) or `--load-scheduler tcp://HOST:PORT` (the user's load machines)."""

    keeps_ledger = True

    def __init__(self, dialect: Dialect, settings: ConnectionSettings, timeline: Timeline, series: TransactionSeries,
                 config: DriverConfig, client: Callable[[], Any], generators: int | None = None,
                 owns_cluster: bool = False) -> None:
        self.dialect, self.settings, self.timeline, self.series, self.config = dialect, settings, timeline, series, config
        self.connect_client = client
        self.wanted = generators
        self.owns_cluster = owns_cluster
        self.client: Any = None
        self.generators: list[Generator] = []
        self.lost: str | None = None
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        self._collecting = threading.Lock()  # the poller and `catch_up` collect one at a time
        self.merger = GapMerger(0, config.gap_threshold_s)

    @property
    def name(self) -> str:
        return self.config.source

    def problem(self) -> str | None:
        """Why the workload cannot be trusted any more (a generator lost), or None."""
        return self.lost

    # -- start ---------------------------------------------------------------------------------
    def start(self) -> None:
        self.client = self.connect_client()
        workers = sorted(self.client.scheduler_info()["workers"])
        if self.wanted is not None:
            workers = workers[:self.wanted]
        if not workers or (self.wanted is not None and len(workers) < self.wanted):
            raise HarnessError(f"load: {len(workers)} Dask worker(s) answer, {self.wanted or 1} needed")
        base = first_free_user_id(self.dialect, self.settings)
        for worker in workers:
            future = self.client.submit(LoadGenerator, actor=True, workers=[worker], pure=False)
            actor = future.result(timeout=CALL_TIMEOUT_S)
            self.generators.append(Generator(worker, actor, measure_offset(functools.partial(_remote_clock, actor))))
        self.merger = GapMerger(len(self.generators), self.config.gap_threshold_s)
        self.timeline.record(EventKind.WORKLOAD_START, self.config.source, workload="oltp", mode="distributed",
                             users=self.config.users * len(workers), generators=len(workers),
                             offsets_s={g.worker: round(g.offset.offset_s, 4) for g in self.generators})
        for index, generator in enumerate(self.generators):
            config = dataclasses.replace(self.config, first_user_id=base + index * self.config.users,
                                         seed=self.config.seed + index, source=f"{self.config.source}@{index}")
            self._call(generator, "start", self.dialect, self.settings, config,
                       self.timeline.origin_wall + generator.offset.offset_s)
        self._poller = threading.Thread(target=self._poll, name="load-generators", daemon=True)
        self._poller.start()

    def _call(self, generator: Generator, method: str, *args: Any) -> Any:
        try:
            return getattr(generator.actor, method)(*args).result(timeout=CALL_TIMEOUT_S)
        except Exception as exc:  # CommClosedError, TimeoutError, KilledWorker...: the machine is gone
            self.lost = f"load generator lost: {generator.worker} ({type(exc).__name__})"
            raise LoadGeneratorLost(self.lost) from None

    def _poll(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                self.catch_up()
            except LoadGeneratorLost:
                log.error("%s", self.lost)
                return

    def catch_up(self) -> None:
        """Collect what every generator has settled: its completed seconds into the series, its closed gaps into
        the merge, and each merged outage that is over onto the timeline."""
        if self.lost is not None:
            raise LoadGeneratorLost(self.lost)
        with self._collecting:
            for index, generator in enumerate(self.generators):
                settled: Settled = self._call(generator, "settled")
                self.series.absorb(settled.buckets, settled.last_commit_t)
                self.merger.report(index, settled.gaps, settled.gaps_settled_upto)
            for start, end in self.merger.final():
                self._record_gap(start, end)

    # -- stop ----------------------------------------------------------------------------------
    def stop(self) -> DistributedStopReport:
        self._stop.set()
        if self._poller is not None:
            self._poller.join(CALL_TIMEOUT_S + POLL_S)
        stuck, crashed, drift = [], [], {}
        for generator in self.generators:
            try:
                handback: Handback = self._call(generator, "stop")
            except LoadGeneratorLost:
                crashed.append(self.lost or generator.worker)
                continue
            generator.handback = handback
            self.series.absorb(handback.buckets, handback.last_commit_t)
            stuck += [f"{generator.worker}: {s}" for s in handback.stuck]
            crashed += [f"{generator.worker}: {c}" for c in handback.crashed]
            again = measure_offset(functools.partial(_remote_clock, generator.actor))
            drift[generator.worker] = round(again.offset_s - generator.offset.offset_s, 4)
        self._record_outages()
        self.timeline.record(EventKind.WORKLOAD_STOP, self.config.source, stuck=len(stuck), crashed=len(crashed),
                             drift_s=drift)
        self._close()
        return DistributedStopReport(workload=self.name, stuck=stuck, crashed=crashed,
                                     generators=len(self.generators), drift_s=drift)

    def _record_outages(self) -> None:
        """The merged commit gaps not recorded while the load ran: when no generator could commit (a gap still
        open ends at stop)."""
        handbacks = [g.handback for g in self.generators if g.handback is not None]
        if not handbacks:
            return
        now = self.timeline.now()
        per = [[(start, end if end is not None else now) for start, end in h.gaps] for h in handbacks]
        for start, end in common_gaps(per, self.config.gap_threshold_s):
            if (start, end) in self.merger.handed_out:
                continue
            still_open = all(any(s <= start and e is None for s, e in h.gaps) for h in handbacks) and end >= now
            self._record_gap(start, None if still_open else end)

    def _record_gap(self, start: float, end: float | None) -> None:
        self.timeline.record(EventKind.COMMIT_GAP, self.config.source, t=start, start=start, end=end,
                             duration_s=None if end is None else end - start, first_error=None, errors=0)

    def _close(self) -> None:
        """Close the client, and the local cluster if this run started one (a user's scheduler stays up)."""
        if self.client is None:
            return
        cluster = getattr(self.client, "cluster", None) if self.owns_cluster else None
        for closing in (self.client, cluster):
            if closing is None:
                continue
            try:
                closing.close(timeout=CALL_TIMEOUT_S)
            except Exception as exc:
                log.warning("closing Dask's %s: %s", type(closing).__name__, type(exc).__name__)

    def verify(self) -> LedgerReport:
        """Every generator's ledger, read back together: lost and in-doubt commits across all of them."""
        if self.lost is not None:
            raise LoadGeneratorLost(self.lost)
        books = [book for g in self.generators if g.handback is not None for book in g.handback.books]
        return verify_books(self.dialect, self.settings, self.timeline, self.config.source, books)


def _remote_clock(actor: Any) -> float:
    clock: float = actor.clock().result(timeout=CALL_TIMEOUT_S)
    return clock


def _distributed() -> Any:
    """Dask distributed, imported when load is spread (the `load` extra)."""
    try:
        return importlib.import_module("distributed")
    except ImportError:
        raise HarnessError("--load-workers / --load-scheduler need Dask distributed: "
                           "pip install 'resilience-harness[load]'") from None


def local_cluster(workers: int) -> Callable[[], Any]:
    """`--load-workers N`: N worker processes on this machine, listening on loopback only."""
    def connect_local() -> Any:
        distributed = _distributed()
        cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=4, processes=True, host="127.0.0.1",
                                           dashboard_address="127.0.0.1:0")
        return distributed.Client(cluster)
    return connect_local


def remote_cluster(address: str) -> Callable[[], Any]:
    """`--load-scheduler tcp://HOST:PORT`: the user's scheduler and the workers started on their load machines."""
    def connect_remote() -> Any:
        return _distributed().Client(address, timeout=CALL_TIMEOUT_S)
    return connect_remote

