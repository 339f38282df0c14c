"""A full SQL Server backup under load: `BACKUP DATABASE ... WITH COPY_ONLY` on the database's primary.

COPY_ONLY, always: a full backup taken by the harness must not become the base of the user's
differential backups nor change their backup chain. The statement blocks until the backup ends,
so it runs on a session of its own in a thread, bounded by `params.timeout_s`; another session
watches it in `sys.dm_exec_requests` and reads the result from msdb. Everything it writes is one
file named after the fault's instance (`harness-<database>-<instance>.bak`), so a revert, or
`recover` after a crash, finds exactly that backup: a request is stopped with `KILL` only when
its statement names that file; the file is removed over WinRM on every node of the database
that names an endpoint (a disk path is local to the node that was primary, which may have
changed since), and otherwise (or for a URL) left where it is, as the plan says. SQL Server's
BACKUP has no rate limit of its own, and Resource Governor's MAX_IOPS_PER_VOLUME would change
the server's configuration, so `max_rate` is refused.

Times: the server's `start_time`, `backup_start_date` and `backup_finish_date` are in the
server's local time zone. Rather than guess its offset, each is read as an age on the server
(`DATEDIFF_BIG(millisecond, t, SYSDATETIME())`, both sides local) and placed on the harness's
clock as `time.time() - age`: no time zone, no clock skew between the machines, only the
query's round trip (and a daylight-saving change inside that age would be off by its hour).

T-SQL as documented by Microsoft: BACKUP (Transact-SQL)
https://learn.microsoft.com/en-us/sql/t-sql/statements/backup-transact-sql ; copy-only backups
https://learn.microsoft.com/en-us/sql/relational-databases/backup-restore/copy-only-backups-sql-server ;
sys.dm_exec_requests (command 'BACKUP DATABASE', percent_complete, start_time)
https://learn.microsoft.com/en-us/sql/relational-databases/system-dynamic-management-views/sys-dm-exec-requests-transact-sql ;
backupset / backupmediafamily in msdb
https://learn.microsoft.com/en-us/sql/relational-databases/system-tables/backupset-transact-sql ; KILL
https://learn.microsoft.com/en-us/sql/t-sql/language-elements/kill-transact-sql
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any

from faults.contract import (
    BackupParams,
    ConfigError,
    Connector,
    Database,
    FaultPlan,
    FaultSpec,
    FaultState,
    HarnessError,
    OperationProgress,
    Params,
    Target,
    Topology,
    TSqlSession,
)
from harness_platforms.sqlserver.long_statement import (
    DATABASE_STATE,
    FILE_TIMEOUT_S,
    KILL_TIMEOUT_S,
    SESSION_ID,
    OnThePrimary,
    Request,
    StatementRun,
    exists_script,
    literal,
    remove_script,
    requests,
    stop,
)
from harness_platforms.sqlserver.probes import bracketed

log = logging.getLogger(__name__)

BACKEND = "sqlserver"
RUNNING = ("SELECT r.session_id, r.percent_complete, DATEDIFF_BIG(millisecond, r.start_time, SYSDATETIME()), t.text "
           "FROM sys.dm_exec_requests AS r CROSS APPLY sys.dm_exec_sql_text(r.sql_handle) AS t "
           "WHERE r.command LIKE 'BACKUP%' AND r.database_id = DB_ID(?);")
RESULT = ("SELECT TOP (1) s.backup_size, s.compressed_backup_size, "
          "DATEDIFF_BIG(millisecond, s.backup_start_date, s.backup_finish_date), "
          "DATEDIFF_BIG(millisecond, s.backup_finish_date, SYSDATETIME()), s.is_copy_only "
          "FROM msdb.dbo.backupset AS s JOIN msdb.dbo.backupmediafamily AS f ON f.media_set_id = s.media_set_id "
          "WHERE f.physical_device_name = ? ORDER BY s.backup_finish_date DESC;")
_NOT_IN_A_FILE_NAME = re.compile(r'[\\/:*?"<>|\x00-\x1f]')


def file_name(database: str, instance: str) -> str:
    return f"harness-{database}-{instance}.bak"


def backup_file(destination: str, database: str, instance: str) -> str:
    """Where the backup goes: a Windows or Linux directory on the server, or a container URL."""
    name = file_name(database, instance)
    if destination.startswith("https://") or ("/" in destination and "\\" not in destination):
        return destination.rstrip("/") + "/" + name
    return destination.rstrip("\\") + "\\" + name


def backup_statement(database: str, file: str) -> str:
    device = "URL" if file.startswith("https://") else "DISK"
    return f"BACKUP DATABASE {bracketed(database)} TO {device} = {literal(file)} WITH COPY_ONLY, CHECKSUM, STATS = 10;"


@dataclass
class SqlServerBackup(OnThePrimary):
    """backup on SQL Server (AG or FCI): one copy-only full backup into a file named after the fault."""

    spec: FaultSpec
    topology: Topology
    database: Database
    field_path: str
    file: str
    timeout_s: float
    connector: Connector | None = None
    run: StatementRun = field(default_factory=StatementRun)

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> SqlServerBackup:
        assert isinstance(params, BackupParams)
        index, database = next((i, d) for i, d in enumerate(topology.databases) if d.name == target.name)
        if params.max_rate is not None:
            raise ConfigError("backup: params.max_rate: SQL Server's BACKUP has no rate limit of its own, and the "
                              "harness does not change Resource Governor; leave it out")
        if params.destination is None:
            raise ConfigError(f"backup: params.destination: required for SQL Server: a directory on the server with "
                              f"room for a full copy of {database.database}, or an https:// container URL")
        if _NOT_IN_A_FILE_NAME.search(database.database):
            raise ConfigError(f"databases[{index}].database: {database.database!r} cannot be part of the backup's "
                              "file name (it has a path separator or a character Windows refuses in one)")
        return cls(spec, topology, database, f"databases[{index}]",
                   backup_file(params.destination, database.database, spec.instance), params.timeout_s)

    # -- where it runs ----------------------------------------------------------------------

    @property
    def planned_output(self) -> str:
        return self.file

    @property
    def removable(self) -> bool:
        """The file can be removed: it is on a disk and the topology gives a way to the server's files."""
        return not self.file.startswith("https://") and bool(self._winrm())

    def _own_file(self) -> str:
        """The file, after making sure it is this fault's by name (nothing else is ever removed)."""
        name = re.split(r"[\\/]", self.file)[-1]
        if name != file_name(self.database.database, self.spec.instance):
            raise HarnessError(f"backup: {self.file} is not named after this fault; not touching it")
        return self.file

    def _file_exists(self) -> bool:
        """On any node: every endpoint must answer (one that cannot might hold it)."""
        found = False
        for session in self._winrm():
            out = session.run_ps(exists_script(self._own_file()), what=f"looking for {self.file}", timeout_s=FILE_TIMEOUT_S)
            found = found or out.strip() == "True"
        return found

    def _provably_ours(self, request: Request) -> bool:
        """Its statement names our file, as our literal spells it (so a longer path cannot match)."""
        return literal(self.file) in request.text

    def _requests(self, session: TSqlSession) -> list[Request]:
        return requests(session, RUNNING, (self.database.database,), what="reading running backups")

    def _ours(self, session: TSqlSession) -> list[Request]:
        """This fault's backup requests now running: any naming its file, or its own session while its thread
        waits (a session id alone is reused by SQL Server once the session ends, so it counts only then)."""
        return [r for r in self._requests(session) if self._provably_ours(r) or self.run.owns(r)]

    def _result(self, session: TSqlSession) -> tuple[Any, ...] | None:
        rows = session.rows(RESULT, (self.file,), what=f"reading the result of the backup to {self.file}")
        return rows[0] if rows else None

    # -- the fault contract ---------------------------------------------------------------------
    def plan(self) -> FaultPlan:
        statement = backup_statement(self.database.database, self.file)
        winrm = self._winrm()
        if self.removable:
            where = ", ".join(f"{s.endpoint.name}" for s in winrm)
            removal = f"over WinRM on each of {where}: {remove_script(self.file)}"
        else:
            removal = (f"left at {self.file}: the harness has no file access to the server"
                       + ("" if self.file.startswith("https://") else
                          " (name a winrm endpoint for the database's nodes to have it removed)"))
        return FaultPlan(self.spec, BACKEND, (
            f"on the primary of {self.database.name} (found at inject), on a session of its own bounded to "
            f"{self.timeout_s:g} s: {SESSION_ID} then {statement}",
            f"watched in sys.dm_exec_requests: {RUNNING}",
            f"its result from msdb: {RESULT}",
            ("in effect while it runs or " + (f"while {exists_script(self.file)} is True on a node" if self.removable
                                              else "while msdb records it, until the revert"))),
            (f"KILL the backup's session if it still runs, only when its request's statement contains "
             f"{literal(self.file)}; "
             f"wait up to {KILL_TIMEOUT_S:g} s until it is gone", removal),
            (f"{self.field_path}.credential.password",
             *((f"{s.field_path}.credential.password" for s in winrm) if self.removable else ())))

    def preflight(self) -> None:
        session = self._primary()
        rows = session.rows(DATABASE_STATE, (self.database.database,), what=f"reading the state of {self.database.database}")
        if not rows or rows[0][0] != "ONLINE":
            raise HarnessError(f"backup: database {self.database.database} on {session.where} is "
                               f"{rows[0][0] if rows else 'not there'}; a backup needs it ONLINE")
        running = self._requests(session)
        if running:
            first = running[0]
            raise HarnessError(f"backup: a backup of {self.database.database} already runs on {session.where} "
                               f"(session {first.session_id}, {first.percent or 0:.0f} %): not starting another")

    def inject(self) -> None:
        primary = self._primary()
        self.run = StatementRun.start(primary, backup_statement(self.database.database, self.file), self.timeout_s,
                                      f"backing up {self.database.database} to {self.file}",
                                      f"backup-{self.spec.instance}", lambda: bool(self._ours(primary)))

    def progress(self) -> OperationProgress:
        session = self._primary()
        ours = self._ours(session)
        if self.run.alive or ours:  # after a crash the server alone knows it still runs
            request = ours[0] if ours else None
            started = (request.started_wall if request is not None else None) or self.run.started_wall
            return OperationProgress(running=True, percent=request.percent if request else None, started_wall=started)
        if self.run.error is not None:
            return OperationProgress(running=False, started_wall=self.run.started_wall,
                                     finished_wall=self.run.ended_wall, error=self.run.error)
        result = self._result(session)
        if result is None:
            return OperationProgress(running=False, started_wall=self.run.started_wall, finished_wall=self.run.ended_wall,
                                     error=f"no record of the backup to {self.file} in msdb (it failed, was stopped "
                                           "or never started)")
        size, _compressed, duration_ms, age_ms, copy_only = result
        finished = time.time() - int(age_ms) / 1000
        started = finished - int(duration_ms) / 1000
        error = None if copy_only else f"msdb records the backup to {self.file} as not copy-only"
        return OperationProgress(running=False, bytes_done=float(size), bytes_total=float(size), percent=100.0,
                                 started_wall=started, finished_wall=finished, error=error, output=self.file)

    def check(self) -> FaultState:
        try:
            session = self._primary()
            if self._ours(session):
                return FaultState.IN_EFFECT
            if self.removable:
                return FaultState.IN_EFFECT if self._file_exists() else FaultState.CLEARED
            if self.run.reverted:  # the file is left in place, as the plan says
                return FaultState.CLEARED
            return FaultState.IN_EFFECT if self._result(session) is not None else FaultState.CLEARED
        except HarnessError as exc:  # SqlServerError, an unreachable or refusing WinRM endpoint
            return self.run.unknown.because(self.spec, str(exc))

    def revert(self) -> None:
        session = self._primary()
        stop(session, lambda: [r for r in self._requests(session) if self._provably_ours(r)],
             f"the backup to {self.file}")
        self.run.join()
        if self.removable:
            for winrm in self._winrm():
                winrm.run_ps(remove_script(self._own_file()), what=f"removing {self.file}", timeout_s=FILE_TIMEOUT_S)
        self.run.reverted = True
