"""The vsan backend without a server: the hosts' JSON, placement, resync paging, refusals, plans, preflight.

The JSON payloads follow what RVC's `vsan.rb` reads (vmware/rvc, lib/rvc/modules/vsan.rb):
- `HostVsanInternalSystem.QueryVsanObjects(uuids)` -> `{"dom_objects": {uuid: {"config": {"uuid",
  "owner", "content": tree}, "policy": {...}}}, "lsom_objects": {...}, "disk_objects": {...}}`,
  where the tree's `child-N` entries (RAID_1, RAID_0, Concatenation) end in `Component` /
  `Witness` leaves with `componentUuid`, `diskUuid` and `attributes.componentState` (5 ACTIVE,
  6 ABSENT, 8 RESYNCHING, 9 DEGRADED: `_print_dom_config_tree`), and `bytesToSync`;
- `QueryPhysicalVsanDisks(props)` -> `{disk uuid: {"uuid", "isSsd" (0/1), "owner" (node uuid),
  "capacity", ...}}` (`whatif_host_failures`, `vsan_type`); `devName` and `disk_health.healthFlags`
  are read by this backend as well (on real hosts `devName` may carry a `:<partition>` suffix).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from faults import registry
from faults.assumptions import ProbeResult
from faults.base import FaultSpec, FaultState
from faults.transports.shell import CommandResult
from faults.transports.vcenter import VCenterSession
from harness_kernel.errors import ConfigError, ControlPlaneError
from harness_kernel.topology.loader import parse_topology
from harness_platforms.vsphere.vsan.faults import DiskFailure, DiskGroupFailure, fill
from harness_platforms.vsphere.vsan.probes import (
    ComponentSeen,
    PhysicalDisk,
    ResyncSummary,
    VsanCluster,
    collect_pages,
    components,
    disk_targets,
    load_json,
    physical_disks,
    place,
    summary_from_components,
)
from harness_platforms.vsphere.vsan.section import settings as vsan_settings
from tests.unit.harness_platforms.vsphere.test_vsphere_backend import document, seen_as_topology, topology

OBJECT = "5b1c6b63-7c1d-2f3a-9e4d-000c29aa0001"
QUERY_VSAN_OBJECTS = {
    "dom_objects": {OBJECT: {
        "config": {"uuid": OBJECT, "owner": "node-a1", "content": {
            "type": "Configuration", "attributes": {"CSN": 42},
            "child-1": {"type": "RAID_1",
                        "child-1": {"type": "RAID_0",
                                    "child-1": {"type": "Component", "componentUuid": "c-1", "diskUuid": "d-a1-1",
                                                "attributes": {"componentState": 5}},
                                    "child-2": {"type": "Component", "componentUuid": "c-2", "diskUuid": "d-a1-2",
                                                "attributes": {"componentState": 9, "bytesToSync": 2147483648}}},
                        "child-2": {"type": "Component", "componentUuid": "c-3", "diskUuid": "d-b1-1",
                                    "attributes": {"componentState": 6, "bytesToSync": 1024, "recoveryETA": 30}}},
            "child-2": {"type": "Witness", "componentUuid": "c-w", "diskUuid": "d-w",
                        "attributes": {"componentState": 5}}}},
        "policy": {"hostFailuresToTolerate": 1}}},
    "lsom_objects": {"c-1": {"owner": "node-a1"}},
    "disk_objects": {"d-a1-1": {"content": {"ssdUuid": "d-a1-c"}}},
}
QUERY_PHYSICAL_VSAN_DISKS = {
    "d-a1-c": {"uuid": "d-a1-c", "devName": "naa.5000c5000a100:2", "isSsd": 1, "owner": "uuid-esx-a1",
               "capacity": 400 * 2**30, "disk_health": {"healthFlags": 0}},
    "d-a1-1": {"uuid": "d-a1-1", "devName": "naa.5000c5000a101:1", "isSsd": 0, "owner": "uuid-esx-a1",
               "capacity": 2 * 2**40, "disk_health": {"healthFlags": 0}},
    "d-a1-2": {"uuid": "d-a1-2", "devName": "naa.5000c5000a102", "isSsd": 0, "owner": "uuid-esx-a1",
               "disk_health": {"healthFlags": 16}},
    "d-b1-1": {"uuid": "d-b1-1", "devName": "naa.5000c5000b101", "isSsd": 0, "owner": "uuid-esx-b1"},
}


def test_components_are_the_leaves_of_each_objects_configuration_tree() -> None:
    found = components(json.loads(json.dumps(QUERY_VSAN_OBJECTS)))
    assert [(c.component_uuid, c.kind, c.state, c.disk_uuid, c.bytes_to_sync) for c in found] == [
        ("c-1", "Component", "ACTIVE", "d-a1-1", 0), ("c-2", "Component", "DEGRADED", "d-a1-2", 2147483648),
        ("c-3", "Component", "ABSENT", "d-b1-1", 1024), ("c-w", "Witness", "ACTIVE", "d-w", 0)]


def test_physical_disks_are_keyed_by_uuid_with_the_canonical_device_name() -> None:
    disks = physical_disks(QUERY_PHYSICAL_VSAN_DISKS)
    assert disks["d-a1-c"] == PhysicalDisk("d-a1-c", "naa.5000c5000a100", True, "uuid-esx-a1", 0)
    assert disks["d-a1-1"].device == "naa.5000c5000a101" and not disks["d-a1-1"].is_ssd
    assert disks["d-a1-2"].health_flags == 16 and disks["d-b1-1"].health_flags == 0


def test_a_host_that_does_not_answer_json_is_an_error_not_an_empty_cluster() -> None:
    with pytest.raises(ControlPlaneError, match="QueryVsanObjects on esx-a1: the host did not answer JSON: 'BAD'"):
        load_json("BAD", "QueryVsanObjects on esx-a1")
    with pytest.raises(ControlPlaneError, match="expected a JSON object, got list"):
        load_json("[]", "QueryPhysicalVsanDisks")


def test_a_vms_components_are_placed_on_hosts_devices_and_their_groups_found_as_targets() -> None:
    seen = seen_as_topology()
    placed = place(components(QUERY_VSAN_OBJECTS), physical_disks(QUERY_PHYSICAL_VSAN_DISKS),
                   {h.node_uuid: h.name for h in seen.hosts.values()}, seen)
    assert [(p.component_uuid, p.host, p.device, p.cache, p.state) for p in placed] == [
        ("c-1", "esx-a1", "naa.5000c5000a101", "naa.5000c5000a100", "ACTIVE"),
        ("c-2", "esx-a1", "naa.5000c5000a102", "naa.5000c5000a100", "DEGRADED"),
        ("c-3", "esx-b1", "naa.5000c5000b101", "naa.5000c5000b100", "ABSENT"),
        ("c-w", None, None, None, "ACTIVE")]
    raw = document()
    raw["allow_list"] = []
    disks, groups = disk_targets(placed, parse_topology(raw, "unit"))
    assert disks == ["disk:esx-a1/naa.5000c5000a101", "disk:esx-a1/naa.5000c5000a102", "disk:esx-b1/naa.5000c5000b101"]
    assert groups == ["diskgroup:esx-a1/0", "diskgroup:esx-b1/0"]


# -- resync paging against a tiny fake of QuerySyncingVsanObjectsSummary ------------------------
@dataclass
class Obj:
    uuid: str
    components: list[str] = field(default_factory=lambda: ["c"])


@dataclass
class Reply:
    totalObjectsToSync: int | None
    totalBytesToSync: int | None
    totalRecoveryETA: int | None
    objects: list[Obj] | None


class FakeSummary:
    """The server side of the paged call: `offset`/`numberOfObjects` honoured unless told to ignore the offset."""

    def __init__(self, total: int, ignore_offset: bool = False) -> None:
        self.all = [Obj(f"obj-{i:04d}", ["c1", "c2"]) for i in range(total)]
        self.ignore_offset = ignore_offset
        self.calls: list[tuple[int, int]] = []

    def __call__(self, offset: int, count: int) -> Reply:
        self.calls.append((offset, count))
        start = 0 if self.ignore_offset else offset
        page = self.all[start:start + count]
        return Reply(len(self.all) or None, len(self.all) * 2048 * 2**20 or None, 95 if self.all else None, page or None)


def test_the_resync_summary_reads_every_page_by_offset() -> None:
    fake = FakeSummary(250)
    summary = collect_pages(fake, page=100)
    assert fake.calls == [(0, 100), (100, 100), (200, 100)]
    assert summary == ResyncSummary(objects=250, bytes_left=250 * 2048 * 2**20, eta_s=95, components=500)


def test_an_idle_cluster_omits_zero_values_which_read_as_zero() -> None:
    fake = FakeSummary(0)
    summary = collect_pages(fake, page=100)
    assert fake.calls == [(0, 100)] and summary == ResyncSummary(0, 0, None, 0) and summary.idle


def test_a_server_that_ignores_the_offset_is_refused_rather_than_read_forever() -> None:
    with pytest.raises(ControlPlaneError, match="returned object obj-0000 again at offset 100"):
        collect_pages(FakeSummary(250, ignore_offset=True), page=100)


def test_paging_is_bounded() -> None:
    with pytest.raises(ControlPlaneError, match="250 objects not read in 2 pages"):
        collect_pages(FakeSummary(250), page=100, max_pages=2)


def test_the_hosts_view_sums_components_left_to_sync() -> None:
    summary = summary_from_components(components(QUERY_VSAN_OBJECTS))
    assert summary == ResyncSummary(objects=1, bytes_left=2147483648 + 1024, eta_s=30, components=2, source="hosts")


# -- faults -----------------------------------------------------------------------------------------
def test_command_lines_get_the_device_quoted_and_the_seconds() -> None:
    assert fill("python /x.pyc -t -r @SECONDS@ -d @DEVICE@", "naa.1", 30) == "python /x.pyc -t -r 30 -d naa.1"
    assert fill("tool -d @DEVICE@", "naa 1;reboot") == "tool -d 'naa 1;reboot'"
    with pytest.raises(ConfigError, match="@SECONDS@ has no value"):
        fill("tool -r @SECONDS@ -d @DEVICE@", "naa.1")


def test_a_disk_failure_plans_the_configured_lines_and_says_they_are_unconfirmed() -> None:
    fault = registry.build(FaultSpec("disk-failure", "disk:esx-b2/naa.5000c5000b201", {"mode": "hot-unplug"}), topology())
    assert isinstance(fault, DiskFailure)
    plan = fault.plan()
    assert plan.inject_steps[0].startswith("python /usr/lib/vmware/vsan/bin/vsanDiskFaultInjection.pyc -u -d "
                                           "naa.5000c5000b201 (script path and flags unconfirmed on real hosts: "
                                           "management.vsan.disk_faults)")
    assert plan.revert_steps[0].startswith("python /usr/lib/vmware/vsan/bin/vsanDiskFaultInjection.pyc -c -d naa.5000c5000b201")
    assert "host esx-b2 over ssh ssh-esx-b2" in plan.backend
    assert plan.credentials == ("management.vcenter.credential", "management.ssh[3].key_file")
    assert fault.vsan.session._si is None


def test_the_topology_overrides_the_command_lines_within_the_script_and_its_flags() -> None:
    raw = document()
    raw["management"]["vsan"] = {"disk_faults": {
        "permanent": "python3 /usr/lib/vmware/vsan/bin/vsanDiskFaultInjection.py -d @DEVICE@ -p",
        "clear": "python3 /usr/lib/vmware/vsan/bin/vsanDiskFaultInjection.py -d @DEVICE@ -c"}}
    fault = registry.build(FaultSpec("disk-failure", "disk:esx-b2/naa.5000c5000b201"), parse_topology(raw, "unit"))
    assert fault.plan().inject_steps[0].startswith(
        "python3 /usr/lib/vmware/vsan/bin/vsanDiskFaultInjection.py -d naa.5000c5000b201 -p")


def test_a_cache_device_named_as_a_capacity_disk_is_refused_with_the_reason() -> None:
    fault = registry.build(FaultSpec("disk-failure", "disk:esx-b2/naa.5000c5000b200"), topology())
    assert "refused: disk-failure on disk:esx-b2/naa.5000c5000b200: params.device is 'capacity' but naa.5000c5000b200 " \
           "is the cache device of disk group 0 (a cache device failure takes the whole group: use disk-group-failure)" \
           in fault.plan().render()
    with pytest.raises(ConfigError, match="is the cache device"):
        fault.inject()
    fault.revert()  # never injected: nothing sent


def test_a_disk_group_failure_is_its_cache_device_and_refused_on_esa() -> None:
    fault = registry.build(FaultSpec("disk-group-failure", "diskgroup:esx-b2/0"), topology())
    assert isinstance(fault, DiskGroupFailure) and fault.device == "naa.5000c5000b200"
    assert fault.plan().inject_steps[0].startswith("python /usr/lib/vmware/vsan/bin/vsanDiskFaultInjection.pyc -p -d "
                                                   "naa.5000c5000b200")
    raw = document()
    raw["sites"][1]["hosts"][1]["disk_groups"] = [{"capacity": ["naa.5000c5000b201"]}]
    with pytest.raises(ConfigError, match=r"the group has no cache device \(sites\[1\].hosts\[1\].disk_groups\[0\].cache\): "
                                          "vSAN ESA has no cache tier"):
        registry.build(FaultSpec("disk-group-failure", "diskgroup:esx-b2/0"), parse_topology(raw, "unit"))


def test_a_host_without_an_ssh_endpoint_is_a_configuration_error_before_anything_is_contacted() -> None:
    raw = document()
    raw["sites"][1]["hosts"][1].pop("ssh")
    fault = registry.build(FaultSpec("disk-failure", "disk:esx-b2/naa.5000c5000b201"), parse_topology(raw, "unit"))
    assert "ssh (none: sites[1].hosts[1].ssh is not set)" in fault.plan().backend
    with pytest.raises(ConfigError, match=r"sites\[1\].hosts\[1\].ssh names no ESXi SSH endpoint"):
        fault.preflight()
    assert fault.vsan.session._si is None


class ScriptShell:
    """Stands in for an ESXi shell whose fault script exits with `status`."""

    wire = "ssh"
    where = "esx-b2 (root@192.0.2.200:2203)"

    def __init__(self, status: int, stderr: str = "") -> None:
        self.status, self.stderr = status, stderr
        self.ran: list[str] = []

    def run(self, command: str, *, input_text: str | None = None, timeout_s: float | None = None) -> CommandResult:
        self.ran.append(command)
        return CommandResult(self.status, "", self.stderr)

    def check(self, command: str, *, input_text: str | None = None, timeout_s: float | None = None) -> str:
        return ""

    def close(self) -> None:
        pass


def test_a_failing_script_points_at_the_topology_field_to_override() -> None:
    fault = registry.build(FaultSpec("disk-failure", "disk:esx-b2/naa.5000c5000b201", {"mode": "transient",
                                                                                     "transient_s": 45}), topology())
    shell = ScriptShell(127, "sh: python: not found")
    fault.shell = shell  # type: ignore[attr-defined]
    with pytest.raises(ControlPlaneError, match=r"inject `python /usr/lib/vmware/vsan/bin/vsanDiskFaultInjection.pyc -t -r 45 "
                                                r"-d naa.5000c5000b201` failed on esx-b2 \(127\): sh: python: not found. The "
                                                r"script's path and flags are unconfirmed on real hosts: check them there "
                                                r"and set management.vsan.disk_faults.transient"):
        fault.inject()
    assert shell.ran == ["python /usr/lib/vmware/vsan/bin/vsanDiskFaultInjection.pyc -t -r 45 -d naa.5000c5000b201"]


class Disks(VsanCluster):
    """A cluster whose device listing is given (or fails), for the check's reading of it."""

    def __init__(self, listing: dict[str, PhysicalDisk] | Exception) -> None:
        super().__init__(topology())
        self.listing = listing

    def physical_disks(self, host: str, seen: Any = None) -> dict[str, PhysicalDisk]:
        if isinstance(self.listing, Exception):
            raise self.listing
        return self.listing


