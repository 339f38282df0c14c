"""What the SQL Server model answers about backups, and the server's files as WinRM sees them.

Written from Microsoft's documentation:
- BACKUP DATABASE [db] TO DISK = N'...' | URL = N'...' WITH COPY_ONLY, CHECKSUM, STATS = n; the
  statement returns when the backup ends; a failure is error 3201 ("Cannot open backup device")
  followed by 3013 ("BACKUP DATABASE is terminating abnormally"):
  https://learn.microsoft.com/en-us/sql/t-sql/statements/backup-transact-sql
- sys.dm_exec_requests: one row per running request, command 'BACKUP DATABASE', percent_complete
  growing to 100, the statement through sys.dm_exec_sql_text(sql_handle):
  https://learn.microsoft.com/en-us/sql/relational-databases/system-dynamic-management-views/sys-dm-exec-requests-transact-sql
- KILL session_id ends that session (its client gets a communication link failure); a session that is
  not running gets error 6106: https://learn.microsoft.com/en-us/sql/t-sql/language-elements/kill-transact-sql
- msdb.dbo.backupset (backup_size in bytes, backup_start_date / backup_finish_date in server local time,
  is_copy_only) joined with backupmediafamily (physical_device_name):
  https://learn.microsoft.com/en-us/sql/relational-databases/system-tables/backupset-transact-sql
- Test-Path / Remove-Item -LiteralPath: https://learn.microsoft.com/en-us/powershell/module/microsoft.powershell.management/test-path
A statement the model does not know falls through to the SQL Server model's syntax error.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from faults.transports.winrm import PREAMBLE


@dataclass
class BackupRun:
    session_id: int
    database: str
    file: str
    statement: str
    started: float
    duration_s: float
    killed: bool = False
    finished: float | None = None

    def percent(self, now: float) -> float:
        return min(99.9, 100.0 * (now - self.started) / self.duration_s) if self.duration_s else 99.9


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
    duration_s: float = 0.4
    size_bytes: int = 536_870_912
    fail_with: str | None = None  # the OS error a backup device gives, e.g. "5(Access is denied.)"
    states: dict[str, str] = field(default_factory=lambda: {"bench": "ONLINE"})
    runs: list[BackupRun] = field(default_factory=list)
    files: ServerFiles = field(default_factory=ServerFiles)
    statements: list[str] = field(default_factory=list)

    def running(self) -> list[BackupRun]:
        return [r for r in self.runs if r.finished is None and not r.killed]

    def answer(self, session_id: int, timeout_s: int, sql: str, params: tuple[Any, ...],
               error: Any) -> list[tuple[Any, ...]] | None:
        """Rows for a backup statement, or None when `sql` is not one (`error` builds pyodbc's errors)."""
        if sql == "SELECT @@SPID;":
            return [(session_id,)]
        if sql == "SELECT state_desc FROM sys.databases WHERE name = ?;":
            return [(self.states[params[0]],)] if params[0] in self.states else []
        if sql.startswith("SELECT r.session_id, r.percent_complete, t.text FROM sys.dm_exec_requests AS r CROSS APPLY "
                          "sys.dm_exec_sql_text(r.sql_handle) AS t WHERE r.command LIKE 'BACKUP%' AND "
                          "r.database_id = DB_ID(?);"):
            now = time.time()
            return [(r.session_id, r.percent(now), r.statement) for r in self.running() if r.database == params[0]]
        if kill := re.fullmatch(r"KILL (\d+);", sql):
            victims = [r for r in self.running() if r.session_id == int(kill.group(1))]
            if not victims:
                raise error("42000", f"Process ID {kill.group(1)} is not an active process ID.", 6106)
            for run in victims:
                run.killed = True
            return []
        if sql.startswith("SELECT TOP (1) s.backup_size, s.backup_start_date, s.backup_finish_date, s.is_copy_only "
                          "FROM msdb.dbo.backupset AS s JOIN msdb.dbo.backupmediafamily AS f ON f.media_set_id = "
                          "s.media_set_id WHERE f.physical_device_name = ? ORDER BY s.backup_finish_date DESC;"):
            done = [r for r in self.runs if r.finished is not None and r.file == params[0]]
            return [(self.size_bytes, datetime.fromtimestamp(r.started), datetime.fromtimestamp(r.finished),
                     "COPY_ONLY" in r.statement) for r in done[-1:] if r.finished is not None]
        backup = re.fullmatch(r"BACKUP DATABASE \[((?:[^\]]|\]\])+)\] TO (DISK|URL) = N'((?:[^']|'')*)' WITH (.+);", sql)
        if backup is None:
            return None
        return self._back_up(session_id, timeout_s, backup.group(1).replace("]]", "]"),
                             backup.group(3).replace("''", "'"), sql, error)

    def _back_up(self, session_id: int, timeout_s: int, database: str, file: str, sql: str,
                 error: Any) -> list[tuple[Any, ...]]:
        self.statements.append(sql)
        if database not in self.states:
            raise error("42000", f"Database '{database}' does not exist. Make sure that the name is entered "
                                 "correctly.", 911)
        if self.fail_with is not None:
            raise error("42000", f"Cannot open backup device '{file}'. Operating system error {self.fail_with}. "
                                 "BACKUP DATABASE is terminating abnormally.", 3201)
        run = BackupRun(session_id, database, file, sql, time.time(), self.duration_s)
        self.runs.append(run)
        if not file.startswith("https://"):
            self.files.paths.add(file)  # created at the start; a stopped backup leaves it behind
        while time.time() - run.started < run.duration_s:
            if run.killed:
                raise error("08S01", "Communication link failure", 10054)
            if timeout_s and time.time() - run.started > timeout_s:
                raise error("HYT00", "Query timeout expired", 0)
            time.sleep(0.02)
        run.finished = time.time()
        return []
