"""vSAN through vCenter's vSAN management API (/vsanHealth), read only: placement, resync, repair timer, health.

Reads: disk groups per host (cache + capacity canonical names; vSAN ESA has no cache tier),
which hosts and devices hold a VM's objects (`VsanQueryObjectIdentities`, then a host's
`QueryVsanObjects` / `QueryPhysicalVsanDisks` JSON, as RVC's `vsan.vm_object_info` reads them),
the resync summary (`QuerySyncingVsanObjectsSummary`, paged by offset until every object is
read; the hosts' `QuerySyncingVsanObjects` when the cluster call fails), the object repair
timer (an absent component waits for it: a run shorter than it shows no resync, which is
correct behaviour), "repair objects immediately", and the cluster health summary.

`VsanQuiet` is the preflight: no run starts while a resync runs, an object is not healthy (both asked
live) or a judged group of the cached health summary is red.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from faults.contract import (
    Check,
    ConfigError,
    ControlPlaneError,
    HarnessError,
    Probed,
    ProbeResult,
    Target,
    TargetKind,
    Topology,
    Uncertain,
    VCenterSession,
    sdk,
    session_for,
)
from harness_platforms.vsphere.probes import Discovery, DiskGroupSeen, discover
from harness_platforms.vsphere.vsan.section import settings as vsan_settings

log = logging.getLogger(__name__)

PAGE = 100
SYNC_REASONS = ("repair", "evacuate", "rebalance", "reconfigure", "dying_evacuate", "stale", "merge_concat",
                "object_format_change")  # vim.vsan.VsanSyncReason (pyVmomi typeinfo)
MAX_PAGES = 10_000
REPAIR_TASK_S = 300.0
DISK_PROPS = ("uuid", "devName", "isSsd", "owner", "disk_health", "capacity", "capacityUsed")

# componentState numbers as RVC's vsan.rb (_print_dom_config_tree) names them.
COMPONENT_STATES = {0: "FIRST", 1: "NONE", 2: "NEED_CONFIG", 3: "INITIALIZE", 4: "INITIALIZED", 5: "ACTIVE",
                    6: "ABSENT", 7: "STALE", 8: "RESYNCHING", 9: "DEGRADED", 10: "RECONFIGURING", 11: "CLEANUP",
                    12: "TRANSIENT", 13: "LAST"}
_CHILD = re.compile(r"child-\d+")
_PARTITION = re.compile(r":\d+$")


# -- parsing the hosts' JSON ------------------------------------------------------------------
@dataclass(frozen=True)
class ComponentSeen:
    object_uuid: str
    component_uuid: str
    kind: str  # "Component" or "Witness"
    state: str  # a COMPONENT_STATES name, or the raw value
    disk_uuid: str
    bytes_to_sync: int = 0
    recovery_eta_s: int | None = None


@dataclass(frozen=True)
class PhysicalDisk:
    uuid: str
    device: str  # canonical name (naa....), any ":<partition>" suffix removed
    is_ssd: bool
    owner: str  # the vSAN node uuid of the host holding it
    health_flags: int


def components(objects: Mapping[str, Any]) -> list[ComponentSeen]:
    """Every component and witness of the `dom_objects` of a QueryVsanObjects / QuerySyncingVsanObjects reply.

    Each object's `config.content` is a tree (Configuration, RAID_1, RAID_0, Concatenation) whose
    `child-N` entries end in `Component` / `Witness` leaves carrying `componentUuid`, `diskUuid` and
    `attributes.componentState` (RVC vsan.rb, `_components_in_dom_config`).
    """
    found: list[ComponentSeen] = []
    for object_uuid, info in sorted((objects.get("dom_objects") or {}).items()):
        content = ((info or {}).get("config") or {}).get("content") or {}
        found += _leaves(object_uuid, content)
    return found


def _leaves(object_uuid: str, node: Mapping[str, Any]) -> list[ComponentSeen]:
    if node.get("type") in ("Component", "Witness"):
        attributes = node.get("attributes") or {}
        state = attributes.get("componentState")
        name = COMPONENT_STATES.get(int(state), str(state)) if isinstance(state, (int, str)) and str(state).isdigit() \
            else str(state)
        eta = attributes.get("recoveryETA")
        return [ComponentSeen(object_uuid, str(node.get("componentUuid", "")), str(node["type"]), name,
                              str(node.get("diskUuid", "")), int(attributes.get("bytesToSync") or 0),
                              int(eta) if eta is not None else None)]
    found: list[ComponentSeen] = []
    for key, child in sorted(node.items()):
        if _CHILD.fullmatch(key) and isinstance(child, Mapping):
            found += _leaves(object_uuid, child)
    return found


def physical_disks(raw: Mapping[str, Any]) -> dict[str, PhysicalDisk]:
    """QueryPhysicalVsanDisks JSON (disk uuid -> {uuid, devName, isSsd, owner, disk_health, ...}) by disk uuid."""
    found = {}
    for key, disk in raw.items():
        if not isinstance(disk, Mapping):
            continue
        health = disk.get("disk_health") or {}
        flags = health.get("healthFlags", 0) if isinstance(health, Mapping) else 0
        uuid = str(disk.get("uuid") or key)
        found[uuid] = PhysicalDisk(uuid, _PARTITION.sub("", str(disk.get("devName") or "")), bool(disk.get("isSsd")),
                                   str(disk.get("owner") or ""), int(flags or 0))
    return found


def load_json(text: Any, what: str) -> dict[str, Any]:
    """A host's JSON reply; ControlPlaneError if it is not (hosts answer "BAD" on a refused query)."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        raise ControlPlaneError(f"{what}: the host did not answer JSON: {str(text)[:200]!r}") from None
    if not isinstance(value, dict):
        raise ControlPlaneError(f"{what}: expected a JSON object, got {type(value).__name__}")
    return value