@pytest.mark.parametrize(("listing", "state"), [
    ({"d": PhysicalDisk("d", "naa.5000c5000b201", False, "u", 0)}, FaultState.CLEARED),
    ({"d": PhysicalDisk("d", "naa.5000c5000b201", False, "u", 16)}, FaultState.IN_EFFECT),
    ({"d": PhysicalDisk("d", "naa.5000c5000b202", False, "u", 0)}, FaultState.IN_EFFECT),  # gone: unplugged
    (ControlPlaneError("vCenter unreachable"), FaultState.UNKNOWN)])
def test_check_is_the_device_as_vsan_reports_it(listing: Any, state: FaultState) -> None:
    fault = registry.build(FaultSpec("disk-failure", "disk:esx-b2/naa.5000c5000b201"), topology())
    fault.vsan = Disks(listing)  # type: ignore[attr-defined]
    assert fault.check() is state


def test_component_states_keep_unknown_values_as_given() -> None:
    tree = {"dom_objects": {"o": {"config": {"content": {"type": "Component", "componentUuid": "c", "diskUuid": "d",
                                                         "attributes": {"componentState": 77}}}}}}
    assert components(tree) == [ComponentSeen("o", "c", "Component", "77", "d")]


class SummaryRefused:
    """The cluster's vSAN object system answering the summary call with a fault (an older or degraded vCenter)."""

    def QuerySyncingVsanObjectsSummary(self, cluster: Any, syncingObjectFilter: Any) -> Any:
        from pyVmomi import vmodl

        raise vmodl.fault.NotSupported(msg="not supported at this API version")


