"""What the SQL Server model answers about backups, and the server's files as WinRM sees them.

Written from Microsoft's documentation:
- BACKUP DATABASE [db] TO DISK = N'...' | URL = N'...' WITH <options>; the statement returns when
  the backup ends; a device that cannot be opened is error 3201 ("Cannot open backup device")
  followed by 3013 ("BACKUP DATABASE is terminating abnormally"); an option BACKUP does not have
  is error 155 ("... is not a recognized BACKUP option"):
  https://learn.microsoft.com/en-us/sql/t-sql/statements/backup-transact-sql
  The model also refuses a BACKUP DATABASE without COPY_ONLY, which SQL Server would run: it
  would become the base of the user's differential backups, which the harness never does
  (https://learn.microsoft.com/en-us/sql/relational-databases/backup-restore/copy-only-backups-sql-server).
- @@SPID, the current session's id: https://learn.microsoft.com/en-us/sql/t-sql/functions/spid-transact-sql
- sys.dm_exec_requests: one row per running request, command 'BACKUP DATABASE', percent_complete
  growing to 100, start_time in the server's local time, the statement through
  sys.dm_exec_sql_text(sql_handle):
  https://learn.microsoft.com/en-us/sql/relational-databases/system-dynamic-management-views/sys-dm-exec-requests-transact-sql
- KILL session_id ends that session (its client gets a communication link failure); a session that is
  not running gets error 6106: https://learn.microsoft.com/en-us/sql/t-sql/language-elements/kill-transact-sql
- msdb.dbo.backupset (backup_size and compressed_backup_size in bytes, backup_start_date /
  backup_finish_date in server local time, is_copy_only), a row only for a backup that completed,
  joined with backupmediafamily (physical_device_name) on media_set_id:
  https://learn.microsoft.com/en-us/sql/relational-databases/system-tables/backupset-transact-sql ,
  https://learn.microsoft.com/en-us/sql/relational-databases/system-tables/backupmediafamily-transact-sql
- DATEDIFF_BIG(millisecond, start, end): https://learn.microsoft.com/en-us/sql/t-sql/functions/datediff-big-transact-sql
- Test-Path / Remove-Item -LiteralPath: https://learn.microsoft.com/en-us/powershell/module/microsoft.powershell.management/test-path
Times run on the server's clock (`clock`, the SQL Server model's, which tests may set apart from
the harness's). A statement the model does not know falls through to the SQL Server model's
syntax error.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from faults.transports.winrm import PREAMBLE
from tests.support.provenance import Fact, Facts

# read from BACKUP statements: never served
OWN_TOKENS = frozenset({"COPY_ONLY"})
EXEC_DIRECT = "MicrosoftDocs/sql-docs docs/odbc/reference/syntax/sqlexecdirect-function.md (Diagnostics)"
DATABASE_STATES = "MicrosoftDocs/sql-docs docs/relational-databases/databases/database-states.md"

FACTS = Facts("sqlserver_backup", [
    Fact("sqlstate.query_timeout", "HYT00", "documented", EXEC_DIRECT,
         "|HYT00|Timeout expired|The query timeout period expired before the data source returned the result set."),
    Fact("state.online", "ONLINE", "documented", DATABASE_STATES,
         "|ONLINE|Database is available for access. The primary filegroup is online, although the undo phase of "
         "recovery may not have been completed.|"),
])
"""Facts the backup model serves, each with its source (tests/support/provenance.py)."""
QUERY_TIMEOUT = str(FACTS.value("sqlstate.query_timeout"))
ONLINE = str(FACTS.value("state.online"))
BACKUP_OPTIONS = re.compile(r"COPY_ONLY|CHECKSUM|NO_CHECKSUM|COMPRESSION|NO_COMPRESSION|INIT|NOINIT|FORMAT|"
                            r"NOFORMAT|STATS = \d+")


@dataclass
class BackupRun:
    """A BACKUP (or a RESTORE: `file` is then the backup it reads) as the model runs it."""

    session_id: int
    database: str
    file: str
    statement: str
    started: float  # on the server's clock
    duration_s: float
    killed: bool = False
    finished: float | None = None

    def percent(self, now: float) -> float:
        return min(99.9, 100.0 * (now - self.started) / self.duration_s) if self.duration_s else 99.9

    def wait_out(self, clock: Callable[[], float], timeout_s: int, error: Any) -> None:
        """Block as the statement does, until it ends, is KILLed (its client sees the link fail) or times out."""
        while clock() - self.started < self.duration_s:
            if self.killed:
                raise error("08S01", "Communication link failure", 10054)
            if timeout_s and clock() - self.started > timeout_s:
                raise error(QUERY_TIMEOUT, "Query timeout expired", 0)
            time.sleep(0.02)
        self.finished = clock()


@dataclass
class ServerFiles:
    """The server's files as PowerShell over WinRM sees them (a WS-Management stand-in's answer)."""

    paths: set[str] = field(default_factory=set)
    scripts: list[str] = field(default_factory=list)

    def __call__(self, script: str) -> tuple[str, str, int]:
        if not script.startswith(PREAMBLE):
            return "", "the model expects every script to set its preferences first", 1
        body = script[len(PREAMBLE):]
        self.scripts.append(body)
        literal = r"'((?:[^']|'')*)'"
        if test := re.fullmatch(rf"Test-Path -LiteralPath {literal}", body):
            return ("True" if test.group(1).replace("''", "'") in self.paths else "False"), "", 0
        if remove := re.fullmatch(rf"if \(Test-Path -LiteralPath {literal}\) \{{ Remove-Item -LiteralPath {literal} "
                                  r"-ErrorAction Stop \}", body):
            self.paths.discard(remove.group(2).replace("''", "'"))
            return "", "", 0
        return "", f"the model does not run: {body[:80]}", 1


@dataclass
class BackupModel:
    """Backups on the model's instances. Tests set `duration_s` (how long the next backup takes), `fail_with`
    (the OS error its device gives: error 3201), or KILL it through the backend; `files` is the disk a backup
    writes to unless `local_files` gives the replica's own (a local D:\\ differs per node)."""

    duration_s: float = 0.4
    size_bytes: int = 536_870_912
    compressed_bytes: int = 201_326_592
    fail_with: str | None = None  # the OS error a backup device gives, e.g. "5(Access is denied.)"
    states: dict[str, str] = field(default_factory=lambda: {"bench": ONLINE})
    runs: list[BackupRun] = field(default_factory=list)
    files: ServerFiles = field(default_factory=ServerFiles)
    local_files: dict[str, ServerFiles] = field(default_factory=dict)  # replica -> its own disk
    statements: list[str] = field(default_factory=list)
    clock: Callable[[], float] = time.time

    def running(self) -> list[BackupRun]:
        return [r for r in self.runs if r.finished is None and not r.killed]

    def answer(self, replica: str, session_id: int, timeout_s: int, sql: str, params: tuple[Any, ...],
               error: Any) -> list[tuple[Any, ...]] | None:
        """Rows for a backup statement, or None when `sql` is not one (`error` builds pyodbc's errors)."""
        if sql == "SELECT @@SPID;":
            return [(session_id,)]
        if sql == "SELECT state_desc FROM sys.databases WHERE name = ?;":
            return [(self.states[params[0]],)] if params[0] in self.states else []
        if sql == ("SELECT r.session_id, r.percent_complete, DATEDIFF_BIG(millisecond, r.start_time, SYSDATETIME()), "
                   "t.text FROM sys.dm_exec_requests AS r CROSS APPLY sys.dm_exec_sql_text(r.sql_handle) AS t "
                   "WHERE r.command LIKE 'BACKUP%' AND r.database_id = DB_ID(?);"):
            now = self.clock()
            return [(r.session_id, r.percent(now), round((now - r.started) * 1000), r.statement)
                    for r in self.running() if r.database == params[0]]
        if kill := re.fullmatch(r"KILL (\d+);", sql):
            victims = [r for r in self.running() if r.session_id == int(kill.group(1))]
            if not victims:
                raise error("42000", f"Process ID {kill.group(1)} is not an active process ID.", 6106)
            for run in victims:
                run.killed = True
            return []
        if sql == ("SELECT TOP (1) s.backup_size, s.compressed_backup_size, DATEDIFF_BIG(millisecond, "
                   "s.backup_start_date, s.backup_finish_date), DATEDIFF_BIG(millisecond, s.backup_finish_date, "
                   "SYSDATETIME()), s.is_copy_only FROM msdb.dbo.backupset AS s JOIN msdb.dbo.backupmediafamily AS f "
                   "ON f.media_set_id = s.media_set_id WHERE f.physical_device_name = ? "
                   "ORDER BY s.backup_finish_date DESC;"):
            now = self.clock()
            done = [r for r in self.runs if r.finished is not None and r.file == params[0]]
            return [(self.size_bytes, self.compressed_bytes, round((r.finished - r.started) * 1000),
                     round((now - r.finished) * 1000), "COPY_ONLY" in r.statement)
                    for r in done[-1:] if r.finished is not None]
        backup = re.fullmatch(r"BACKUP DATABASE \[((?:[^\]]|\]\])+)\] TO (DISK|URL) = N'((?:[^']|'')*)' WITH (.+);", sql)
        if backup is None:
            return None
        options = [o.strip() for o in backup.group(4).split(",")]
        unknown = [o for o in options if not BACKUP_OPTIONS.fullmatch(o)]
        if unknown:
            raise error("42000", f"'{unknown[0]}' is not a recognized BACKUP option.", 155)
        if "COPY_ONLY" not in options:
            raise error("42000", "The model refuses a full backup without COPY_ONLY: it would become the base of "
                                 "the user's differential backups.", 102)
        return self._back_up(replica, session_id, timeout_s, backup.group(1).replace("]]", "]"),
                             backup.group(3).replace("''", "'"), sql, error)

    def _back_up(self, replica: str, session_id: int, timeout_s: int, database: str, file: str, sql: str,
                 error: Any) -> list[tuple[Any, ...]]:
        self.statements.append(sql)
        if database not in self.states:
            raise error("42000", f"Database '{database}' does not exist. Make sure that the name is entered "
                                 "correctly.", 911)
        if self.fail_with is not None:
            raise error("42000", f"Cannot open backup device '{file}'. Operating system error {self.fail_with}. "
                                 "BACKUP DATABASE is terminating abnormally.", 3201)
        run = BackupRun(session_id, database, file, sql, self.clock(), self.duration_s)
        self.runs.append(run)
        if not file.startswith("https://"):
            self.local_files.get(replica, self.files).paths.add(file)  # created at once; a stopped backup leaves it
        run.wait_out(self.clock, timeout_s, error)
        return []