# -- placement ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Placement:
    """One component of a VM's objects: where it lives and in what state."""

    object_uuid: str
    component_uuid: str
    kind: str
    state: str
    host: str | None
    device: str | None
    cache: str | None  # the cache device of its disk group (None on ESA)


def place(found: Iterable[ComponentSeen], disks: Mapping[str, PhysicalDisk], node_hosts: Mapping[str, str],
          seen: Discovery) -> list[Placement]:
    """Components with their host (disk owner node uuid -> host) and device and the device's group cache."""
    cache_of = {(host.name, device): group.cache for host in seen.hosts.values()
                for group in host.disk_groups for device in group.capacity}
    placed = []
    for c in found:
        disk = disks.get(c.disk_uuid)
        host = node_hosts.get(disk.owner) if disk else None
        device = disk.device if disk else None
        placed.append(Placement(c.object_uuid, c.component_uuid, c.kind, c.state, host, device,
                                cache_of.get((host, device)) if host and device else None))
    return placed


def disk_targets(placement: Iterable[Placement], topology: Topology) -> tuple[list[str], list[str]]:
    """The topology's `disk:` and `diskgroup:` targets that hold components of the placement (data, not witnesses)."""
    disks, groups = set(), set()
    for p in placement:
        if p.kind != "Component" or p.host is None or p.device is None:
            continue
        disks.add(str(Target.of(TargetKind.DISK, p.host, p.device)))
        try:
            host = topology.host(p.host)
        except KeyError:
            continue
        for index, group in enumerate(host.disk_groups):
            if p.device in group.capacity:
                groups.add(str(Target.of(TargetKind.DISK_GROUP, p.host, index)))
    known = topology.targets()
    return sorted(disks & known), sorted(groups & known)


