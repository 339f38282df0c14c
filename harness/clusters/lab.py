"""The embedded lab seen as a `Cluster`: pg_auto_failover's states and events, named for the suites."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from faults.metro import Arbiter, MetroGroup, PeerLink, ReplicaSync, Serving, SiteView
from harness.clusters import CopiesSample, ModelledLimit, ReplicationMode, ReplicationState, ResyncSample
from harness_kernel.errors import ConfigError, ControlPlaneError, HarnessError
from harness_kernel.history import EventKind
from harness_kernel.history.server import ServerEvent
from harness_kernel.topology.models import Topology
from harness_lab import haevents
from harness_lab.controller import PRIMARY_STATES, Lab
from harness_lab.layout import DATABASE, LabLayout
from harness_lab.vsphere_binding import running_model
from workloads.oltp import ConnectionSettings, Credentials, Dialect, Endpoint, PostgresDialect

SYNC_STATES = ("sync", "quorum")  # pg_stat_replication.sync_state of a standby a commit waits for
PREFLIGHT_SETTLE_S = 10.0  # how long a preflight gives a secondary that fell behind for a moment
LAB_PLATFORM = ("the embedded lab on one machine: PostgreSQL and pg_auto_failover run for real; its sites, hosts "
                "and inter-site link are network namespaces, a host or site failure is their processes killed or "
                "their links cut (no hypervisor, no vSAN)")


@dataclass
class LabCluster:
    lab: Lab
    topology: Topology

    @classmethod
    def from_topology(cls, topology: Topology) -> LabCluster:
        if topology.lab is None:
            what = "databases[0] is postgres, whose vSphere database part is" if topology.kind == "vsphere" else "it is not"
            raise ConfigError(f"topology {topology.name!r}: {what} the embedded lab's (lab: {{prefix: ...}}); "
                              "PostgreSQL elsewhere is not supported yet")
        return cls(Lab(LabLayout.from_settings(topology.lab)), topology)

    # -- Provisioned ---------------------------------------------------------------------
    def up(self) -> bool:
        if self.lab.healthy():
            return False
        self.lab.up()
        return True

    def down(self) -> None:
        self.lab.down()

    def rebuild(self) -> None:
        self.lab.rebuild()

    # -- Cluster -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.topology.name

    def preflight(self) -> None:
        """Healthy within PREFLIGHT_SETTLE_S: a secondary that falls behind for a moment under load (it reports
        catchingup, then secondary again) is no reason to refuse a run; one that stays behind is. A lab that is
        not up at all is said at once."""
        if not self.lab.network.present():
            raise HarnessError(f"lab {self.lab.layout.prefix} is not up (none of its namespaces exists): "
                               f"python -m harness lab up --prefix {self.lab.layout.prefix}")
        deadline = time.monotonic() + PREFLIGHT_SETTLE_S
        while not self.lab.healthy() and time.monotonic() < deadline:
            time.sleep(0.5)
        if not self.lab.healthy():
            status = self.lab.status()
            raise HarnessError(f"lab {self.lab.layout.prefix} is not healthy: nodes "
                               f"{[(n.name, n.reportedstate, n.goalstate) for n in status.nodes]} {status.error or ''}")
        if self.resync() is not None:
            raise HarnessError(f"lab {self.lab.layout.prefix}: a rebuild is still running")

    def wait_healthy(self, timeout_s: float) -> None:
        self.lab.wait_healthy(timeout_s)

    def primary_node(self) -> str:
        return self.lab.primary()

    def standby_node(self) -> str:
        primary = self.primary_node()
        return next(n.name for n in self.topology.databases[0].nodes if n.name != primary)

    def host_of(self, node: str) -> str:
        for db_node in self.topology.databases[0].nodes:
            if db_node.name == node and db_node.host:
                return db_node.host
        raise HarnessError(f"lab node {node!r} has no host in the topology")

    def site_of(self, node: str) -> str:
        return self.topology.site_of(self.host_of(node)).name

    def ha_events(self, since_wall: float, old_primary: str) -> list[ServerEvent]:
        named: dict[EventKind, ServerEvent] = {}
        for event in self.lab.ha_events(since_wall):
            kind = (EventKind.DETECTED if haevents.is_detection(event) else
                    EventKind.PROMOTED if haevents.is_promotion(event, old_primary) else None)
            if kind is not None and kind not in named:
                named[kind] = ServerEvent(event.wall, kind, "pg_auto_failover", event.description,
                                          {"node": event.node, "reportedstate": event.reportedstate,
                                           "goalstate": event.goalstate})
        return sorted(named.values(), key=lambda e: e.wall)

    def clock_offset(self) -> float:
        return self.lab.clock_offset()

    def resync(self) -> ResyncSample | None:
        progress = self.lab.resync_progress()
        if progress is None:
            return None
        return ResyncSample(bytes_left=float(progress.bytes_total - progress.bytes_done),
                            bytes_total=float(progress.bytes_total))

    def replication(self) -> ReplicationState:
        """The replication the cluster runs with now, read from its primary and its HA manager (never assumed):
        synchronous when the primary names synchronous standbys and waits for them (`synchronous_commit` neither
        off nor local). Its settings are pg_auto_failover's replication-quorum of each node, which decides
        whether the primary names the node as a synchronous standby."""
        try:
            nodes = self.lab.nodes()
        except ControlPlaneError:
            return ReplicationState("unknown", "pg_auto_failover's monitor, which did not answer")
        settings = {f"replication-quorum {n.name}": str(n.replication_quorum).lower() for n in nodes}
        monitor = ", ".join(f"{n.name} {n.reportedstate}/{n.goalstate}" for n in nodes)
        # a node the monitor last heard as primary may be dead: the primary is the one it also wants primary
        primary = next((n for n in nodes if n.reportedstate in PRIMARY_STATES and n.goalstate in PRIMARY_STATES), None)
        if primary is None:
            return ReplicationState("unknown", f"pg_auto_failover ({monitor}): no primary right now", settings)
        try:
            names, commit = self.lab.replication_settings(primary.name)
            standbys = self.lab.replication(primary.name)
        except ControlPlaneError:
            return ReplicationState("unknown", f"pg_auto_failover ({monitor}); {primary.name} did not answer", settings)
        mode: ReplicationMode = "synchronous" if names.strip() and commit not in ("off", "local") else "asynchronous"
        streaming = ", ".join(f"{name} {state}/{sync}" for name, state, sync in standbys) or "none"
        quorum = ", ".join(f"{n.name} {str(n.replication_quorum).lower()}" for n in nodes)
        return ReplicationState(mode, f"{primary.name}: synchronous_standby_names '{names}', synchronous_commit "
                                      f"{commit}; standbys {streaming}; pg_auto_failover replication-quorum {quorum}",
                                settings)

    def restore_replication(self, before: ReplicationState) -> list[str]:
        """pg_auto_failover's replication-quorum of each node back to what it was (`pg_autoctl set node
        replication-quorum`): the lab is the harness's own cluster."""
        now = self.replication().settings
        changed = []
        for name, value in before.settings.items():
            if now.get(name, value) != value:
                node = name.removeprefix("replication-quorum ")
                self.lab.pg.set_replication_quorum(node, value == "true")
                changed.append(f"{name}: {now[name]} -> {value}")
        return changed

    def copies(self) -> CopiesSample:
        """The copies a commit reaches now: pg_auto_failover's view (a primary in state `primary` has a synchronous
        secondary; `wait_primary` runs alone) and the primary's own (`pg_stat_replication`: standbys streaming
        with sync_state sync or quorum), the smaller one; None when no primary answers."""
        try:
            nodes = self.lab.nodes()
        except ControlPlaneError:
            return CopiesSample(None, "pg_auto_failover monitor: no answer")
        monitor = "pg_auto_failover: " + ", ".join(f"{n.name} {n.reportedstate}/{n.goalstate}" for n in nodes)
        primary = next((n for n in nodes if n.reportedstate in PRIMARY_STATES and n.goalstate in PRIMARY_STATES), None)
        if primary is None:
            return CopiesSample(None, f"{monitor}: no primary")
        secondary = any(n.reportedstate == n.goalstate == "secondary" for n in nodes)
        by_monitor = 2 if primary.reportedstate == "primary" and secondary else 1
        try:
            standbys = self.lab.replication(primary.name)
        except ControlPlaneError:
            return CopiesSample(None, f"{monitor}; {primary.name} does not answer")
        by_database = 1 + sum(1 for _, state, sync in standbys if state == "streaming" and sync in SYNC_STATES)
        seen = ", ".join(f"{name} {state}/{sync}" for name, state, sync in standbys) or "no standby"
        return CopiesSample(min(by_monitor, by_database),
                            f"{monitor}; pg_stat_replication on {primary.name}: {seen}")

    def metro(self) -> list[MetroGroup]:
        """The formation in the metro state set (`lab_group`): the monitor's view and the primary's own."""
        try:
            nodes = [HaNode(n.name, n.reportedstate, n.goalstate, n.health) for n in self.lab.nodes()]
        except ControlPlaneError:
            return [MetroGroup(self.topology.databases[0].name, ReplicaSync.UNKNOWN, PeerLink.UNKNOWN, (),
                               words={"pg_auto_failover monitor": "no answer"})]
        primary = next((n for n in nodes if n.reported in PRIMARY_STATES and n.goal in PRIMARY_STATES), None)
        standbys = None
        if primary is not None:
            try:
                standbys = self.lab.replication(primary.name)
            except ControlPlaneError:
                standbys = None
        return [lab_group(self.topology.databases[0].name, nodes, standbys, self.site_of)]

    def connection(self) -> tuple[Dialect, ConnectionSettings]:
        hosts, ports = self.lab.layout.dsn_hosts()
        settings = ConnectionSettings(endpoints=tuple(Endpoint(h, p) for h, p in zip(hosts, ports, strict=True)),
                                      database=DATABASE, credentials=Credentials("postgres"))
        return PostgresDialect(), settings

    def storage_dir(self, node: str) -> Path:
        return self.lab.storage_dir(self.site_of(node))

    def describe(self) -> Mapping[str, str]:
        described = {"database": _version(["postgres", "--version"], "/usr/lib/postgresql/15/bin/postgres"),
                     "ha_manager": _version(["pg_autoctl", "--version"]),
                     "latency_mechanism": self.lab.latency_mechanism or "unknown",
                     "replication": self.replication().describe()}
        if self.topology.kind == "vsphere":
            described.update(self._simulated_platform())
        else:
            described["platform"] = LAB_PLATFORM
        return described

    def modelled_disk_limit(self, iops: int) -> ModelledLimit | None:
        """Bound to its simulator, the lab cannot limit a disk's IOPS: an operation writing to the limited disk runs
        at the limit times the model's I/O size (vSAN weighs each I/O against 32 KB), as its rate cap."""
        model = running_model(self.lab.layout) if self.topology.kind == "vsphere" else None
        if model is None or not model.get("iops_limit_io_kb"):
            return None
        kb = model["iops_limit_io_kb"]
        return ModelledLimit(f"{int(iops * kb)}k", f"the lab cannot limit a disk's IOPS: the operation's rate is "
                                                    f"capped at VSAN.iopsLimit x {kb:g} KB/s (vSAN's normalized I/O "
                                                    "size); OLTP's own I/O on the node is not limited")

    def _simulated_platform(self) -> dict[str, str]:
        """Bound to its simulator, what the lab models rather than does, named as such for the report."""
        model = running_model(self.lab.layout)
        if model is None:
            return {"platform": "the embedded lab bound to its vSphere simulator (model unknown: no simulator config)"}
        return {"platform": "the embedded lab bound to its vSphere simulator (harness-vsim on govmomi v0.52.0): "
                            "vCenter, vSAN and the BMCs are simulated, the database nodes are real",
                "modelled": ", ".join(f"{name}={value:g}" for name, value in sorted(model.items()))}


def _version(argv: list[str], binary: str | None = None) -> str:
    try:
        out = subprocess.run([binary or argv[0], *argv[1:]], capture_output=True, text=True, timeout=10).stdout
    except OSError:
        return "unknown"
    return out.strip().splitlines()[0] if out.strip() else "unknown"


CATCHING_UP = ("catchingup", "wait_standby")  # pg_auto_failover states of a standby not in sync yet
PAUSED = ("demote_timeout", "draining", "demoted", "stop_replication")  # serving nothing while the role moves


@dataclass(frozen=True)
class HaNode:
    """A node as pg_auto_failover's monitor reports it: its states and the monitor's health check of it."""

    name: str
    reported: str
    goal: str
    health: int  # 1 the monitor reaches it, 0 it does not, -1 not checked yet


def lab_group(name: str, nodes: Sequence[HaNode], standbys: Sequence[tuple[str, str, str]] | None,
              site_of: Callable[[str], str]) -> MetroGroup:
    """The lab's formation in the metro state set. The replica and the link are the primary's own view
    (pg_stat_replication: `standbys`, None when the primary did not answer) checked against the monitor's;
    the arbiter is the monitor, reaching each site's node or not; a site serves when its node is the primary
    the monitor also wants primary."""
    primary = next((n for n in nodes if n.reported in PRIMARY_STATES and n.goal in PRIMARY_STATES), None)
    words = {n.name: f"{n.reported}/{n.goal}, health {n.health}" for n in nodes}
    if standbys is not None:
        words["pg_stat_replication"] = ", ".join(f"{a} {s}/{y}" for a, s, y in standbys) or "no standby"
    in_sync = any(s == "streaming" and y in SYNC_STATES for _, s, y in standbys or ())
    monitor_in_sync = any(n.reported == n.goal == "secondary" for n in nodes)
    if primary is None or standbys is None:
        replica = ReplicaSync.UNKNOWN
    elif in_sync and monitor_in_sync and primary.reported == "primary":
        replica = ReplicaSync.IN_SYNC
    elif standbys or any(n.reported in CATCHING_UP for n in nodes):
        replica = ReplicaSync.RESYNCING
    else:
        replica = ReplicaSync.FRACTURED
    others = [n for n in nodes if primary is None or n.name != primary.name]
    if standbys is None:
        link = PeerLink.UNKNOWN
    elif standbys:
        link = PeerLink.UP  # a standby in the other site holds a replication connection to the primary
    elif others and all(n.health == 1 for n in others):
        link = PeerLink.DOWN  # the monitor reaches the standby, yet it holds no connection to the primary
    else:
        link = PeerLink.UNKNOWN  # the standby itself may be down: the link cannot be told apart
    arbiter = {1: Arbiter.REACHABLE, 0: Arbiter.UNREACHABLE}
    sites = []
    for node in nodes:
        if primary is not None and node.name == primary.name:
            serving = Serving.SERVING
        elif node.health == 0:
            serving = Serving.UNKNOWN  # the monitor does not reach it: what it does now nobody here can tell
        elif node.reported in PAUSED or node.goal in PAUSED:
            serving = Serving.SUSPENDED
        else:
            serving = Serving.STANDBY
        sites.append(SiteView(site_of(node.name), serving, arbiter.get(node.health, Arbiter.UNKNOWN)))
    return MetroGroup(name, replica, link, tuple(sites), words=words)
