"""A SQL Server restore under load: a backup restored beside the database, as a new scratch database.

What a DBA does beside production (a test restore of last night's backup, a copy for reporting):
`RESTORE DATABASE [<restore_as>] FROM DISK|URL = ... WITH MOVE ..., STATS = 10, RECOVERY` on the
instance the database is writable on. The copy's name is the one the topology declares scratch
(`databases[].restore_as`); a database of that name that exists already is refused, at preflight
and again just before the statement is sent, because RESTORE without REPLACE still writes over a
database of the same backup family. REPLACE is never sent. Every file of the copy is moved to
`<destination>\\harness-restore-<instance>-<n>.mdf|.ndf|.ldf`, one MOVE per file that `RESTORE
FILELISTONLY` lists (without MOVE, the files would go back to the production database's own paths).

Those names are the proof of ownership: a revert, or `recover` after a crash, KILLs a RESTORE
only when its statement names the copy and this fault's files, and drops the copy only when
every file `sys.master_files` lists for it is one of this fault's; a database of that name with
other files is never touched. DROP leaves the files of a database that is not online (a killed
restore's), so they are removed over WinRM where the topology names the nodes' endpoints.

Progress is `percent_complete` in sys.dm_exec_requests; the end is when the statement returned.
The result is msdb's `restorehistory` row (restore_type 'D') joined to `backupset` (`backup_size`,
bytes): its `restore_date` is the restore's *start* (Microsoft Learn: "Date and time of the start
of the restore operation. Can be NULL."), read as an age on the server's clock, and proves only
that this restore happened (it started after the statement was sent); the copy must then be ONLINE.
SQL Server's RESTORE has no rate limit of its own, so `max_rate` is refused.

Sources (Microsoft Learn, quoted in docs/reference/sqlserver-restore-and-vsan-iops-limit.md):
RESTORE statements https://learn.microsoft.com/en-us/sql/t-sql/statements/restore-statements-transact-sql ;
RESTORE FILELISTONLY https://learn.microsoft.com/en-us/sql/t-sql/statements/restore-statements-filelistonly-transact-sql ;
restorehistory https://learn.microsoft.com/en-us/sql/relational-databases/system-tables/restorehistory-transact-sql ;
sys.master_files https://learn.microsoft.com/en-us/sql/relational-databases/system-catalog-views/sys-master-files-transact-sql ;
DROP DATABASE https://learn.microsoft.com/en-us/sql/t-sql/statements/drop-database-transact-sql
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field

from faults.contract import (
    ConfigError,
    Connector,
    Database,
    FaultPlan,
    FaultSpec,
    FaultState,
    HarnessError,
    OperationProgress,
    Params,
    RestoreParams,
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
STATS = 10
RUNNING = ("SELECT r.session_id, r.percent_complete, DATEDIFF_BIG(millisecond, r.start_time, SYSDATETIME()), t.text "
           "FROM sys.dm_exec_requests AS r CROSS APPLY sys.dm_exec_sql_text(r.sql_handle) AS t "
           "WHERE r.command LIKE 'RESTORE%';")
FILES = "SELECT physical_name FROM sys.master_files WHERE database_id = DB_ID(?);"
RESULT = ("SELECT TOP (1) s.backup_size, DATEDIFF_BIG(millisecond, h.restore_date, SYSDATETIME()) "
          "FROM msdb.dbo.restorehistory AS h JOIN msdb.dbo.backupset AS s ON s.backup_set_id = h.backup_set_id "
          "WHERE h.destination_database_name = ? AND h.restore_type = 'D' ORDER BY h.restore_date DESC;")
EXTENSIONS = {"D": ".ndf", "L": ".ldf"}  # the first data file is the primary one: .mdf
# RESTORE FILELISTONLY's seventh column, FileId, "File identifier, unique within the database" (ms173778's result
# set): the files are taken in its order, never in the rowset's
FILE_ID = 6


def device(backup: str) -> str:
    return f"{'URL' if backup.startswith('https://') else 'DISK'} = {literal(backup)}"


def file_list_statement(backup: str) -> str:
    """LogicalName, PhysicalName and Type (D data, L log) of each file in the backup, in its order."""
    return f"RESTORE FILELISTONLY FROM {device(backup)};"


def restore_statement(copy: str, backup: str, moves: list[tuple[str, str]]) -> str:
    placed = ", ".join(f"MOVE {literal(logical)} TO {literal(target)}" for logical, target in moves)
    return f"RESTORE DATABASE {bracketed(copy)} FROM {device(backup)} WITH {placed}, STATS = {STATS}, RECOVERY;"


def in_directory(directory: str, name: str) -> str:
    if "/" in directory and "\\" not in directory:
        return directory.rstrip("/") + "/" + name
    return directory.rstrip("\\") + "\\" + name


@dataclass
class SqlServerRestore(OnThePrimary):
    """restore on SQL Server (AG or FCI): a new scratch database from a backup, every file under a fault-named name."""

    spec: FaultSpec
    topology: Topology
    database: Database
    field_path: str
    copy: str
    backup: str
    destination: str
    timeout_s: float
    connector: Connector | None = None
    run: StatementRun = field(default_factory=StatementRun)
    targets: list[str] = field(default_factory=list)  # the files this process asked RESTORE to write

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> SqlServerRestore:
        assert isinstance(params, RestoreParams)
        index, database = next((i, d) for i, d in enumerate(topology.databases) if d.name == target.name)
        if params.max_rate is not None:
            raise ConfigError("restore: params.max_rate: SQL Server's RESTORE has no rate limit of its own; leave it out")
        if database.restore_as is None:
            raise ConfigError(f"restore: databases[{index}].restore_as: required for SQL Server: the name of a scratch "
                              f"database the restore creates beside {database.database} (one that does not exist)")
        if database.restore_as.casefold() == database.database.casefold():
            raise ConfigError(f"restore: databases[{index}].restore_as: {database.restore_as!r} is the database "
                              "itself; a restore under load goes beside it, under another name")
        if params.destination is None:
            raise ConfigError("restore: params.destination: required for SQL Server: a directory on the server with "
                              f"room for a copy of {database.database} (every file of the copy is moved there)")
        return cls(spec, topology, database, f"databases[{index}]", database.restore_as, params.backup,
                   params.destination, params.timeout_s)

    # -- what it writes ------------------------------------------------------------------------
    @property
    def prefix(self) -> str:
        return f"harness-restore-{self.spec.instance}-"

    def target(self, number: int, kind: str) -> str:
        extension = ".mdf" if number == 1 and kind == "D" else EXTENSIONS[kind]
        return in_directory(self.destination, f"{self.prefix}{number}{extension}")

    def moves(self, files: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """(logical name, target) for each (logical name, type) RESTORE FILELISTONLY listed."""
        unsupported = sorted({kind for _, kind in files if kind not in EXTENSIONS})
        if unsupported:
            raise HarnessError(f"restore: {self.backup} holds files of type {', '.join(unsupported)} (full-text or "
                               "FILESTREAM); the harness restores data (D) and log (L) files only")
        if not files or files[0][1] != "D":
            raise HarnessError(f"restore: {self.backup}: RESTORE FILELISTONLY lists no data file as its first FileId")
        return [(logical, self.target(number, kind)) for number, (logical, kind) in enumerate(files, start=1)]

    def _ours(self, name: str) -> bool:
        return re.split(r"[\\/]", name)[-1].startswith(self.prefix)

    # -- what the server says ------------------------------------------------------------------

    @property
    def removable(self) -> bool:
        return bool(self._winrm())

    def _provably_ours(self, request: Request) -> bool:
        """Its statement restores into the copy and moves a file to this fault's name."""
        return (f"RESTORE DATABASE {bracketed(self.copy)} " in request.text
                and literal(in_directory(self.destination, self.prefix))[:-1] in request.text)

    def _running(self, session: TSqlSession) -> list[Request]:
        return requests(session, RUNNING, what="reading running restores")

    def _requests(self, session: TSqlSession) -> list[Request]:
        return [r for r in self._running(session) if self._provably_ours(r) or self.run.owns(r)]

    def _state(self, session: TSqlSession) -> str | None:
        rows = session.rows(DATABASE_STATE, (self.copy,), what=f"reading the state of {self.copy}")
        return str(rows[0][0]) if rows else None

    def _files(self, session: TSqlSession) -> list[str]:
        return [str(r[0]) for r in session.rows(FILES, (self.copy,), what=f"reading the files of {self.copy}")]

    def _copy_is_ours(self, session: TSqlSession) -> bool:
        files = self._files(session)
        return bool(files) and all(self._ours(f) for f in files)

    def _refuse_existing(self, session: TSqlSession) -> None:
        state = self._state(session)
        if state is not None:
            raise HarnessError(f"restore: {self.field_path}.restore_as: database {self.copy} exists on {session.where} "
                               f"({state}) and this restore did not create it; the harness never restores over a "
                               "database: name a scratch database that does not exist")

    # -- the fault contract ---------------------------------------------------------------------
    def plan(self) -> FaultPlan:
        shown = restore_statement(self.copy, self.backup, [("<LogicalName of file 1 (D)>", self.target(1, "D")),
                                                           ("<LogicalName of file 2 (L)>", self.target(2, "L"))])
        removal = (f"then over WinRM on each of {', '.join(s.endpoint.name for s in self._winrm())}: "
                   f"{remove_script(self.target(1, 'D'))} for each of its files DROP left"
                   if self.removable else
                   "files DROP leaves (a database that is not online) stay: the harness has no file access to the "
                   "server (name a winrm endpoint for the database's nodes to have them removed)")
        return FaultPlan(self.spec, BACKEND, (
            f"on the primary of {self.database.name} (found at inject): refuse when database {self.copy} exists "
            f"({DATABASE_STATE}), at preflight and just before the restore; REPLACE is never sent",
            f"read the backup's files: {file_list_statement(self.backup)}",
            f"on a session of its own bounded to {self.timeout_s:g} s: {SESSION_ID} then {shown} (one MOVE for each "
            f"file FILELISTONLY lists, in its order: the first data file to {self.prefix}1.mdf, other data files to "
            f"{self.prefix}<n>.ndf, log files to {self.prefix}<n>.ldf)",
            f"watched in sys.dm_exec_requests: {RUNNING}",
            f"its result from msdb: {RESULT}; the copy then ONLINE",
            f"in effect while it runs or while database {self.copy} exists with this fault's files ({FILES})"),
            (f"KILL the restore's session if it still runs, only when its statement restores {bracketed(self.copy)} "
             f"with a file named {self.prefix}*; wait up to {KILL_TIMEOUT_S:g} s until it is gone",
             f"when database {self.copy} exists and every file of it is named {self.prefix}*: ALTER DATABASE "
             f"{bracketed(self.copy)} SET SINGLE_USER WITH ROLLBACK IMMEDIATE; (if ONLINE) then DROP DATABASE "
             f"{bracketed(self.copy)}; a database of that name with other files is never touched", removal),
            (f"{self.field_path}.credential.password",
             *((f"{s.field_path}.credential.password" for s in self._winrm()) if self.removable else ())))

    def preflight(self) -> None:
        """The name is free and nothing restores into it; the backup is read at inject (S7 takes it first)."""
        session = self._primary()
        self._refuse_existing(session)
        running = [r for r in self._running(session) if f"RESTORE DATABASE {bracketed(self.copy)} " in r.text]
        if running:
            raise HarnessError(f"restore: a restore into {self.copy} already runs on {session.where} "
                               f"(session {running[0].session_id}): not starting another")

    def inject(self) -> None:
        primary = self._primary()
        listed = primary.rows(file_list_statement(self.backup), what=f"listing the files of the backup {self.backup}")
        in_file_order = sorted(listed, key=lambda r: int(r[FILE_ID]))  # a rowset's own order is not guaranteed
        moves = self.moves([(str(r[0]), str(r[2]).strip()) for r in in_file_order])
        self.targets = [target for _, target in moves]
        self._refuse_existing(primary)  # again, just before: RESTORE would write over a copy of the same family
        self.run = StatementRun.start(primary, restore_statement(self.copy, self.backup, moves), self.timeout_s,
                                      f"restoring {self.backup} as {self.copy}", f"restore-{self.spec.instance}",
                                      lambda: bool(self._requests(primary)))

    def progress(self) -> OperationProgress:
        session = self._primary()
        ours = self._requests(session)
        if self.run.alive or ours:
            request = ours[0] if ours else None
            started = (request.started_wall if request is not None else None) or self.run.started_wall
            return OperationProgress(running=True, percent=request.percent if request else None, started_wall=started)
        ended = OperationProgress(running=False, started_wall=self.run.started_wall, finished_wall=self.run.ended_wall,
                                  error=self.run.error)
        if self.run.error is not None:
            return ended
        rows = session.rows(RESULT, (self.copy,), what=f"reading the result of the restore of {self.copy}")
        # restore_date is the restore's *start* ("Date and time of the start of the restore operation. Can be NULL."):
        # it proves this restore happened; its end is when the statement returned
        recorded = time.time() - int(rows[0][1]) / 1000 if rows and rows[0][1] is not None else None
        if recorded is None or self.run.started_wall is None or recorded < self.run.started_wall - 1.0:
            return OperationProgress(running=False, started_wall=self.run.started_wall,
                                     finished_wall=self.run.ended_wall,
                                     error=f"no record in msdb of this restore of {self.copy} (it failed, was "
                                           "stopped or never started)")
        state = self._state(session)
        size = float(rows[0][0])
        return OperationProgress(running=False, bytes_done=size, bytes_total=size, percent=100.0,
                                 started_wall=self.run.started_wall, finished_wall=self.run.ended_wall,
                                 error=None if state == "ONLINE" else f"database {self.copy} is {state} after its "
                                                                       "restore, not ONLINE",
                                 output=self.copy)

    def check(self) -> FaultState:
        try:
            session = self._primary()
            if self._requests(session) or self._copy_is_ours(session):
                return FaultState.IN_EFFECT
            if self.removable and self._left_files():
                return FaultState.IN_EFFECT
            return FaultState.CLEARED
        except HarnessError as exc:  # SqlServerError, an unreachable or refusing WinRM endpoint
            return self.run.unknown.because(self.spec, str(exc))

    def _left_files(self) -> list[str]:
        """This process's targets still on a node's disk (every endpoint must answer: one that cannot might hold
        one)."""
        left = []
        for session in self._winrm():
            for file in self.targets:
                out = session.run_ps(exists_script(file), what=f"looking for {file}", timeout_s=FILE_TIMEOUT_S)
                if out.strip() == "True":
                    left.append(file)
        return left

    def revert(self) -> None:
        session = self._primary()
        stop(session, lambda: [r for r in self._running(session) if self._provably_ours(r)],
             f"the restore of {self.copy}")
        self.run.join()
        state = self._state(session)
        files = self._files(session) if state is not None else []
        if state is not None and files and all(self._ours(f) for f in files):
            if state == "ONLINE":
                session.execute(f"ALTER DATABASE {bracketed(self.copy)} SET SINGLE_USER WITH ROLLBACK IMMEDIATE;",
                                what=f"closing the connections to {self.copy}")
            session.execute(f"DROP DATABASE {bracketed(self.copy)};", what=f"dropping {self.copy}")
        elif state is not None:
            log.warning("restore: database %s on %s has files this fault did not write; left untouched",
                        self.copy, session.where)
            files = []
        if self.removable:
            for winrm in self._winrm():
                for file in dict.fromkeys([*files, *self.targets]):
                    if self._ours(file):
                        winrm.run_ps(remove_script(file), what=f"removing {file}", timeout_s=FILE_TIMEOUT_S)
        self.run.reverted = True
