"""SQL dialect profiles: connection string, session setup, error numbers and the SQL text.

Everything that differs between PostgreSQL (the lab, through psqlODBC) and SQL Server
(production, through ODBC Driver 18 or FreeTDS) lives here; the mixes, the loader and the
ledger use only the `Statements` a dialect hands out.

Every value that reaches a connection string is escaped for the grammar that reads it (ODBC:
`{...}` with `}` doubled; libpq inside psqlODBC's Pqopt: `'...'` with backslash escapes), so a
topology value can never add an attribute such as `Encrypt=no`. What no grammar can carry
(a NUL, a host libpq would split) is refused with a `ConfigError` that does not echo it.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness_kernel.errors import ConfigError
from harness_kernel.odbc import sqlserver_driver as sqlserver
from harness_kernel.odbc.bounded import BoundedConnection
from harness_kernel.odbc.errors import ErrorClass
from harness_kernel.odbc.grammar import REDACTED, odbc_braced, odbc_value, refuse_nul, refuse_nul_in, with_password
from harness_kernel.odbc.settings import ConnectionSettings

# what one entry of a libpq host list may be: a name, an IPv4/IPv6 address (with zone), a socket directory
_LIBPQ_HOST = re.compile(r"[A-Za-z0-9._:%/-]+")


def libpq_quoted(value: str, what: str = "a libpq option") -> str:
    """A libpq conninfo value in single quotes, `\\` and `'` backslash-escaped (PQconninfoParse's rules)."""
    return "'" + refuse_nul(value, what).replace("\\", "\\\\").replace("'", "\\'") + "'"


def libpq_host(host: str) -> str:
    """One entry of a libpq host list; anything libpq would split or re-read is refused."""
    if not _LIBPQ_HOST.fullmatch(host):
        raise ConfigError(f"endpoint host {host!r} is not a host name, address or socket directory "
                          "(libpq host lists cannot carry spaces, '=', ',', quotes, backslashes or braces)")
    return host


@dataclass(frozen=True)
class Statements:
    """The SQL a workload runs. Parameters are `?` markers, in the order the names say."""

    update_account: str = "UPDATE accounts SET abalance = abalance + ? WHERE aid = ?"  # delta, aid
    select_account: str = "SELECT abalance FROM accounts WHERE aid = ?"  # aid
    update_teller: str = "UPDATE tellers SET tbalance = tbalance + ? WHERE tid = ?"  # delta, tid
    update_branch: str = "UPDATE branches SET bbalance = bbalance + ? WHERE bid = ?"  # delta, bid
    # ledger id, tid, bid, aid, delta: one round trip for the history row and the ledger row
    insert_history_and_ledger: str = ""
    select_account_range: str = "SELECT aid, abalance FROM accounts WHERE aid BETWEEN ? AND ?"  # low, high
    select_branch: str = "SELECT bbalance FROM branches WHERE bid = ?"  # bid
    sum_branch_accounts: str = "SELECT SUM(abalance) FROM accounts WHERE bid = ? AND aid BETWEEN ? AND ?"
    ledger_max_id: str = "SELECT MAX(id) FROM ledger"
    ledger_count_range: str = "SELECT COUNT(*) FROM ledger WHERE id BETWEEN ? AND ?"  # first id, last id
    ledger_ids_range: str = "SELECT id FROM ledger WHERE id BETWEEN ? AND ? ORDER BY id"

    def ledger_ids_in(self, count: int) -> str:
        return f"SELECT id FROM ledger WHERE id IN ({', '.join('?' * count)})"


class Dialect(ABC):
    """One SQL dialect and driver. Subclasses hold no connection state."""

    name: str
    password_key: str
    statements: Statements
    timestamp_type: str
    native_classes: Mapping[int, ErrorClass] = {}

    @abstractmethod
    def connection_pairs(self, settings: ConnectionSettings) -> list[tuple[str, str]]:
        """Connection-string attributes without the password."""

    def connection_string(self, settings: ConnectionSettings) -> str:
        """The full string, password included: pass it to the driver, never to a log."""
        return self._with_password(settings, None)

    def redacted_connection_string(self, settings: ConnectionSettings) -> str:
        return self._with_password(settings, REDACTED)

    def _with_password(self, settings: ConnectionSettings, shown: str | None) -> str:
        refuse_nul_in(settings)
        return with_password(self.connection_pairs(settings), self.password_key, settings, shown)

    @abstractmethod
    def session_setup(self, settings: ConnectionSettings) -> list[str]:
        """Statements run once per new session (timeouts, session options)."""

    def configure(self, connection: Any, settings: ConnectionSettings) -> None:  # noqa: B027 - optional hook
        """Driver-side attributes set on a new pyodbc connection (e.g. the query timeout)."""

    def bounded(self, connection: Any, settings: ConnectionSettings) -> Any:
        """The connection the workload uses: wrapped where the driver cannot bound commit/rollback itself."""
        return connection

    @abstractmethod
    def numbers(self, count: int) -> str:
        """A derived table with one integer column `n` from 1 to `count`."""

    def after_load(self) -> list[str]:
        return []

    @abstractmethod
    def existing_tables(self, names: Sequence[str]) -> str:
        """A query listing which of `names` already name a table where DROP TABLE would find it."""


def _name_list(names: Sequence[str]) -> str:
    """Table names as SQL literals; only plain identifiers (they are constants of the schema)."""
    if not names or not all(n.isidentifier() and n.isascii() for n in names):
        raise ValueError(f"not plain table names: {names!r}")
    return ", ".join(f"('{n}')" for n in names)


class PostgresDialect(Dialect):
    """PostgreSQL through psqlODBC, multi-host and read-write aware (the lab's MultiSubnetFailover).

    psqlODBC cannot set a client-side query timeout (SQL_ATTR_QUERY_TIMEOUT is refused), so the
    statement timeout is the server's `statement_timeout`; a dead peer is bounded by
    `tcp_user_timeout` and TCP keepalives. `port` and `connect_timeout` go only into Pqopt /
    LoginTimeout respectively: giving either both ways fails with error 202.
    """

    name = "postgresql"
    password_key = "Pwd"
    timestamp_type = "timestamp"
    statements = Statements(
        insert_history_and_ledger="WITH l AS (INSERT INTO ledger (id) VALUES (?)) "
        "INSERT INTO history (tid, bid, aid, delta, mtime) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP)",
    )
    native_classes = {
        35: ErrorClass.CONNECTION_LOST,  # psqlODBC CONNECTION_COMMUNICATION_ERROR: "The connection has been lost"
        101: ErrorClass.CONNECTION_LOST,  # psqlODBC CONN_OPENDB_ERROR: could not connect
    }

    def __init__(self, driver: str = "PostgreSQL Unicode", keepalive_s: int = 1) -> None:
        self.driver = driver
        self.keepalive_s = keepalive_s

    def connection_pairs(self, settings: ConnectionSettings) -> list[tuple[str, str]]:
        hosts = ",".join(libpq_host(e.host) for e in settings.endpoints)
        ports = ",".join(str(int(e.port)) for e in settings.endpoints)
        k = int(self.keepalive_s)
        pqopt = (f"host={hosts} port={ports} target_session_attrs=read-write "
                 f"tcp_user_timeout={int(settings.tcp_user_timeout_ms)} keepalives_idle={k} keepalives_interval={k} "
                 f"keepalives_count=2 application_name={libpq_quoted(settings.application_name, 'the application name')}")
        return [("Driver", odbc_braced(self.driver, "the driver name")), ("Database", odbc_value(settings.database)),
                ("Uid", odbc_value(settings.credentials.username)), ("Protocol", "7.4-1"),
                ("UseServerSidePrepare", "0"), ("LoginTimeout", str(int(settings.login_timeout_s))),
                ("Pqopt", odbc_braced(pqopt))]

    def session_setup(self, settings: ConnectionSettings) -> list[str]:
        return [f"SET statement_timeout = {math.ceil(settings.statement_timeout_s * 1000)}"]

    def numbers(self, count: int) -> str:
        return f"SELECT g AS n FROM generate_series(1, {int(count)}) AS g"

    def after_load(self) -> list[str]:
        return ["ANALYZE branches", "ANALYZE tellers", "ANALYZE accounts"]

    def existing_tables(self, names: Sequence[str]) -> str:
        # to_regclass resolves through search_path, as an unqualified DROP TABLE does
        return f"SELECT v.name FROM (VALUES {_name_list(names)}) AS v(name) WHERE to_regclass(v.name) IS NOT NULL"


class TSqlDialect(Dialect):
    """SQL Server through ODBC Driver 18 (`MultiSubnetFailover=Yes` for AG listeners and
    multi-subnet FCIs) or FreeTDS (which has no MultiSubnetFailover: it tries one address).

    The query timeout is pyodbc's `connection.timeout` (client side, HYT00 when it fires); it does
    not cover commit and rollback, which `BoundedConnection` bounds by the same timeout.
    No SQL Server runs in the lab: this profile is covered by tests of its SQL text and of the
    classification of SQL Server error messages, not by live runs.
    """

    name = "tsql"
    password_key = "PWD"
    timestamp_type = "datetime2"
    statements = Statements(
        insert_history_and_ledger="INSERT INTO ledger (id) VALUES (?); "
        "INSERT INTO history (tid, bid, aid, delta, mtime) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP)",
    )
    native_classes = sqlserver.NATIVE_CLASSES

    def __init__(self, driver: sqlserver.Driver = "odbc18", tds_version: str = "7.4") -> None:
        self.driver = driver
        self.tds_version = tds_version

    def connection_pairs(self, settings: ConnectionSettings) -> list[tuple[str, str]]:
        return sqlserver.connection_pairs(settings, self.driver, self.tds_version)

    def session_setup(self, settings: ConnectionSettings) -> list[str]:
        return ["SET NOCOUNT ON", "SET XACT_ABORT ON", f"SET LOCK_TIMEOUT {math.ceil(settings.statement_timeout_s * 1000)}"]

    def configure(self, connection: Any, settings: ConnectionSettings) -> None:
        connection.timeout = math.ceil(settings.statement_timeout_s)

    def bounded(self, connection: Any, settings: ConnectionSettings) -> Any:
        # connection.timeout does not cover SQLEndTran: a partitioned listener would hold a commit ~15 min
        return BoundedConnection(connection, settings.statement_timeout_s)

    def numbers(self, count: int) -> str:
        return (f"SELECT TOP ({int(count)}) ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS n "
                "FROM sys.all_objects AS a CROSS JOIN sys.all_objects AS b CROSS JOIN sys.all_objects AS c")

    def after_load(self) -> list[str]:
        return ["UPDATE STATISTICS branches", "UPDATE STATISTICS tellers", "UPDATE STATISTICS accounts"]

    def existing_tables(self, names: Sequence[str]) -> str:
        # OBJECT_ID resolves through the user's default schema, then dbo, as an unqualified DROP TABLE does
        return f"SELECT v.name FROM (VALUES {_name_list(names)}) AS v(name) WHERE OBJECT_ID(v.name) IS NOT NULL"
