"""Observe-only workloads: committed transactions per second, read from the database server's own counter.

For runs where someone else makes the load (the user's application, HammerDB, pgbench): once a
second a counter reads a cumulative commit counter of the benchmark database and writes the
delta as per-second TPS into a `TransactionSeries` on the timeline clock, with commit-gap
events, so the analysis (TPS, drop, time to recover, outage) reads it as it reads the OLTP
driver's. It keeps no ledger: `verify()` is None, and a report says "no lost-commit verdict".
This module is what every server's counter shares; a subclass says how to read one sample
(`workloads.pgcounter` for PostgreSQL, `workloads.sqlcounter` for SQL Server).

- A counter belongs to one server and one life of its statistics, so a delta is taken only
  between samples of the same server (`commits_between`): a sample from another server (after
  a failover) is a new baseline, so the new primary's first second is not counted; a restart
  that discards the counters, or an explicit reset, starts the count from zero (never
  negative) and goes into the interval before the sample.
- It follows the primary (the dialect's failover-aware connection), reconnecting after any error.
- Resolution: servers publish their counters about once a second, so a second's commits show
  up to a second late; totals and means over several seconds are exact. A commit gap's ends
  are sample times; outages shorter than `gap_threshold_s` are not commit gaps.
"""

from __future__ import annotations

import logging
import math
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pyodbc

from harness_kernel.errors import ConfigError
from harness_kernel.history import EventKind
from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from harness_kernel.odbc.settings import ConnectionSettings
from workloads.base import StopReport, Workload
from workloads.oltp.connect import close_quietly, connect
from workloads.oltp.dialect import Dialect
from workloads.oltp.gaps import CommitGapDetector

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CounterSample:
    t: float  # timeline time the sample was taken
    commits: int  # xact_commit of the benchmark database
    server: str  # address:port that answered
    started: str  # that server's postmaster start time
    stats_reset: str | None  # the database's last pg_stat_reset()
    discarded: bool  # the server discarded its statistics when it started (crash recovery)


def commits_between(previous: CounterSample | None, current: CounterSample) -> int | None:
    """Commits between two samples, or None when they cannot be compared (a new baseline)."""
    if previous is None or previous.server != current.server:
        return None  # another server's counter (a failover): its value at promotion is unknown
    if is_reset(previous, current):
        return current.commits  # counted from zero since the reset
    return current.commits - previous.commits


def is_reset(previous: CounterSample, current: CounterSample) -> bool:
    restarted_without_stats = current.started != previous.started and current.discarded
    return restarted_without_stats or current.commits < previous.commits or current.stats_reset != previous.stats_reset


def spread(first_t: float, last_t: float, count: int) -> list[tuple[int, int]]:
    """`count` commits seen between two samples, shared evenly over the whole seconds they span."""
    seconds = list(range(math.floor(first_t), max(math.floor(last_t), math.floor(first_t) + 1)))
    share, extra = divmod(count, len(seconds))
    return [(s, share + (1 if i < extra else 0)) for i, s in enumerate(seconds)]


@dataclass(frozen=True)
class CounterStopReport(StopReport):
    samples: int
    failed_samples: int  # the server did not answer (outage, failover in progress)
    connects: int
    baselines: int  # samples that could not be compared with the one before (start, another server)
    resets: int  # counter resets seen (crash recovery, pg_stat_reset)
    commit_gaps: int


