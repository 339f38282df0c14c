"""vSphere through vCenter (pyVmomi): discovery checked against the topology, host and VM faults, HA evidence.

`discover` reads what vCenter says the stretched cluster is: fault domains (= sites), the
preferred one and the witness (vSAN stretched-cluster system), hosts with their state and vSAN
disk groups, VMs and the host running each, HA/DRS settings and VM/host rules. `verify` compares
it with the topology and raises one ConfigError listing every mismatch before any fault acts.

Faults follow `faults.base.Fault`. Every wait is bounded and its timeout says what it waited
for. `check()` reports what vCenter reports; when vCenter cannot be read it is UNKNOWN, never
CLEARED.

- `HostShutdown` (host-power-off on a host without a BMC): `ShutdownHost_Task(force=True)`.
  Refused unless `management.vcenter.allow_host_shutdown` is true: it is a graceful shutdown
  (HA may record a clean power-off and not restart the VMs, unlike a real failure) and nothing
  can power the host on again, so the revert can only wait for a person to do it.
- `HostMaintenance`: `EnterMaintenanceMode_Task` with the asked vSAN evacuation mode; revert exits.
- `VmMigrate`: `RelocateVM_Task` to another host (by default one of another site), timed; revert moves it back.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from faults.base import FaultPlan, FaultSpec, FaultState, UnknownState
from faults.kinds import MaintenanceParams, MigrationParams, Params
from faults.transports.vcenter import VCenterSession, VcEvent, sdk, session_for
from harness_kernel.errors import ConfigError, ControlPlaneError, HarnessError
from harness_kernel.history.events import EventKind
from harness_kernel.history.server import ServerEvent
from harness_kernel.topology.models import DatabaseNode, Topology
from harness_kernel.topology.targets import Target

log = logging.getLogger(__name__)

BACKEND = "vsphere"
HOST_PATHS = ("runtime.powerState", "runtime.connectionState", "runtime.inMaintenanceMode", "config.vsanHostConfig")
VM_PATHS = ("runtime.host", "runtime.powerState")
SHUTDOWN_TASK_S = 600.0
RECONNECT_WAIT_S = 900.0
MIGRATION_TIMEOUT_S = 1800.0
EXIT_MAINTENANCE_S = 900.0
# vCenter 8.0U3's event catalogue lists both a class and an extended event for an HA host failure; which
# one a real failure posts is not documented, so both are asked for.
HOST_FAILED_EVENTS = ("DasHostFailedEvent", "com.vmware.vc.HA.DasHostFailedEvent")
VM_RESTARTED_EVENT = "com.vmware.vc.ha.VmRestartedByHAEvent"


# -- discovery ------------------------------------------------------------------------------
@dataclass(frozen=True)
class DiskGroupSeen:
    cache: str | None  # None: vSAN ESA (no cache tier)
    capacity: tuple[str, ...]


@dataclass(frozen=True)
class HostSeen:
    name: str
    site: str  # its vSAN fault domain; "" if none
    power: str
    connection: str
    maintenance: bool
    node_uuid: str
    disk_groups: tuple[DiskGroupSeen, ...]
    esa: bool = False  # vSAN Express Storage Architecture: no cache tier

    @property
    def usable(self) -> bool:
        return self.connection == "connected" and self.power == "poweredOn" and not self.maintenance


@dataclass(frozen=True)
class VmSeen:
    name: str
    host: str | None
    power: str


@dataclass(frozen=True)
class RuleSeen:
    """A VM/host rule: `vms` should (mandatory: must) run on `hosts` (affine) or not (anti-affine)."""

    name: str
    enabled: bool
    mandatory: bool
    affine: bool
    vms: tuple[str, ...]
    hosts: tuple[str, ...]


@dataclass(frozen=True)
class Discovery:
    cluster: str
    datacenter: str | None
    hosts: dict[str, HostSeen]
    vms: dict[str, VmSeen]
    witness: str | None
    preferred_site: str | None
    ha_enabled: bool
    drs_enabled: bool
    drs_behavior: str
    rules: tuple[RuleSeen, ...]

    @property
    def sites(self) -> dict[str, tuple[str, ...]]:
        found: dict[str, list[str]] = {}
        for host in self.hosts.values():
            found.setdefault(host.site, []).append(host.name)
        return {site: tuple(sorted(names)) for site, names in sorted(found.items())}


def discover(session: VCenterSession, topology: Topology) -> Discovery:
    """What vCenter says the topology's cluster is (ConfigError if it has no such datacenter or cluster)."""
    vcenter = topology.management.vcenter
    assert vcenter is not None  # session_for refused a topology without one
    datacenter = None
    if vcenter.datacenter:
        if vcenter.datacenter not in session.inventory("Datacenter", []):
            raise ConfigError(f"{session.where}: no datacenter named {vcenter.datacenter!r} "
                              "(management.vcenter.datacenter)")
        datacenter = vcenter.datacenter
    clusters = session.inventory("ClusterComputeResource", ["host", "configurationEx"])
    if vcenter.cluster not in clusters:
        raise ConfigError(f"{session.where}: no cluster named {vcenter.cluster!r} (management.vcenter.cluster); "
                          f"vCenter has: {', '.join(sorted(clusters)) or 'none'}")
    cluster, cluster_props = clusters[vcenter.cluster]
    members = {_moid(h) for h in cluster_props.get("host") or []}
    all_hosts = session.inventory("HostSystem", list(HOST_PATHS))
    names_by_id = {_moid(obj): name for name, (obj, _) in all_hosts.items()}
    hosts = {name: host_seen(name, props) for name, (obj, props) in all_hosts.items() if _moid(obj) in members}
    for name, seen_host in list(hosts.items()):
        if seen_host.esa:  # no disk mappings on ESA: its devices are its storage pool
            hosts[name] = dataclasses.replace(seen_host, disk_groups=(storage_pool(session, name, all_hosts[name][0]),))
    vms = {name: VmSeen(name, names_by_id.get(_moid(props.get("runtime.host"))), str(props.get("runtime.powerState")))
           for name, (_, props) in session.inventory("VirtualMachine", list(VM_PATHS)).items()
           if _moid(props.get("runtime.host")) in members}
    stretched = session.vsan("vsan-stretched-cluster-system")
    witnesses = session.call("reading the vSAN witness", lambda: stretched.VSANVcGetWitnessHosts(cluster)) or []
    # The witness sits outside the cluster; its moref came through /vsanHealth, so its name is looked up in the
    # inventory read above (reading it through that moref would go to the vSAN endpoint).
    witness = next((names_by_id.get(_moid(w.host)) for w in witnesses if w.host), None)
    preferred = session.call("reading the vSAN preferred fault domain",
                             lambda: stretched.VSANVcGetPreferredFaultDomain(cluster))
    config = cluster_props.get("configurationEx")
    das, drs = getattr(config, "dasConfig", None), getattr(config, "drsConfig", None)
    return Discovery(
        cluster=vcenter.cluster, datacenter=datacenter, hosts=hosts, vms=vms, witness=witness,
        preferred_site=getattr(preferred, "preferredFaultDomainName", None) or None,
        ha_enabled=bool(getattr(das, "enabled", False)), drs_enabled=bool(getattr(drs, "enabled", False)),
        drs_behavior=str(getattr(drs, "defaultVmBehavior", "") or ""), rules=rules_seen(config, names_by_id))


