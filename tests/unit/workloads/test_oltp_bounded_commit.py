"""A T-SQL commit or rollback that never returns is bounded (safety finding #20, hang).

pyodbc's `connection.timeout` bounds statements but not SQLEndTran: on a partitioned AG
listener a commit waits for TCP to give up (~15 min). No SQL Server runs here, so the
connection is a named fake whose commit blocks until the test releases it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pyodbc
import pytest

from harness_kernel.topology.credentials import Secret
from workloads.oltp import ConnectionSettings, Credentials, Endpoint, ErrorClass, PostgresDialect, TSqlDialect, classify
from workloads.oltp import connect as connect_module
from workloads.oltp.connect import close_quietly, connect


class FakeBlockingConnection:
    """Stands in for a pyodbc connection whose server stopped answering mid-commit."""

    def __init__(self) -> None:
        self.timeout = 0
        self.autocommit = False
        self.blocking = False
        self.release = threading.Event()
        self.closed = threading.Event()

    def cursor(self) -> Any:
        return self

    def execute(self, *args: object) -> Any:
        return self

    def _end(self) -> None:
        if self.blocking:
            self.release.wait()
            raise pyodbc.OperationalError("08S01", "[08S01] Communication link failure (10054) (SQLEndTran)")

    def commit(self) -> None:
        self._end()

    def rollback(self) -> None:
        self._end()

    def close(self) -> None:
        if self.blocking and not self.release.is_set():
            self.release.wait()  # a real driver serialises close behind the stuck SQLEndTran
        self.closed.set()


def within(seconds: float, call: Any) -> BaseException | None:
    """Run `call` on a thread; the exception it raised, or fail if it is still running after `seconds`."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still blocked after {seconds} s")
    return outcome[0]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Any:
    connection = FakeBlockingConnection()
    monkeypatch.setattr(connect_module.pyodbc, "connect", lambda *args, **kw: connection)
    yield connection
    connection.release.set()


SETTINGS = ConnectionSettings((Endpoint("ag-listener", 1433),), "bench", Credentials("app", Secret("pw")),
                              statement_timeout_s=0.5)


@pytest.mark.parametrize("end", ["commit", "rollback"])
def test_a_tsql_commit_or_rollback_that_blocks_is_bounded_by_the_statement_timeout(fake: Any, end: str) -> None:
    connection = connect(TSqlDialect(), SETTINGS)
    fake.blocking = True
    started = time.monotonic()
    error = within(3.0, getattr(connection, end))
    assert 0.4 < time.monotonic() - started < 1.5
    assert isinstance(error, pyodbc.Error)
    assert classify(error, TSqlDialect().native_classes).error_class is ErrorClass.TIMEOUT  # outcome unknown: reconnect


def test_a_connection_whose_commit_timed_out_is_abandoned_without_blocking_the_worker(fake: Any) -> None:
    connection = connect(TSqlDialect(), SETTINGS)
    fake.blocking = True
    within(3.0, connection.commit)
    assert within(0.5, lambda: close_quietly(connection)) is None  # the worker moves on at once
    assert not fake.closed.is_set()
    fake.release.set()  # the stuck commit returns at last; the connection is closed behind it
    assert fake.closed.wait(2.0)
    with pytest.raises(pyodbc.Error):
        connection.cursor()


def test_a_commit_that_fails_at_once_raises_the_drivers_own_error_and_postgres_is_not_wrapped(fake: Any) -> None:
    connection = connect(TSqlDialect(), SETTINGS)
    fake.blocking = True
    fake.release.set()  # the commit returns at once, with the driver's error
    with pytest.raises(pyodbc.OperationalError, match="Communication link failure"):
        connection.commit()
    assert connection.cursor() is fake  # not abandoned: the caller decides what to do with it
    assert PostgresDialect().bounded(fake, SETTINGS) is fake  # psqlODBC is bounded by tcp_user_timeout