class FallbackCluster(VsanCluster):
    def __init__(self) -> None:
        topo = topology()
        assert topo.management.vcenter is not None
        session = VCenterSession(topo.management.vcenter, vsan_settings(topo).api_version)  # its own, not the shared one
        session.vsan = lambda name: SummaryRefused()  # type: ignore[method-assign]
        super().__init__(topo, session)
        self.asked_hosts = False

    def cluster(self) -> Any:
        return "cluster"

    def _resync_from_hosts(self) -> ResyncSummary:
        self.asked_hosts = True
        return summary_from_components(components(QUERY_VSAN_OBJECTS))


def test_the_resync_falls_back_to_the_hosts_when_the_cluster_call_fails() -> None:
    vsan = FallbackCluster()
    summary = vsan.resync()
    assert vsan.asked_hosts and summary.source == "hosts" and summary.bytes_left == 2147483648 + 1024


class ReasonCounts:
    """The object system answering the resync summary by reason: one object whose component resyncs for a repair and
    a rebalance at once (a component's sync state carries `reasons`, a list)."""

    def __init__(self, unset: int, by_reason: dict[str, int]) -> None:
        self.unset, self.by_reason = unset, by_reason

    def QuerySyncingVsanObjectsSummary(self, cluster: Any, syncingObjectFilter: Any) -> Any:
        reason = getattr(syncingObjectFilter, "resyncType", None)
        return type("Summary", (), {"totalObjectsToSync": self.by_reason.get(reason, 0) if reason else self.unset})()


