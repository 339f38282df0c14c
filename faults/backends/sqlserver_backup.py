"""A full SQL Server backup under load: `BACKUP DATABASE ... WITH COPY_ONLY` on the database's primary.

COPY_ONLY, always: a full backup taken by the harness must not become the base of the user's
differential backups nor change their backup chain. The statement blocks until the backup ends,
so it runs on a session of its own in a thread, bounded by `params.timeout_s`; another session
watches it in `sys.dm_exec_requests` and reads the result from msdb. Everything it writes is one
file named after the fault's instance (`harness-<database>-<instance>.bak`), so a revert, or
`recover` after a crash, finds exactly that backup: a request still running is stopped with
`KILL` only when its statement names that file; the file is removed over WinRM when the topology
names an endpoint for the database's nodes, and otherwise (or for a URL) left where it is, as the
plan says. SQL Server's BACKUP has no rate limit of its own, and Resource Governor's
MAX_IOPS_PER_VOLUME would change the server's configuration, so `max_rate` is refused.

T-SQL as documented by Microsoft: BACKUP (Transact-SQL)
https://learn.microsoft.com/en-us/sql/t-sql/statements/backup-transact-sql ; copy-only backups
https://learn.microsoft.com/en-us/sql/relational-databases/backup-restore/copy-only-backups-sql-server ;
sys.dm_exec_requests (command 'BACKUP DATABASE', percent_complete)
https://learn.microsoft.com/en-us/sql/relational-databases/system-dynamic-management-views/sys-dm-exec-requests-transact-sql ;
backupset / backupmediafamily in msdb
https://learn.microsoft.com/en-us/sql/relational-databases/system-tables/backupset-transact-sql ; KILL
https://learn.microsoft.com/en-us/sql/t-sql/language-elements/kill-transact-sql
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from faults.backends.sqlserver import AvailabilityGroup, bracketed
from faults.base import FaultPlan, FaultSpec, FaultState, OperationProgress, UnknownState
from faults.kinds import BackupParams, Params
from faults.transports.odbc import Connector, SqlServerError, TSqlSession
from faults.transports.winrm import EndpointUnreachable, WinRmSession, winrm_endpoint
from harness.errors import ConfigError, ControlPlaneError, HarnessError
from harness.topology.models import Database, Topology
from harness.topology.targets import Target

log = logging.getLogger(__name__)

BACKEND = "sqlserver"
START_TIMEOUT_S = 15.0
KILL_TIMEOUT_S = 60.0
SESSION_ID = "SELECT @@SPID;"
DATABASE_STATE = "SELECT state_desc FROM sys.databases WHERE name = ?;"
RUNNING = ("SELECT r.session_id, r.percent_complete, t.text FROM sys.dm_exec_requests AS r "
           "CROSS APPLY sys.dm_exec_sql_text(r.sql_handle) AS t "
           "WHERE r.command LIKE 'BACKUP%' AND r.database_id = DB_ID(?);")
RESULT = ("SELECT TOP (1) s.backup_size, s.backup_start_date, s.backup_finish_date, s.is_copy_only "
          "FROM msdb.dbo.backupset AS s JOIN msdb.dbo.backupmediafamily AS f ON f.media_set_id = s.media_set_id "
          "WHERE f.physical_device_name = ? ORDER BY s.backup_finish_date DESC;")


def literal(text: str) -> str:
    """A Unicode string literal: N'...' with quotes doubled."""
    return "N'" + text.replace("'", "''") + "'"


def powershell_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def backup_file(destination: str, database: str, instance: str) -> str:
    """Where the backup goes: a Windows or Linux directory on the server, or a container URL."""
    name = f"harness-{database}-{instance}.bak"
    if destination.startswith("https://") or ("/" in destination and "\\" not in destination):
        return destination.rstrip("/") + "/" + name
    return destination.rstrip("\\") + "\\" + name


def backup_statement(database: str, file: str) -> str:
    device = "URL" if file.startswith("https://") else "DISK"
    return f"BACKUP DATABASE {bracketed(database)} TO {device} = {literal(file)} WITH COPY_ONLY, CHECKSUM, STATS = 10;"


@dataclass
class BackupRun:
    """What this process saw of its backup (nothing after a crash: then the server is asked)."""

    session_id: int | None = None
    thread: threading.Thread | None = None
    started_wall: float | None = None
    ended_wall: float | None = None
    error: str | None = None
    reverted: bool = False
    unknown: UnknownState = field(default_factory=UnknownState)


@dataclass
class SqlServerBackup:
    spec: FaultSpec
    topology: Topology
    database: Database
    field_path: str
    file: str
    timeout_s: float
    connector: Connector | None = None
    run: BackupRun = field(default_factory=BackupRun)

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
        return cls(spec, topology, database, f"databases[{index}]",
                   backup_file(params.destination, database.database, spec.instance), params.timeout_s)

    # -- where it runs ----------------------------------------------------------------------
    def _primary(self) -> TSqlSession:
        """A session on the instance the database is writable on now (the AG's primary, the FCI's owner)."""
        if self.database.kind == "sqlserver-ag":
            group = AvailabilityGroup.from_topology(self.topology, self.database, connector=self.connector)
            return group.sessions[group.primary()]
        return TSqlSession.to_listener(self.topology, self.database, connector=self.connector)

    def _winrm(self) -> list[WinRmSession]:
        names = [n for n in [self.database.winrm, *(node.winrm for node in self.database.nodes)] if n]
        sessions = []
        for name in dict.fromkeys(names):
            index, endpoint = winrm_endpoint(self.topology, name)
            sessions.append(WinRmSession(endpoint, f"management.winrm[{index}]"))
        return sessions

    @property
    def removable(self) -> bool:
        """The file can be removed: it is on a disk and the topology gives a way to the server's files."""
        return not self.file.startswith("https://") and bool(self._winrm())

    def _on_server(self, script: str, what: str) -> str:
        unreachable = []
        for session in self._winrm():
            try:
                return session.run_ps(script, what=what, timeout_s=60.0)
            except EndpointUnreachable as exc:
                unreachable.append(str(exc))
        raise EndpointUnreachable("; ".join(unreachable))

    # -- the fault contract ---------------------------------------------------------------------
    def plan(self) -> FaultPlan:
        statement = backup_statement(self.database.database, self.file)
        removal = (f"Remove-Item -LiteralPath {powershell_literal(self.file)} over WinRM on the node holding it"
                   if self.removable else f"the file is left at {self.file}: the harness has no file access to the "
                                          "server (name a winrm endpoint for the database's nodes to have it removed)")
        return FaultPlan(self.spec, BACKEND, (
            f"on the primary of {self.database.name} (found at inject), on a session of its own, bounded to "
            f"{self.timeout_s:g} s: {statement}",
            "watched in sys.dm_exec_requests (percent_complete); size and duration from msdb.dbo.backupset"),
            ("KILL the backup's session if it still runs (only a request whose statement names that file)", removal),
            (f"{self.field_path}.credential.password",))

    def preflight(self) -> None:
        session = self._primary()
        rows = session.rows(DATABASE_STATE, (self.database.database,), what=f"reading the state of {self.database.database}")
        if not rows or rows[0][0] != "ONLINE":
            raise HarnessError(f"backup: database {self.database.database} on {session.where} is "
                               f"{rows[0][0] if rows else 'not there'}; a backup needs it ONLINE")
        running = session.rows(RUNNING, (self.database.database,), what="looking for backups already running")
        if running:
            raise HarnessError(f"backup: a backup of {self.database.database} already runs on {session.where} "
                               f"(session {running[0][0]}, {float(running[0][1] or 0):.0f} %): not starting another")

    def inject(self) -> None:
        primary = self._primary()
        backup = dataclasses.replace(primary, statement_timeout_s=self.timeout_s)
        self.run = BackupRun(session_id=int(backup.rows(SESSION_ID, what="reading the backup session's id")[0][0]),
                             started_wall=time.time())
        statement = backup_statement(self.database.database, self.file)

        def execute() -> None:
            try:
                backup.execute(statement, what=f"backing up {self.database.database} to {self.file}")
            except SqlServerError as exc:
                self.run.error = str(exc)
            finally:
                self.run.ended_wall = time.time()
                backup.close()

        self.run.thread = threading.Thread(target=execute, name=f"backup-{self.spec.instance}", daemon=True)
        self.run.thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while self.run.ended_wall is None and not self._ours(primary) and time.monotonic() < deadline:
            time.sleep(0.1)

    def _ours(self, session: TSqlSession) -> list[tuple[Any, ...]]:
        """This fault's backup requests now running: its session, or any whose statement names its file."""
        rows = session.rows(RUNNING, (self.database.database,), what="reading running backups")
        return [r for r in rows if r[0] == self.run.session_id or self.file in str(r[2] or "")]

    def _result(self, session: TSqlSession) -> tuple[Any, ...] | None:
        rows = session.rows(RESULT, (self.file,), what=f"reading the result of the backup to {self.file}")
        return rows[0] if rows else None

    def progress(self) -> OperationProgress:
        running = self.run.thread is not None and self.run.thread.is_alive()
        session = self._primary()
        if running:
            ours = self._ours(session)
            percent = float(ours[0][1] or 0) if ours else None
            return OperationProgress(running=True, percent=percent, started_wall=self.run.started_wall)
        result = self._result(session) if self.run.error is None else None
        if result is None:
            return OperationProgress(running=False, started_wall=self.run.started_wall, finished_wall=self.run.ended_wall,
                                     error=self.run.error or "no record of the backup in msdb")
        size, begun, ended, _ = result
        server_s = (ended - begun).total_seconds() if begun is not None and ended is not None else None
        started = self.run.started_wall
        return OperationProgress(running=False, bytes_done=float(size), bytes_total=float(size), started_wall=started,
                                 finished_wall=started + server_s if started is not None and server_s is not None
                                 else self.run.ended_wall)

    def check(self) -> FaultState:
        try:
            if self._ours(self._primary()):
                return FaultState.IN_EFFECT
            if self.removable:
                exists = self._on_server(f"Test-Path -LiteralPath {powershell_literal(self.file)}",
                                         f"looking for {self.file}").strip()
                return FaultState.IN_EFFECT if exists == "True" else FaultState.CLEARED
        except (HarnessError, SqlServerError) as exc:
            return self.run.unknown.because(self.spec, str(exc))
        injected_here = self.run.started_wall is not None
        return FaultState.IN_EFFECT if injected_here and not self.run.reverted else FaultState.CLEARED

    def revert(self) -> None:
        session = self._primary()
        for row in self._ours(session):
            log.info("stopping backup session %s of %s", row[0], self.database.database)
            session.execute(f"KILL {int(row[0])};", what=f"stopping the backup to {self.file}")
        deadline = time.monotonic() + KILL_TIMEOUT_S
        while self._ours(session):
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"{session.where}: the backup to {self.file} still runs "
                                        f"{KILL_TIMEOUT_S:.0f} s after KILL")
            time.sleep(0.5)
        if self.run.thread is not None:
            self.run.thread.join(KILL_TIMEOUT_S)
        if self.removable:
            self._on_server(f"if (Test-Path -LiteralPath {powershell_literal(self.file)}) "
                            f"{{ Remove-Item -LiteralPath {powershell_literal(self.file)} -ErrorAction Stop }}",
                            f"removing {self.file}")
        self.run.reverted = True
