"""Schema creation and data load, TPC-B shaped (pgbench's layout), plus the commit ledger table.

`history` and `accounts` are common table names, and loading drops them first: so the schema
is created only in a database the harness owns. Ownership is a marker table the harness
creates with its schema (`resilience_harness_owner`); a database without it is used only when
the caller declares it scratch (the topology's `databases[].database_is_scratch`), and then
the marker is written so later runs need no opt-in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from harness_kernel.errors import ConfigError
from harness_kernel.odbc.settings import ConnectionSettings
from workloads.oltp.connect import close_quietly, connect
from workloads.oltp.dialect import Dialect

LOAD_TIMEOUT_S = 3600.0  # loading a large scale takes longer than a workload statement may
TABLES = ("history", "ledger", "accounts", "tellers", "branches")
MARKER = "resilience_harness_owner"


@dataclass(frozen=True)
class Scale:
    """Data size: `branches` branches, 10 tellers and `accounts_per_branch` accounts each."""

    branches: int = 1
    accounts_per_branch: int = 100_000
    tellers_per_branch: int = 10

    @property
    def accounts(self) -> int:
        return self.branches * self.accounts_per_branch

    @property
    def tellers(self) -> int:
        return self.branches * self.tellers_per_branch


def schema_statements(dialect: Dialect, scale: Scale) -> list[str]:
    """Drop, create and load, in order. Balances are bigint so long runs cannot overflow them."""
    numbers = dialect.numbers
    ts = dialect.timestamp_type
    return [
        *(f"DROP TABLE IF EXISTS {table}" for table in TABLES),
        "CREATE TABLE branches (bid int NOT NULL PRIMARY KEY, bbalance bigint NOT NULL, filler char(88))",
        "CREATE TABLE tellers (tid int NOT NULL PRIMARY KEY, bid int NOT NULL, tbalance bigint NOT NULL, filler char(84))",
        "CREATE TABLE accounts (aid int NOT NULL PRIMARY KEY, bid int NOT NULL, abalance bigint NOT NULL, filler char(84))",
        f"CREATE TABLE history (tid int, bid int, aid int, delta int, mtime {ts}, filler char(22))",
        "CREATE TABLE ledger (id bigint NOT NULL PRIMARY KEY)",
        f"INSERT INTO branches (bid, bbalance) SELECT n, 0 FROM ({numbers(scale.branches)}) AS s",
        f"INSERT INTO tellers (tid, bid, tbalance) SELECT n, (n - 1) / {scale.tellers_per_branch} + 1, 0 "
        f"FROM ({numbers(scale.tellers)}) AS s",
        f"INSERT INTO accounts (aid, bid, abalance) SELECT n, (n - 1) / {scale.accounts_per_branch} + 1, 0 "
        f"FROM ({numbers(scale.accounts)}) AS s",
    ]


def marker_statements(dialect: Dialect) -> list[str]:
    """The ownership marker: who created the schema and when (for a DBA who finds it)."""
    return [f"CREATE TABLE {MARKER} (created_by varchar(64) NOT NULL, created_at {dialect.timestamp_type} NOT NULL)",
            f"INSERT INTO {MARKER} (created_by, created_at) VALUES ('resilience-harness', CURRENT_TIMESTAMP)"]


def ownership_problem(database: str, existing: Sequence[str], scratch: bool) -> str | None:
    """Why the schema may not be (re)created here, or None if it may."""
    if MARKER in existing or scratch:
        return None
    found = [t for t in TABLES if t in existing]
    if found:
        return (f"database {database!r} already has table(s) {', '.join(found)} and no {MARKER} marker: the harness "
                "did not create them and will not drop them. Point the topology at a database of its own")
    return (f"database {database!r} has no {MARKER} marker: the harness creates its tables only in a database it owns. "
            "If this is a fresh database for the harness, set databases[].database_is_scratch: true")


def prepare_schema(dialect: Dialect, settings: ConnectionSettings, scale: Scale, *, scratch: bool = False) -> None:
    """Recreate and load the schema in a database the harness owns (drops what a previous run left).

    `scratch`: the caller declares the database disposable, for a first run that has no marker
    yet. Anything else raises `ConfigError` before a single table is touched.
    """
    connection = connect(dialect, replace(settings, statement_timeout_s=LOAD_TIMEOUT_S))
    try:
        cursor = connection.cursor()
        existing = [str(row[0]) for row in cursor.execute(dialect.existing_tables((*TABLES, MARKER))).fetchall()]
        problem = ownership_problem(settings.database, existing, scratch)
        if problem is not None:
            raise ConfigError(problem)
        statements = schema_statements(dialect, scale)
        if MARKER not in existing:
            statements = marker_statements(dialect) + statements
        for statement in statements:
            cursor.execute(statement)
        connection.commit()
        connection.autocommit = True
        for statement in dialect.after_load():
            cursor.execute(statement)
    finally:
        close_quietly(connection)

