"""vSphere through vCenter (pyVmomi), read only: discovery checked against the topology, recovery, HA evidence.

`discover` reads what vCenter says the stretched cluster is: fault domains (= sites), the
preferred one and the witness (vSAN stretched-cluster system), hosts with their state and vSAN
disk groups, VMs and the host running each, HA/DRS settings and VM/host rules. `verify` compares
it with the topology and raises one ConfigError listing every mismatch before any fault acts.
The cluster view and the faults both read through these; nothing here changes anything.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from faults.contract import (
    ConfigError,
    ControlPlaneError,
    DatabaseNode,
    EventKind,
    HostIdentity,
    ServerEvent,
    Topology,
    VCenter,
    VCenterSession,
    VcEvent,
    session_for,
)

log = logging.getLogger(__name__)

HOST_PATHS = ("runtime.powerState", "runtime.connectionState", "runtime.inMaintenanceMode", "config.vsanHostConfig")
VM_PATHS = ("runtime.host", "runtime.powerState")
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
    return discover_cluster(session, vcenter)


def discover_cluster(session: VCenterSession, vcenter: VCenter) -> Discovery:
    """What vCenter says the cluster `vcenter` names is: hosts, fault domains, witness, VMs, HA/DRS, rules."""
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
    (vsan-disk-management-system) answers `storagePools[].storagePoolDisks[].disk` (API `vsan.version.version20` and later),
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


def host_identity(session: VCenterSession, name: str) -> tuple[str | None, str | None]:
    """The host's SMBIOS UUID and serial number as vCenter reports them (`hardware.systemInfo`; None where empty)."""
    seen = session.read(session.find("HostSystem", name), ["hardware.systemInfo.uuid", "hardware.systemInfo.serialNumber"],
                        f"reading host {name}'s hardware identity")
    uuid, serial = seen["hardware.systemInfo.uuid"], seen["hardware.systemInfo.serialNumber"]
    return (str(uuid) if uuid else None, str(serial) if serial else None)


def identities(topology: Topology) -> Callable[[str], HostIdentity] | None:
    """The platform's `identifies_hosts`: each host's identity as vCenter reports it, when the topology names one."""
    if topology.management.vcenter is None:
        return None
    return lambda host: host_identity(session_for(topology), host)


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
