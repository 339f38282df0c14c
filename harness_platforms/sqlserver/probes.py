"""Always On availability groups through T-SQL, read only: replica health, readiness, the failover's own record.

Every statement is a constant here (dry-run prints them; the contract tests key on them).
What is read, from Microsoft's documentation of each view:
- `sys.dm_hadr_availability_replica_states` (role_desc, connected_state_desc,
  synchronization_health_desc, is_local) joined to `sys.availability_replicas`
  (replica_server_name, availability_mode_desc, failover_mode_desc). Only the primary sees every
  replica's state, so a question about the group goes to the node whose local replica is PRIMARY.
- `sys.dm_hadr_database_replica_states` (synchronization_state_desc, is_suspended,
  log_send_queue_size and redo_queue_size in KB, log_send_rate and redo_rate in KB/s,
  last_commit_time) and `sys.dm_hadr_database_replica_cluster_states.is_failover_ready`.
- AlwaysOn_health (`sys.fn_xe_file_target_read_file('AlwaysOn_health*.xel', ...)`), which each
  instance writes about itself: `availability_replica_state_change` (previous_state /
  current_state: RESOLVING_NORMAL, PRIMARY_PENDING, PRIMARY_NORMAL, SECONDARY_NORMAL, ...) and
  `error_reported` 1480 (an AG database changing roles).
"""

from __future__ import annotations

import logging
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from faults.contract import (
    ConfigError,
    Connector,
    ControlPlaneError,
    Database,
    DatabaseNode,
    HarnessError,
    Topology,
    TSqlSession,
    Uncertain,
    other_site_first,
)

log = logging.getLogger(__name__)


REPLICAS = (
    "SELECT ar.replica_server_name, ars.role_desc, ars.connected_state_desc, ars.synchronization_health_desc, "
    "ar.availability_mode_desc, ar.failover_mode_desc, ars.is_local "
    "FROM sys.availability_groups AS ag "
    "JOIN sys.availability_replicas AS ar ON ar.group_id = ag.group_id "
    "LEFT JOIN sys.dm_hadr_availability_replica_states AS ars ON ars.replica_id = ar.replica_id "
    "WHERE ag.name = ?")
DATABASES = (
    "SELECT ar.replica_server_name, DB_NAME(drs.database_id), drs.synchronization_state_desc, drs.is_suspended, "
    "drs.log_send_queue_size, drs.log_send_rate, drs.redo_queue_size, drs.redo_rate, drs.last_commit_time, "
    "dcs.is_failover_ready "
    "FROM sys.availability_groups AS ag "
    "JOIN sys.availability_replicas AS ar ON ar.group_id = ag.group_id "
    "JOIN sys.dm_hadr_database_replica_states AS drs ON drs.replica_id = ar.replica_id "
    "LEFT JOIN sys.dm_hadr_database_replica_cluster_states AS dcs "
    "ON dcs.replica_id = drs.replica_id AND dcs.group_database_id = drs.group_database_id "
    "WHERE ag.name = ?")
# How the group detects a failure: sys.availability_groups' failure_condition_level and health_check_timeout (ms),
# sys.availability_replicas' session_timeout (s) per replica.
DETECTION = (
    "SELECT ar.replica_server_name, ag.failure_condition_level, ag.health_check_timeout, ar.session_timeout "
    "FROM sys.availability_groups AS ag "
    "JOIN sys.availability_replicas AS ar ON ar.group_id = ag.group_id "
    "WHERE ag.name = ?")
# "The default session-timeout period for each availability replica is 10 seconds ... we recommend that you keep
# the time-out period at 10 seconds or greater. Setting the value to less than 10 seconds creates the possibility
# of a heavily loaded system declaring a false failure." (Overview of Always On Availability Groups)
SESSION_TIMEOUT_MIN_S = 10


def by_name(rows: list[Any]) -> list[Any]:
    """Rows keyed by a name (their first column: a replica, a group, a node, a listener) in name order: SQL Server
    returns a rowset without ORDER BY in any order ("The order in which rows are returned in a result set are not
    guaranteed unless an ORDER BY clause is specified"), and what the harness says or drafts must not change with it
    between two nights."""
    return sorted(rows, key=lambda row: str(row[0]).casefold())
# No timestamp_utc filter: that column exists from SQL Server 2017 on ("Applies to: SQL Server 2017 (14.x)
# and later"); each event's time is read from its own XML (event/@timestamp, every version) and compared here.
HEALTH_EVENTS = (
    "SELECT object_name, CAST(event_data AS nvarchar(max)) "
    "FROM sys.fn_xe_file_target_read_file('AlwaysOn_health*.xel', NULL, NULL, NULL) "
    "WHERE object_name IN ('availability_replica_state_change', 'error_reported')")