def host_seen(name: str, props: dict[str, Any]) -> HostSeen:
    vsan = props.get("config.vsanHostConfig")
    fault_domain = getattr(getattr(vsan, "faultDomainInfo", None), "name", None) or ""
    node_uuid = getattr(getattr(vsan, "clusterInfo", None), "nodeUuid", None) or ""
    mappings = getattr(getattr(vsan, "storageInfo", None), "diskMapping", None) or []
    groups = tuple(DiskGroupSeen(getattr(m.ssd, "canonicalName", None) if getattr(m, "ssd", None) else None,
                                 tuple(d.canonicalName for d in (m.nonSsd or []))) for m in mappings)
    return HostSeen(name, fault_domain, str(props.get("runtime.powerState")), str(props.get("runtime.connectionState")),
                    bool(props.get("runtime.inMaintenanceMode")), node_uuid, groups,
                    bool(getattr(vsan, "vsanEsaEnabled", False)))


def storage_pool(session: VCenterSession, name: str, host: Any) -> DiskGroupSeen:
    """An ESA host's storage pool, as one group without a cache device: `QueryVsanManagedDisks(host)`
    (vsan-disk-management-system) answers `storagePools[].storagePoolDisks[].disk` (vSAN API 8.0.0.1+),
    "either disk mapping or storage pool disk can be present in the result" (vSAN Management API 8.0U3)."""
    disks = session.vsan("vsan-disk-management-system")
    managed = session.call(f"QueryVsanManagedDisks on {name}", lambda: disks.QueryVsanManagedDisks(host=host))
    devices = [str(d.disk.canonicalName) for pool in getattr(managed, "storagePools", None) or []
               for d in getattr(pool, "storagePoolDisks", None) or [] if getattr(d, "disk", None) is not None]
    return DiskGroupSeen(None, tuple(devices))


