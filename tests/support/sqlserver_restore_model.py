"""What the SQL Server model answers about restores: RESTORE FILELISTONLY, RESTORE DATABASE, the copy's
catalogue rows, msdb's restore history, DROP DATABASE.

Written from Microsoft's documentation (quotes in FACTS; the pages are listed in
docs/reference/sqlserver-restore-and-vsan-iops-limit.md):
- RESTORE FILELISTONLY FROM <device>: LogicalName, PhysicalName, Type (D data, L log), ...;
  a device that cannot be opened is error 3201.
- RESTORE DATABASE [name] FROM <device> WITH MOVE ... TO ..., STATS = n, RECOVERY: the database
  appears at once in sys.databases (RESTORING, its files in sys.master_files) and is ONLINE when
  the statement returns; a file without MOVE goes back to its PhysicalName, refused with 1834
  when another database uses it; a name that exists is refused with 3154 (the model takes every
  existing database for another backup family, as the harness's scratch name should be).
- sys.dm_exec_requests: command 'RESTORE DATABASE', percent_complete, start_time; KILL ends the
  session (its client gets a communication link failure).
- msdb.dbo.restorehistory (destination_database_name, restore_type 'D', restore_date) joined to
  msdb.dbo.backupset (backup_size, bytes) on backup_set_id; a row only for a restore that completed.
- DROP DATABASE: refused while a request uses the database; the files of a database that is not
  online are not deleted.

Two behaviours no document settles are chosen so that a backend mistake fails (kind "stricter"):
a killed restore leaves its database RESTORING (still listed), and DROP of a RESTORING database
keeps its files. The model refuses REPLACE, which SQL Server would run: the harness never sends it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.support.provenance import Fact, Facts
from tests.support.sqlserver_backup_model import ONLINE, BackupRun, ServerFiles

FILELIST = "https://learn.microsoft.com/previous-versions/sql/sql-server-2012/ms173778(v=sql.110) (RESTORE FILELISTONLY)"
ERRORS_3000 = ("MicrosoftDocs/sql-docs docs/relational-databases/errors-events/includes/"
               "database-engine-events-and-errors-3000-3999.md")
ERRORS_1000 = "MicrosoftDocs/sql-docs docs/relational-databases/errors-events/database-engine-events-and-errors-1000-1999.md"
STATES = "MicrosoftDocs/sql-docs docs/relational-databases/databases/database-states.md"
HISTORY = "MicrosoftDocs/sql-docs docs/relational-databases/system-tables/restorehistory-transact-sql.md"
DROP = "MicrosoftDocs/sql-docs docs/t-sql/statements/drop-database-transact-sql.md"

FACTS = Facts("sqlserver_restore", [
    Fact("filelist.type.data", "D", "documented", FILELIST,
         "Type | char(1) | The type of file, one of: L = Microsoft SQL Server log file D = SQL Server data file"),
    Fact("filelist.type.log", "L", "documented", FILELIST,
         "Type | char(1) | The type of file, one of: L = Microsoft SQL Server log file D = SQL Server data file"),
    Fact("error.cannot_open_device", 3201, "documented", ERRORS_3000,
         "3201 | 16 | No | Cannot open backup device '%ls'. Operating system error %ls."),
    Fact("error.other_database", 3154, "documented", ERRORS_3000,
         "3154 | 16 | No | The backup set holds a backup of a database other than the existing '%ls' database."),
    Fact("error.file_in_use", 1834, "documented", ERRORS_1000,
         "1834 | 16 | No | The file '%ls' cannot be overwritten. It is being used by database '%.*ls'."),
    Fact("filegroup.primary", "PRIMARY", "documented",
         "MicrosoftDocs/sql-docs docs/relational-databases/accelerated-database-recovery-management.md",
         "You can configure ADR to use another filegroup, aside from the default `PRIMARY` filegroup, to hold PVS data."),
    Fact("state.restoring", "RESTORING", "documented", STATES,
         "RESTORING | One or more files of the primary filegroup are being restored, or one or more secondary files "
         "are being restored offline. The database is unavailable."),
    Fact("history.restore_type.database", "D", "documented", HISTORY,
         "restore_type | char(1) | Type of restore operation: D = Database F = File G = Filegroup I = Differential "
         "L = Log V = Verifyonly Can be NULL."),
    Fact("history.restore_date", "start", "documented", HISTORY,
         "restore_date | datetime | Date and time of the start of the restore operation. Can be NULL."),
    Fact("drop.refused_in_use", "You cannot drop a database currently being used.", "documented", DROP,
         "You cannot drop a database currently being used."),
    Fact("killed.leaves", "RESTORING", "stricter",
         "no Microsoft page read says which state a killed RESTORE leaves; the model keeps the database listed, "
         "RESTORING, so a revert that does not drop it fails (the backend reads the state, it assumes none)"),
    Fact("drop.restoring_keeps_files", True, "stricter",
         f"{DROP}: 'If the database or any one of its files is offline when it is dropped, the disk files are not "
         "deleted.' The page does not name RESTORING; the model keeps the files of a RESTORING database too, so "
         "the backend must remove them"),
])
"""Facts the restore model serves, each with its source (tests/support/provenance.py)."""
PRIMARY_FILEGROUP = str(FACTS.value("filegroup.primary"))

LITERAL = r"N'((?:[^']|'')*)'"
# read from RESTORE statements: never served
OWN_TOKENS = frozenset({"REPLACE"})


def unquoted(text: str) -> str:
    return text.replace("''", "'")


@dataclass
class RestoreModel:
    """Restores on the model's instances. Tests register backups (`backups`: file -> (logical name, physical name,
    "data" or "log") rows), set `duration_s`, and may add databases of their own (`states` is the backup model's catalogue,
    `master_files` their files)."""

    duration_s: float = 0.4
    backup_size: int = 536_870_912
    backups: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    states: dict[str, str] = field(default_factory=dict)  # sys.databases: name -> state_desc (shared)
    master_files: dict[str, list[str]] = field(default_factory=lambda: {
        "bench": ["D:\\Data\\bench.mdf", "L:\\Log\\bench_log.ldf"]})
    runs: list[BackupRun] = field(default_factory=list)
    history: list[tuple[str, str, float]] = field(default_factory=list)  # destination, restore_type, restore_date (start)
    statements: list[str] = field(default_factory=list)
    files: ServerFiles = field(default_factory=ServerFiles)
    local_files: dict[str, ServerFiles] = field(default_factory=dict)
    clock: Callable[[], float] = time.time

    def running(self) -> list[BackupRun]:
        return [r for r in self.runs if r.finished is None and not r.killed]

    def disk(self, replica: str) -> ServerFiles:
        return self.local_files.get(replica, self.files)

    def answer(self, replica: str, session_id: int, timeout_s: int, sql: str, params: tuple[Any, ...],
               error: Any) -> list[tuple[Any, ...]] | None:
        """Rows for a restore statement, or None when `sql` is not one (`error` builds pyodbc's errors)."""
        if listing := re.fullmatch(rf"RESTORE FILELISTONLY FROM (?:DISK|URL) = {LITERAL};", sql):
            file = unquoted(listing.group(1))
            if file not in self.backups:
                raise error("42000", f"Cannot open backup device '{file}'. Operating system error 2(The system cannot "
                                     "find the file specified.).", FACTS.value("error.cannot_open_device"))
            return [(logical, physical, FACTS.value(f"filelist.type.{kind}"), PRIMARY_FILEGROUP if kind == "data" else None,
                     8_388_608, 35_184_372_080_640, n)
                    for n, (logical, physical, kind) in enumerate(self.backups[file], start=1)]
        if sql == ("SELECT r.session_id, r.percent_complete, DATEDIFF_BIG(millisecond, r.start_time, SYSDATETIME()), "
                   "t.text FROM sys.dm_exec_requests AS r CROSS APPLY sys.dm_exec_sql_text(r.sql_handle) AS t "
                   "WHERE r.command LIKE 'RESTORE%';"):
            now = self.clock()
            return [(r.session_id, r.percent(now), round((now - r.started) * 1000), r.statement) for r in self.running()]
        if sql == "SELECT physical_name FROM sys.master_files WHERE database_id = DB_ID(?);":
            return [(f,) for f in self.master_files.get(params[0], [])] if params[0] in self.states else []
        if sql == ("SELECT TOP (1) s.backup_size, DATEDIFF_BIG(millisecond, h.restore_date, SYSDATETIME()) "
                   "FROM msdb.dbo.restorehistory AS h JOIN msdb.dbo.backupset AS s ON s.backup_set_id = h.backup_set_id "
                   "WHERE h.destination_database_name = ? AND h.restore_type = 'D' ORDER BY h.restore_date DESC;"):
            now = self.clock()
            rows = sorted((row for row in self.history if row[0] == params[0] and row[1] == "D"), key=lambda r: -r[2])
            return [(self.backup_size, round((now - rows[0][2]) * 1000))] if rows else []
        if kill := re.fullmatch(r"KILL (\d+);", sql):
            victims = [r for r in self.running() if r.session_id == int(kill.group(1))]
            for run in victims:
                run.killed = True
                self.states[run.database] = str(FACTS.value("killed.leaves"))
            return [] if victims else None  # not a restore's session: the backup model answers
        if single := re.fullmatch(r"ALTER DATABASE \[((?:[^\]]|\]\])+)\] SET SINGLE_USER WITH ROLLBACK IMMEDIATE;", sql):
            self.statements.append(sql)
            if self.states.get(single.group(1).replace("]]", "]")) != ONLINE:
                raise error("42000", "ALTER DATABASE failed: the database is not online.", 5011)
            return []
        if drop := re.fullmatch(r"DROP DATABASE \[((?:[^\]]|\]\])+)\];", sql):
            return self._drop(replica, drop.group(1).replace("]]", "]"), sql, error)
        restore = re.fullmatch(rf"RESTORE DATABASE \[((?:[^\]]|\]\])+)\] FROM (?:DISK|URL) = {LITERAL} WITH (.+);", sql)
        if restore is None:
            return None
        return self._restore(replica, session_id, timeout_s, restore.group(1).replace("]]", "]"),
                             unquoted(restore.group(2)), restore.group(3), sql, error)

    def _restore(self, replica: str, session_id: int, timeout_s: int, database: str, file: str, options: str,
                 sql: str, error: Any) -> list[tuple[Any, ...]]:
        self.statements.append(sql)
        moves = {unquoted(m.group(1)): unquoted(m.group(2)) for m in re.finditer(rf"MOVE {LITERAL} TO {LITERAL}", options)}
        rest = [o.strip() for o in re.sub(rf"MOVE {LITERAL} TO {LITERAL}", "", options).split(",") if o.strip()]
        unknown = [o for o in rest if not re.fullmatch(r"STATS = \d+|RECOVERY|NORECOVERY|CHECKSUM|REPLACE", o)]
        if unknown:
            raise error("42000", f"'{unknown[0]}' is not a recognized RESTORE option.", 155)
        if "REPLACE" in rest:
            raise error("42000", "The model refuses REPLACE: it overwrites a database the harness may not own.", 102)
        if file not in self.backups:
            raise error("42000", f"Cannot open backup device '{file}'. Operating system error 2(The system cannot "
                                 "find the file specified.). RESTORE DATABASE is terminating abnormally.",
                        FACTS.value("error.cannot_open_device"))
        if database in self.states:
            raise error("42000", f"The backup set holds a backup of a database other than the existing '{database}' "
                                 "database. RESTORE DATABASE is terminating abnormally.",
                        FACTS.value("error.other_database"))
        placed = [moves.get(logical, physical) for logical, physical, _ in self.backups[file]]
        for target in placed:
            user = next((name for name, files in self.master_files.items() if target in files and name in self.states),
                        None)
            if user is not None:
                raise error("42000", f"The file '{target}' cannot be overwritten. It is being used by database "
                                     f"'{user}'. RESTORE DATABASE is terminating abnormally.",
                            FACTS.value("error.file_in_use"))
        run = BackupRun(session_id, database, file, sql, self.clock(), self.duration_s)
        self.runs.append(run)
        self.states[database] = str(FACTS.value("state.restoring"))
        self.master_files[database] = placed
        self.disk(replica).paths.update(placed)
        run.wait_out(self.clock, timeout_s, error)
        self.states[database] = ONLINE
        assert run.finished is not None
        when = run.started if FACTS.value("history.restore_date") == "start" else run.finished
        self.history.append((database, str(FACTS.value("history.restore_type.database")), when))
        return []

    def _drop(self, replica: str, database: str, sql: str, error: Any) -> list[tuple[Any, ...]]:
        self.statements.append(sql)
        if database not in self.states:
            raise error("42000", f"Cannot drop the database '{database}', because it does not exist or you do not "
                                 "have permission.", 3701)
        if any(r.database == database for r in self.running()):
            raise error("42000", f"Cannot drop database \"{database}\" because it is currently in use. "
                                 f"({FACTS.value('drop.refused_in_use')})", 3702)
        state = self.states.pop(database)
        files = self.master_files.pop(database, [])
        if state == ONLINE or not FACTS.value("drop.restoring_keeps_files"):
            for disk in {id(d): d for d in (self.files, *self.local_files.values())}.values():
                disk.paths.difference_update(files)
        return []