# The login's effective permissions (HAS_PERMS_BY_NAME: 1 held, 0 not, NULL for a class or permission not valid
# there). A planned failover "Requires ALTER AVAILABILITY GROUP permission on the availability group, CONTROL
# AVAILABILITY GROUP permission, ALTER ANY AVAILABILITY GROUP permission, or CONTROL SERVER permission", run on the
# target replica (Microsoft, "Perform a planned manual failover of an availability group"); the DMVs and
# AlwaysOn_health's files need VIEW SERVER STATE ("Requires VIEW SERVER STATE permission on the server").
PERMISSIONS = ("SELECT HAS_PERMS_BY_NAME(?, 'AVAILABILITY GROUP', 'ALTER'), "
               "HAS_PERMS_BY_NAME(NULL, NULL, 'VIEW SERVER STATE')")
NOW = "SELECT DATEDIFF_BIG(millisecond, '19700101', SYSUTCDATETIME())"
VERSION = ("SELECT CAST(SERVERPROPERTY('ProductVersion') AS nvarchar(128)), "
           "CAST(SERVERPROPERTY('Edition') AS nvarchar(128))")
ACTIVE_NODE = "SELECT CAST(SERVERPROPERTY('ComputerNamePhysicalNetBIOS') AS nvarchar(128))"
DATABASE_ROLE_CHANGE = 1480
# What `discover --sql` asks an instance it does not know yet, each from Microsoft's page of the view or function:
# sys.availability_groups ("name: Name of the availability group"); sys.availability_group_listeners ("dns_name:
# Configured network name (hostname) of the availability group listener", "port: The TCP port number configured for
# the availability group listener", NULL when configured outside SQL Server); sys.dm_os_cluster_nodes ("If the
# current server instance is not a failover clustered instance, it returns an empty rowset"); SERVERPROPERTY
# ('MachineName'): "For a clustered instance ... it returns the name of the virtual server".
AVAILABILITY_GROUPS = "SELECT name FROM sys.availability_groups"
LISTENERS = ("SELECT agl.dns_name, agl.port FROM sys.availability_groups AS ag "
             "JOIN sys.availability_group_listeners AS agl ON agl.group_id = ag.group_id WHERE ag.name = ?")
FCI_NODES = "SELECT NodeName, status_description, is_current_owner FROM sys.dm_os_cluster_nodes"
MACHINE_NAME = "SELECT CAST(SERVERPROPERTY('MachineName') AS nvarchar(128))"


@dataclass(frozen=True)
class ReplicaSeen:
    name: str  # replica_server_name
    role: str
    availability_mode: str
    failover_mode: str


@dataclass(frozen=True)
class GroupSeen:
    name: str
    replicas: tuple[ReplicaSeen, ...]
    listener: tuple[str, int | None] | None  # dns_name, port (None: configured outside SQL Server)


@dataclass(frozen=True)
class InstanceSeen:
    """What one instance says it takes part in: availability groups, or a failover cluster instance."""
    groups: tuple[GroupSeen, ...]
    fci_name: str | None  # the FCI's network name (its virtual server), None for a standalone instance
    fci_nodes: tuple[tuple[str, str, bool], ...]  # NodeName, status_description, is_current_owner


def instance_seen(session: TSqlSession) -> InstanceSeen:
    """Read-only: the groups this instance hosts a replica of, each with its replicas and listener; else the
    failover cluster instance it is. A secondary sees its groups' replicas in the catalog views too."""
    groups = []
    for (name,) in by_name(session.rows(AVAILABILITY_GROUPS, what="reading the availability groups")):
        rows = by_name(session.rows(REPLICAS, (name,), what=f"reading the replicas of {name}"))
        replicas = tuple(ReplicaSeen(str(r[0]), str(r[1] or "unknown here"), str(r[4]), str(r[5])) for r in rows)
        listeners = by_name(session.rows(LISTENERS, (name,), what=f"reading the listener of {name}"))
        listener = (str(listeners[0][0]), None if listeners[0][1] is None else int(listeners[0][1])) if listeners else None
        groups.append(GroupSeen(str(name), replicas, listener))
    nodes = by_name(session.rows(FCI_NODES, what="reading the failover cluster instance's nodes"))
    machine = session.rows(MACHINE_NAME, what="reading the instance's machine name")[0][0] if nodes else None
    return InstanceSeen(tuple(groups), None if machine is None else str(machine),
                        tuple((str(n[0]), str(n[1]), bool(n[2])) for n in nodes))


