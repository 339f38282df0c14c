"""A vSphere + vSAN cluster seen as a `Cluster`: the platform from vCenter, the roles from a database part.

vCenter says where each database VM runs, what vSphere HA did and whether the hosts are back;
vSAN says where the VM's data lives, what is resynchronising and whether health allows a run.
Who is primary, the commits and the database's own failover events come from the database
part, chosen by `databases[].kind`: an Always On availability group or a failover cluster
instance (`harness_platforms.sqlserver.view`), or PostgreSQL with pg_auto_failover on the embedded
lab bound to its simulator.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from faults.contract import (
    Check,
    Checked,
    ClusterView,
    ConfigError,
    CopiesSample,
    CountsCopies,
    DatabaseNode,
    DataDevice,
    FailoverForecast,
    Forecasting,
    HarnessError,
    ModelledLimit,
    ModelsDiskLimits,
    Provisioned,
    ReadsReplication,
    ReplicationMode,
    ReplicationState,
    ResyncSample,
    ServerEvent,
    Topology,
    VCenterSession,
    measure_offset,
    run_checks,
)
from harness_platforms.vsphere import checks as vsphere_checks
from harness_platforms.vsphere import policies
from harness_platforms.vsphere import probes as vsphere
from harness_platforms.vsphere.vsan.probes import HealthJudged, VsanCluster, VsanQuiet
from harness_platforms.vsphere.vsan.section import settings as vsan_settings
from workloads.oltp import ConnectionSettings, Dialect


class DatabasePart(ClusterView, Protocol):
    """The database's own view this cluster wraps, as the harness hands it over (its `Cluster`)."""

    def connection(self) -> tuple[Dialect, ConnectionSettings]: ...