def rules_seen(config: Any, host_names: dict[str, str]) -> tuple[RuleSeen, ...]:
    """VM/host rules with their groups resolved to names (other rule kinds are not placement of a VM on a site)."""
    groups = {g.name: g for g in getattr(config, "group", None) or []}
    found = []
    for rule in getattr(config, "rule", None) or []:
        vm_group = getattr(rule, "vmGroupName", None)
        if vm_group is None:
            continue
        host_group = getattr(rule, "affineHostGroupName", None) or getattr(rule, "antiAffineHostGroupName", None)
        vms = tuple(sorted(v.name for v in getattr(groups.get(vm_group), "vm", None) or []))
        hosts = tuple(sorted(host_names.get(_moid(h), _moid(h)) for h in getattr(groups.get(host_group), "host", None) or []))
        found.append(RuleSeen(rule.name, bool(rule.enabled), bool(getattr(rule, "mandatory", False)),
                              bool(getattr(rule, "affineHostGroupName", None)), vms, hosts))
    return tuple(found)


def node_vm(node: DatabaseNode) -> str:
    """The VM a database node runs in: `vm`, or the node's own name when the topology gives none."""
    return node.vm or node.name


def database_vms(topology: Topology) -> list[tuple[str, DatabaseNode]]:
    """(field path, node) of every database node of the topology."""
    return [(f"databases[{di}].nodes[{ni}]", node) for di, db in enumerate(topology.databases)
            for ni, node in enumerate(db.nodes)]