class VsanCluster:
    """The vSAN reads and controls of the topology's cluster, through its one vCenter session."""

    def __init__(self, topology: Topology, session: VCenterSession | None = None) -> None:
        vcenter = topology.management.vcenter
        if vcenter is None:
            raise ConfigError(f"topology {topology.name!r}: vSAN faults need management.vcenter")
        self.topology = topology
        self.session = session or session_for(topology)
        self.cluster_name = vcenter.cluster

    def cluster(self) -> Any:
        return self.session.find("ClusterComputeResource", self.cluster_name)

    def _internal(self, seen: Discovery, host: str | None = None) -> tuple[str, Any]:
        """A connected host's HostVsanInternalSystem (that host's, when named; else one that contributes storage
        first: a compute-only host has no vSAN service to ask)."""
        connected = [h for h in seen.hosts.values() if h.connection == "connected"]
        names = [host] if host else [h.name for h in sorted(connected, key=lambda h: (not h.disk_groups, h.name))]
        for name in names:
            if name in seen.hosts and seen.hosts[name].connection == "connected":
                obj = self.session.find("HostSystem", name)
                system = self.session.read(obj, ["configManager.vsanInternalSystem"], f"reading host {name}")
                return name, system["configManager.vsanInternalSystem"]
        raise ControlPlaneError(f"{self.session.where}: no connected host to ask ({host or 'any'})")

    def hosts_read(self) -> dict[str, dict[str, PhysicalDisk] | HarnessError]:
        """Each connected host's vSAN devices, or why they could not be read (a compute-only host has no vSAN
        service): one host that cannot be read is said, never the end."""
        seen = discover(self.session, self.topology)
        found: dict[str, dict[str, PhysicalDisk] | HarnessError] = {}
        for name in sorted(h.name for h in seen.hosts.values() if h.connection == "connected"):
            try:
                found[name] = self.physical_disks(name, seen)
            except HarnessError as exc:
                found[name] = exc
        return found

    def disk_groups(self, seen: Discovery | None = None) -> dict[str, tuple[DiskGroupSeen, ...]]:
        """Each host's disk groups as vCenter reports them (cache None: vSAN ESA)."""
        seen = seen or discover(self.session, self.topology)
        return {name: host.disk_groups for name, host in seen.hosts.items()}

    def physical_disks(self, host: str, seen: Discovery | None = None) -> dict[str, PhysicalDisk]:
        seen = seen or discover(self.session, self.topology)
        name, system = self._internal(seen, host)
        text = self.session.call(f"QueryPhysicalVsanDisks on {name}", lambda: system.QueryPhysicalVsanDisks(
            props=list(DISK_PROPS)))
        return physical_disks(load_json(text, f"QueryPhysicalVsanDisks on {name}"))

    def vm_placement(self, vm_name: str) -> list[Placement]:
        """Where the components of `vm_name`'s objects are (namespace, disks, swap), found by asking vSAN."""
        cluster, vm = self.cluster(), self.session.find("VirtualMachine", vm_name)
        objects = self.session.vsan("vsan-cluster-object-system")
        identities = self.session.call("VsanQueryObjectIdentities", lambda: objects.VsanQueryObjectIdentities(
            cluster=cluster, includeObjIdentity=True, includeHealth=False, includeSpaceSummary=False))
        wanted = sorted({i.uuid for i in (getattr(identities, "identities", None) or [])
                         if getattr(getattr(i, "vm", None), "_moId", None) == vm._moId})
        if not wanted:
            raise ControlPlaneError(f"{self.session.where}: vSAN reports no objects of VM {vm_name}")
        seen = discover(self.session, self.topology)
        name, system = self._internal(seen)
        text = self.session.call(f"QueryVsanObjects on {name}", lambda: system.QueryVsanObjects(uuids=wanted))
        found = components(load_json(text, f"QueryVsanObjects on {name}"))
        disks_text = self.session.call(f"QueryPhysicalVsanDisks on {name}", lambda: system.QueryPhysicalVsanDisks(
            props=list(DISK_PROPS)))
        disks = physical_disks(load_json(disks_text, f"QueryPhysicalVsanDisks on {name}"))
        node_hosts = {h.node_uuid: h.name for h in seen.hosts.values() if h.node_uuid}
        return place(found, disks, node_hosts, seen)

    # -- resync ---------------------------------------------------------------------------
    def resync(self, page: int = PAGE) -> ResyncSummary:
        """Objects, bytes and ETA left to resynchronise; the hosts' view when the cluster call fails."""
        cluster = self.cluster()
        system = self.session.vsan("vsan-cluster-object-system")
        flt = sdk().vim.cluster.VsanSyncingObjectFilter

        def query(offset: int, count: int) -> Any:
            return self.session.call("QuerySyncingVsanObjectsSummary", lambda: system.QuerySyncingVsanObjectsSummary(
                cluster, flt(offset=offset, numberOfObjects=count)))
        # resyncType is left unset. The API allows only "one of the values defined in VsanSyncReason", and no
        # value means all of them; that unset matches every reason is an assumption no document states (its
        # read-only check: the unset totals equal the sum over the eight reasons).
        try:
            return collect_pages(query, page)
        except ControlPlaneError as exc:
            log.warning("%s; falling back to the hosts' QuerySyncingVsanObjects", exc)
        return self._resync_from_hosts()

    def _resync_from_hosts(self) -> ResyncSummary:
        seen = discover(self.session, self.topology)
        merged: dict[str, Any] = {"dom_objects": {}}
        asked = 0
        for host in sorted(h.name for h in seen.hosts.values() if h.connection == "connected"):
            name, system = self._internal(seen, host)
            text = self.session.call(f"QuerySyncingVsanObjects on {name}",
                                     functools.partial(system.QuerySyncingVsanObjects, uuids=[]))
            merged["dom_objects"].update(load_json(text, f"QuerySyncingVsanObjects on {name}").get("dom_objects") or {})
            asked += 1
        if not asked:
            raise ControlPlaneError(f"{self.session.where}: no connected host to ask for the resync")
        return summary_from_components(components(merged))

    # -- repair ---------------------------------------------------------------------------
    def probe_resync_type_unset(self) -> Probed:
        """The unset filter's totals equal the sum over the eight documented VsanSyncReason values (read-only).

        A resync that starts or ends between the nine queries makes them differ: that is UNKNOWN, not FAIL."""
        system, cluster = self.session.vsan("vsan-cluster-object-system"), self.cluster()
        flt = sdk().vim.cluster.VsanSyncingObjectFilter

        def objects(**kind: str) -> int:
            return int(self.session.call("QuerySyncingVsanObjectsSummary", lambda: system.QuerySyncingVsanObjectsSummary(
                cluster, flt(numberOfObjects=1, **kind))).totalObjectsToSync or 0)
        try:
            before = objects()
            by_reason = {reason: objects(resyncType=reason) for reason in SYNC_REASONS}
            after = objects()
        except (ControlPlaneError, HarnessError) as exc:
            return Probed(ProbeResult.UNKNOWN, f"resync summary not read: {exc}")
        if before != after:
            return Probed(ProbeResult.UNKNOWN, f"the resync changed while probing ({before} then {after} objects)")
        return judge_resync_counts(before, by_reason)

    def repair_timer_min(self) -> int | None:
        """The object repair delay an absent component waits before it is rebuilt elsewhere, in minutes:
        `objectRepairTimer` is "delay time in minutes ... Default value: 60" (VsanExtendedConfig)."""
        cluster, config_system = self.cluster(), self.session.vsan("vsan-cluster-config-system")
        config = self.session.call("VsanClusterGetConfig", lambda: config_system.VsanClusterGetConfig(cluster))
        timer = getattr(getattr(config, "extendedConfig", None), "objectRepairTimer", None)
        return int(timer) if timer is not None else None

    def set_repair_timer_min(self, minutes: int) -> None:
        s = sdk()
        cluster, config_system = self.cluster(), self.session.vsan("vsan-cluster-config-system")
        spec = s.vim.vsan.ReconfigSpec(modify=True, extendedConfig=s.vim.vsan.VsanExtendedConfig(objectRepairTimer=minutes))
        task = self.session.call("VsanClusterReconfig", lambda: config_system.VsanClusterReconfig(cluster, spec))
        self._wait_vsan_task(task, f"the object repair timer to become {minutes} min")

    def repair_now(self) -> None:
        """vSAN's "repair objects immediately": absent components are rebuilt now, not after the timer."""
        cluster, health = self.cluster(), self.session.vsan("vsan-cluster-health-system")
        task = self.session.call("VsanHealthRepairClusterObjectsImmediate",
                                 lambda: health.VsanHealthRepairClusterObjectsImmediate(cluster))
        self._wait_vsan_task(task, "vSAN to start repairing objects")

    def _wait_vsan_task(self, task: Any, what: str) -> None:
        if task is None:
            return
        s = sdk()
        vc_task = s.vsanapiutils.ConvertVsanTaskToVcTask(task, self.session.si()._stub)
        self.session.wait_task(vc_task, what, REPAIR_TASK_S)

    # -- health ---------------------------------------------------------------------------
    def object_health(self) -> dict[str, int]:
        """Objects per VsanObjectHealthState, asked live (`VsanQueryObjectIdentities`, health only: bounded)."""
        cluster, objects = self.cluster(), self.session.vsan("vsan-cluster-object-system")
        found = self.session.call("VsanQueryObjectIdentities (health)", lambda: objects.VsanQueryObjectIdentities(
            cluster=cluster, includeObjIdentity=False, includeHealth=True, includeSpaceSummary=False))
        details = getattr(getattr(found, "health", None), "objectHealthDetail", None) or []
        counts: dict[str, int] = {}
        for detail in details:
            counts[str(detail.health)] = counts.get(str(detail.health), 0) + int(detail.numObjects or 0)
        return counts

    def cached_health(self) -> CachedHealth:
        """The health service's last summary (`fetchFromCache=True`: no health run), per group, with its age."""
        cluster, system = self.cluster(), self.session.vsan("vsan-cluster-health-system")
        summary = self.session.call("VsanQueryVcClusterHealthSummary (cached)",
                                    lambda: system.VsanQueryVcClusterHealthSummary(cluster=cluster, fetchFromCache=True))
        stamp = getattr(summary, "timestamp", None)
        age = max(0.0, self.session.server_now() - stamp.timestamp()) if stamp is not None else float("inf")
        groups = {str(g.groupId): GroupSeen(str(g.groupHealth), tuple(str(t.testName) for t in (g.groupTests or [])
                                                                        if t.testHealth == "red"))
                  for g in getattr(summary, "groups", None) or [] if getattr(g, "groupId", None)}
        return CachedHealth(age, groups)

    def health(self) -> HealthSeen:
        cluster, system = self.cluster(), self.session.vsan("vsan-cluster-health-system")
        summary = self.session.call("VsanQueryVcClusterHealthSummary", lambda: system.VsanQueryVcClusterHealthSummary(
            cluster=cluster, fetchFromCache=False))
        groups = getattr(summary, "groups", None) or []
        red = tuple(f"{g.groupName}: " + ", ".join(t.testName for t in (g.groupTests or []) if t.testHealth == "red")
                    for g in groups if g.groupHealth == "red")
        return HealthSeen(str(getattr(summary, "overallHealth", "unknown")), red)


