"""A model SQL Server availability group at the DB-API level, for contract tests.

No TDS server exists here, so the model stands where pyodbc would: `model.connect` takes the
ODBC connection string (it picks the instance by `SERVER=tcp:HOST,PORT` and checks `UID` and
`PWD`), and each cursor parses the statement it is given — the view it reads, the columns it
selects, the AG name it filters on, the ALTER it runs — and answers from the model's replicas.
A statement it does not recognise, a column it does not know or another AG's name gets what
SQL Server would give (an error, or no rows), so a change in what the backend sends fails a test.
Errors have pyodbc's shape: `args = (SQLSTATE, "[SQLSTATE] [Microsoft][ODBC Driver 18 for SQL
Server][SQL Server]text (native) (SQLExecDirectW)")`.

Rows are written from Microsoft's documentation:
- sys.dm_hadr_availability_replica_states (role_desc PRIMARY/SECONDARY/RESOLVING,
  connected_state_desc, synchronization_health_desc, is_local; a secondary sees only its own
  state): https://learn.microsoft.com/en-us/sql/relational-databases/system-dynamic-management-views/sys-dm-hadr-availability-replica-states-transact-sql
- sys.availability_replicas (availability_mode_desc, failover_mode_desc):
  https://learn.microsoft.com/en-us/sql/relational-databases/system-catalog-views/sys-availability-replicas-transact-sql
- sys.dm_hadr_database_replica_states (KB and KB/s units):
  https://learn.microsoft.com/en-us/sql/relational-databases/system-dynamic-management-views/sys-dm-hadr-database-replica-states-transact-sql
- sys.dm_hadr_database_replica_cluster_states.is_failover_ready:
  https://learn.microsoft.com/en-us/sql/relational-databases/system-dynamic-management-views/sys-dm-hadr-database-replica-cluster-states-transact-sql
- ALTER AVAILABILITY GROUP ... FAILOVER | FORCE_FAILOVER_ALLOW_DATA_LOSS (run on the target
  secondary; a planned failover needs it SYNCHRONIZED, else error 41142; after a forced one the
  other replicas' databases are suspended until ALTER DATABASE ... SET HADR RESUME):
  https://learn.microsoft.com/en-us/sql/t-sql/statements/alter-availability-group-transact-sql
- AlwaysOn_health's availability_replica_state_change (availability_group_name,
  availability_replica_name, previous_state, current_state) and error_reported (error_number,
  message; 1480 "The availability group database ... is changing roles"):
  https://learn.microsoft.com/en-us/sql/database-engine/availability-groups/windows/always-on-extended-events
- sys.availability_groups (name), sys.availability_group_listeners (dns_name, port), sys.dm_os_cluster_nodes
  (NodeName, status_description, is_current_owner; an empty rowset on an instance that is no FCI),
  SERVERPROPERTY('MachineName') (an FCI's virtual server name): what `discover --sql` reads
- errors 976 / 983 (database not accessible on this replica), 18456 (login failed),
  15151 (cannot find the object): https://learn.microsoft.com/en-us/sql/relational-databases/errors-events/database-engine-events-and-errors
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pyodbc

from tests.support import variations
from tests.support.provenance import Fact, Facts
from tests.support.sqlserver_backup_model import BackupModel
from tests.support.sqlserver_restore_model import RestoreModel

DRIVER = "[Microsoft][ODBC Driver 18 for SQL Server]"
# read from connection strings and statements, or the name of the model's own group: never served as a vendor value
OWN_TOKENS = frozenset({"SERVER", "UID", "PWD", "ALTER", "FAILOVER", "NULL", "AG01"})

XE_READ_FILE = "MicrosoftDocs/sql-docs docs/relational-databases/system-functions/sys-fn-xe-file-target-read-file-transact-sql.md"
XE_EVENTS = "MicrosoftDocs/sql-docs docs/database-engine/availability-groups/windows/always-on-extended-events.md"
KB_2833707 = ("https://support.microsoft.com/en-us/help/2833707/troubleshooting-automatic-failover-problems-in-sql-"
              "server-2012-alwayson-environments")
PLANNED_FAILOVER = ("MicrosoftDocs/sql-docs docs/database-engine/availability-groups/windows/perform-a-planned-manual-"
                    "failover-of-an-availability-group-sql-server.md (Permissions)")
PLANNED_FAILOVER_QUOTE = ("Requires ALTER AVAILABILITY GROUP permission on the availability group, CONTROL AVAILABILITY "
                          "GROUP permission, ALTER ANY AVAILABILITY GROUP permission, or CONTROL SERVER permission.")
AG_OVERVIEW = ("MicrosoftDocs/sql-docs docs/database-engine/availability-groups/windows/overview-of-always-on-"
               "availability-groups-sql-server.md (Session-Timeout Period)")
CREATE_AG = "MicrosoftDocs/sql-docs docs/t-sql/statements/create-availability-group-transact-sql.md"
HAS_PERMS_BY_NAME = "MicrosoftDocs/sql-docs docs/t-sql/functions/has-perms-by-name-transact-sql.md (Remarks)"
CLUSTER_NODES = ("MicrosoftDocs/sql-docs docs/relational-databases/system-dynamic-management-views/"
                 "sys-dm-os-cluster-nodes-transact-sql.md")
DMV = "MicrosoftDocs/sql-docs docs/relational-databases/system-dynamic-management-views/"
REPLICA_STATES = f"{DMV}sys-dm-hadr-availability-replica-states-transact-sql.md"
DATABASE_REPLICA_STATES = f"{DMV}sys-dm-hadr-database-replica-states-transact-sql.md"
AVAILABILITY_REPLICAS = ("MicrosoftDocs/sql-docs docs/relational-databases/system-catalog-views/sys-availability-replicas-"
                         "transact-sql.md (as rendered: the markdown writes _ as \\_)")
ODBC = "MicrosoftDocs/sql-docs docs/odbc/reference/syntax/"
ROLE_DESC = "Description of **role**, one of:<br /><br /> RESOLVING<br /><br /> PRIMARY<br /><br /> SECONDARY"
CONNECTED_DESC = "Description of **connection_state**, one of:<br /><br /> DISCONNECTED<br /><br /> CONNECTED"

FACTS = Facts("sqlserver_model", [
    Fact("xe.timestamp_utc.since_major", 14, "documented", XE_READ_FILE,
         "timestamp_utc ... Applies to: SQL Server 2017 (14.x) and later"),
    Fact("xe.event_time_attribute", "timestamp", "documented",
         "MicrosoftDocs/sql-docs, Targets for Extended Events in SQL Server (the sample <event> a target holds)",
         '<event name="sql_statement_starting" package="sqlserver" timestamp="2015-09-22T19:18:45.420Z">'),
    Fact("state.resolving_normal", "RESOLVING_NORMAL", "documented", KB_2833707,
         "has changed from 'RESOLVING_NORMAL' to 'PRIMARY_PENDING'"),
    Fact("state.primary_pending", "PRIMARY_PENDING", "documented", KB_2833707,
         "has changed from 'RESOLVING_NORMAL' to 'PRIMARY_PENDING'"),
    Fact("state.primary_normal", "PRIMARY_NORMAL", "documented", KB_2833707,
         "has changed from 'PRIMARY_PENDING' to 'PRIMARY_NORMAL'"),
    Fact("state.secondary_normal", "SECONDARY_NORMAL", "captured",
         "SQL Server error log line kept in the unit tests of Microsoft's FailoverDetector sample (C#, namespace "
         "FailoverDetector)", "has changed from 'SECONDARY_NORMAL' to 'RESOLVING_NORMAL'"),
    Fact("error.database_role_change", 1480, "documented", XE_EVENTS,
         "error_reported (1480): Database Replica Role Change"),
    Fact("error.already_primary", 41122, "stricter",
         "the refusal's text is captured on a public page ('The local availability replica is already the primary "
         "replica of the availability group'); its number is not quotable here, and the backend matches neither"),
    Fact("error.not_synchronized", 41142, "stricter",
         "ALTER AVAILABILITY GROUP ... FAILOVER needs the target SYNCHRONIZED (alter-availability-group-transact-sql."
         "md); the number is not quotable here, and the backend refuses before sending, by state, not by number"),
    *(Fact(f"perms.alter_ag.{i}", permission, "documented", PLANNED_FAILOVER, PLANNED_FAILOVER_QUOTE)
      for i, permission in enumerate(("ALTER AVAILABILITY GROUP", "CONTROL AVAILABILITY GROUP",
                                      "ALTER ANY AVAILABILITY GROUP", "CONTROL SERVER"))),
    Fact("ag.session_timeout.default", 10, "documented", AG_OVERVIEW,
         "The default session-timeout period for each availability replica is 10 seconds."),
    Fact("ag.failure_condition_level.default", 3, "documented", CREATE_AG,
         "|3|Specifies that an automatic failover should be initiated on critical [SQL Server] internal errors, such "
         "as orphaned spinlocks, serious write-access violations, or too much dumping.<br /><br /> This is the default "
         "behavior.|"),
    Fact("ag.health_check_timeout.default", 30000, "documented", CREATE_AG,
         "The default HEALTH_CHECK_TIMEOUT value is 30000 milliseconds (30 seconds)."),
    Fact("perms.has_perms_held", 1, "documented", HAS_PERMS_BY_NAME,
         "HAS_PERMS_BY_NAME returns 1 when the user has effective permission on the securable, 0 when the user has "
         "no effective permission on the securable, and NULL when the securable class or permission is not valid."),
    Fact("fci.node_up", "up", "documented", CLUSTER_NODES, "0 = up 1 = down 2 = paused"),
    Fact("role_desc.primary", "PRIMARY", "documented", REPLICA_STATES, ROLE_DESC),
    Fact("role_desc.secondary", "SECONDARY", "documented", REPLICA_STATES, ROLE_DESC),
    Fact("connected_state_desc.connected", "CONNECTED", "documented", REPLICA_STATES, CONNECTED_DESC),
    Fact("connected_state_desc.disconnected", "DISCONNECTED", "documented", REPLICA_STATES, CONNECTED_DESC),
    Fact("synchronization_health_desc.healthy", "HEALTHY", "documented", REPLICA_STATES,
         "Description of **synchronization_health**, one of:<br /><br /> NOT_HEALTHY<br /><br /> PARTIALLY_HEALTHY"
         "<br /><br /> HEALTHY"),
    Fact("availability_mode_desc.synchronous", "SYNCHRONOUS_COMMIT", "documented", AVAILABILITY_REPLICAS,
         "Description of availability_mode, one of: ASYNCHRONOUS_COMMIT SYNCHRONOUS_COMMIT CONFIGURATION_ONLY"),
    Fact("failover_mode_desc.automatic", "AUTOMATIC", "documented", AVAILABILITY_REPLICAS,
         "Description of failover_mode, one of: MANUAL AUTOMATIC"),
    Fact("synchronization_state_desc.synchronized", "SYNCHRONIZED", "documented", DATABASE_REPLICA_STATES,
         "Description of the data-movement state, one of:<br /><br /> NOT SYNCHRONIZING<br /><br /> SYNCHRONIZING"
         "<br /><br /> SYNCHRONIZED<br /><br /> REVERTING<br /><br /> INITIALIZING"),
    Fact("sqlstate.login_timeout", "HYT00", "documented", f"{ODBC}sqldriverconnect-function.md (Diagnostics)",
         "|HYT00|Timeout expired|The login timeout period expired before the connection to the data source completed."),
    Fact("sqlstate.general_error", "HY000", "documented", f"{ODBC}sqlexecdirect-function.md (Diagnostics)",
         "|HY000|General error|An error occurred for which there was no specific SQLSTATE and for which no "
         "implementation-specific SQLSTATE was defined"),
    Fact("perms.has_perms_not_held", 0, "documented", HAS_PERMS_BY_NAME,
         "HAS_PERMS_BY_NAME returns 1 when the user has effective permission on the securable, 0 when the user has "
         "no effective permission on the securable, and NULL when the securable class or permission is not valid."),
])
"""Facts the model serves, each with its source (tests/support/provenance.py)."""


def _served(fact_id: str) -> str:
    return str(FACTS.value(fact_id))


PRIMARY, SECONDARY = _served("role_desc.primary"), _served("role_desc.secondary")
CONNECTED, DISCONNECTED = _served("connected_state_desc.connected"), _served("connected_state_desc.disconnected")
HEALTHY = _served("synchronization_health_desc.healthy")
SYNCHRONOUS_COMMIT = _served("availability_mode_desc.synchronous")
AUTOMATIC = _served("failover_mode_desc.automatic")
SYNCHRONIZED = _served("synchronization_state_desc.synchronized")
LOGIN_TIMEOUT, GENERAL_ERROR = _served("sqlstate.login_timeout"), _served("sqlstate.general_error")


def driver_error(sqlstate: str, text: str, native: int, function: str = "SQLExecDirectW") -> pyodbc.Error:
    return pyodbc.ProgrammingError(sqlstate, f"[{sqlstate}] {DRIVER}[SQL Server]{text} ({native}) ({function})")


def login_timeout() -> pyodbc.Error:
    return pyodbc.OperationalError(LOGIN_TIMEOUT, f"[{LOGIN_TIMEOUT}] {DRIVER}Login timeout expired (0) (SQLDriverConnect)")


@dataclass
class Replica:
    name: str  # replica_server_name
    host: str  # the address its own instance answers on
    role: str = SECONDARY
    mode: str = SYNCHRONOUS_COMMIT
    failover_mode: str = AUTOMATIC
    connected: bool = True
    health: str = HEALTHY
    up: bool = True
    error: tuple[str, int, str] | None = None  # (SQLSTATE, native, text) every statement gets
    session_timeout_s: int = field(default_factory=lambda: int(FACTS.value("ag.session_timeout.default")))


@dataclass
class DatabaseState:
    replica: str
    database: str
    state: str = SYNCHRONIZED
    suspended: bool = False
    log_send_queue_kb: int = 0
    log_send_rate_kb_s: int = 5000
    redo_queue_kb: int = 0
    redo_rate_kb_s: int = 20000
    failover_ready: bool = True


@dataclass
class SqlServerModel:
    ag_name: str = "AG01"
    version: str = "16.0.4135"  # SERVERPROPERTY('ProductVersion'): 16 is SQL Server 2022, 13 is 2016
    username: str = "harness_sql"
    password: str = ""
    replicas: dict[str, Replica] = field(default_factory=lambda: {
        "sql01": Replica("sql01", "sql01.example.net", role=PRIMARY),
        "sql02": Replica("sql02", "sql02.example.net")})
    databases: list[DatabaseState] = field(default_factory=lambda: [
        DatabaseState("sql01", "bench"), DatabaseState("sql02", "bench")])
    health_events: dict[str, list[tuple[float, str, str]]] = field(default_factory=dict)  # replica -> (wall, object, xml)
    clock_offset_s: float = 0.0
    executed: list[tuple[str, str]] = field(default_factory=list)  # (replica, statement) of every ALTER
    connections: list[dict[str, Any]] = field(default_factory=list)
    backup: BackupModel = field(default_factory=BackupModel)
    restore: RestoreModel = field(default_factory=RestoreModel)
    failure_condition_level: int = field(default_factory=lambda: int(FACTS.value("ag.failure_condition_level.default")))
    health_check_timeout_ms: int = field(default_factory=lambda: int(FACTS.value("ag.health_check_timeout.default")))
    # what the login was granted (server-wide, or on the group); HAS_PERMS_BY_NAME answers the effective ones
    grants: set[str] = field(default_factory=lambda: {str(FACTS.value("perms.alter_ag.2")), "VIEW SERVER STATE"})
    listener: tuple[str, int | None] | None = ("sqlag01-listener.example.net", 1433)  # dns_name, port
    fci: str | None = None  # a failover cluster instance's network name: then its nodes are the replicas' names

    def __post_init__(self) -> None:
        self.backup.clock = self.restore.clock = self.now  # the server's clock, SYSDATETIME's
        self.restore.states = self.backup.states  # one sys.databases

    def now(self) -> float:
        return time.time() + self.clock_offset_s

    # -- pyodbc.connect ---------------------------------------------------------------------
    def connect(self, string: str, autocommit: bool = False, timeout: int = 0) -> ModelConnection:
        attributes = dict(_attributes(string))
        session_id = 51 + len(self.connections)
        self.connections.append({"attributes": {k: v for k, v in attributes.items() if k != "PWD"},
                                 "autocommit": autocommit, "timeout": timeout, "session_id": session_id})
        if timeout <= 0:
            raise AssertionError("the model expects a login timeout (pyodbc.connect(..., timeout=N))")
        server = re.fullmatch(r"tcp:([^,]+),(\d+)", attributes.get("SERVER", ""))
        replica = next((r for r in self.replicas.values() if server and r.host == server.group(1)), None)
        if replica is None or not replica.up:
            raise login_timeout()
        if attributes.get("UID") != self.username or attributes.get("PWD") != self.password:
            raise pyodbc.InterfaceError("28000", f"[28000] {DRIVER}[SQL Server]Login failed for user "
                                                 f"'{attributes.get('UID')}'. (18456) (SQLDriverConnect)")
        return ModelConnection(self, replica, autocommit, session_id=session_id)

    # -- what an instance answers ----------------------------------------------------------------
    def answer(self, replica: Replica, sql: str, params: tuple[Any, ...],
               connection: ModelConnection | None = None) -> list[tuple[Any, ...]]:
        if replica.error is not None:
            sqlstate, native, text = replica.error
            raise driver_error(sqlstate, text, native)
        sql = " ".join(sql.split())
        if connection is not None and (rows := self.restore.answer(replica.name, connection.session_id,
                                                                   connection.timeout, sql, params,
                                                                   driver_error)) is not None:
            return rows
        if connection is not None and (rows := self.backup.answer(replica.name, connection.session_id,
                                                                  connection.timeout, sql, params,
                                                                  driver_error)) is not None:
            return rows
        if (alter := re.fullmatch(r"ALTER AVAILABILITY GROUP \[((?:[^\]]|\]\])+)\] "
                                  r"(FAILOVER|FORCE_FAILOVER_ALLOW_DATA_LOSS);", sql)):
            self._failover(replica, alter.group(1).replace("]]", "]"), alter.group(2) != "FAILOVER", sql)
            return []
        if (resume := re.fullmatch(r"ALTER DATABASE \[((?:[^\]]|\]\])+)\] SET HADR RESUME;", sql)):
            self.executed.append((replica.name, sql))
            for d in self.databases:
                if d.replica == replica.name and d.database == resume.group(1):
                    d.suspended, d.state = False, SYNCHRONIZED
            return []
        if sql.startswith("SELECT HAS_PERMS_BY_NAME("):
            return [self._has_perms(sql, params)]
        if sql == "SELECT DATEDIFF_BIG(millisecond, '19700101', SYSUTCDATETIME())":
            return [(int(self.now() * 1000),)]
        if sql.startswith("SELECT CAST(SERVERPROPERTY('ProductVersion') AS nvarchar(128)), "
                          "CAST(SERVERPROPERTY('Edition') AS nvarchar(128))"):
            return [(self.version, "Enterprise Edition: Core-based Licensing (64-bit)")]
        if sql == "SELECT CAST(SERVERPROPERTY('ComputerNamePhysicalNetBIOS') AS nvarchar(128))":
            return [(replica.name.upper(),)]
        if sql == "SELECT name FROM sys.availability_groups":
            return [] if self.fci else [(self.ag_name,)]
        if sql == "SELECT NodeName, status_description, is_current_owner FROM sys.dm_os_cluster_nodes":
            if not self.fci:
                return []  # "If the current server instance is not a failover clustered instance, it returns an
                # empty rowset." (sys-dm-os-cluster-nodes-transact-sql.md)
            return [(r.name.upper(), FACTS.value("fci.node_up") if r.up else "down", r is replica)
                    for r in self.replicas.values()]
        if sql == "SELECT CAST(SERVERPROPERTY('MachineName') AS nvarchar(128))":
            return [((self.fci or replica.name).upper(),)]
        if "FROM sys.fn_xe_file_target_read_file('AlwaysOn_health*.xel', NULL, NULL, NULL)" in sql:
            return self._health(replica, sql, params)
        select = re.fullmatch(r"SELECT (.+?) FROM sys\.availability_groups AS ag (.+) WHERE ag\.name = \?", sql)
        if select and params:
            return self._dmv(replica, [c.strip() for c in _split_columns(select.group(1))], select.group(2), params[0])
        raise driver_error("42000", f"Incorrect syntax near '{sql[:30]}' (the model knows only the statements the "
                                    "backend is documented to send).", 102)

    def _has_perms(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...]:
        """HAS_PERMS_BY_NAME(securable, class, permission) per column: the effective permission from `grants`."""
        calls = re.findall(r"HAS_PERMS_BY_NAME\((\?|NULL|'[^']*'), (NULL|'[^']*'), '([^']*)'\)", sql)
        if not calls or sql.count("HAS_PERMS_BY_NAME(") != len(calls):
            raise driver_error("42000", "the model expects HAS_PERMS_BY_NAME(securable, class, 'PERMISSION')", 102)
        values = iter(params)
        answers: list[Any] = []
        for securable, kind, permission in calls:
            name = next(values) if securable == "?" else None if securable == "NULL" else securable.strip("'")
            if kind == "'AVAILABILITY GROUP'" and permission == "ALTER" and name == self.ag_name:
                held_through = [str(FACTS.value(f"perms.alter_ag.{i}")) for i in range(4)]  # on the group, then server-wide
                scoped = {f"{g}::{name}" for g in held_through[:2]} | set(held_through[2:])
                answers.append(FACTS.value("perms.has_perms_held") if self.grants & scoped
                               else FACTS.value("perms.has_perms_not_held"))
            elif kind == "NULL" and name is None and permission == "VIEW SERVER STATE":
                held = self.grants & {"VIEW SERVER STATE", str(FACTS.value("perms.alter_ag.3"))}  # CONTROL SERVER holds all
                answers.append(FACTS.value("perms.has_perms_held") if held else FACTS.value("perms.has_perms_not_held"))
            else:
                answers.append(None)  # "NULL when the securable class or permission is not valid" (or unmodelled)
        return tuple(answers)

    def _dmv(self, at: Replica, columns: list[str], joins: str, ag: str) -> list[tuple[Any, ...]]:
        if ag != self.ag_name:
            return []  # no such group: no rows, as SQL Server answers
        if joins == "JOIN sys.availability_group_listeners AS agl ON agl.group_id = ag.group_id":
            if columns != ["agl.dns_name", "agl.port"]:
                raise driver_error("42S22", f"Invalid column name '{columns}'.", 207)
            return [self.listener] if self.listener else []
        if "sys.dm_hadr_database_replica_states AS drs" in joins:
            visible = [d for d in self.databases if at.role == PRIMARY or d.replica == at.name]
            return [tuple(self._database_column(c, d) for c in columns) for d in visible]
        if joins == "JOIN sys.availability_replicas AS ar ON ar.group_id = ag.group_id":  # catalog views: every replica
            return [tuple(self._setting_column(c, r) for c in columns) for r in self.replicas.values()]
        if "sys.dm_hadr_availability_replica_states AS ars" in joins:
            return [tuple(self._replica_column(c, r, at) for c in columns) for r in self.replicas.values()]
        raise driver_error("42S02", "Invalid object name (a view the model does not serve).", 208)

    def _replica_column(self, column: str, r: Replica, at: Replica) -> Any:
        seen = at.role == PRIMARY or r is at  # a secondary sees only its own state
        values = {"ar.replica_server_name": r.name, "ar.availability_mode_desc": r.mode,
                  "ar.failover_mode_desc": r.failover_mode,
                  "ars.role_desc": r.role if seen else None,
                  "ars.connected_state_desc": (CONNECTED if r.connected else DISCONNECTED) if seen else None,
                  "ars.synchronization_health_desc": r.health if seen else None,
                  "ars.is_local": r is at}
        if column not in values:
            raise driver_error("42S22", f"Invalid column name '{column}'.", 207)
        return values[column]

    def _setting_column(self, column: str, r: Replica) -> Any:
        values = {"ar.replica_server_name": r.name, "ag.failure_condition_level": self.failure_condition_level,
                  "ag.health_check_timeout": self.health_check_timeout_ms, "ar.session_timeout": r.session_timeout_s}
        if column not in values:
            raise driver_error("42S22", f"Invalid column name '{column}'.", 207)
        return values[column]

    def _database_column(self, column: str, d: DatabaseState) -> Any:
        values = {"ar.replica_server_name": d.replica, "DB_NAME(drs.database_id)": d.database,
                  "drs.synchronization_state_desc": d.state, "drs.is_suspended": d.suspended,
                  "drs.log_send_queue_size": d.log_send_queue_kb, "drs.log_send_rate": d.log_send_rate_kb_s,
                  "drs.redo_queue_size": d.redo_queue_kb, "drs.redo_rate": d.redo_rate_kb_s,
                  "drs.last_commit_time": datetime(2026, 11, 23, 10, 0, 0), "dcs.is_failover_ready": d.failover_ready}
        if column not in values:
            raise driver_error("42S22", f"Invalid column name '{column}'.", 207)
        return values[column]

    def _health(self, at: Replica, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """sys.fn_xe_file_target_read_file: its timestamp_utc column is "Applies to: SQL Server 2017 (14.x)
        and later"; on 2016 (13.x) naming it is error 207, Invalid column name."""
        if "timestamp_utc" in sql and int(self.version.split(".")[0]) < int(FACTS.value("xe.timestamp_utc.since_major")):
            raise driver_error("42S22", "Invalid column name 'timestamp_utc'.", 207)
        names = re.search(r"object_name IN \(([^)]*)\)", sql)
        if not names:
            raise driver_error("42000", "the model expects object_name IN (...)", 102)
        wanted = set(re.findall(r"'([^']+)'", names.group(1)))
        since = datetime.fromisoformat(str(params[0])).replace(tzinfo=UTC).timestamp() if params else 0.0
        return [(name, xml) for wall, name, xml in self.health_events.get(at.name, [])
                if name in wanted and wall >= since]

    def _failover(self, at: Replica, ag: str, forced: bool, sql: str) -> None:
        if ag != self.ag_name:
            raise driver_error("42000", f"Cannot find the availability group '{ag}', because it does not exist or "
                                        "you do not have permission.", 15151)
        if at.role == PRIMARY:
            raise driver_error("42000", f"Cannot failover availability group '{ag}' to this instance of SQL Server. "
                                        "The local availability replica is already the primary replica.",
                               int(FACTS.value("error.already_primary")))
        mine = [d for d in self.databases if d.replica == at.name]
        if not forced and (at.mode != SYNCHRONOUS_COMMIT or any(d.state != SYNCHRONIZED for d in mine)):
            raise driver_error("42000", f"The availability replica for availability group '{ag}' on this instance "
                                        "of SQL Server cannot become the primary replica. One or more databases are "
                                        "not synchronized or have not joined the availability group.",
                               int(FACTS.value("error.not_synchronized")))
        self.executed.append((at.name, sql))
        wall = self.now()
        primary, pending, resolving, secondary = (str(FACTS.value(f"state.{name}")) for name in (
            "primary_normal", "primary_pending", "resolving_normal", "secondary_normal"))
        for r in self.replicas.values():
            if r.role == PRIMARY:
                r.role = SECONDARY
                self.state_change(r.name, wall, primary, resolving)
                self.state_change(r.name, wall + 0.3, resolving, secondary)
        at.role = PRIMARY
        self.state_change(at.name, wall + 0.1, secondary, resolving)
        self.state_change(at.name, wall + 0.2, resolving, pending)
        self.state_change(at.name, wall + 0.4, pending, primary)
        for d in mine:
            d.state, d.suspended = SYNCHRONIZED, False  # the primary's own copy
            self.database_role_change(at.name, wall + 0.6, d.database)
        if forced:
            for d in self.databases:
                if d.replica != at.name:
                    d.suspended, d.state = True, "NOT SYNCHRONIZING"

    # -- AlwaysOn_health, as each instance writes it about itself -----------------------------------
    def state_change(self, replica: str, wall: float, previous: str, current: str) -> None:
        xml = (f'<event name="availability_replica_state_change" package="sqlserver" {_time(wall)}>'
               f'<data name="availability_group_name"><value>{self.ag_name}</value></data>'
               f'<data name="availability_replica_name"><value>{replica}</value></data>'
               f'<data name="previous_state"><value>0</value><text>{previous}</text></data>'
               f'<data name="current_state"><value>0</value><text>{current}</text></data></event>')
        self.health_events.setdefault(replica, []).append((wall, "availability_replica_state_change", xml))

    def database_role_change(self, replica: str, wall: float, database: str) -> None:
        message = (f'The availability group database "{database}" is changing roles from "RESOLVING" to "{PRIMARY}" '
                   "because the mirroring session or availability group failed over due to role synchronization. "
                   "This is an informational message only. No user action is required.")
        xml = (f'<event name="error_reported" package="sqlserver" {_time(wall)}>'
               f'<data name="error_number"><value>{FACTS.value("error.database_role_change")}</value></data>'
               f'<data name="message"><value>{message}</value></data></event>')
        self.health_events.setdefault(replica, []).append((wall, "error_reported", xml))