def mismatches(topology: Topology, seen: Discovery) -> list[str]:
    """Every way vCenter's cluster differs from the topology, one line each, naming the topology field."""
    problems: list[str] = []
    seen_sites = seen.sites
    for si, site in enumerate(topology.sites):
        if site.name not in seen_sites:
            problems.append(f"sites[{si}].name: vCenter has no fault domain {site.name!r} "
                            f"(it has: {', '.join(s or '(none)' for s in seen_sites) or 'none'})")
        for hi, host in enumerate(site.hosts):
            where = f"sites[{si}].hosts[{hi}]"
            found = seen.hosts.get(host.name)
            if found is None:
                problems.append(f"{where}.name: cluster {seen.cluster!r} has no host {host.name!r}")
                continue
            if found.site != site.name:
                problems.append(f"{where}: host {host.name!r} is in fault domain {found.site or '(none)'!r} in vCenter, "
                                f"in site {site.name!r} in the topology")
            if host.disk_groups:
                want = sorted((g.cache or "", tuple(sorted(g.capacity))) for g in host.disk_groups)
                have = sorted((g.cache or "", tuple(sorted(g.capacity))) for g in found.disk_groups)
                if want != have:
                    problems.append(f"{where}.disk_groups: host {host.name!r} has {_groups(have)} in vCenter, "
                                    f"{_groups(want)} in the topology")
    known = {h.name for h in topology.hosts()}
    for name in sorted(set(seen.hosts) - known):
        problems.append(f"sites: vCenter's cluster has host {name!r} (fault domain {seen.hosts[name].site or '(none)'!r}), "
                        "which the topology does not list")
    if topology.witness is not None and seen.witness != topology.witness.name:
        problems.append(f"witness.name: the topology names {topology.witness.name!r}, vCenter's vSAN witness is "
                        f"{seen.witness!r}")
    if topology.witness is None and seen.witness is not None:
        problems.append(f"witness: vCenter's cluster has vSAN witness {seen.witness!r}; the topology names none")
    site_names = {s.name for s in topology.sites}
    if seen.preferred_site is not None and seen.preferred_site not in site_names:
        problems.append(f"sites: vCenter's preferred fault domain {seen.preferred_site!r} is not a site of the topology")
    for path, node in database_vms(topology):
        vm_name = node_vm(node)
        vm = seen.vms.get(vm_name)
        field_name = f"{path}.vm" if node.vm else f"{path}.vm (not set: the node's name)"
        if vm is None:
            problems.append(f"{field_name}: no VM named {vm_name!r} runs on cluster {seen.cluster!r}")
            continue
        if node.host and node.host in known and vm.host in known and \
                topology.site_of(vm.host).name != topology.site_of(node.host).name:
            problems.append(f"{path}.host: VM {vm_name!r} runs on {vm.host!r} (site {topology.site_of(vm.host).name!r}), "
                            f"the topology puts it on {node.host!r} (site {topology.site_of(node.host).name!r})")
    return problems


def verify(topology: Topology, session: VCenterSession | None = None) -> Discovery:
    """Discovery, or one ConfigError listing every mismatch with the topology."""
    session = session or session_for(topology)
    seen = discover(session, topology)
    problems = mismatches(topology, seen)
    if problems:
        raise ConfigError(f"{session.where}: cluster {seen.cluster!r} does not match topology {topology.name!r}:\n  "
                          + "\n  ".join(problems))
    return seen


def recovery_problems(topology: Topology, seen: Discovery) -> list[str]:
    """What keeps the platform from being recovered: hosts not connected, in maintenance, VMs off or out of place."""
    problems = []
    for host in topology.hosts():
        found = seen.hosts.get(host.name)
        if found is None:
            problems.append(f"host {host.name} is not in cluster {seen.cluster}")
        elif found.connection != "connected" or found.power != "poweredOn":
            problems.append(f"host {host.name} is {found.connection}, {found.power}")
        elif found.maintenance:
            problems.append(f"host {host.name} is in maintenance mode")
    known = {h.name for h in topology.hosts()}
    for _, node in database_vms(topology):
        vm = seen.vms.get(node_vm(node))
        if vm is None:
            problems.append(f"VM {node_vm(node)} is not on the cluster")
        elif vm.power != "poweredOn":
            problems.append(f"VM {vm.name} is {vm.power}")
        elif node.host and node.host in known and vm.host in known and \
                topology.site_of(vm.host).name != topology.site_of(node.host).name:
            problems.append(f"VM {vm.name} runs on {vm.host}, outside its site {topology.site_of(node.host).name}")
    return problems


def wait_recovered(topology: Topology, timeout_s: float, session: VCenterSession | None = None,
                   poll_s: float = 2.0) -> Discovery:
    """Discovery once every host is connected and out of maintenance and every VM runs in its site; bounded."""
    session = session or session_for(topology)
    deadline = time.monotonic() + timeout_s
    while True:
        seen = discover(session, topology)
        problems = recovery_problems(topology, seen)
        if not problems:
            return seen
        if time.monotonic() >= deadline:
            raise ControlPlaneError(f"{session.where}: waited {timeout_s:g} s for the cluster to recover: "
                                    + "; ".join(problems))
        time.sleep(min(poll_s, max(0.0, deadline - time.monotonic())))