def judge_resync_counts(unset: int, by_reason: Mapping[str, int]) -> Probed:
    """A-vsan-resync-type-unset from the nine counts: the unset filter holds every reason's objects. An object may
    count under more than one reason (a component's sync state carries `reasons`, a list: pyVmomi's
    VsanHostComponentSyncState `("reasons", "string[]", ...)`), so the reasons may add up to more than the unset
    count; only a reason counting more objects than the unset filter shows a resync it misses."""
    total, most = sum(by_reason.values()), max(by_reason.values(), default=0)
    seen = f"unset: {unset} objects; by reason: {total} ({dict(by_reason)})"
    if most > unset:
        return Probed(ProbeResult.FAIL, seen)
    if total > unset:
        seen += "; some objects count under more than one reason"
    return Probed(ProbeResult.PASS, seen)


@dataclass(frozen=True)
class ResyncSummary:
    objects: int
    bytes_left: int
    eta_s: int | None
    components: int = 0
    source: str = "cluster"

    @property
    def idle(self) -> bool:
        return self.objects == 0 and self.bytes_left == 0


@dataclass(frozen=True)
class GroupSeen:
    health: str
    red_tests: tuple[str, ...] = ()


@dataclass(frozen=True)
class CachedHealth:
    age_s: float  # since the health service computed it (server clock); inf when it carries no time
    groups: dict[str, GroupSeen]


