"""Error classification, on messages as pyodbc raises them.

psqlODBC messages were captured from a real PostgreSQL 15 (restart, pg_terminate_backend,
statement_timeout, read-only transaction, bad password, refused port). No SQL Server runs
here: its messages are ODBC Driver 18 / FreeTDS texts in pyodbc's format, checked against
the documented SQLSTATEs and native numbers.
"""

from __future__ import annotations

import pyodbc
import pytest

from workloads.oltp import ErrorClass, PostgresDialect, TSqlDialect, classify

PG = PostgresDialect().native_classes
MS = TSqlDialect().native_classes


def err(sqlstate: str, message: str) -> pyodbc.Error:
    return pyodbc.Error(sqlstate, message)


PSQLODBC_CASES = [
    ("server restart (pg_ctl restart -m immediate)", "57P01",
     "[57P01] server closed the connection unexpectedly\n\tThis probably means the server terminated abnormally\n"
     "\tbefore or while processing the request.\n;\nThe connection has been lost (35) (SQLExecDirectW)",
     ErrorClass.CONNECTION_LOST, 35),
    ("backend terminated", "57P01",
     "[57P01] FATAL: terminating connection due to administrator command;\nThe connection has been lost (35) (SQLExecDirectW)",
     ErrorClass.CONNECTION_LOST, 35),
    ("server down at connect", "08001",
     '[08001] connection to server at "127.0.0.1", port 1 failed: Connection refused\n\tIs the server running on that host '
     "and accepting TCP/IP connections?\n (101) (SQLDriverConnect)", ErrorClass.CONNECTION_LOST, 101),
    ("statement_timeout", "57014",
     "[57014] ERROR: canceling statement due to statement timeout;\nError while executing the query (1) (SQLExecDirectW)",
     ErrorClass.TIMEOUT, 1),
    ("write on a standby or demoted primary", "25006",
     "[25006] ERROR: cannot execute INSERT in a read-only transaction;\nError while executing the query (1) (SQLExecDirectW)",
     ErrorClass.NOT_PRIMARY, 1),
    ("deadlock", "40P01", "[40P01] ERROR: deadlock detected;\nError while executing the query (1) (SQLExecDirectW)",
     ErrorClass.DEADLOCK_RETRY, 1),
    ("duplicate key", "23505",
     '[23505] ERROR: duplicate key value violates unique constraint "t_pkey"\nDETAIL: Key (id)=(1) already exists.;\n'
     "Error while executing the query (1) (SQLExecDirectW)", ErrorClass.OTHER, 1),
]

ODBC18 = "[Microsoft][ODBC Driver 18 for SQL Server]"
SQLSERVER_CASES = [
    ("connection reset during a failover", "08S01",
     f"[08S01] {ODBC18}TCP Provider: Error code 0x2746 (10054) (SQLExecDirectW); "
     f"[08S01] {ODBC18}Communication link failure (10054)",
     ErrorClass.CONNECTION_LOST, 10054),
    ("listener not answering", "08001",
     f"[08001] {ODBC18}TCP Provider: Error code 0x2749 (10057) (SQLDriverConnect); [08001] {ODBC18}A network-related or "
     "instance-specific error has occurred while establishing a connection to SQL Server. (10057)",
     ErrorClass.CONNECTION_LOST, 10057),
    ("login timeout", "HYT00", f"[HYT00] {ODBC18}Login timeout expired (0) (SQLDriverConnect)", ErrorClass.TIMEOUT, 0),
    ("query timeout", "HYT00", f"[HYT00] {ODBC18}Query timeout expired (0) (SQLExecDirectW)", ErrorClass.TIMEOUT, 0),
    ("AG database not accessible", "42000",
     f"[42000] {ODBC18}[SQL Server]The target database, 'bench', is participating in an availability group and is currently "
     "not accessible for queries. (976) (SQLDriverConnect); "
     f'[42000] {ODBC18}[SQL Server]Cannot open database "bench" requested by the login. The login failed. (4060)',
     ErrorClass.NOT_PRIMARY, 976),
    ("replica resolving", "42000",
     f"[42000] {ODBC18}[SQL Server]Unable to access availability database 'bench' because the database replica is not in the "
     "PRIMARY or SECONDARY role. (983) (SQLExecDirectW)", ErrorClass.NOT_PRIMARY, 983),
    ("database not open yet", "42000",
     f'[42000] {ODBC18}[SQL Server]Cannot open database "bench" requested by the login. The login failed. (4060) '
     "(SQLDriverConnect)", ErrorClass.NOT_PRIMARY, 4060),
    ("deadlock victim", "40001",
     f"[40001] {ODBC18}[SQL Server]Transaction (Process ID 57) was deadlocked on lock resources with another process and has "
     "been chosen as the deadlock victim. Rerun the transaction. (1205) (SQLExecDirectW)", ErrorClass.DEADLOCK_RETRY, 1205),
    ("primary key violation", "23000",
     f"[23000] {ODBC18}[SQL Server]Violation of PRIMARY KEY constraint 'PK__ledger'. Cannot insert duplicate key in object "
     "'dbo.ledger'. The duplicate key value is (1). (2627) (SQLExecDirectW)", ErrorClass.OTHER, 2627),
    ("FreeTDS write failed", "08S01", "[08S01] [FreeTDS][SQL Server]Write to the server failed (20006) (SQLExecDirectW)",
     ErrorClass.CONNECTION_LOST, 20006),
    ("FreeTDS timeout", "HYT00", "[HYT00] [FreeTDS][SQL Server]Timeout expired (0) (SQLExecDirectW)", ErrorClass.TIMEOUT, 0),
]


@pytest.mark.parametrize(("case", "sqlstate", "message", "expected", "native"), PSQLODBC_CASES,
                         ids=[c[0] for c in PSQLODBC_CASES])
def test_psqlodbc_errors_are_classified_by_sqlstate_and_native_number(case, sqlstate, message, expected, native):
    info = classify(err(sqlstate, message), PG)
    assert (info.error_class, info.sqlstate, info.native) == (expected, sqlstate, native)


@pytest.mark.parametrize(("case", "sqlstate", "message", "expected", "native"), SQLSERVER_CASES,
                         ids=[c[0] for c in SQLSERVER_CASES])
def test_sql_server_errors_are_classified_by_sqlstate_and_native_number(case, sqlstate, message, expected, native):
    info = classify(err(sqlstate, message), MS)
    assert (info.error_class, info.sqlstate, info.native) == (expected, sqlstate, native)


def test_the_native_number_wins_over_a_generic_sqlstate():
    info = classify(err("42000", f"[42000] {ODBC18}[SQL Server]... (983) (SQLExecDirectW)"), MS)
    assert info.error_class is ErrorClass.NOT_PRIMARY
    assert info.code == "42000/983"


def test_errors_that_lose_or_misplace_the_session_require_a_reconnect():
    assert {c for c in ErrorClass if c.needs_reconnect} == {
        ErrorClass.CONNECTION_LOST, ErrorClass.TIMEOUT, ErrorClass.NOT_PRIMARY}


def test_a_non_odbc_exception_is_other():
    assert classify(RuntimeError("boom")).error_class is ErrorClass.OTHER