def ha_events(session: VCenterSession, since: float) -> list[ServerEvent]:
    """vSphere HA's evidence since `since` (server clock): host failures and VM restarts by HA."""
    found: list[VcEvent] = session.events_since(since, (*HOST_FAILED_EVENTS, VM_RESTARTED_EVENT))
    return [e.to_server_event(EventKind.HOST_FAILED if e.type_id in HOST_FAILED_EVENTS else EventKind.VM_RESTARTED,
                              "vsphere-ha") for e in found]


def _groups(groups: list[tuple[str, tuple[str, ...]]]) -> str:
    return "; ".join(f"cache {c or '(none: ESA)'} + {', '.join(cap)}" for c, cap in groups) or "no disk groups"


def _moid(obj: Any) -> str:
    return str(getattr(obj, "_moId", "") or "")


# -- faults -----------------------------------------------------------------------------------
@dataclass
class _VsphereFault:
    spec: FaultSpec
    topology: Topology
    session: VCenterSession
    evidence: dict[str, Any] = field(default_factory=dict)
    _unknown: UnknownState = field(default_factory=UnknownState, init=False, repr=False)

    def _plan(self, inject: tuple[str, ...], revert: tuple[str, ...]) -> FaultPlan:
        return FaultPlan(self.spec, f"{BACKEND} {self.session.where}", inject, revert,
                         ("management.vcenter.credential",))

    def preflight(self) -> None:
        """vCenter reachable and trusted, its cluster as the topology describes it, the target ready for the fault."""
        self._ready(verify(self.topology, self.session))

    def _ready(self, seen: Discovery) -> None:
        """Raise ControlPlaneError if the target is not in the state the fault starts from."""

    def _host_ready(self, seen: Discovery, name: str) -> None:
        host = seen.hosts[name]
        if not host.usable:
            state = "in maintenance mode" if host.maintenance else f"{host.connection}, {host.power}"
            raise ControlPlaneError(f"{self.session.where}: {self.spec.kind} on {self.spec.target}: host {name} is {state}; "
                                    "it must be connected, powered on and out of maintenance first")

    def check(self) -> FaultState:
        try:
            return self._observe()
        except HarnessError as exc:
            return self._unknown_because(str(exc))

    def _observe(self) -> FaultState:
        raise NotImplementedError

    def _unknown_because(self, reason: str) -> FaultState:
        return self._unknown.because(self.spec, reason)

    def _host(self, name: str) -> Any:
        return self.session.find("HostSystem", name)

    def _host_state(self, name: str) -> dict[str, Any]:
        return self.session.read(self._host(name), HOST_PATHS[:3], f"reading host {name}")


SHUTDOWN_REFUSAL = ("host-power-off on {host} without a BMC would be ShutdownHost_Task(force=True): a graceful "
                    "shutdown (HA may record a clean power-off and not restart its VMs, unlike a real failure) "
                    "after which nothing can power the host on again (revert = a person powers it on); refused "
                    "unless management.vcenter.allow_host_shutdown is true, or give the host a BMC "
                    "(sites[].hosts[].bmc)")