def bracketed(name: str) -> str:
    """A T-SQL delimited identifier: `[name]` with `]` doubled."""
    return "[" + name.replace("]", "]]") + "]"


@dataclass(frozen=True)
class ReplicaState:
    replica: str
    node: str
    role: str  # PRIMARY, SECONDARY, RESOLVING; "" when this replica's state is not known where asked
    connected: bool
    synchronization_health: str  # HEALTHY, PARTIALLY_HEALTHY, NOT_HEALTHY
    availability_mode: str  # SYNCHRONOUS_COMMIT, ASYNCHRONOUS_COMMIT, CONFIGURATION_ONLY
    failover_mode: str  # AUTOMATIC, MANUAL, EXTERNAL


@dataclass(frozen=True)
class DatabaseReplicaState:
    replica: str
    node: str
    database: str
    synchronization_state: str  # SYNCHRONIZED, SYNCHRONIZING, NOT SYNCHRONIZING, REVERTING, INITIALIZING
    is_suspended: bool
    log_send_queue_kb: float | None
    log_send_rate_kb_s: float | None
    redo_queue_kb: float | None
    redo_rate_kb_s: float | None
    last_commit_time: datetime | None  # the server's local time, as the view gives it
    is_failover_ready: bool | None


@dataclass(frozen=True)
class RoleChange:
    wall: float
    replica: str
    node: str
    previous: str
    current: str


@dataclass(frozen=True)
class DatabaseRoleChange:
    wall: float
    node: str
    database: str
    message: str


@dataclass(frozen=True)
class Estimates:
    rto_s: float | None
    rpo_kb: float | None
    basis: str


def _xe_wall(stamp: str) -> float:
    """An extended event's `timestamp` attribute (UTC, ISO 8601 with up to 7 fraction digits) -> epoch seconds."""
    base, _, rest = stamp.rstrip("Z").partition(".")
    fraction = float("0." + "".join(c for c in rest if c.isdigit())) if rest else 0.0
    return datetime.fromisoformat(base).replace(tzinfo=UTC).timestamp() + fraction


def _xe_fields(xml: str) -> tuple[float, dict[str, str]]:
    """An event_data document: its time and each data field (the `text` of an enum, else its `value`)."""
    root = ET.fromstring(xml)
    fields: dict[str, str] = {}
    for data in root.findall("data"):
        text, value = data.findtext("text"), data.findtext("value")
        fields[str(data.get("name"))] = text if text else (value or "")
    return _xe_wall(str(root.get("timestamp"))), fields


_ROLE_CHANGE_DATABASE = re.compile(r'database "([^"]+)" is changing roles')


def _kb(value: Any) -> float | None:
    return None if value is None else float(value)


