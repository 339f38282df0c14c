"""One virtual user: a thread that runs the mix, reconnects through failover and keeps its ledger."""

from __future__ import annotations

import logging
import random
import threading
from dataclasses import dataclass
from typing import Any

import pyodbc
from tenacity import RetryCallState, RetryError, Retrying, retry_if_exception_type, stop_when_event_set, wait_exponential_jitter

from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from harness_kernel.odbc.errors import ErrorClass, ErrorInfo, classify
from harness_kernel.odbc.settings import ConnectionSettings
from workloads.oltp.connect import close_quietly, connect
from workloads.oltp.dialect import Dialect
from workloads.oltp.gaps import CommitGapDetector
from workloads.oltp.ledger import LedgerBook
from workloads.oltp.mix import Mix
from workloads.oltp.schema import Scale

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Shared:
    """What every user of one driver shares (all of it thread-safe or immutable)."""

    dialect: Dialect
    settings: ConnectionSettings
    mix: Mix
    scale: Scale
    timeline: Timeline
    series: TransactionSeries
    gaps: CommitGapDetector
    stop: threading.Event
    think_time_s: float
    backoff_initial_s: float
    backoff_max_s: float


class PreparedCursors:
    """One cursor per SQL text on one connection. pyodbc prepares a cursor's statement again whenever its
    text changes, so the five statements of a TPC-B transaction alternating on one cursor were parsed
    and bound from scratch on every call; here each is prepared once per connection."""

    def __init__(self, connection: Any) -> None:
        self._connection = connection
        self._cursors: dict[str, Any] = {}

    def execute(self, sql: str, *parameters: Any) -> Any:
        cursor = self._cursors.get(sql)
        if cursor is None:
            cursor = self._cursors[sql] = self._connection.cursor()
        return cursor.execute(sql, *parameters)


class VirtualUser:
    """Runs transactions until `shared.stop` is set.

    A transaction counts when the client learns its outcome: commit returned (ok) or an error
    was raised (failed, with its class). After an error that leaves the session gone, on the
    wrong node or in an unknown state, the user reconnects with bounded, jittered backoff.
    """

    def __init__(self, user_id: int, shared: Shared, seed: int) -> None:
        self.user_id = user_id
        self.shared = shared
        self.book = LedgerBook(user_id)
        self.connects = 0
        self.crash: BaseException | None = None
        self._rng = random.Random(seed)
        self.thread = threading.Thread(target=self._run, name=f"vu-{user_id}", daemon=True)

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # a bug, not a database error: keep it for the stop report
            self.crash = exc
            log.exception("virtual user %d stopped on an unexpected error", self.user_id)

    def _loop(self) -> None:
        s = self.shared
        pick = s.mix.picker()
        connection: Any = None
        cursors: PreparedCursors | None = None
        try:
            while not s.stop.is_set():
                if connection is None or cursors is None:
                    connection = self._connect()
                    if connection is None:
                        return
                    cursors = PreparedCursors(connection)
                kind = pick(self._rng)
                ident = self.book.next_id() if kind.writes else 0
                start = s.timeline.now()
                try:
                    kind.body(cursors.execute, s.dialect.statements, self._rng, s.scale, ident)
                    connection.commit()
                except pyodbc.Error as exc:
                    end = s.timeline.now()
                    info = classify(exc, s.dialect.native_classes)
                    if kind.writes:
                        self.book.fail(ident)
                    self._failed(end, end - start, info)
                    if info.error_class.needs_reconnect or not _rolled_back(connection):
                        close_quietly(connection)
                        connection = cursors = None
                    continue
                end = s.timeline.now()
                s.series.record(end, end - start, True)
                if kind.writes:
                    self.book.acknowledge(ident)
                    s.gaps.committed(end)
                if s.think_time_s > 0:
                    s.stop.wait(s.think_time_s)
        finally:
            if connection is not None:
                close_quietly(connection)

    def _failed(self, t: float, latency_s: float, info: ErrorInfo) -> None:
        self.shared.series.record(t, latency_s, False, info.error_class.value)
        self.shared.gaps.failed(t)

    def _connect(self) -> Any:
        """Connect, retrying until it works or the run stops; None when stopped."""
        s = self.shared

        def failed_attempt(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            info = classify(exc, s.dialect.native_classes) if exc else ErrorInfo(ErrorClass.OTHER, None, None)
            self._failed(s.timeline.now(), 0.0, info)

        def pause(seconds: float) -> None:
            s.stop.wait(seconds)  # a stop ends the backoff at once

        retrying = Retrying(
            stop=stop_when_event_set(s.stop),
            wait=wait_exponential_jitter(multiplier=s.backoff_initial_s, max=s.backoff_max_s, jitter=s.backoff_initial_s),
            retry=retry_if_exception_type(pyodbc.Error),
            sleep=pause,
            before_sleep=failed_attempt,
            reraise=True,
        )
        try:
            connection = retrying(connect, s.dialect, s.settings)
        except (pyodbc.Error, RetryError):
            return None
        self.connects += 1
        return connection


def _rolled_back(connection: Any) -> bool:
    try:
        connection.rollback()
    except pyodbc.Error:
        return False
    return True