@dataclass
class HostShutdown(_VsphereFault):
    """Graceful host shutdown through vCenter, only with the topology's explicit opt-in (see the module)."""

    host: str = ""
    allowed: bool = False
    reconnect_wait_s: float = RECONNECT_WAIT_S

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> HostShutdown:
        vcenter = topology.management.vcenter
        return cls(spec, topology, session_for(topology), host=target.name,
                   allowed=bool(vcenter and vcenter.allow_host_shutdown))

    def _refuse(self) -> None:
        if not self.allowed:
            raise ConfigError(SHUTDOWN_REFUSAL.format(host=self.host))

    def plan(self) -> FaultPlan:
        if not self.allowed:
            return self._plan((f"refused: {SHUTDOWN_REFUSAL.format(host=self.host)}",), ("nothing: not injected",))
        return self._plan(
            (f"ShutdownHost_Task(force=True) on {self.host} (graceful: HA may not restart its VMs; "
             "nothing can power it on again)",),
            (f"wait at most {self.reconnect_wait_s:g} s for {self.host} to be connected again: a person must "
             "power it on (vCenter cannot)",))

    def preflight(self) -> None:
        self._refuse()
        super().preflight()

    def _ready(self, seen: Discovery) -> None:
        self._host_ready(seen, self.host)

    def inject(self) -> None:
        self._refuse()
        host = self._host(self.host)
        task = self.session.call(f"ShutdownHost_Task on {self.host}", lambda: host.ShutdownHost_Task(force=True))
        self.session.wait_task(task, f"host {self.host} to shut down", SHUTDOWN_TASK_S)

    def _observe(self) -> FaultState:
        state = self._host_state(self.host)
        if str(state["runtime.connectionState"]) != "connected" or str(state["runtime.powerState"]) == "poweredOff":
            return FaultState.IN_EFFECT
        if str(state["runtime.powerState"]) == "poweredOn":
            return FaultState.CLEARED
        return self._unknown_because(f"host {self.host} is connected but {state['runtime.powerState']}")

    def revert(self) -> None:
        if not self.allowed or self.check() is FaultState.CLEARED:
            return  # refused: never injected
        log.warning("%s was shut down through vCenter: a person must power it on (the BMC or the power button); "
                    "waiting at most %g s for it to be connected", self.host, self.reconnect_wait_s)
        deadline = time.monotonic() + self.reconnect_wait_s
        host = self._host(self.host)
        try:
            seen = self.session.wait_for(host, ["runtime.connectionState"],
                                         lambda v: str(v["runtime.connectionState"]) in ("connected", "disconnected"),
                                         f"host {self.host} to be powered on and answer again", self.reconnect_wait_s)
            if str(seen["runtime.connectionState"]) == "disconnected":  # vCenter gave up on it: reconnect once
                task = self.session.call(f"ReconnectHost_Task on {self.host}", lambda: host.ReconnectHost_Task())
                self.session.wait_task(task, f"host {self.host} to reconnect", max(1.0, deadline - time.monotonic()))
            self.session.wait_for(host, ["runtime.connectionState"],
                                  lambda v: str(v["runtime.connectionState"]) == "connected",
                                  f"host {self.host} to be connected again", max(1.0, deadline - time.monotonic()))
        except ControlPlaneError as exc:
            raise ControlPlaneError(f"{exc}; {self.host} was shut down through vCenter, which cannot power it on: "
                                    "a person must power it on") from None


@dataclass
class HostMaintenance(_VsphereFault):
    """The host enters maintenance mode with a vSAN evacuation mode; the revert takes it out."""

    host: str = ""
    vsan_mode: str = "ensureObjectAccessibility"
    timeout_s: float = 1800.0

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> HostMaintenance:
        assert isinstance(params, MaintenanceParams)
        return cls(spec, topology, session_for(topology), host=target.name, vsan_mode=params.vsan_mode,
                   timeout_s=params.timeout_s)

    def plan(self) -> FaultPlan:
        return self._plan(
            (f"EnterMaintenanceMode_Task(timeout={int(self.timeout_s)}, evacuatePoweredOffVms=False, "
             f"maintenanceSpec.vsanMode.objectAction={self.vsan_mode}) on {self.host}, waiting at most "
             f"{self.timeout_s:g} s",),
            (f"ExitMaintenanceMode_Task(timeout={int(EXIT_MAINTENANCE_S)}) on {self.host}, waiting at most "
             f"{EXIT_MAINTENANCE_S:g} s",))

    def _ready(self, seen: Discovery) -> None:
        self._host_ready(seen, self.host)

    def inject(self) -> None:
        s, host = sdk(), self._host(self.host)
        spec = s.vim.host.MaintenanceSpec(vsanMode=s.vim.vsan.host.DecommissionMode(objectAction=self.vsan_mode))
        started = time.monotonic()
        task = self.session.call(f"EnterMaintenanceMode_Task on {self.host}", lambda: host.EnterMaintenanceMode_Task(
            timeout=int(self.timeout_s), evacuatePoweredOffVms=False, maintenanceSpec=spec))
        self.session.wait_task(task, f"host {self.host} to enter maintenance mode ({self.vsan_mode})",
                               self.timeout_s + 60)
        self.evidence.update(host=self.host, vsan_mode=self.vsan_mode, enter_s=round(time.monotonic() - started, 3))

    def _observe(self) -> FaultState:
        state = self._host_state(self.host)
        return FaultState.IN_EFFECT if state["runtime.inMaintenanceMode"] else FaultState.CLEARED

    def revert(self) -> None:
        if self.check() is FaultState.CLEARED:
            return
        host = self._host(self.host)
        started = time.monotonic()
        task = self.session.call(f"ExitMaintenanceMode_Task on {self.host}",
                                 lambda: host.ExitMaintenanceMode_Task(timeout=int(EXIT_MAINTENANCE_S)))
        self.session.wait_task(task, f"host {self.host} to exit maintenance mode", EXIT_MAINTENANCE_S + 60)
        self.evidence.update(exit_s=round(time.monotonic() - started, 3))