@dataclass(frozen=True)
class HealthSeen:
    overall: str  # green, yellow, red (or unknown)
    red: tuple[str, ...] = ()


def collect_pages(query: Callable[[int, int], Any], page: int = PAGE, max_pages: int = MAX_PAGES) -> ResyncSummary:
    """Read QuerySyncingVsanObjectsSummary page by page (offset, numberOfObjects) until every object is read.

    Totals come from the first reply; the pages are read to count components and to notice a server
    that ignores the offset (the same object twice), which would otherwise loop forever.
    Absent values are 0 (the wire omits zero values).
    """
    first = query(0, page)
    total = int(getattr(first, "totalObjectsToSync", None) or 0)
    objects = list(getattr(first, "objects", None) or [])
    seen = {o.uuid for o in objects}
    pages = 1
    while len(objects) < total:
        if pages >= max_pages:
            raise ControlPlaneError(f"QuerySyncingVsanObjectsSummary: {total} objects not read in {max_pages} pages")
        batch = list(getattr(query(len(objects), page), "objects", None) or [])
        pages += 1
        if not batch:
            break
        if any(o.uuid in seen for o in batch):
            raise ControlPlaneError(f"QuerySyncingVsanObjectsSummary: the server returned object {batch[0].uuid} again "
                                    f"at offset {len(objects)} (offset ignored?)")
        seen.update(o.uuid for o in batch)
        objects += batch
    eta = getattr(first, "totalRecoveryETA", None)
    return ResyncSummary(objects=total, bytes_left=int(getattr(first, "totalBytesToSync", None) or 0),
                         eta_s=int(eta) if eta is not None else None,
                         components=sum(len(getattr(o, "components", None) or []) for o in objects))


