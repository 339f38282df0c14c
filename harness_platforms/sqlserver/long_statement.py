"""A long T-SQL statement (BACKUP, RESTORE) run under load, watched, and stopped only when provably the harness's.

Such a statement blocks until it ends, so it runs on a session of its own in a thread, bounded
by the session's statement timeout; another session watches it in `sys.dm_exec_requests`
(`percent_complete`, `start_time`, the statement through `sys.dm_exec_sql_text`) and stops it
with `KILL` only when its text names what the fault wrote: a session id alone is reused by SQL
Server once its session ends. Where it runs is where the database is writable now: an AG's
primary (found when asked), an FCI's network name.

Sources: sys.dm_exec_requests
https://learn.microsoft.com/en-us/sql/relational-databases/system-dynamic-management-views/sys-dm-exec-requests-transact-sql ;
KILL (error 6106 for a session that has ended)
https://learn.microsoft.com/en-us/sql/t-sql/language-elements/kill-transact-sql ; @@SPID
https://learn.microsoft.com/en-us/sql/t-sql/functions/spid-transact-sql
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from faults.contract import (
    Connector,
    ControlPlaneError,
    Database,
    SqlServerError,
    Topology,
    TSqlSession,
    UnknownState,
    WinRmSession,
    powershell,
    winrm_endpoint,
)
from harness_platforms.sqlserver.probes import AvailabilityGroup

log = logging.getLogger(__name__)

START_TIMEOUT_S = 15.0
KILL_TIMEOUT_S = 60.0
FILE_TIMEOUT_S = 60.0
NOT_ACTIVE = 6106  # KILL of a session that has already ended: what a revert wanted
SESSION_ID = "SELECT @@SPID;"
DATABASE_STATE = "SELECT state_desc FROM sys.databases WHERE name = ?;"


def literal(text: str) -> str:
    """A Unicode string literal: N'...' with quotes doubled."""
    return "N'" + text.replace("'", "''") + "'"


def exists_script(file: str) -> str:
    return f"Test-Path -LiteralPath {powershell.literal(file)}"


def remove_script(file: str) -> str:
    path = powershell.literal(file)
    return f"if (Test-Path -LiteralPath {path}) {{ Remove-Item -LiteralPath {path} -ErrorAction Stop }}"


def primary_session(topology: Topology, database: Database, connector: Connector | None) -> TSqlSession:
    """A session on the instance the database is writable on now (the AG's primary, the FCI's owner)."""
    if database.kind == "sqlserver-ag":
        group = AvailabilityGroup.from_topology(topology, database, connector=connector)
        return group.sessions[group.primary()]
    return TSqlSession.to_listener(topology, database, connector=connector)


def winrm_sessions(topology: Topology, database: Database) -> list[WinRmSession]:
    """Every node's WinRM endpoint: a local disk path is on whichever node was primary at inject."""
    names = [n for n in [database.winrm, *(node.winrm for node in database.nodes)] if n]
    sessions = []
    for name in dict.fromkeys(names):
        index, endpoint = winrm_endpoint(topology, name)
        sessions.append(WinRmSession(endpoint, f"management.winrm[{index}]"))
    return sessions


class OnThePrimary:
    """A fault that acts where its database is writable now, and reaches the nodes' files over WinRM."""

    topology: Topology
    database: Database
    connector: Connector | None

    def _primary(self) -> TSqlSession:
        return primary_session(self.topology, self.database, self.connector)

    def _winrm(self) -> list[WinRmSession]:
        return winrm_sessions(self.topology, self.database)


@dataclass(frozen=True)
class Request:
    """A running request as sys.dm_exec_requests shows it."""

    session_id: int
    percent: float | None
    age_s: float | None  # since its start_time, on the server's clock
    text: str

    @property
    def started_wall(self) -> float | None:
        return None if self.age_s is None else time.time() - self.age_s


def requests(session: TSqlSession, sql: str, params: tuple[object, ...] = (), *, what: str) -> list[Request]:
    rows = session.rows(sql, params, what=what)
    return [Request(int(r[0]), None if r[1] is None else float(r[1]), None if r[2] is None else int(r[2]) / 1000,
                    str(r[3] or "")) for r in rows]


@dataclass
class StatementRun:
    """What this process saw of its statement (nothing after a crash: then the server is asked)."""

    session_id: int | None = None
    thread: threading.Thread | None = None
    started_wall: float | None = None
    ended_wall: float | None = None
    error: str | None = None
    reverted: bool = False
    unknown: UnknownState = field(default_factory=UnknownState)

    @property
    def alive(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def owns(self, request: Request) -> bool:
        """Its own session while its thread waits (only then: an ended session's id is reused)."""
        return self.alive and request.session_id == self.session_id

    @classmethod
    def start(cls, primary: TSqlSession, statement: str, timeout_s: float, what: str, name: str,
              seen: Callable[[], bool]) -> StatementRun:
        """Send `statement` on a new session bounded to `timeout_s`; return once the server shows it (`seen`), it
        ended, or START_TIMEOUT_S passed."""
        own = dataclasses.replace(primary, statement_timeout_s=timeout_s)
        run = cls(session_id=int(own.rows(SESSION_ID, what=f"reading the id of the session {what}")[0][0]),
                  started_wall=time.time())
        log.info("%s on %s (session %s)", statement, own.where, run.session_id)

        def execute() -> None:
            try:
                own.execute(statement, what=what)
            except SqlServerError as exc:
                run.error = str(exc)
            finally:
                run.ended_wall = time.time()
                own.close()

        run.thread = threading.Thread(target=execute, name=name, daemon=True)
        run.thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while run.ended_wall is None and not seen():
            if time.monotonic() > deadline:
                log.warning("%s: not in sys.dm_exec_requests %.0f s after it was sent", what, START_TIMEOUT_S)
                break
            time.sleep(0.1)
        return run

    def join(self) -> None:
        if self.thread is not None:
            self.thread.join(KILL_TIMEOUT_S)


def stop(session: TSqlSession, ours: Callable[[], list[Request]], what: str) -> None:
    """KILL every request `ours` lists and wait, bounded, until none is left."""
    for request in ours():
        log.info("stopping session %s: %s", request.session_id, what)
        try:
            session.execute(f"KILL {request.session_id};", what=f"stopping {what}")
        except SqlServerError as exc:
            if exc.info.native != NOT_ACTIVE:
                raise
    deadline = time.monotonic() + KILL_TIMEOUT_S
    while ours():
        if time.monotonic() > deadline:
            raise ControlPlaneError(f"{session.where}: {what} still runs {KILL_TIMEOUT_S:.0f} s after KILL")
        time.sleep(0.2)
