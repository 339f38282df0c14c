"""Observe-only on PostgreSQL: `pg_stat_database.xact_commit` of the benchmark database (see `workloads.servercounter`).

- Its own queries are not counted: it connects to *another* database of the same server
  (`monitor_database`, default `postgres`; pg_stat_database shows every database from any of
  them), and each sample ends in ROLLBACK.
- It follows the primary: the OLTP dialect's multi-host connection string with
  `target_session_attrs=read-write`, reconnecting after any error.
- Crash recovery discards the statistics and pg_stat_reset() zeroes them: both are resets.
"""

from __future__ import annotations

from typing import Any

from harness_kernel.errors import ConfigError
from workloads.oltp.dialect import PostgresDialect
from workloads.servercounter import CounterSample, CounterStopReport, ServerCommitCounter, commits_between, spread

__all__ = ["CounterSample", "CounterStopReport", "PgCommitCounter", "commits_between", "spread"]

# One row: the database's commit counter, which server answered, that server's start, and
# whether the statistics were discarded at that start (crash recovery resets the shared stats).
SAMPLE_SQL = (
    "SELECT d.xact_commit, d.stats_reset::text, host(inet_server_addr()) || ':' || inet_server_port(), "
    "pg_postmaster_start_time()::text, b.stats_reset >= pg_postmaster_start_time() "
    "FROM pg_stat_database AS d CROSS JOIN pg_stat_bgwriter AS b WHERE d.datname = ?"
)


class PgCommitCounter(ServerCommitCounter):
    """Counts the commits of `settings.database`, sampling from `monitor_database` of the same server."""

    workload = "pgcounter"
    monitor_database = "postgres"  # pg_stat_database shows every database from any of them

    def default_dialect(self) -> PostgresDialect:
        return PostgresDialect()

    def _sample(self, connection: Any) -> CounterSample:
        t = self.timeline.now()
        row = connection.cursor().execute(SAMPLE_SQL, self.database).fetchone()
        connection.rollback()  # a rollback, not a commit, even in the monitoring database
        if row is None:
            raise ConfigError(f"database {self.database!r} is not in pg_stat_database on the server")
        return CounterSample(t, int(row[0]), str(row[2]), str(row[3]), None if row[1] is None else str(row[1]), bool(row[4]))