class CountingCluster(VsanCluster):
    def __init__(self, unset: int, by_reason: dict[str, int]) -> None:
        topo = topology()
        assert topo.management.vcenter is not None
        session = VCenterSession(topo.management.vcenter, vsan_settings(topo).api_version)
        session.vsan = lambda name: ReasonCounts(unset, by_reason)  # type: ignore[method-assign]
        super().__init__(topo, session)

    def cluster(self) -> Any:
        return "cluster"


@pytest.mark.reproducer("AA-resync-double-count")
def test_an_object_resyncing_for_two_reasons_does_not_fail_the_unset_filter_assumption() -> None:
    """An object rebuilt for a repair and a rebalance counts under both reasons, so the eight reasons add up to more
    than the unset filter's objects. The assumption holds (the unset filter saw every object): disk faults are not
    refused for it. It is broken only where a reason counts objects the unset filter does not."""
    both = CountingCluster(1, {"repair": 1, "rebalance": 1}).probe_resync_type_unset()
    assert both.result is ProbeResult.PASS, both.seen
    assert "more than one reason" in both.seen
    missed = CountingCluster(0, {"repair": 1}).probe_resync_type_unset()
    assert missed.result is ProbeResult.FAIL and missed.seen.startswith("unset: 0 objects; by reason: 1")
    assert CountingCluster(0, {}).probe_resync_type_unset().result is ProbeResult.PASS, "nothing resyncing"