def summary_from_components(found: list[ComponentSeen]) -> ResyncSummary:
    """The hosts' view: objects with a component left to sync, its bytes, the largest ETA."""
    syncing = [c for c in found if c.bytes_to_sync > 0]
    etas = [c.recovery_eta_s for c in syncing if c.recovery_eta_s is not None]
    return ResyncSummary(objects=len({c.object_uuid for c in syncing}), bytes_left=sum(c.bytes_to_sync for c in syncing),
                         eta_s=max(etas) if etas else None, components=len(syncing), source="hosts")


@dataclass
class VsanQuiet:
    """Preflight: refuse to start while vSAN resynchronises, an object is not healthy, or a judged health group is red.

    A full health run (`fetchFromCache=False`) can outlast the read timeout, and the overall colour rolls
    up hardware-compatibility and online checks that are often red on healthy clusters. So objects and
    resync are judged live with targeted, bounded queries (`QuerySyncingVsanObjectsSummary`,
    `VsanQueryObjectIdentities(includeHealth=True)`), and only the configured groups
    (`management.vsan.preflight_health_groups`: network and cluster by default) are taken from the cached
    summary, whose age is shown and warned about past `health_cache_warn_s`.
    """

    cluster: VsanCluster

    def preflight(self) -> HealthJudged:
        where = self.cluster.session.where
        resync = self.cluster.resync()
        if not resync.idle:
            eta = f", ETA {resync.eta_s} s" if resync.eta_s is not None else ""
            raise ControlPlaneError(f"{where}: vSAN is resynchronising {resync.objects} objects "
                                    f"({resync.bytes_left} bytes{eta}); start when it is done")
        objects = self.cluster.object_health()
        unhealthy = {state: n for state, n in objects.items() if n and not _available(state)}
        if unhealthy:
            raise ControlPlaneError(f"{where}: vSAN objects are not healthy ("
                                    + ", ".join(f"{n} {state}" for state, n in sorted(unhealthy.items()))
                                    + "); start when they are")
        settings = vsan_settings(self.cluster.topology)
        cached = self.cluster.cached_health()
        judged = HealthJudged(objects, cached.age_s, tuple(g for g in settings.preflight_health_groups
                                                           if g in cached.groups))
        missing = [g for g in settings.preflight_health_groups if g not in cached.groups]
        if missing:
            judged.warnings.append(f"the cached health summary has no group {', '.join(missing)} (it has "
                                   f"{', '.join(sorted(cached.groups)) or 'none'}): not judged")
        red = [f"{g}: {', '.join(cached.groups[g].red_tests) or 'red'}" for g in judged.groups
               if cached.groups[g].health == "red"]
        if red:
            raise ControlPlaneError(f"{where}: vSAN health is red in the cached summary ({cached.age_s:.0f} s old): "
                                    + "; ".join(red) + "; fix it before a run")
        if cached.age_s > settings.health_cache_warn_s:
            judged.warnings.append(f"the cached health summary is {cached.age_s / 3600:.1f} h old (warned past "
                                   f"{settings.health_cache_warn_s / 3600:g} h): run a health check in vCenter")
        for warning in judged.warnings:
            log.warning("%s: %s", where, warning)
        return judged