@dataclass
class VmMigrate(_VsphereFault):
    """vMotion of a database node's VM to another host (`to_host`, or a usable host of another site), timed."""

    vm: str = ""
    node: DatabaseNode | None = None
    to_host: str | None = None
    origin: str | None = None
    drs: str | None = None  # how DRS may move the VM back after the migration (None: it will not)
    reverting: bool = False  # the harness itself moves the VM back from here on
    timeout_s: float = MIGRATION_TIMEOUT_S

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> VmMigrate:
        assert isinstance(params, MigrationParams)
        database, node_name = target.parts
        node = next(n for d in topology.databases if d.name == database for n in d.nodes if n.name == node_name)
        if params.to_host is not None and params.to_host not in {h.name for h in topology.hosts()}:
            raise ConfigError(f"vm-migrate: params.to_host: {params.to_host!r} is not a host of topology {topology.name!r}")
        return cls(spec, topology, session_for(topology), vm=node_vm(node), node=node, to_host=params.to_host)

    def plan(self) -> FaultPlan:
        where = self.to_host or "a connected host of another site, not in maintenance (chosen at inject)"
        home = f"the host it ran on at inject (else {self.node.host})" if self.node and self.node.host else \
            "the host it ran on at inject"
        return self._plan((f"RelocateVM_Task of VM {self.vm} to {where}, timed, waiting at most {self.timeout_s:g} s",),
                          (f"RelocateVM_Task of VM {self.vm} back to {home}, waiting at most {self.timeout_s:g} s",))

    def _ready(self, seen: Discovery) -> None:
        vm = seen.vms.get(self.vm)
        if vm is None or vm.power != "poweredOn" or vm.host is None:
            raise ControlPlaneError(f"{self.session.where}: vm-migrate: VM {self.vm} is "
                                    f"{'not on the cluster' if vm is None else vm.power}; vMotion needs it running")
        to = self.destination(seen, vm.host)
        if to == vm.host:
            raise ConfigError(f"vm-migrate: VM {self.vm} already runs on {to}")
        self._host_ready(seen, to)

    def _vm_host(self) -> str | None:
        seen = self.session.read(self.session.find("VirtualMachine", self.vm), ["runtime.host"], f"reading VM {self.vm}")
        host = seen["runtime.host"]
        return None if host is None else str(self.session.read(host, ["name"], "reading a host's name")["name"])

    def destination(self, seen: Discovery, current: str) -> str:
        """`to_host`, or the first usable host of a site other than the one `current` is in."""
        if self.to_host is not None:
            return self.to_host
        site = seen.hosts[current].site if current in seen.hosts else ""
        choices = sorted(h.name for h in seen.hosts.values() if h.site != site and h.usable)
        if not choices:
            raise ControlPlaneError(f"{self.session.where}: no connected host outside site {site!r} to move VM "
                                    f"{self.vm} to")
        return choices[0]

    def _relocate(self, to: str, what: str) -> dict[str, Any]:
        s = sdk()
        vm, host = self.session.find("VirtualMachine", self.vm), self._host(to)
        started = time.monotonic()
        task = self.session.call(f"RelocateVM_Task of {self.vm} to {to}",
                                 lambda: vm.RelocateVM_Task(spec=s.vim.vm.RelocateSpec(host=host),
                                                            priority="defaultPriority"))
        self.session.wait_task(task, what, self.timeout_s)
        elapsed = time.monotonic() - started
        info = self.session.read(task, ["info.startTime", "info.completeTime"], f"reading the migration of {self.vm}")
        begun, ended = info["info.startTime"], info["info.completeTime"]
        server_s = (ended - begun).total_seconds() if begun is not None and ended is not None else None
        return {"migration_s": round(elapsed, 3), "server_migration_s": server_s}

    def inject(self) -> None:
        current = self._vm_host()
        if current is None:
            raise ControlPlaneError(f"{self.session.where}: VM {self.vm} runs on no host")
        seen = discover(self.session, self.topology)
        to = self.destination(seen, current)
        if to == current:
            raise ConfigError(f"vm-migrate: VM {self.vm} already runs on {to}")
        self.origin = current
        self.evidence.update(vm=self.vm, from_host=current, to_host=to)
        self.drs = drs_can_move_back(seen, self.vm, current, self.topology)
        if self.drs:
            self.evidence["drs"] = self.drs
        self.to_host = to
        self.evidence.update(self._relocate(to, f"VM {self.vm} to move from {current} to {to}"))

    def _home(self) -> str | None:
        return self.origin or (self.node.host if self.node else None)

    def _observe(self) -> FaultState:
        current = self._vm_host()
        home = self._home()
        if current is not None and home is not None and self.drs and not self.reverting and current != self.to_host \
                and _same_site(self.topology, current, home):
            self.evidence.setdefault("moved_back", f"VM {self.vm} is back in {self.topology.site_of(home).name} on "
                                                   f"{current}, not moved by the harness: by DRS ({self.drs})")
            return FaultState.CLEARED
        if current is not None and current == home:
            return FaultState.CLEARED
        if current is not None and self.to_host is not None and current == self.to_host:
            return FaultState.IN_EFFECT
        if current is not None and home is not None and self.origin is None and \
                _same_site(self.topology, current, home):
            return FaultState.CLEARED  # not injected by this process (recover): back in its own site
        return self._unknown_because(f"VM {self.vm} runs on {current}, neither its home {home} nor {self.to_host}")

    def revert(self) -> None:
        home = self._home()
        if home is None:
            raise ControlPlaneError(f"vm-migrate: cannot tell where VM {self.vm} belongs; set the node's host "
                                    "(databases[].nodes[].host)")
        current = self._vm_host()
        if current == home or (self.origin is None and current is not None and _same_site(self.topology, current, home)):
            return
        self.reverting = True
        self.evidence.update({f"back_{k}": v for k, v in
                              self._relocate(home, f"VM {self.vm} to move back to {home}").items()})


def drs_can_move_back(seen: Discovery, vm: str, home: str, topology: Topology) -> str | None:
    """Whether fully automated DRS may move `vm` back home after a migration: an enabled, preferential ("should")
    rule keeps it on hosts of its site; "preferential rules can be violated" (vSphere Resource Management), and
    when "the existing cluster configuration violates the rule, the Server attempts to correct the situation"
    (vSphere API, ClusterRuleInfo)."""
    if not seen.drs_enabled or seen.drs_behavior != "fullyAutomated":
        return None
    rules = [r for r in seen.rules if r.enabled and not r.mandatory and r.affine and vm in r.vms and home in r.hosts]
    if not rules:
        return None
    site = topology.site_of(home).name if home in {h.name for h in topology.hosts()} else "its hosts"
    return f"{seen.drs_behavior}; should rule {', '.join(repr(r.name) for r in rules)} can move VM {vm} back to {site}"


def _same_site(topology: Topology, a: str, b: str) -> bool:
    try:
        return topology.site_of(a).name == topology.site_of(b).name
    except KeyError:
        return False

