"""SQL Server as a cluster's database part: an Always On availability group or a failover cluster instance.

Who is primary and how healthy the replicas are comes from SQL Server itself (the AG's DMVs;
for an FCI, the WSFC role's owner); the failover's phases come from the servers' own records,
put on the harness clock: for an AG, AlwaysOn_health's `availability_replica_state_change`
(RESOLVING → PRIMARY_PENDING → PRIMARY_NORMAL) and each database's role change (error 1480),
and for both, the failover cluster's event log (node removed, resource failed, role online).
So a failover splits as Microsoft models it: detection, role change, databases online,
listener online, first commit. Before a fault the view also reads what the cluster predicts
(heartbeat and lease settings, redo and log send queues), for the report to set beside the
measurement.

On vSphere the part is wrapped by `VsphereCluster`, which says where each node's VM runs.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from faults.contract import (
    Check,
    ConfigError,
    Database,
    DatabaseNode,
    EventKind,
    FailoverForecast,
    HarnessError,
    ReplicationMode,
    ReplicationState,
    ResyncSample,
    ServerEvent,
    Topology,
    measure_offset,
    other_site_first,
    resolve_secret,
    run_checks,
)
from faults.contract import sqlserver_driver as sqlserver
from harness_platforms.sqlserver.probes import AvailabilityGroup, RoleChange
from harness_platforms.sqlserver.wsfc.probes import ClusterEvent, DetectionSettings, FailoverCluster
from workloads.oltp import ConnectionSettings, Credentials, Dialect, Endpoint, TSqlDialect

HEALTH_POLL_S = 2.0
# Microsoft-Windows-FailoverClustering/Operational event ids, as harness_platforms.sqlserver.wsfc.probes reads them
NODE_REMOVED, RESOURCE_FAILED, QUORUM_LOST, ROLE_MOVING, ROLE_ONLINE = 1135, 1069, 1177, 1641, 1201
DETECTION_EVENTS = (NODE_REMOVED, RESOURCE_FAILED, QUORUM_LOST)


def _database(topology: Topology, kind: str) -> tuple[int, Database]:
    for index, database in enumerate(topology.databases):
        if database.kind == kind:
            return index, database
    raise ConfigError(f"topology {topology.name!r}: no database of kind {kind}")


def listener_connection(topology: Topology, index: int, database: Database) -> tuple[Dialect, ConnectionSettings]:
    """The workload's connection: through the AG listener or FCI network name, as the topology sets it."""
    if database.credential is None:
        raise ConfigError(f"databases[{index}].credential: SQL Server needs a login for the workload")
    password = resolve_secret(database.credential.password, f"databases[{index}].credential.password")
    settings = ConnectionSettings(
        endpoints=(Endpoint(database.endpoint, database.port),), database=database.database,
        credentials=Credentials(database.credential.username, password),
        login_timeout_s=database.login_timeout_s, statement_timeout_s=database.query_timeout_s,
        encrypt=database.encrypt, trust_server_certificate=database.trust_server_certificate)
    driver = sqlserver.DRIVERS[database.odbc_driver or "ODBC Driver 18 for SQL Server"]
    return TSqlDialect(driver=driver), settings