class ModelCursor:
    def __init__(self, connection: ModelConnection) -> None:
        self.connection = connection
        self._rows: list[tuple[Any, ...]] = []

    def execute(self, sql: str, *params: Any) -> ModelCursor:
        if self.connection.closed:
            raise pyodbc.ProgrammingError(GENERAL_ERROR, "Attempt to use a closed connection.")
        if sql.lstrip().upper().startswith("ALTER") and not self.connection.autocommit:
            raise driver_error("42000", "ALTER AVAILABILITY GROUP statement not allowed within multi-statement "
                                        "transaction.", 226)
        rows = self.connection.model.answer(self.connection.replica, sql, params, self.connection)
        unordered = "ORDER BY" not in " ".join(sql.upper().split())
        self._rows = rows[::-1] if unordered and variations.MEMBER_ORDER in variations.served(variations.DB_API) else rows
        return self

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self._rows)


class ModelConnection:
    def __init__(self, model: SqlServerModel, replica: Replica, autocommit: bool, session_id: int) -> None:
        self.model, self.replica, self.autocommit = model, replica, autocommit
        self.session_id = session_id  # @@SPID
        self.timeout = 0
        self.closed = False

    def cursor(self) -> ModelCursor:
        return ModelCursor(self)

    def close(self) -> None:
        self.closed = True


def _time(wall: float) -> str:
    """The event element's time attribute, in UTC."""
    stamp = datetime.fromtimestamp(wall, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return f'{FACTS.value("xe.event_time_attribute")}="{stamp}"'


def _attributes(string: str) -> list[tuple[str, str]]:
    """An ODBC connection string's key=value pairs, braced values unescaped (`}}` -> `}`)."""
    found = []
    for match in re.finditer(r"([^=;]+)=(\{(?:[^}]|\}\})*\}|[^;]*)", string):
        value = match.group(2)
        found.append((match.group(1), value[1:-1].replace("}}", "}") if value.startswith("{") else value))
    return found


def _split_columns(text: str) -> list[str]:
    """A select list split at top-level commas."""
    columns, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            columns.append(current)
            current = ""
        else:
            current += char
    return [*columns, current]