@dataclass
class VsphereCluster:
    topology: Topology
    database: DatabasePart
    session: VCenterSession
    vsan: VsanCluster
    vsan_health: HealthJudged | None = field(default=None, init=False)  # what the last preflight judged

    @classmethod
    def hosting(cls, topology: Topology, database: DatabasePart) -> VsphereCluster:
        """The cluster of a `kind: vsphere` topology, around the database's own part (the harness builds it from
        `databases[0].kind`, through the platform that declares it)."""
        if topology.management.vcenter is None:
            raise ConfigError(f"topology {topology.name!r}: a vsphere cluster needs management.vcenter")
        session = VCenterSession(topology.management.vcenter, vsan_settings(topology).api_version)
        cluster = cls(topology, database, session, VsanCluster(topology, session))
        if isinstance(cluster.database, Provisioned):
            return ProvisionedVsphereCluster(cluster.topology, cluster.database, session, cluster.vsan)
        return cluster

    @property
    def name(self) -> str:
        return self.topology.name

    # -- health ----------------------------------------------------------------------------
    def checks(self) -> list[Check]:
        """Data mirrored across the sites, HA restarting VMs, vCenter's clock (`vsphere_checks`), then the
        database part's own."""
        own = vsphere_checks.checks(self.topology, self.session, self.vsan)
        return own + (list(self.database.checks()) if isinstance(self.database, Checked) else [])

    def preflight(self) -> None:
        """The platform matches the topology and is whole, vSAN is quiet and not red, the database is healthy."""
        seen = vsphere.verify(self.topology, self.session)
        problems = vsphere.recovery_problems(self.topology, seen)
        if problems:
            raise HarnessError(f"{self.session.where}: cluster {seen.cluster} is not whole: " + "; ".join(problems))
        self.vsan_health = VsanQuiet(self.vsan).preflight()
        self.database.preflight()
        run_checks(vsphere_checks.checks(self.topology, self.session, self.vsan))  # the database part ran its own

    def wait_healthy(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        vsphere.wait_recovered(self.topology, timeout_s, self.session)
        self.database.wait_healthy(max(1.0, deadline - time.monotonic()))

    # -- roles and placement ---------------------------------------------------------------
    def primary_node(self) -> str:
        return self.database.primary_node()

    def standby_node(self) -> str:
        return self.database.standby_node()

    def host_of(self, node: str) -> str:
        """The host vCenter says the node's VM runs on now (HA may have moved it)."""
        vm_name = vsphere.node_vm(self._node(node))
        seen = vsphere.discover(self.session, self.topology)
        vm = seen.vms.get(vm_name)
        if vm is None or vm.host is None:
            raise HarnessError(f"{self.session.where}: VM {vm_name} of node {node} is not on a host of the cluster")
        return vm.host

    def site_of(self, node: str) -> str:
        return self.topology.site_of(self.host_of(node)).name

    def devices_of(self, node: str) -> list[DataDevice]:
        """The devices vSAN reports holding the node's VM objects (data components, not witnesses)."""
        found = []
        for placed in self.vsan.vm_placement(vsphere.node_vm(self._node(node))):
            if placed.kind != "Component" or placed.host is None or placed.device is None:
                continue
            for index, group in enumerate(self.topology.host(placed.host).disk_groups
                                          if placed.host in {h.name for h in self.topology.hosts()} else []):
                if placed.device in group.capacity or placed.device == group.cache:
                    tier = "cache" if placed.device == group.cache else "capacity"
                    found.append(DataDevice(placed.host, placed.device, index, tier))
        return sorted(set(found), key=lambda d: (d.host, d.group, d.device))

    def _node(self, name: str) -> DatabaseNode:
        for node in self.topology.databases[0].nodes:
            if node.name == name:
                return node
        raise HarnessError(f"node {name!r} is not in databases[0].nodes of topology {self.topology.name!r}")

    # -- history -----------------------------------------------------------------------------
    def ha_events(self, since_wall: float, old_primary: str) -> list[ServerEvent]:
        """The database's failover events, and vSphere HA's host failures and VM restarts.

        Both go out on the database's clock (the one `clock_offset` measures): vCenter's times
        are moved by the difference between the two servers' offsets.
        """
        database_events = self.database.ha_events(since_wall, old_primary)
        shift = self.database.clock_offset() - self._vcenter_offset()
        platform = [dataclasses.replace(e, wall=e.wall + shift)
                    for e in vsphere.ha_events(self.session, since_wall - shift)]
        return sorted(database_events + platform, key=lambda e: e.wall)

    def _vcenter_offset(self) -> float:
        return measure_offset(self.session.server_now, time.time)

    def clock_offset(self) -> float:
        return self.database.clock_offset()

    def resync(self) -> ResyncSample | None:
        summary = self.vsan.resync()
        if summary.idle:
            return None
        return ResyncSample(bytes_left=float(summary.bytes_left), eta_s=summary.eta_s)

    def connection(self) -> tuple[Dialect, ConnectionSettings]:
        return self.database.connection()

    vsan_modelled: ClassVar[bool] = False  # the platform's own vSAN answers; the bound lab's simulator models it

    def copies(self) -> CopiesSample:
        """The database's copies as its own part reads them, and vSAN's: while vSAN resynchronises objects, their
        mirror is incomplete (one copy of those objects), whatever the database says."""
        if not isinstance(self.database, CountsCopies):
            raise HarnessError(f"the {type(self.database).__name__} part does not say how many copies it holds")
        database = self.database.copies()
        summary = self.vsan.resync()
        if summary.idle:
            return database
        # what the state is, not how far along (the resync's bytes are a series of their own): one state per phase
        resyncing = "vSAN: objects resynchronising" + (" (the simulator's model)" if self.vsan_modelled else "")
        return CopiesSample(None if database.in_sync is None else min(database.in_sync, 1),
                            f"{database.states}; {resyncing}", modelled=self.vsan_modelled or database.modelled)

    def replication(self) -> ReplicationState:
        """The database's own replication where it has one (an AG, the lab's PostgreSQL), else its storage's: the
        vSAN policy of the database VMs' homes and disks, synchronous to the other site when every one is dual
        site mirrored (vSAN writes each copy before it acknowledges), "none" when one keeps its data in one site."""
        storage = self._storage_replication()
        if not isinstance(self.database, ReadsReplication):
            return storage
        database = self.database.replication()
        return ReplicationState(database.mode, f"{database.read_from}; under it, {storage.read_from}",
                                {**database.settings, **storage.settings})

    def _storage_replication(self) -> ReplicationState:
        vms = [node.vm for node in self.topology.databases[0].nodes if node.vm]
        if not vms:
            return ReplicationState("unknown", "vSAN storage policies: no database node names its vm")
        try:
            seen = policies.vm_policies(self.session, vms)
        except HarnessError as exc:
            return ReplicationState("unknown", f"vSAN storage policies, which could not be read ({exc})")
        model = " (the simulator's model)" if self.vsan_modelled else ""
        said = "; ".join(f"{p.where} {p.policy.describe() if p.policy else 'no policy'}" for p in seen)
        mirrored = [p.policy.site_mirrored if p.policy else None for p in seen]
        mode: ReplicationMode = ("unknown" if None in mirrored else "synchronous" if all(mirrored) else "none")
        return ReplicationState(mode, f"vSAN storage policies{model}: {said}",
                                {f"storage policy {p.where}": p.policy.name if p.policy else "" for p in seen})

    def restore_replication(self, before: ReplicationState) -> list[str]:
        """The database part puts back its own; a storage policy that differs is named, never changed here (a
        fault that changes one reverts it itself)."""
        restored = self.database.restore_replication(before) if isinstance(self.database, ReadsReplication) else []
        now = self._storage_replication().settings
        changed = [f"{k}: '{v}' before, '{now[k]}' now" for k, v in before.settings.items()
                   if k.startswith("storage policy ") and k in now and now[k] != v]
        if changed:
            raise HarnessError(f"{self.session.where}: " + "; ".join(changed))
        return restored

    def failover_forecast(self) -> FailoverForecast | None:
        return self.database.failover_forecast() if isinstance(self.database, Forecasting) else None

    def describe(self) -> Mapping[str, str]:
        about: Any = self.session.call("reading vCenter's version", lambda: self.session.content().about)
        seen = vsphere.discover(self.session, self.topology)
        timer = self.vsan.repair_timer_min()
        described = {**self.database.describe(),
                     "replication": self.replication().describe(),
                     "vcenter": f"{getattr(about, 'fullName', 'unknown')}",
                     "vsphere_ha": f"{'on' if seen.ha_enabled else 'off'}; DRS {'on' if seen.drs_enabled else 'off'}"
                                   f" ({seen.drs_behavior or '-'})",
                     "vsan_repair_timer_min": "unknown" if timer is None else str(timer),
                     "vsan_health_preflight": self.vsan_health.describe() if self.vsan_health else "not judged yet",
                     "vsan_api": f"{self.session.vsan_spoken} ("
                                 f"{'negotiated' if self.session.vsan_version is None else 'set in the topology'})",
                     "vsan_preferred_site": seen.preferred_site or "-", "vsan_witness": seen.witness or "-"}
        return described


@dataclass
class ProvisionedVsphereCluster(VsphereCluster):
    """The lab bound to its simulator: brought up, down and rebuilt through the lab, like the lab itself."""

    vsan_modelled: ClassVar[bool] = True  # the harness brought this platform up: its vCenter and vSAN are simulated

    def _provisioned(self) -> Provisioned:
        assert isinstance(self.database, Provisioned)
        return self.database

    def up(self) -> bool:
        return self._provisioned().up()

    def down(self) -> None:
        self._provisioned().down()

    def rebuild(self) -> None:
        self._provisioned().rebuild()

    def storage_dir(self, node: str) -> Path:
        return self._provisioned().storage_dir(node)

    def modelled_disk_limit(self, iops: int) -> ModelledLimit | None:
        """The lab's model of a vSAN IOPS limit: its vCenter and vSAN are simulated, nothing enforces one."""
        return self.database.modelled_disk_limit(iops) if isinstance(self.database, ModelsDiskLimits) else None
