"""Contract: the SQL Server commit counter against a DB-API fake of the performance-counter DMV.

No SQL Server runs here. The fake answers only the counter's query, keyed on what SQL Server
would parse: the view, the object (`%:Databases`, padded, so RTRIM), the counter name and the
database as its parameter; rows are shaped as Microsoft documents them:
- sys.dm_os_performance_counters (object_name nchar(128) "SQLServer:Databases" or
  "MSSQL$NAME:Databases" on a named instance, counter_name, instance_name = the database,
  cntr_value cumulative for cntr_type 272696576):
  https://learn.microsoft.com/en-us/sql/relational-databases/system-dynamic-management-views/sys-dm-os-performance-counters-transact-sql
- "Write Transactions/sec" of the Databases object:
  https://learn.microsoft.com/en-us/sql/relational-databases/performance-monitor/sql-server-databases-object
- sys.dm_os_sys_info.sqlserver_start_time:
  https://learn.microsoft.com/en-us/sql/relational-databases/system-dynamic-management-views/sys-dm-os-sys-info-transact-sql
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

import pyodbc
import pytest

from harness_kernel.errors import ConfigError
from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.credentials import Secret
from workloads.base import Workload
from workloads.oltp import ConnectionSettings, Credentials, Endpoint
from workloads.sqlcounter import SqlServerCommitCounter

pytestmark = pytest.mark.contract
SETTINGS = ConnectionSettings((Endpoint("sqlag01-listener.example.net", 1433),), "bench",
                              Credentials("harness_sql", Secret("pw")))


@dataclass
class Instance:
    """What one SQL Server instance's DMVs hold (object_name padded to nchar(128), as the view returns it)."""

    server: str = "SQL01"
    started: str = "2026-11-20T06:00:00.123"
    object_name: str = "SQLServer:Databases".ljust(128)
    counters: dict[str, int] = field(default_factory=lambda: {"bench": 100_000, "master": 5})
    statements: list[str] = field(default_factory=list)

    def cursor(self) -> Instance:
        return self

    def execute(self, sql: str, *params: Any) -> Instance:
        self.statements.append(sql)
        self._row: tuple[Any, ...] | None = None
        if sql.startswith("SET "):
            return self
        key = re.fullmatch(
            r"SELECT pc\.cntr_value, @@SERVERNAME, CONVERT\(nvarchar\(33\), si\.sqlserver_start_time, 126\) "
            r"FROM sys\.dm_os_performance_counters AS pc CROSS JOIN sys\.dm_os_sys_info AS si "
            r"WHERE RTRIM\(pc\.object_name\) LIKE '%:Databases' AND pc\.counter_name = 'Write Transactions/sec' "
            r"AND pc\.instance_name = \?", sql)
        if key is None or len(params) != 1:
            raise pyodbc.ProgrammingError("42000", "[42000] the fake knows only the counter's query (102)")
        matches_object = self.object_name.rstrip().endswith(":Databases")
        value = self.counters.get(params[0])
        self._row = (value, self.server, self.started) if matches_object and value is not None else None
        return self

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._row

    def commit(self) -> None:
        pass

    def rollback(self) -> None:
        pass

    def close(self) -> None:
        pass


def counter() -> tuple[SqlServerCommitCounter, TransactionSeries]:
    series = TransactionSeries("sqlcounter")
    return SqlServerCommitCounter(SETTINGS, Timeline(), series), series


class SteppedTimeline(Timeline):
    """A timeline whose clock the test sets, so each sample falls in a chosen second."""

    def __init__(self) -> None:
        super().__init__()
        self.at = 0.0

    def now(self) -> float:
        return self.at


def test_write_transactions_are_the_counters_delta_per_second() -> None:
    timeline, series = SteppedTimeline(), TransactionSeries("sqlcounter")
    c = SqlServerCommitCounter(SETTINGS, timeline, series)
    sql01 = Instance()
    for t, value in ((10.001, 100_000), (11.001, 100_450), (12.002, 100_910)):
        timeline.at, sql01.counters["bench"] = t, value
        c._take(c._sample(sql01))
    assert [(p.t, p.commits) for p in series.points()] == [(10, 450), (11, 460)]


def test_a_failover_to_another_replica_is_a_new_baseline_and_a_restart_counts_from_zero() -> None:
    c, series = counter()
    primary, secondary = Instance(), Instance(server="SQL02", counters={"bench": 7_000})
    c._take(c._sample(primary))
    primary.counters["bench"] += 300
    c._take(c._sample(primary))
    c._take(c._sample(secondary))  # the listener now reaches SQL02: its counter is another one
    secondary.counters["bench"] += 50
    c._take(c._sample(secondary))
    secondary.started, secondary.counters["bench"] = "2026-11-23T09:00:00.000", 20  # SQL02 restarted
    c._take(c._sample(secondary))
    assert sum(p.commits for p in series.points()) == 300 + 50 + 20
    assert (c.baselines, c.resets) == (2, 1)


def test_a_named_instances_counter_object_is_found() -> None:
    c, _ = counter()
    named = Instance(object_name="MSSQL$PROD:Databases".ljust(128))
    assert c._sample(named).commits == 100_000


def test_a_database_without_a_counter_is_named_in_the_error() -> None:
    c, _ = counter()
    with pytest.raises(ConfigError, match="database 'bench' has no 'Write Transactions/sec' counter"):
        c._sample(Instance(counters={"other": 1}))


def test_the_counter_samples_from_master_read_only_and_never_measures_master() -> None:
    c, _ = counter()
    assert c.settings.database == "master" and c.database == "bench"
    with pytest.raises(ConfigError, match="another database than 'master'"):
        SqlServerCommitCounter(ConnectionSettings(SETTINGS.endpoints, "master", SETTINGS.credentials), Timeline(),
                               TransactionSeries())


def test_it_runs_as_a_workload_reconnects_after_an_error_and_counts_failed_samples(
        monkeypatch: pytest.MonkeyPatch) -> None:
    instance = Instance()
    connects: list[str] = []

    def connect(string: str, **_: Any) -> Instance:
        connects.append(string)
        if len(connects) == 2:
            raise pyodbc.OperationalError("HYT00", "[HYT00] Login timeout expired (0) (SQLDriverConnect)")
        return instance

    monkeypatch.setattr(pyodbc, "connect", connect)
    c, series = counter()
    assert isinstance(c, Workload)
    c.interval_s = 0.2
    c.start()
    broken = instance.execute
    failures = iter([True])

    def once_broken(sql: str, *params: Any) -> Instance:
        if sql.startswith("SELECT") and next(failures, False):
            raise pyodbc.OperationalError("08S01", "[08S01] Communication link failure (10054) (SQLExecDirectW)")
        instance.counters["bench"] += 100
        return broken(sql, *params)

    instance.execute = once_broken  # type: ignore[method-assign]
    time.sleep(1.5)
    report = c.stop()
    assert report.clean and report.failed_samples >= 2 and report.connects >= 2
    assert "DATABASE=master" in connects[0] and "MultiSubnetFailover=Yes" in connects[0]
    assert sum(p.commits for p in series.points()) > 0
