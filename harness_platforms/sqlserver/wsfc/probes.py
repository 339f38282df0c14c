"""A Windows Server failover cluster through PowerShell's FailoverClusters module, read only.

Queries (Get-ClusterGroup, Get-ClusterNode, Get-ClusterResource, Get-ClusterQuorum,
Get-ClusterOwnerNode, Get-Cluster and Get-ClusterParameter, the FailoverClustering events of the
System log and the Operational channel) emit JSON with every enum as its string (`"$($_.State)"`), so what is
parsed here is what the cmdlet printed, whatever the .NET enum's number. Calls go to the
database's winrm endpoint and, when it does not answer (its node may be the one that failed),
to each node's in turn; an error PowerShell itself reports is not retried elsewhere.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from faults.contract import (
    ConfigError,
    ControlPlaneError,
    Database,
    EndpointUnreachable,
    HarnessError,
    Probed,
    ProbeResult,
    Topology,
    WinRmSession,
    powershell,
    winrm_endpoint,
)

log = logging.getLogger(__name__)

AG_RESOURCE_TYPE = "SQL Server Availability Group"
QUERY_TIMEOUT_S = 60.0
# Detection events go to the System log (Microsoft's "Failover Clustering system log events": 1135
# node removed from membership, 1177 quorum lost, 1069 resource failed, 1205 role failed to come
# online, "event source FailoverClustering"); the informational ones to the Operational channel
# (1641 role moving, 1201 role online). One query reads both, by the provider both carry.
EVENT_LOGS = ("System", "Microsoft-Windows-FailoverClustering/Operational")
EVENT_PROVIDER = "Microsoft-Windows-FailoverClustering"
EVENT_IDS = (1135, 1069, 1177, 1641, 1201, 1205)
PROBE_WINDOW_S = 30 * 86400.0  # how far back a probe looks for events it can judge
ROLE_BY_POSITION = (1069, 1205)  # documented templates: "Cluster resource '%1' ... in clustered role '%2'", role '%1'
# 1641's two templates in the provider's message table: "Clustered role '%1' is moving to cluster node '%2'." and
# "Clustered role '%1' is moving from cluster node '%2' to cluster node '%3'.": the target is the last string.
JSON = "ConvertTo-Json -Compress -Depth 4"


@dataclass(frozen=True)
class ClusterGroup:
    name: str
    owner_node: str
    state: str  # Online, Offline, Failed, PartialOnline, Pending


@dataclass(frozen=True)
class ClusterNode:
    name: str
    state: str  # Up, Down, Paused, Joining


@dataclass(frozen=True)
class ClusterResource:
    name: str
    group: str
    resource_type: str
    state: str
    owner_node: str


@dataclass(frozen=True)
class Quorum:
    quorum_type: str
    resource: str | None


@dataclass(frozen=True)
class DetectionSettings:
    """How fast the cluster declares a node or an instance gone (Microsoft's failover detection settings)."""

    same_subnet_delay_ms: int
    same_subnet_threshold: int
    cross_subnet_delay_ms: int
    cross_subnet_threshold: int
    lease_timeout_ms: int | None  # AG resource: the lease between the instance and the cluster
    health_check_timeout_ms: int | None  # sp_server_diagnostics answer deadline
    failure_condition_level: int | None

    def describe(self) -> str:
        parts = [f"SameSubnetDelay {self.same_subnet_delay_ms} ms x {self.same_subnet_threshold}",
                 f"CrossSubnetDelay {self.cross_subnet_delay_ms} ms x {self.cross_subnet_threshold}"]
        if self.lease_timeout_ms is not None:
            parts.append(f"LeaseTimeout {self.lease_timeout_ms} ms")
        if self.health_check_timeout_ms is not None:
            parts.append(f"HealthCheckTimeout {self.health_check_timeout_ms} ms")
        if self.failure_condition_level is not None:
            parts.append(f"FailureConditionLevel {self.failure_condition_level}")
        return ", ".join(parts)


@dataclass(frozen=True)
class ClusterEvent:
    wall: float  # UTC epoch seconds, the node's clock
    event_id: int
    message: str
    role: str | None
    node: str | None
    strings: tuple[str, ...] = ()  # every insertion string, as the event carries them

    def about_role(self, role: str) -> bool:
        """Whether the event names `role`: by its position where Microsoft documents the template (1069, 1205),
        else among any of its insertion strings (1641, 1201: the message table puts it in '%1', read anywhere
        all the same: assumption A-wsfc-role-event-strings)."""
        if self.event_id in ROLE_BY_POSITION:
            return self.role is not None and self.role.casefold() == role.casefold()
        return any(value.casefold() == role.casefold() for value in self.strings)


# -- the scripts, one per question (dry-run prints them; the contract tests key on them) -------
GROUPS = ("Get-ClusterGroup | ForEach-Object { [pscustomobject]@{Name=$_.Name; OwnerNode=\"$($_.OwnerNode)\"; "
          f"State=\"$($_.State)\"}} }} | {JSON}")
NODES = f"Get-ClusterNode | ForEach-Object {{ [pscustomobject]@{{Name=$_.Name; State=\"$($_.State)\"}} }} | {JSON}"
RESOURCES = ("Get-ClusterResource | ForEach-Object { [pscustomobject]@{Name=$_.Name; OwnerGroup=\"$($_.OwnerGroup)\"; "
             "ResourceType=\"$($_.ResourceType)\"; State=\"$($_.State)\"; OwnerNode=\"$($_.OwnerNode)\"} } | "
             + JSON)
QUORUM = ("Get-ClusterQuorum | ForEach-Object { [pscustomobject]@{QuorumType=\"$($_.QuorumType)\"; "
          f"QuorumResource=\"$($_.QuorumResource)\"}} }} | {JSON}")
NOW = "[DateTimeOffset]::UtcNow.ToUnixTimeMilliseconds()"


# A role moves only to a node that may own its SQL Server resource and its disks. Possible owners are
# per resource: `Get-ClusterOwnerNode -Resource` (for a group it gives the preferred owners, "the order of
# preference among owner nodes", which is no limit). An IP address resource is left out: its
# dependency is an OR across subnets, and the cmdlet itself refuses a move none can follow.
OWNED_RESOURCE_TYPES = ("SQL Server", "Physical Disk")


def owners_script(role: str) -> str:
    types = " -or ".join(f"$_.ResourceType.Name -eq {powershell.literal(t)}" for t in OWNED_RESOURCE_TYPES)
    return (f"Get-ClusterResource | Where-Object {{ $_.OwnerGroup.Name -eq {powershell.literal(role)} -and ({types}) }} | "
            "ForEach-Object { $r = $_.Name; Get-ClusterOwnerNode -Resource $r | ForEach-Object { "
            "[pscustomobject]@{Resource=$r; OwnerNodes=@($_.OwnerNodes | ForEach-Object { \"$($_.Name)\" })} } } | "
            + JSON)


def detection_script(role: str) -> str:
    return ("$c = Get-Cluster; $p = @{}; "
            f"Get-ClusterResource | Where-Object {{ $_.OwnerGroup.Name -eq {powershell.literal(role)} -and "
            "($_.ResourceType.Name -eq 'SQL Server Availability Group' -or $_.ResourceType.Name -eq 'SQL Server') } | "
            "Get-ClusterParameter | ForEach-Object { $p[$_.Name] = $_.Value }; "
            "[pscustomobject]@{SameSubnetDelay=$c.SameSubnetDelay; SameSubnetThreshold=$c.SameSubnetThreshold; "
            "CrossSubnetDelay=$c.CrossSubnetDelay; CrossSubnetThreshold=$c.CrossSubnetThreshold; "
            "LeaseTimeout=$p['LeaseTimeout']; HealthCheckTimeout=$p['HealthCheckTimeout']; "
            f"FailureConditionLevel=$p['FailureConditionLevel']}} | {JSON}")


def events_script(since_wall: float) -> str:
    start = datetime.fromtimestamp(since_wall, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    ids = ",".join(str(i) for i in EVENT_IDS)
    return ("try { "
            f"Get-WinEvent -FilterHashtable @{{LogName={','.join(map(powershell.literal, EVENT_LOGS))}; "
            f"ProviderName={powershell.literal(EVENT_PROVIDER)}; Id={ids}; "
            f"StartTime=([DateTime]::Parse({powershell.literal(start)}).ToUniversalTime())}} | "
            "ForEach-Object { [pscustomobject]@{Id=$_.Id; TimeUtc=$_.TimeCreated.ToUniversalTime().ToString('o'); "
            "Machine=$_.MachineName; Message=$_.Message; Properties=@($_.Properties | ForEach-Object { \"$($_.Value)\" })} } "
            f"| {JSON} }} catch {{ if ($_.FullyQualifiedErrorId -notmatch 'NoMatchingEventsFound') {{ throw }} }}")


def _int(value: Any) -> int | None:
    return None if value is None or value == "" else int(value)


def _wall(text: str) -> float:
    """An ISO 8601 UTC time as PowerShell's 'o' format writes it (7 fraction digits) -> epoch seconds."""
    base, _, rest = text.rstrip("Z").partition(".")
    fraction = float("0." + "".join(c for c in rest if c.isdigit())) if rest else 0.0
    return datetime.fromisoformat(base).replace(tzinfo=UTC).timestamp() + fraction


def _event(row: dict[str, Any]) -> ClusterEvent:
    """Who an event is about, from its insertion strings (FailoverClustering's message templates)."""
    event_id, props = int(row["Id"]), [str(p) for p in row.get("Properties") or []]
    machine = str(row.get("Machine") or "").split(".")[0] or None
    first = props[0] if props else None
    role = {1069: props[1] if len(props) > 1 else None, 1641: first, 1201: first, 1205: first}.get(event_id)
    node = {1135: first, 1641: props[-1] if len(props) > 1 else None}.get(event_id, machine)
    return ClusterEvent(_wall(str(row["TimeUtc"])), event_id, str(row.get("Message") or ""), role, node, tuple(props))


@dataclass
class ClusterReader:
    """A failover cluster's state, asked through the first of its winrm endpoints that answers; it needs no
    topology (`discover` reads a cluster the harness does not know yet)."""

    sessions: list[WinRmSession]

    @property
    def where(self) -> str:
        return self.sessions[0].where

    def ask(self, script: str, what: str, timeout_s: float = QUERY_TIMEOUT_S) -> list[dict[str, Any]]:
        """`script`'s JSON from the first endpoint that answers. The queries here only read; the role move's
        one acting script (`harness_platforms.sqlserver.wsfc.faults`) goes through it too."""
        unreachable: list[str] = []
        for session in self.sessions:
            try:
                return session.run_json(script, what=what, timeout_s=timeout_s)
            except EndpointUnreachable as exc:
                unreachable.append(str(exc))
        raise EndpointUnreachable("; ".join(unreachable))

    def reads_the_cluster(self) -> str:
        """The WinRM account can run the FailoverClusters cmdlets against the cluster: its nodes and their state."""
        try:
            nodes = self.nodes()
        except ControlPlaneError as exc:
            if "is not recognized as the name of a cmdlet" in str(exc):
                raise ControlPlaneError(f"{self.where}: the FailoverClusters PowerShell module is not installed on the "
                                        "node (Get-ClusterNode is not recognized)") from None
            raise
        return f"{self.where}: nodes " + ", ".join(f"{n.name} {n.state}" for n in nodes)

    def groups(self) -> list[ClusterGroup]:
        return [ClusterGroup(str(r["Name"]), str(r["OwnerNode"]), str(r["State"]))
                for r in self.ask(GROUPS, "reading the cluster's roles")]

    def nodes(self) -> list[ClusterNode]:
        return [ClusterNode(str(r["Name"]), str(r["State"])) for r in self.ask(NODES, "reading the cluster's nodes")]

    def resources(self, group: str | None = None) -> list[ClusterResource]:
        found = [ClusterResource(str(r["Name"]), str(r["OwnerGroup"]), str(r["ResourceType"]), str(r["State"]),
                                 str(r["OwnerNode"])) for r in self.ask(RESOURCES, "reading the cluster's resources")]
        return [r for r in found if group is None or r.group == group]

    def quorum(self) -> Quorum:
        rows = self.ask(QUORUM, "reading the cluster's quorum")
        if not rows:
            raise ControlPlaneError(f"{self.where}: Get-ClusterQuorum returned nothing")
        return Quorum(str(rows[0]["QuorumType"]), str(rows[0]["QuorumResource"]) or None)

    def possible_owners(self, role: str) -> dict[str, list[str]]:
        """Each SQL Server and disk resource of the role -> the nodes that may own it."""
        rows = self.ask(owners_script(role), f"reading the possible owners of {role}'s resources")
        return {str(r["Resource"]): [str(n) for n in (r.get("OwnerNodes") or [])] for r in rows}

    def detection_settings(self, role: str) -> DetectionSettings:
        rows = self.ask(detection_script(role), f"reading the detection settings of {role}")
        if not rows:
            raise ControlPlaneError(f"{self.where}: no cluster settings returned")
        r = rows[0]
        return DetectionSettings(int(r["SameSubnetDelay"]), int(r["SameSubnetThreshold"]), int(r["CrossSubnetDelay"]),
                                 int(r["CrossSubnetThreshold"]), _int(r.get("LeaseTimeout")),
                                 _int(r.get("HealthCheckTimeout")), _int(r.get("FailureConditionLevel")))

    def group(self, role: str) -> ClusterGroup:
        for group in self.groups():
            if group.name == role:
                return group
        raise ConfigError(f"{self.where}: the failover cluster has no role named {role!r}")

    def owner_of(self, role: str) -> str:
        return self.group(role).owner_node


@dataclass
class FailoverCluster(ClusterReader):
    """The failover cluster a database's nodes form: its reader, and what is judged against the topology."""

    topology: Topology = field(kw_only=True)
    database: Database = field(kw_only=True)

    @classmethod
    def from_topology(cls, topology: Topology, database: Database) -> FailoverCluster:
        names = [n for n in [database.winrm, *(node.winrm for node in database.nodes)] if n]
        if not names:
            raise ConfigError(f"databases: {database.name} names no winrm endpoint (databases[].winrm or "
                              "nodes[].winrm): the failover cluster is reached through one")
        sessions = []
        for name in dict.fromkeys(names):
            index, endpoint = winrm_endpoint(topology, name)
            sessions.append(WinRmSession(endpoint, f"management.winrm[{index}]"))
        return cls(sessions, topology=topology, database=database)

    def events(self, since_wall: float) -> list[ClusterEvent]:
        """Every node's FailoverClustering events since `since_wall` (each node logs its own), oldest first."""
        seen: dict[tuple[int, float, str], ClusterEvent] = {}
        answered = False
        for session in self.sessions:
            try:
                rows = session.run_json(events_script(since_wall), what="reading the cluster's events",
                                        timeout_s=QUERY_TIMEOUT_S)
            except EndpointUnreachable:
                continue  # that node may be the one that failed
            answered = True
            for row in rows:
                event = _event(row)
                seen.setdefault((event.event_id, round(event.wall, 3), event.message), event)
        if not answered:
            raise EndpointUnreachable(f"{self.where}: no winrm endpoint of {self.database.name} answered")
        return sorted(seen.values(), key=lambda e: e.wall)

    def probe_role_event_strings(self, window_s: float = PROBE_WINDOW_S) -> Probed:
        """The latest roles brought online (event 1201) name a clustered role among their insertion strings (read-only).

        None in the window is UNKNOWN: a cluster whose roles never moved cannot tell."""
        try:
            online = [e for e in self.events(self.server_now() - window_s) if e.event_id == 1201]
            roles = [g.name for g in self.groups()]
        except HarnessError as exc:
            return Probed(ProbeResult.UNKNOWN, f"events not read: {exc}")
        if not online:
            return Probed(ProbeResult.UNKNOWN, f"no role came online in the last {window_s / 86400:g} days")
        named = [e for e in online if any(e.about_role(role) for role in roles)]
        seen = f"{len(named)} of {len(online)} role-online events name a role ({', '.join(roles)})"
        return Probed(ProbeResult.PASS if len(named) == len(online) else ProbeResult.FAIL, seen)

    def server_now(self) -> float:
        for session in self.sessions:
            try:
                return int(session.run_ps(NOW, what="reading the node's clock", timeout_s=QUERY_TIMEOUT_S)) / 1000
            except EndpointUnreachable:
                continue
            except ValueError:
                raise ControlPlaneError(f"{session.where}: the node's clock did not read as a number") from None
        raise EndpointUnreachable(f"{self.where}: no winrm endpoint of {self.database.name} answered")

    def health_problems(self, role: str) -> list[str]:
        """[] when the role is Online, every node of the database is Up and the quorum witness is Online."""
        problems = []
        group = self.group(role)
        if group.state != "Online":
            problems.append(f"role {role} is {group.state} on {group.owner_node}")
        states = {n.name.casefold(): n.state for n in self.nodes()}
        for node in self.database.nodes:
            state = states.get(node.name.casefold())
            if state != "Up":
                problems.append(f"node {node.name} is {state or 'not a member of the cluster'}")
        quorum = self.quorum()
        if quorum.resource:
            witness = [r for r in self.resources() if r.name == quorum.resource]
            if witness and witness[0].state != "Online":
                problems.append(f"quorum witness {quorum.resource} is {witness[0].state}")
        return problems
