"""T-SQL on one SQL Server instance (a replica, or the AG listener / FCI network name) over pyodbc.

Autocommit: `ALTER AVAILABILITY GROUP ... FAILOVER` may not run inside a user transaction, and
the DMV reads need none. The login timeout is the topology's `login_timeout_s` (pyodbc's
`timeout=`), every statement's the `query_timeout_s` (`connection.timeout`, HYT00 when it
fires). An error names the instance, what was being done and the driver's SQLSTATE and native
number with their class, never the connection string or the password. `connector` stands in
for `pyodbc.connect` (same call shape); the contract tests give a DB-API model of SQL Server.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from faults.transports import wire
from harness_kernel.errors import ConfigError, ControlPlaneError
from harness_kernel.odbc import sqlserver_driver as sqlserver
from harness_kernel.odbc.errors import ErrorInfo, classify
from harness_kernel.odbc.settings import ConnectionSettings, Credentials, Endpoint
from harness_kernel.topology.credentials import resolve_secret
from harness_kernel.topology.models import Database, DatabaseNode, Topology

Connector = Callable[..., Any]  # pyodbc.connect(string, autocommit=..., timeout=...)
_CONNECTING: ContextVar[Connector | None] = ContextVar("harness_odbc_connector", default=None)
ADMIN_DATABASE = "master"
APPLICATION = "resilience-harness-control"


class SqlServerError(ControlPlaneError):
    """SQL Server (or the driver) refused or failed a statement; `info` says what kind of failure it was."""

    def __init__(self, message: str, info: ErrorInfo) -> None:
        super().__init__(message)
        self.info = info


def _database_index(topology: Topology, database: Database) -> int:
    return next(i for i, d in enumerate(topology.databases) if d.name == database.name)


@dataclass
class TSqlSession:
    """One instance. Builds nothing secret until it connects; reconnects after a failed statement."""

    where: str
    endpoint: Endpoint
    database_name: str
    login: Database  # the topology's database entry: credential reference, driver, TLS, timeouts
    field_path: str  # "databases[0]", for errors about its settings
    connector: Connector | None = None
    statement_timeout_s: float | None = None  # this session's own bound (a backup's); default: the topology's
    _connection: Any = field(default=None, init=False, repr=False)

    @classmethod
    def _for(cls, topology: Topology, database: Database, where: str, endpoint: Endpoint, database_name: str,
             connector: Connector | None) -> TSqlSession:
        return cls(where, endpoint, database_name, database, f"databases[{_database_index(topology, database)}]",
                   connector)

    @classmethod
    def to_node(cls, topology: Topology, database: Database, node: DatabaseNode, *,
                connector: Connector | None = None) -> TSqlSession:
        """The node's own instance (not the listener): what `ALTER AVAILABILITY GROUP ... FAILOVER` is sent to."""
        host, port = node.address or node.name, node.port or database.port
        return cls._for(topology, database, f"sql {node.replica_name} ({host}:{port})", Endpoint(host, port),
                        ADMIN_DATABASE, connector)

    @classmethod
    def to_listener(cls, topology: Topology, database: Database, *, connector: Connector | None = None) -> TSqlSession:
        return cls._for(topology, database, f"sql {database.name} listener ({database.endpoint}:{database.port})",
                        Endpoint(database.endpoint, database.port), ADMIN_DATABASE, connector)

    @property
    def driver(self) -> sqlserver.Driver:
        return sqlserver.DRIVERS[self.login.odbc_driver or "ODBC Driver 18 for SQL Server"]

    def settings(self) -> ConnectionSettings:
        """The connection settings, the password resolved now (a missing one is an error naming its field)."""
        if self.login.credential is None:
            raise ConfigError(f"{self.field_path}.credential: the SQL Server backend needs a login")
        password = resolve_secret(self.login.credential.password, f"{self.field_path}.credential.password")
        return ConnectionSettings(
            endpoints=(self.endpoint,), database=self.database_name,
            credentials=Credentials(self.login.credential.username, password),
            login_timeout_s=self.login.login_timeout_s,
            statement_timeout_s=self.statement_timeout_s or self.login.query_timeout_s,
            encrypt=self.login.encrypt, trust_server_certificate=self.login.trust_server_certificate,
            application_name=APPLICATION)

    def _connect(self) -> Any:
        if self._connection is None:
            connect = self.connector or _CONNECTING.get()
            if connect is None:
                import pyodbc
                connect = pyodbc.connect
            settings = self.settings()
            connection = connect(sqlserver.connection_string(settings, self.driver), autocommit=True,
                                 timeout=settings.login_timeout_s)
            connection.timeout = int(max(1, round(settings.statement_timeout_s)))
            self._connection = connection
        return self._connection

    def _call(self, what: str, run: Callable[[Any], Any]) -> Any:
        try:
            return run(self._connect())
        except Exception as exc:  # pyodbc.Error and its subclasses; the model raises the same shape
            if not _is_driver_error(exc):
                raise
            self.close()
            info = classify(exc, sqlserver.NATIVE_CLASSES)
            raise SqlServerError(f"{self.where}: {what}: {info.code} {info.error_class}: {_message(exc)}",
                                 info) from None

    def rows(self, sql: str, params: Sequence[Any] = (), *, what: str) -> list[tuple[Any, ...]]:
        wire.sent("odbc", self.where, f"{what}: {' '.join(sql.split())[:120]}", reads=wire.sql_reads(sql))

        def run(connection: Any) -> list[tuple[Any, ...]]:
            return [tuple(row) for row in connection.cursor().execute(sql, *params).fetchall()]
        result: list[tuple[Any, ...]] = self._call(what, run)
        wire.recorded("odbc", self.instance, {"sql": sql, "params": [encoded(p) for p in params]},
                      {"rows": [[encoded(v) for v in row] for row in result]})
        return result

    @property
    def instance(self) -> str:
        """The instance as a capture keys it: the database entry and the address asked."""
        return f"{self.field_path} {self.endpoint.host}:{self.endpoint.port}"

    def execute(self, sql: str, params: Sequence[Any] = (), *, what: str) -> None:
        wire.sent("odbc", self.where, f"{what}: {' '.join(sql.split())[:120]}", reads=False)  # a statement, not a query
        self._call(what, lambda connection: connection.cursor().execute(sql, *params))

    def close(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(Exception):
                self._connection.close()
            self._connection = None


@contextmanager
def connecting_with(connector: Connector) -> Iterator[None]:
    """Sessions without a connector of their own connect through `connector` in this context (a replay's
    capture, a contract test's model), instead of pyodbc."""
    token = _CONNECTING.set(connector)
    try:
        yield
    finally:
        _CONNECTING.reset(token)


def encoded(value: Any) -> Any:
    """A value of a row or a parameter as JSON holds it (a capture): times as ISO text, marked."""
    if isinstance(value, datetime.datetime):
        return {"datetime": value.isoformat()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def decoded(value: Any) -> Any:
    if isinstance(value, dict) and "datetime" in value:
        return datetime.datetime.fromisoformat(value["datetime"])
    return value


def _is_driver_error(exc: BaseException) -> bool:
    """pyodbc's errors carry (SQLSTATE, message) in `args`; anything else is a bug, not the server."""
    args: tuple[Any, ...] = tuple(getattr(exc, "args", ()))
    return len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str)


def _message(exc: BaseException) -> str:
    """The driver's message (SQL Server's own words), cut short; pyodbc never puts the connection string in it."""
    args: tuple[Any, ...] = tuple(exc.args)
    text = str(args[1])
    return text if len(text) <= 400 else text[:400] + "..."
