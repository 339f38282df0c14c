"""FreeTDS (Debian's tdsodbc), loaded for real through pyodbc: a SQL Server that is not there fails cleanly and in time.

No SQL Server runs here, so what is proven is the client side: the driver the harness names
loads, the connection string it builds is one FreeTDS accepts, and an instance that does not
answer is a classified error within the login timeout, never a hang. ODBC Driver 18 is not in
Debian's archive; its strings are tested as strings (tests/unit/workloads).
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator

import pyodbc
import pytest

from harness_kernel.odbc.errors import ErrorClass, classify
from harness_kernel.odbc.settings import ConnectionSettings, Credentials, Endpoint
from harness_kernel.odbc.sqlserver_driver import NATIVE_CLASSES, connection_string
from harness_kernel.topology.credentials import Secret
from workloads.oltp import TSqlDialect
from workloads.oltp.connect import connect


def freetds_installed() -> bool:
    try:
        drivers = subprocess.run(["odbcinst", "-q", "-d"], capture_output=True, text=True, timeout=10).stdout
    except OSError:
        return False
    return "[FreeTDS]" in drivers


pytestmark = pytest.mark.skipif(not freetds_installed(), reason="FreeTDS (tdsodbc) is not installed: make setup")


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts the TCP connection and never says a word: a hung instance."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield int(s.getsockname()[1])


def settings(port: int, login_timeout_s: int = 2) -> ConnectionSettings:
    return ConnectionSettings(endpoints=(Endpoint("127.0.0.1", port),), database="bench",
                              credentials=Credentials("harness", Secret("Not-the-password-1")),
                              login_timeout_s=login_timeout_s, encrypt=False)


def test_a_closed_port_is_a_connection_error_at_once(closed_port: int) -> None:
    started = time.monotonic()
    with pytest.raises(pyodbc.Error) as caught:
        connect(TSqlDialect(driver="freetds"), settings(closed_port))
    elapsed = time.monotonic() - started
    info = classify(caught.value, NATIVE_CLASSES)
    print(f"\nFreeTDS, closed port: {info.code} {info.error_class} after {elapsed:.2f} s")
    assert info.error_class in (ErrorClass.CONNECTION_LOST, ErrorClass.TIMEOUT)
    assert info.error_class.needs_reconnect
    assert elapsed < 2 + 1.5
    assert "Not-the-password-1" not in str(caught.value)


def test_an_instance_that_never_answers_fails_within_the_login_timeout(silent_port: int) -> None:
    started = time.monotonic()
    with pytest.raises(pyodbc.Error) as caught:
        connect(TSqlDialect(driver="freetds"), settings(silent_port, login_timeout_s=2))
    elapsed = time.monotonic() - started
    info = classify(caught.value, NATIVE_CLASSES)
    print(f"\nFreeTDS, silent port: {info.code} {info.error_class} after {elapsed:.2f} s (login timeout 2 s)")
    assert info.error_class in (ErrorClass.CONNECTION_LOST, ErrorClass.TIMEOUT)
    assert 1.0 <= elapsed < 2 + 1.5


def test_the_control_transports_string_loads_the_same_driver(closed_port: int) -> None:
    started = time.monotonic()
    with pytest.raises(pyodbc.Error) as caught:
        pyodbc.connect(connection_string(settings(closed_port), "freetds"), autocommit=True, timeout=2)
    assert time.monotonic() - started < 3.5
    assert "Data source name not found" not in str(caught.value), "FreeTDS was loaded, not refused by the manager"