def _available(state: str) -> bool:
    """An object health state that is no loss of availability (VsanObjectHealthState: healthy, nonavailabilityrelated*)."""
    return state == "healthy" or state.startswith("nonavailabilityrelated")


@dataclass
class HealthJudged:
    """What the preflight judged: live object states, the cached summary's age, the groups it judged."""

    objects: dict[str, int]
    cache_age_s: float
    groups: tuple[str, ...]
    warnings: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return (f"objects {', '.join(f'{n} {s}' for s, n in sorted(self.objects.items())) or 'none'} (live); "
                f"{', '.join(g.rsplit('.', 1)[-1] for g in self.groups) or 'no groups'} from the cached summary, "
                f"{self.cache_age_s / 60:.0f} min old" + "".join(f"; WARN {w}" for w in self.warnings))


def host_checks(topology: Topology) -> list[Check]:
    """The platform's doctor checks: each connected host's vSAN devices read. A host that cannot be read (a
    compute-only host has no vSAN service) is uncertain, naming why: no disk fault can target it; the others are
    still read. vCenter not reached, or the cluster not found, is one failed check that says why."""
    if topology.kind != "vsphere" or topology.management.vcenter is None:
        return []
    where = "vsan hosts"
    try:
        read = VsanCluster(topology).hosts_read()
    except Exception as exc:
        failure = exc

        def failed() -> str:
            raise failure
        return [Check("each host's vSAN disks read", failed, "", where)]
    return [Check(f"host {host}: its vSAN disks read", functools.partial(_host_read, found),
                  "a compute-only host has no vSAN disks: leave its disks out of the allow-list"
                  if isinstance(found, Exception) else "", where)
            for host, found in read.items()]


def _host_read(found: dict[str, PhysicalDisk] | HarnessError) -> str:
    if isinstance(found, Exception):
        raise Uncertain(f"{found}; no disk fault can target it")
    return f"{len(found)} devices"
