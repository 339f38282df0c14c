"""Schema creation and data load, TPC-B shaped (pgbench's layout), plus the commit ledger table."""

from __future__ import annotations

from dataclasses import dataclass, replace

from workloads.oltp.connect import close_quietly, connect
from workloads.oltp.dialect import Dialect
from workloads.oltp.settings import ConnectionSettings

LOAD_TIMEOUT_S = 3600.0  # loading a large scale takes longer than a workload statement may
TABLES = ("history", "ledger", "accounts", "tellers", "branches")


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


def prepare_schema(dialect: Dialect, settings: ConnectionSettings, scale: Scale) -> None:
    """Recreate and load the schema (idempotent: drops what a previous run left)."""
    connection = connect(dialect, replace(settings, statement_timeout_s=LOAD_TIMEOUT_S))
    try:
        cursor = connection.cursor()
        for statement in schema_statements(dialect, scale):
            cursor.execute(statement)
        connection.commit()
        connection.autocommit = True
        for statement in dialect.after_load():
            cursor.execute(statement)
    finally:
        close_quietly(connection)

