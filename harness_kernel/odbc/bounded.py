"""Commit and rollback with a deadline, for drivers that cannot bound SQLEndTran themselves.

pyodbc's `connection.timeout` bounds statements but not commit/rollback: on a partitioned SQL
Server listener they wait until TCP gives up (`tcp_retries2`, ~15 min), and so would the
virtual user, its stop and the ledger check. Here the call runs on a helper thread; past the
deadline the caller gets a HYT00 error (class TIMEOUT: outcome unknown, reconnect) and the
connection is abandoned: every later use fails at once, and the helper closes it when the
stuck call finally returns (a close from the caller would queue behind it). The hand-off
costs about 0.1-0.2 ms per commit, small against a SQL Server commit over the network; the
lab's psqlODBC needs none (libpq's tcp_user_timeout bounds it).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import pyodbc


class BoundedConnection:
    """A pyodbc connection whose commit and rollback return within `timeout_s`."""

    def __init__(self, connection: Any, timeout_s: float) -> None:
        self._connection = connection
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self._abandoned = False

    @property
    def abandoned(self) -> bool:
        return self._abandoned

    @property
    def timeout(self) -> int:
        return int(self._connection.timeout)

    @timeout.setter
    def timeout(self, seconds: int) -> None:
        self._connection.timeout = seconds

    @property
    def autocommit(self) -> bool:
        return bool(self._connection.autocommit)

    @autocommit.setter
    def autocommit(self, on: bool) -> None:
        self._connection.autocommit = on

    def cursor(self) -> Any:
        self._refuse_if_abandoned("cursor")
        return self._connection.cursor()

    def commit(self) -> None:
        self._end("commit")

    def rollback(self) -> None:
        self._end("rollback")

    def close(self) -> None:
        """Close now, unless a stuck commit/rollback holds the connection: then its helper closes it."""
        with self._lock:
            if self._abandoned:
                return
        self._connection.close()

    def _refuse_if_abandoned(self, what: str) -> None:
        if self._abandoned:
            raise pyodbc.OperationalError("08003", f"[08003] {what} on a connection abandoned after a stuck commit or "
                                                   "rollback (SQLEndTran)")

    def _end(self, name: str) -> None:
        self._refuse_if_abandoned(name)
        outcome: list[BaseException] = []
        finished = threading.Event()

        def run() -> None:
            try:
                getattr(self._connection, name)()
            except BaseException as exc:
                outcome.append(exc)
            with self._lock:
                finished.set()
                abandoned = self._abandoned
            if abandoned:
                with contextlib.suppress(pyodbc.Error):  # a broken connection's close means nothing
                    self._connection.close()

        threading.Thread(target=run, name=f"odbc-{name}", daemon=True).start()
        if not finished.wait(self._timeout_s):
            with self._lock:
                if not finished.is_set():
                    self._abandoned = True
            if self._abandoned:
                raise pyodbc.OperationalError(
                    "HYT00", f"[HYT00] {name} did not return within {self._timeout_s:g} s; connection abandoned, "
                             "the transaction's outcome is unknown (SQLEndTran)")
        if outcome:
            raise outcome[0]
