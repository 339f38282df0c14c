"""The OLTP driver: N virtual users against one database, started and stopped as one workload."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness_kernel.history import EventKind
from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from harness_kernel.odbc.settings import ConnectionSettings
from workloads.base import LedgerReport, StopReport, Workload
from workloads.oltp.connect import close_quietly, connect
from workloads.oltp.dialect import Dialect
from workloads.oltp.gaps import CommitGapDetector
from workloads.oltp.ledger import SEQ_BITS, LedgerBook, verify
from workloads.oltp.mix import TPCB, Mix
from workloads.oltp.schema import Scale
from workloads.oltp.user import Shared, VirtualUser

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DriverConfig:
    users: int = 8
    mix: Mix = TPCB
    scale: Scale = field(default_factory=Scale)
    think_time_s: float = 0.0
    gap_threshold_s: float = 0.5
    backoff_initial_s: float = 0.05
    backoff_max_s: float = 1.0
    seed: int = 1
    source: str = "oltp"
    first_user_id: int | None = None  # several generators on one database: each its own range of ledger ids


@dataclass(frozen=True)
class OltpStopReport(StopReport):
    """`stuck`: users still inside a statement when stop gave up; `crashed`: users that died of a harness bug."""

    users: int
    connects: int
    commit_gaps: int


class OltpDriver:
    """Start N users, stop them within about a second, then prove the ledger (a `Workload`).

    Every transaction goes into `series` on `timeline`'s clock; 'workload-start',
    'workload-stop' and 'commit-gap' events go onto the timeline.
    """

    keeps_ledger = True

    def __init__(self, dialect: Dialect, settings: ConnectionSettings, timeline: Timeline,
                 series: TransactionSeries, config: DriverConfig | None = None) -> None:
        self.dialect = dialect
        self.settings = settings
        self.timeline = timeline
        self.series = series
        self.config = config or DriverConfig()
        self.gaps = CommitGapDetector(timeline, self.config.source, self.config.gap_threshold_s)
        self._stop = threading.Event()
        self.users: list[VirtualUser] = []

    @property
    def name(self) -> str:
        return self.config.source

    def start(self) -> None:
        if self.users:
            raise RuntimeError("this driver has already been started")
        cfg = self.config
        first_user = cfg.first_user_id if cfg.first_user_id is not None else self._first_free_user_id()
        shared = Shared(self.dialect, self.settings, cfg.mix, cfg.scale, self.timeline, self.series, self.gaps,
                        self._stop, cfg.think_time_s, cfg.backoff_initial_s, cfg.backoff_max_s)
        self.users = [VirtualUser(first_user + i, shared, seed=cfg.seed * 1_000_003 + i) for i in range(cfg.users)]
        log.info("starting %d users on %s", cfg.users, self.dialect.redacted_connection_string(self.settings))
        self.timeline.record(EventKind.WORKLOAD_START, cfg.source, users=cfg.users, mix=cfg.mix.name, dialect=self.dialect.name,
                             first_user_id=first_user)
        for user in self.users:
            user.thread.start()

    def stop(self, timeout_s: float = 1.0) -> OltpStopReport:
        """Ask every user to stop and wait up to `timeout_s` in total.

        A user inside a statement on a server that does not answer stays there until the
        statement timeout (or, for a frozen PostgreSQL, until it thaws); it is reported as stuck.
        """
        self._stop.set()
        deadline = self.timeline.now() + timeout_s
        for user in self.users:
            user.thread.join(max(0.0, deadline - self.timeline.now()))
        now = self.timeline.now()
        self.gaps.close(now)
        report = OltpStopReport(
            workload=self.name,
            users=len(self.users),
            stuck=[u.thread.name for u in self.users if u.thread.is_alive()],
            crashed=[u.thread.name for u in self.users if u.crash is not None],
            connects=sum(u.connects for u in self.users),
            commit_gaps=self.gaps.gaps,
        )
        self.timeline.record(EventKind.WORKLOAD_STOP, self.config.source, t=now, stuck=len(report.stuck),
                             crashed=len(report.crashed), connects=report.connects)
        return report

    def verify(self) -> LedgerReport:
        """Read the ledger back (call after stop, once the database is reachable)."""
        return verify_books(self.dialect, self.settings, self.timeline, self.config.source, [u.book for u in self.users])

    def _first_free_user_id(self) -> int:
        return first_free_user_id(self.dialect, self.settings)

    def __enter__(self) -> OltpDriver:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._stop.is_set():
            self.stop()


if TYPE_CHECKING:  # mypy proves the driver meets the protocol
    def _is_a_workload(driver: OltpDriver) -> Workload:
        return driver


def first_free_user_id(dialect: Dialect, settings: ConnectionSettings) -> int:
    """Ledger ids must not collide with a previous run's on the same database."""
    connection = connect(dialect, settings)
    try:
        highest = connection.cursor().execute(dialect.statements.ledger_max_id).fetchone()[0]
        connection.rollback()
    finally:
        close_quietly(connection)
    return 1 if highest is None or highest < 0 else (int(highest) >> SEQ_BITS) + 1


def verify_books(dialect: Dialect, settings: ConnectionSettings, timeline: Timeline, source: str,
                 books: Sequence[LedgerBook]) -> LedgerReport:
    """Read the books of every user back on one connection, and put the verdict on the timeline."""
    connection = connect(dialect, settings)
    try:
        report = verify(connection.cursor(), dialect.statements, books)
        connection.rollback()
    finally:
        close_quietly(connection)
    timeline.record(EventKind.LEDGER_VERIFIED, source, acknowledged=report.acknowledged,
                    lost=report.lost_count, failed=report.failed, failed_present=report.failed_present_count)
    return report