@dataclass
class AvailabilityGroup:
    """One availability group, asked through its nodes' own instances."""

    topology: Topology
    database: Database
    ag_name: str
    sessions: dict[str, TSqlSession]  # node name -> its instance

    @classmethod
    def from_topology(cls, topology: Topology, database: Database, *,
                      connector: Connector | None = None) -> AvailabilityGroup:
        index = next(i for i, d in enumerate(topology.databases) if d.name == database.name)
        if database.ag_name is None:
            raise ConfigError(f"databases[{index}].ag_name: required for kind sqlserver-ag (the group to fail over)")
        if len(database.nodes) < 2:
            raise ConfigError(f"databases[{index}].nodes: an availability group needs its replicas' nodes listed")
        sessions = {n.name: TSqlSession.to_node(topology, database, n, connector=connector) for n in database.nodes}
        return cls(topology, database, database.ag_name, sessions)

    def node_of(self, replica: str) -> str:
        for node in self.database.nodes:
            if node.replica_name.casefold() == replica.casefold():
                return node.name
        raise HarnessError(f"availability group {self.ag_name}: replica {replica!r} is none of the topology's nodes "
                           f"({', '.join(n.replica_name for n in self.database.nodes)})")

    def node(self, name: str) -> DatabaseNode:
        return next(n for n in self.database.nodes if n.name == name)

    # -- reading ---------------------------------------------------------------------------
    def _primary_view(self) -> tuple[str, list[ReplicaState]]:
        """The node whose local replica is PRIMARY, and what it sees of every replica."""
        failures = []
        for node, session in self.sessions.items():
            try:
                rows = by_name(session.rows(REPLICAS, (self.ag_name,), what=f"reading the replicas of {self.ag_name}"))
            except ControlPlaneError as exc:
                failures.append(str(exc))
                continue
            local = [r for r in rows if r[6]]
            if local and local[0][1] == "PRIMARY":
                return node, [ReplicaState(str(r[0]), self.node_of(str(r[0])), str(r[1] or ""),
                                           r[2] == "CONNECTED", str(r[3] or ""), str(r[4]), str(r[5])) for r in rows]
        raise HarnessError(f"availability group {self.ag_name}: no node answers as its primary"
                           + (f" ({'; '.join(failures)})" if failures else ""))

    def replicas(self) -> list[ReplicaState]:
        return self._primary_view()[1]

    def detection(self) -> str:
        """The group's failure detection settings as its primary says; `Uncertain` for a session timeout Microsoft
        advises against (a false failure under load would read as a finding of the suites)."""
        node, _ = self._primary_view()
        rows = by_name(self.sessions[node].rows(DETECTION, (self.ag_name,),
                                                   what=f"reading {self.ag_name}'s detection settings"))
        if not rows:
            raise HarnessError(f"availability group {self.ag_name}: no replica settings")
        level, health_ms = rows[0][1], rows[0][2]
        timeouts = {self.node_of(str(r[0])): int(r[3]) for r in rows}
        said = (f"FAILURE_CONDITION_LEVEL {level}, HEALTH_CHECK_TIMEOUT {health_ms} ms, SESSION_TIMEOUT "
                + ", ".join(f"{n} {t} s" for n, t in timeouts.items()))
        short = [n for n, t in timeouts.items() if t < SESSION_TIMEOUT_MIN_S]
        if short:
            raise Uncertain(f"{said}: under {SESSION_TIMEOUT_MIN_S} s on {', '.join(short)}, which Microsoft advises "
                            "against (a heavily loaded system may declare a false failure)")
        return said

    def permissions(self) -> str:
        """On every replica (any may be the failover's target), the login may fail the group over and read its state;
        HarnessError naming each replica and permission it lacks."""
        missing = []
        for node, session in self.sessions.items():
            alter, view = session.rows(PERMISSIONS, (self.ag_name,), what="reading the login's permissions")[0]
            if alter != 1:
                missing.append(f"{node}: ALTER on availability group {self.ag_name}")
            if view != 1:
                missing.append(f"{node}: VIEW SERVER STATE")
        if missing:
            login = self.database.credential.username if self.database.credential else "?"
            raise HarnessError(f"SQL login {login!r} lacks " + "; ".join(missing))
        return (f"ALTER on availability group {self.ag_name} and VIEW SERVER STATE on "
                + ", ".join(self.sessions))

    def primary(self) -> str:
        return self._primary_view()[0]

    def databases(self) -> list[DatabaseReplicaState]:
        node, _ = self._primary_view()
        rows = by_name(self.sessions[node].rows(DATABASES, (self.ag_name,),
                                                   what=f"reading the databases of {self.ag_name}"))
        return [DatabaseReplicaState(str(r[0]), self.node_of(str(r[0])), str(r[1]), str(r[2]), bool(r[3]),
                                     _kb(r[4]), _kb(r[5]), _kb(r[6]), _kb(r[7]),
                                     r[8] if isinstance(r[8], datetime) else None,
                                     None if r[9] is None else bool(r[9])) for r in rows]

    def health_problems(self) -> list[str]:
        """Microsoft's Always On health policies as checks; [] when every one holds."""
        problems = []
        replicas = self.replicas()
        for r in replicas:
            if not r.connected:
                problems.append(f"replica {r.replica} is not connected")
            if r.synchronization_health != "HEALTHY":
                problems.append(f"replica {r.replica} is {r.synchronization_health or 'of unknown health'}")
        synchronous = {r.replica for r in replicas if r.availability_mode == "SYNCHRONOUS_COMMIT"}
        for d in self.databases():
            where = f"database {d.database} on {d.replica}"
            if d.is_suspended:
                problems.append(f"{where} is suspended (data movement paused)")
            if d.replica in synchronous and d.synchronization_state != "SYNCHRONIZED":
                problems.append(f"{where} is {d.synchronization_state}, not SYNCHRONIZED")
            if d.replica in synchronous and d.is_failover_ready is False:
                problems.append(f"{where} is not failover ready")
        return problems

    def failover_target(self, primary: str, to_node: str | None = None) -> str:
        """The node to fail over to: `to_node`, else a synchronous secondary in another site, else any."""
        if to_node is not None:
            return to_node
        replicas = self.replicas()
        candidates = [r.node for r in replicas if r.role == "SECONDARY" and r.availability_mode == "SYNCHRONOUS_COMMIT"]
        if not candidates:
            raise HarnessError(f"availability group {self.ag_name}: no synchronous-commit secondary to fail over to")
        return self.other_site_first(primary, candidates)[0]

    def other_site_first(self, owner: str, candidates: list[str]) -> list[str]:
        return other_site_first(self.topology, self.database, owner, candidates)

    def readiness_problems(self, node: str) -> list[str]:
        """Why a planned failover to `node` would be refused; [] when it may go ahead."""
        replica = self.node(node).replica_name
        state = next((r for r in self.replicas() if r.replica.casefold() == replica.casefold()), None)
        if state is None:
            return [f"{replica} is not a replica of {self.ag_name}"]
        problems = []
        if state.role != "SECONDARY":
            problems.append(f"{replica} is {state.role or 'in an unknown role'}, not a secondary")
        if state.availability_mode != "SYNCHRONOUS_COMMIT":
            problems.append(f"{replica} is {state.availability_mode}: a planned failover needs synchronous commit")
        for d in self.databases():
            if d.replica.casefold() != replica.casefold():
                continue
            if d.synchronization_state != "SYNCHRONIZED":
                problems.append(f"database {d.database} on {replica} is {d.synchronization_state}, not SYNCHRONIZED")
            if not d.is_failover_ready:
                problems.append(f"database {d.database} on {replica} is not failover ready")
        return problems

    def estimates(self) -> Estimates:
        """What a failover to the usual target would cost now: its redo backlog (RTO) and unsent log (RPO)."""
        primary = self.primary()
        target = self.failover_target(primary)
        replica = self.node(target).replica_name.casefold()
        mine = [d for d in self.databases() if d.replica.casefold() == replica]
        redo = [d.redo_queue_kb / d.redo_rate_kb_s for d in mine
                if d.redo_queue_kb is not None and d.redo_rate_kb_s]
        rto = max(redo) if redo else (0.0 if mine and all(d.redo_queue_kb == 0 for d in mine) else None)
        queues = [d.log_send_queue_kb for d in mine if d.log_send_queue_kb is not None]
        return Estimates(rto, sum(queues) if queues else None,
                         f"RTO = redo_queue_size / redo_rate and RPO = log_send_queue_size of {target}, "
                         "from sys.dm_hadr_database_replica_states before the fault")

    def role_changes(self, since_wall: float) -> list[RoleChange]:
        """Each instance's own replica state changes since `since_wall` (its AlwaysOn_health), oldest first."""
        found = []
        for node, fields, wall in self._health_events(since_wall, "availability_replica_state_change"):
            if fields.get("availability_group_name", "").casefold() != self.ag_name.casefold():
                continue  # names compare as SQL Server compares them; state names are upper-cased for the same reason
            replica = fields.get("availability_replica_name") or self.node(node).replica_name
            found.append(RoleChange(wall, replica, self.node_of(replica), fields.get("previous_state", "").upper(),
                                    fields.get("current_state", "").upper()))
        return sorted(found, key=lambda c: c.wall)

    def database_role_changes(self, since_wall: float) -> list[DatabaseRoleChange]:
        """Error 1480 (an AG database changing roles) as each instance logged it."""
        found = []
        for node, fields, wall in self._health_events(since_wall, "error_reported"):
            if fields.get("error_number") != str(DATABASE_ROLE_CHANGE):
                continue
            message = fields.get("message", "")
            match = _ROLE_CHANGE_DATABASE.search(message)
            if match is None:
                continue
            found.append(DatabaseRoleChange(wall, node, match.group(1), message))
        return sorted(found, key=lambda c: c.wall)

    def _health_events(self, since_wall: float, name: str) -> list[tuple[str, dict[str, str], float]]:
        found = []
        for node, session in self.sessions.items():
            try:
                rows = session.rows(HEALTH_EVENTS, what="reading AlwaysOn_health")
            except ControlPlaneError as exc:  # that instance may be the one that failed
                log.info("AlwaysOn_health of %s not read: %s", node, exc)
                continue
            for object_name, data in rows:
                if object_name == name:
                    wall, fields = _xe_fields(str(data))
                    if wall >= since_wall:
                        found.append((node, fields, wall))
        return found

    def server_now(self) -> float:
        for session in self.sessions.values():
            try:
                return int(session.rows(NOW, what="reading the server's clock")[0][0]) / 1000
            except ControlPlaneError:
                continue
        raise HarnessError(f"availability group {self.ag_name}: no replica answers")

    def version(self) -> str:
        node, _ = self._primary_view()
        product, edition = self.sessions[node].rows(VERSION, what="reading the version")[0]
        return f"{product} {edition}"


def fci_active_node(session: TSqlSession) -> str:
    """The node a failover cluster instance runs on now, as the instance itself says."""
    return str(session.rows(ACTIVE_NODE, what="reading the active node")[0][0])