@dataclass
class _SqlServerPart:
    """What an AG and an FCI share: the topology's nodes, the listener, the failover cluster."""

    topology: Topology
    index: int
    database: Database
    wsfc: FailoverCluster | None
    role: str  # the WSFC role: the AG's name, or the FCI's role_name

    @property
    def name(self) -> str:
        return self.topology.name

    def problems(self) -> list[str]:
        raise NotImplementedError

    def checks(self) -> list[Check]:
        if self.wsfc is None:
            return []
        return [Check("the failover cluster keeps quorum without one site", self.quorum_survives_a_site,
                      "give the cluster a witness in a third site (file share or cloud witness) and keep it Online")]

    def quorum_survives_a_site(self) -> str:
        """A witness, Online, when the nodes are split over two sites: without one, half the votes is no
        majority and losing either site stops the cluster (what a site failure suite would then measure)."""
        assert self.wsfc is not None
        quorum, nodes = self.wsfc.quorum(), self.wsfc.nodes()
        said = f"quorum {quorum.quorum_type}, {len(nodes)} nodes"
        if quorum.resource:
            state = next((r.state for r in self.wsfc.resources() if r.name == quorum.resource), "not found")
            if state != "Online":
                raise HarnessError(f"{self.wsfc.where}: {said}, witness {quorum.resource} is {state}: losing a site "
                                   "can lose quorum")
            return f"{said}, witness {quorum.resource} Online"
        if self.stretched() and len(nodes) % 2 == 0:
            raise HarnessError(f"{self.wsfc.where}: {said} and no witness, split over two sites: losing a site "
                               "loses quorum and the cluster stops")
        return said

    def preflight(self) -> None:
        """Microsoft's health policies as checks, then the part's own (`checks`); any failing one stops the experiment
        before it starts."""
        problems = self.problems()
        if problems:
            raise HarnessError(f"{self.database.kind} {self.role}: not healthy: " + "; ".join(problems))
        run_checks(self.checks())

    def wait_healthy(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                problems = self.problems()
            except HarnessError as exc:  # a replica or the cluster not answering yet
                problems = [str(exc)]
            if not problems:
                return
            if time.monotonic() >= deadline:
                raise HarnessError(f"{self.database.kind} {self.role}: not healthy after {timeout_s:.0f} s: "
                                   + "; ".join(problems))
            time.sleep(min(HEALTH_POLL_S, max(0.0, deadline - time.monotonic())))

    def host_of(self, node: str) -> str:
        host = self.node(node).host
        if host is None:
            raise ConfigError(f"databases[{self.index}]: node {node!r} names no host")
        return host

    def site_of(self, node: str) -> str:
        return self.topology.site_of(self.host_of(node)).name

    def node(self, name: str) -> DatabaseNode:
        for node in self.database.nodes:
            if name.casefold() in (node.name.casefold(), node.replica_name.casefold()):
                return node
        raise HarnessError(f"{name!r} is not a node of databases[{self.index}] ({self.database.name})")

    def prefer_another_site(self, candidates: list[str], primary: str) -> str:
        """Of the candidate nodes, one in another site than the primary's if there is one: a cross-site failover."""
        ordered = other_site_first(self.topology, self.database, primary, candidates)
        if not ordered:
            raise HarnessError(f"{self.database.kind} {self.role}: no node could take over from {primary}")
        return ordered[0]

    def stretched(self) -> bool:
        """Nodes in more than one site: the cluster's cross-subnet heartbeat settings apply."""
        try:
            return len({self.site_of(n.name) for n in self.database.nodes}) > 1
        except (ConfigError, KeyError):
            return False

    def resync(self) -> ResyncSample | None:
        return None  # the storage layer's resync is the platform's (vSAN); an AG's catch-up shows in its health

    def connection(self) -> tuple[Dialect, ConnectionSettings]:
        return listener_connection(self.topology, self.index, self.database)

    def cluster_events(self, since_wall: float, shift: float) -> list[ClusterEvent]:
        """The failover cluster's events on the database server's clock (`shift` = its offset minus the node's)."""
        if self.wsfc is None:
            return []
        return [dataclasses.replace(e, wall=e.wall + shift) for e in self.wsfc.events(since_wall - shift)]

    def detection(self) -> tuple[str, float | None, str]:
        """The heartbeat settings, the detection time they imply, and how it was worked out."""
        if self.wsfc is None:
            return "unknown (no winrm endpoint for the failover cluster)", None, "no detection settings"
        settings: DetectionSettings = self.wsfc.detection_settings(self.role)
        if self.stretched():
            implied = settings.cross_subnet_delay_ms * settings.cross_subnet_threshold / 1000
            basis = "CrossSubnetDelay x CrossSubnetThreshold (the nodes are in different sites)"
        else:
            implied = settings.same_subnet_delay_ms * settings.same_subnet_threshold / 1000
            basis = "SameSubnetDelay x SameSubnetThreshold"
        return settings.describe(), implied, f"detection = {basis} (a lost node; a hung instance is found by the " \
                                             "lease or health-check timeout)"


def _first(events: list[ServerEvent]) -> ServerEvent | None:
    return min(events, key=lambda e: e.wall, default=None)


def _cluster_detection(events: list[ClusterEvent], source: str) -> list[ServerEvent]:
    return [ServerEvent(e.wall, EventKind.DETECTED, source, e.message, {"event_id": e.event_id, "node": e.node})
            for e in events if e.event_id in DETECTION_EVENTS]


@dataclass
class AvailabilityGroupCluster(_SqlServerPart):
    """An Always On availability group: roles and health from the DMVs, phases from AlwaysOn_health."""

    ag: AvailabilityGroup

    @classmethod
    def from_topology(cls, topology: Topology, *, connector: Callable[..., Any] | None = None,
                      wsfc: FailoverCluster | None = None) -> AvailabilityGroupCluster:
        index, database = _database(topology, "sqlserver-ag")
        if database.ag_name is None:
            raise ConfigError(f"databases[{index}].ag_name: required for kind sqlserver-ag")
        cluster = wsfc if wsfc is not None else _failover_cluster(topology, database)
        return cls(topology, index, database, cluster, database.ag_name,
                   AvailabilityGroup.from_topology(topology, database, connector=connector))

    def checks(self) -> list[Check]:
        return [Check("the availability group's failure detection settings", self.ag.detection,
                      "ALTER AVAILABILITY GROUP ... MODIFY REPLICA ON ... WITH (SESSION_TIMEOUT = 10) or more"),
                *super().checks()]

    def problems(self) -> list[str]:
        problems = self.ag.health_problems()
        if self.wsfc is not None:
            problems += self.wsfc.health_problems(self.role)
        return problems

    def primary_node(self) -> str:
        return self.ag.primary()

    def standby_node(self) -> str:
        """The synchronous-commit secondary that would take over (another site's first)."""
        primary = self.primary_node()
        synchronous = [r.node for r in self.ag.replicas()
                       if r.role == "SECONDARY" and r.availability_mode == "SYNCHRONOUS_COMMIT"]
        return self.prefer_another_site(synchronous, primary)

    def clock_offset(self) -> float:
        return measure_offset(self.ag.server_now, time.time)

    def _wsfc_shift(self) -> float:
        if self.wsfc is None:
            return 0.0
        return self.clock_offset() - measure_offset(self.wsfc.server_now, time.time)

    def ha_events(self, since_wall: float, old_primary: str) -> list[ServerEvent]:
        """Detection, role change, databases online and listener online, each the first seen."""
        source = f"AlwaysOn_health {self.role}"
        changes: list[RoleChange] = self.ag.role_changes(since_wall)
        cluster = self.cluster_events(since_wall, self._wsfc_shift())
        detected = _first([ServerEvent(c.wall, EventKind.DETECTED, source,
                                       f"{c.replica}: {c.previous} -> {c.current}", {"node": c.node})
                           for c in changes if c.current.startswith("RESOLVING")]
                          + _cluster_detection(cluster, f"WSFC {self.role}"))
        promoted = _first([ServerEvent(c.wall, EventKind.PROMOTED, source, f"{c.replica}: {c.previous} -> {c.current}",
                                       {"node": c.node})
                           for c in changes if c.current == "PRIMARY_NORMAL" and c.node.casefold() != old_primary.casefold()])
        found = [e for e in (detected, promoted) if e is not None]
        if promoted is not None:
            found += self._after_role_change(promoted, since_wall, cluster)
        return sorted(found, key=lambda e: e.wall)

    def _after_role_change(self, promoted: ServerEvent, since_wall: float,
                           cluster: list[ClusterEvent]) -> list[ServerEvent]:
        node = promoted.attrs["node"]
        first_per_database: dict[str, float] = {}
        for change in sorted(self.ag.database_role_changes(since_wall), key=lambda c: c.wall):
            if change.node == node and change.wall >= promoted.wall - 1.0:
                first_per_database.setdefault(change.database, change.wall)
        found = []
        if first_per_database:
            all_online = max(first_per_database.values())
            found.append(ServerEvent(all_online, EventKind.DATABASES_ONLINE,
                                     f"AlwaysOn_health {self.role}", f"{len(first_per_database)} database(s) "
                                     f"changed role on {node}", {"node": node, "databases": sorted(first_per_database)}))
        online = [e for e in cluster if e.event_id == ROLE_ONLINE and e.about_role(self.role)
                  and e.wall >= promoted.wall - 1.0]
        if online:
            first = min(online, key=lambda e: e.wall)
            found.append(ServerEvent(first.wall, EventKind.LISTENER_ONLINE, f"WSFC {self.role}", first.message,
                                     {"role": self.role, "node": first.node}))
        return found

    def failover_forecast(self) -> FailoverForecast | None:
        detection, implied, basis = self.detection()
        estimates = self.ag.estimates()
        return FailoverForecast(detection=detection, detection_s=implied, rto_s=estimates.rto_s,
                                rpo_kb=estimates.rpo_kb, basis=f"{basis}; {estimates.basis}")

    def replication(self) -> ReplicationState:
        """Synchronous when the primary and at least one secondary run SYNCHRONOUS_COMMIT and that secondary's
        databases are SYNCHRONIZED, as Microsoft's "Availability modes" says a commit waits: "If both the primary
        replica and a given secondary replica are both configured for synchronous-commit mode, the primary replica
        waits for the secondary replica to confirm that it has hardened the log"; a primary in asynchronous-commit
        mode "commits transactions asynchronously for all secondary replicas"; a synchronous secondary past the
        session timeout is marked "NOT SYNCHRONIZING" and not waited for. Read from sys.availability_replicas
        (availability_mode_desc) and sys.dm_hadr_database_replica_states (synchronization_state_desc)."""
        replicas = self.ag.replicas()
        databases = self.ag.databases()
        primary = next((r for r in replicas if r.role == "PRIMARY"), None)
        states = {r.replica: sorted({d.synchronization_state for d in databases if d.replica == r.replica})
                  for r in replicas}
        read = "; ".join(f"{r.replica} {r.role.lower() or 'unknown role'} {r.availability_mode}"
                         + (f" ({', '.join(states[r.replica])})" if states[r.replica] else "") for r in replicas)
        settings = {f"availability_mode {r.replica}": r.availability_mode for r in replicas}
        if primary is None:
            return ReplicationState("unknown", f"{self.role}: no primary replica; {read}", settings)
        waited_for = [r for r in replicas if r.role == "SECONDARY" and r.availability_mode == "SYNCHRONOUS_COMMIT"
                      and states[r.replica] == ["SYNCHRONIZED"]]
        mode: ReplicationMode = ("synchronous" if primary.availability_mode == "SYNCHRONOUS_COMMIT" and waited_for
                                 else "asynchronous")
        return ReplicationState(mode, f"{self.role} (availability_mode_desc, synchronization_state_desc): {read}",
                                settings)

    def restore_replication(self, before: ReplicationState) -> list[str]:
        """An availability group's modes are the DBA's: a mode that differs from before is named, never altered."""
        now = self.replication().settings
        changed = [f"{name}: {value} before, {now[name]} now" for name, value in before.settings.items()
                   if now.get(name, value) != value]
        if changed:
            raise HarnessError(f"availability group {self.role}: " + "; ".join(changed) + " (ALTER AVAILABILITY GROUP "
                               "... MODIFY REPLICA ... WITH (AVAILABILITY_MODE = ...) puts it back; the harness does "
                               "not change a group's modes)")
        return []

    def describe(self) -> Mapping[str, str]:
        replicas = ", ".join(f"{r.node} {r.role.lower()} {r.availability_mode.lower()} {r.failover_mode.lower()}"
                             for r in self.ag.replicas())
        detection, _, _ = self.detection()
        return {"database": f"SQL Server {self.ag.version()}",
                "ha_manager": f"Always On availability group {self.role} on a Windows failover cluster",
                "replicas": replicas, "detection_settings": detection,
                "replication": self.replication().describe()}


@dataclass
class FailoverInstanceCluster(_SqlServerPart):
    """A failover cluster instance: one copy of the data, the WSFC role moves between nodes."""

    @classmethod
    def from_topology(cls, topology: Topology, *, wsfc: FailoverCluster | None = None) -> FailoverInstanceCluster:
        index, database = _database(topology, "sqlserver-fci")
        if database.role_name is None:
            raise ConfigError(f"databases[{index}].role_name: required for kind sqlserver-fci")
        cluster = wsfc if wsfc is not None else _failover_cluster(topology, database)
        if cluster is None:
            raise ConfigError(f"databases[{index}].winrm: an FCI is observed through its failover cluster; "
                              "name a winrm endpoint")
        return cls(topology, index, database, cluster, database.role_name)

    @property
    def cluster(self) -> FailoverCluster:
        assert self.wsfc is not None
        return self.wsfc

    def problems(self) -> list[str]:
        return self.cluster.health_problems(self.role)

    def primary_node(self) -> str:
        return self.node(self.cluster.owner_of(self.role)).name

    def standby_node(self) -> str:
        primary = self.primary_node()
        up = {n.name.casefold() for n in self.cluster.nodes() if n.state == "Up"}
        return self.prefer_another_site([n.name for n in self.database.nodes
                                         if n.name.casefold() in up and n.name != primary], primary)

    def clock_offset(self) -> float:
        return measure_offset(self.cluster.server_now, time.time)

    def ha_events(self, since_wall: float, old_primary: str) -> list[ServerEvent]:
        """Detection (node removed, resource failed) and the role online on another node (role change)."""
        cluster = self.cluster_events(since_wall, 0.0)
        source = f"WSFC {self.role}"
        detected = _first(_cluster_detection(cluster, source))
        promoted = _first([ServerEvent(e.wall, EventKind.PROMOTED, source, e.message, {"node": e.node})
                           for e in cluster if e.event_id == ROLE_ONLINE and e.about_role(self.role)
                           and e.node is not None and e.node.casefold() != old_primary.casefold()])
        return sorted([e for e in (detected, promoted) if e is not None], key=lambda e: e.wall)

    def failover_forecast(self) -> FailoverForecast | None:
        detection, implied, basis = self.detection()
        return FailoverForecast(detection=detection, detection_s=implied, rto_s=None, rpo_kb=0.0,
                                basis=f"{basis}; an FCI has one copy of the data: no redo queue, nothing unsent")

    def describe(self) -> Mapping[str, str]:
        detection, _, _ = self.detection()
        nodes = ", ".join(f"{n.name} {n.state.lower()}" for n in self.cluster.nodes())
        return {"database": "SQL Server failover cluster instance",
                "ha_manager": f"Windows failover cluster role {self.role!r}", "nodes": nodes,
                "detection_settings": detection, "replication": "shared storage (one copy, moved with the role)"}


def _failover_cluster(topology: Topology, database: Database) -> FailoverCluster | None:
    """The failover cluster through the database's (or a node's) winrm endpoint, if the topology names one."""
    if database.winrm is None and not any(n.winrm for n in database.nodes):
        return None
    return FailoverCluster.from_topology(topology, database)
