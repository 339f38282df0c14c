"""Observe-only on SQL Server: `Write Transactions/sec` of the benchmark database (see `workloads.servercounter`).

`sys.dm_os_performance_counters` row of the `SQLServer:Databases` object (`MSSQL$NAME:Databases`
on a named instance; `object_name` is padded, hence the RTRIM), counter `Write Transactions/sec`,
instance = the database. Despite its name the value is cumulative (cntr_type 272696576,
PERF_COUNTER_BULK_COUNT): per-second TPS is the delta between samples, as the shared sampler
takes it. It counts transactions that wrote to the database, so the counter's own read-only
queries, run in master, add nothing.

- It follows the primary through the AG listener (the T-SQL dialect's connection,
  MultiSubnetFailover), reconnecting after any error.
- The answering server is `@@SERVERNAME` (each replica's own name): another one is a new baseline.
- Counters live as long as the instance: a changed `sqlserver_start_time` (a restart, an FCI
  moving to another node) is a reset, and the count starts from zero.

Sources: "sys.dm_os_performance_counters (Transact-SQL)",
https://learn.microsoft.com/en-us/sql/relational-databases/system-dynamic-management-views/sys-dm-os-performance-counters-transact-sql;
"SQL Server, Databases object", https://learn.microsoft.com/en-us/sql/relational-databases/performance-monitor/sql-server-databases-object.
"""

from __future__ import annotations

from typing import Any

from harness_kernel.errors import ConfigError
from workloads.oltp.dialect import TSqlDialect
from workloads.servercounter import CounterSample, ServerCommitCounter

SAMPLE_SQL = (
    "SELECT pc.cntr_value, @@SERVERNAME, CONVERT(nvarchar(33), si.sqlserver_start_time, 126) "
    "FROM sys.dm_os_performance_counters AS pc CROSS JOIN sys.dm_os_sys_info AS si "
    "WHERE RTRIM(pc.object_name) LIKE '%:Databases' AND pc.counter_name = 'Write Transactions/sec' "
    "AND pc.instance_name = ?"
)


class SqlServerCommitCounter(ServerCommitCounter):
    """Counts the write transactions of `settings.database`, sampling from master through the same listener."""

    workload = "sqlcounter"
    monitor_database = "master"

    def default_dialect(self) -> TSqlDialect:
        return TSqlDialect()

    def _sample(self, connection: Any) -> CounterSample:
        t = self.timeline.now()
        row = connection.cursor().execute(SAMPLE_SQL, self.database).fetchone()
        connection.rollback()
        if row is None:
            raise ConfigError(f"database {self.database!r} has no 'Write Transactions/sec' counter on the server "
                              "(sys.dm_os_performance_counters): is it the database's name?")
        # the counters start with the instance: a restart always discards them
        return CounterSample(t, int(row[0]), str(row[1]), str(row[2]), None, True)