class ServerCommitCounter(ABC):
    """A `Workload` that makes no load: it counts the commits of `database` from the server's own counter."""

    keeps_ledger = False

    workload: str  # the kind named in the workload-start event, and the default source name
    monitor_database: str  # where the counter's own queries run: never the measured database

    def __init__(self, settings: ConnectionSettings, timeline: Timeline, series: TransactionSeries, *,
                 dialect: Dialect | None = None, monitor_database: str | None = None, interval_s: float = 1.0,
                 gap_threshold_s: float = 2.5, source: str | None = None) -> None:
        """Measures `settings.database`; samples through the same endpoints from `monitor_database`."""
        monitor = monitor_database or self.monitor_database
        if monitor.casefold() == settings.database.casefold():
            raise ConfigError(f"the commit counter must sample from another database than {settings.database!r}: "
                              "its own sessions would count there")
        source = source or self.workload
        self.database = settings.database
        self.settings = replace(settings, database=monitor, application_name=f"{settings.application_name}-counter")
        self.dialect = dialect or self.default_dialect()
        self.timeline = timeline
        self.series = series
        self.interval_s = interval_s
        self.gaps = CommitGapDetector(timeline, source, gap_threshold_s)
        self.name = source
        self.crash: BaseException | None = None
        self.samples = self.failed_samples = self.connects = self.baselines = self.resets = 0
        self._last: CounterSample | None = None
        self._connection: Any = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=source, daemon=True)

    def start(self) -> None:
        """Connect and take the baseline now (a wrong database fails here), then sample every interval."""
        if self._thread.ident is not None:
            raise RuntimeError(f"{self.name} has already been started")
        self._connection = self._connect()
        try:
            self._take(self._sample(self._connection))
        except BaseException:
            close_quietly(self._connection)
            raise
        self.timeline.record(EventKind.WORKLOAD_START, self.name, workload=self.workload, database=self.database,
                             monitor_database=self.settings.database, observe_only=True)
        self._thread.start()

    def stop(self, timeout_s: float = 2.0) -> CounterStopReport:
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(timeout_s)
        now = self.timeline.now()
        self.gaps.close(now)
        report = CounterStopReport(
            workload=self.name, stuck=[self._thread.name] if self._thread.is_alive() else [],
            crashed=[f"{self._thread.name}: {self.crash!r}"] if self.crash is not None else [],
            samples=self.samples, failed_samples=self.failed_samples, connects=self.connects,
            baselines=self.baselines, resets=self.resets, commit_gaps=self.gaps.gaps)
        self.timeline.record(EventKind.WORKLOAD_STOP, self.name, t=now, stuck=len(report.stuck),
                             samples=report.samples, failed_samples=report.failed_samples, resets=report.resets)
        return report

    def verify(self) -> None:
        return None

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # a bug, not an outage: keep it for the stop report
            self.crash = exc
            log.exception("%s stopped on an unexpected error", self.name)
        finally:
            if self._connection is not None:
                close_quietly(self._connection)

    def _loop(self) -> None:
        while not self._stop.wait(self._until_next_tick()):
            try:
                if self._connection is None:
                    self._connection = self._connect()
                sample = self._sample(self._connection)
            except pyodbc.Error as exc:
                self.failed_samples += 1
                log.debug("%s: sample failed: %s", self.name, exc)
                if self._connection is not None:
                    close_quietly(self._connection)
                self._connection = None
                continue
            self._take(sample)

    def _until_next_tick(self) -> float:
        """Samples fall just after whole multiples of the interval, so each covers whole seconds."""
        now = self.timeline.now()
        return (math.floor(now / self.interval_s) + 1) * self.interval_s - now

    def _connect(self) -> Any:
        connection = connect(self.dialect, self.settings)
        self.connects += 1
        return connection

    @abstractmethod
    def default_dialect(self) -> Dialect: ...

    @abstractmethod
    def _sample(self, connection: Any) -> CounterSample:
        """One reading of the server's counter, taken at `self.timeline.now()`; read-only, ending in a rollback."""

    def _take(self, sample: CounterSample) -> None:
        self.samples += 1
        previous, self._last = self._last, sample
        count = commits_between(previous, sample)
        if previous is None or count is None:
            self.baselines += 1
            return
        since = previous.t
        if is_reset(previous, sample):
            # counted since the reset, which came after an outage (a crash) or at the end anyway:
            # the last interval, not smeared over an outage
            self.resets += 1
            since = max(previous.t, sample.t - self.interval_s)
            log.info("%s: the commit counter of %s was reset; counting from zero", self.name, sample.server)
        if count > 0:
            for second, share in spread(since, sample.t, count):
                self.series.add_commits(second, share, sample.t)
            self.gaps.committed(sample.t)


if TYPE_CHECKING:  # mypy proves the counter meets the protocol
    def _is_a_workload(counter: ServerCommitCounter) -> Workload:
        return counter
