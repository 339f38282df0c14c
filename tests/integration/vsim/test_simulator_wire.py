"""harness-vsim speaks vCenter's wire: every call the vSphere backends make parses in pyVmomi 9.1.1
(vSAN SDK, vsan.version.version20) and reports what the model did.

What a real vCenter returns is documented in the vSphere Web Services API reference (HostSystem,
ClusterComputeResource, EventManager; HA events DasHostFailedEvent and EventEx
com.vmware.vc.ha.VmRestartedByHAEvent) and the vSAN Management API reference
(VsanObjectSystem.QuerySyncingVsanObjectsSummary, VsanQueryObjectIdentities,
VsanVcClusterHealthSystem.VsanQueryVcClusterHealthSummary / VsanHealthRepairClusterObjectsImmediate,
VsanVcClusterConfigSystem.VsanClusterGetConfig / VsanClusterReconfig extendedConfig.objectRepairTimer,
VsanVcStretchedClusterSystem.VSANVcGetWitnessHosts / VSANVcGetPreferredFaultDomain); the
HostVsanInternalSystem JSON is shaped as RVC's vsan.vm_object_info reads it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pyVim.connect
import pyVim.task
import pyVmomi
import vsanapiutils  # type: ignore[import-untyped]

from tests.support.vsim import (
    SITES,
    USERNAME,
    VMS,
    WITNESS,
    Simulator,
    device,
    require,
    running,
    simulator_binary,
    wait_until,
)

# pyVmomi's managed and data objects are built at run time; its type hints cover a part of them only.
vim: Any = pyVmomi.vim
vmodl: Any = pyVmomi.vmodl
SmartConnect: Any = pyVim.connect.SmartConnect
Disconnect: Any = pyVim.connect.Disconnect
WaitForTask: Any = pyVim.task.WaitForTask

VSAN_API = "vsan.version.version20"
MIB = 1 << 20

MODEL: dict[str, float] = {
    "ha_restart_delay_s": 0.5,
    "resync_rate_mb_s": 400.0,
    "component_mb": 256,
    "io_pause_s": 3.0,
    "repair_timer_s": 3600,
    "migration_s": 0.3,
}


class Vcenter:
    """A pyVmomi session on the simulator with the vSAN managed objects and inventory lookups."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.si = SmartConnect(host="127.0.0.1", port=sim.port, user=USERNAME, pwd=sim.password,
                               sslContext=sim.ssl_context())
        self.content = self.si.RetrieveContent()
        self.vsan = vsanapiutils.GetVsanVcMos(self.si._stub, context=sim.ssl_context(), version=VSAN_API)
        self.cluster: Any = self.find(vim.ClusterComputeResource, "stretched-01")

    def find(self, kind: Any, name: str) -> Any:
        view = self.content.viewManager.CreateContainerView(self.content.rootFolder, [kind], True)
        try:
            return next(obj for obj in view.view if obj.name == name)
        finally:
            view.Destroy()

    def host(self, name: str) -> Any:
        return self.find(vim.HostSystem, name)

    def vm(self, name: str) -> Any:
        return self.find(vim.VirtualMachine, name)

    def health(self) -> str:
        summary = self.vsan["vsan-cluster-health-system"].VsanQueryVcClusterHealthSummary(
            cluster=self.cluster, fetchFromCache=False)
        return str(summary.overallHealth)

    def resync(self, **filter_fields: Any) -> Any:
        spec = vim.cluster.VsanSyncingObjectFilter(**filter_fields)  # resyncType unset: every reason
        return self.vsan["vsan-cluster-object-system"].QuerySyncingVsanObjectsSummary(
            cluster=self.cluster, syncingObjectFilter=spec)

    def wait_vsan_task(self, task: Any) -> None:
        WaitForTask(vsanapiutils.ConvertVsanTaskToVcTask(task, self.si._stub))

    def events(self, *type_ids: str) -> list[Any]:
        spec = vim.event.EventFilterSpec(eventTypeId=list(type_ids))
        return list(self.content.eventManager.QueryEvents(spec))

    def node_uuids(self) -> dict[str, str]:
        """vSAN node UUID -> host name, as config.vsanHostConfig.clusterInfo.nodeUuid gives it."""
        hosts = [*self.cluster.host, self.host(WITNESS)]
        return {h.config.vsanHostConfig.clusterInfo.nodeUuid: h.name for h in hosts}


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[Simulator]:
    with running(tmp_path, MODEL) as started:
        yield started


@pytest.fixture
def vc(sim: Simulator) -> Iterator[Vcenter]:
    vcenter = Vcenter(sim)
    try:
        yield vcenter
    finally:
        Disconnect(vcenter.si)


def test_inventory_is_the_stretched_cluster_with_disk_groups_and_fault_domains(vc: Vcenter) -> None:
    cluster = vc.cluster
    assert cluster.parent.parent.name == "dc-lab"
    assert cluster.configurationEx.dasConfig.enabled is True
    assert cluster.configurationEx.drsConfig.enabled is True
    rules = {r.name: r for r in cluster.configurationEx.rule}
    for site, hosts in SITES.items():
        rule = rules[f"{site}-affinity"]
        assert isinstance(rule, vim.cluster.VmHostRuleInfo)
        assert rule.mandatory is False  # "should run on", as HA may break it
        groups = {g.name: g for g in cluster.configurationEx.group}
        assert sorted(h.name for h in groups[rule.affineHostGroupName].host) == hosts
        assert [vm.name for vm in groups[rule.vmGroupName].vm] == [n for n, (h, _) in VMS.items() if h in hosts]

    assert sorted(h.name for h in cluster.host) == sorted(h for hosts in SITES.values() for h in hosts)
    for site, hosts in SITES.items():
        for name in hosts:
            host = vc.host(name)
            assert host.runtime.powerState == "poweredOn"
            assert host.runtime.connectionState == "connected"
            config = host.config.vsanHostConfig
            assert config.faultDomainInfo.name == site
            [mapping] = config.storageInfo.diskMapping
            assert mapping.ssd.canonicalName == device(name, 0)
            assert [d.canonicalName for d in mapping.nonSsd] == [device(name, 1), device(name, 2)]

    witness = vc.host(WITNESS)
    assert witness not in cluster.host
    assert not isinstance(witness.parent, vim.ClusterComputeResource)
    assert witness.config.vsanHostConfig.faultDomainInfo.name == "witness"

    for name, (host, _) in VMS.items():
        vm = vc.vm(name)
        assert vm.runtime.host.name == host
        assert vm.runtime.powerState == "poweredOn"
        assert vm.summary.runtime.powerState == "poweredOn"


def test_stretched_cluster_reports_its_witness_and_preferred_site(vc: Vcenter) -> None:
    stretched = vc.vsan["vsan-stretched-cluster-system"]
    [witness] = stretched.VSANVcGetWitnessHosts(cluster=vc.cluster)
    # pyVmomi binds references from the vSAN API to the vSAN stub; properties are read through /sdk.
    with pytest.raises(vmodl.fault.NotSupported):
        _ = witness.host.name
    assert vim.HostSystem(witness.host._moId, vc.si._stub).name == WITNESS
    assert witness.preferredFdName == "site-a"
    assert witness.nodeUuid == vc.host(WITNESS).config.vsanHostConfig.clusterInfo.nodeUuid
    assert stretched.VSANVcGetPreferredFaultDomain(cluster=vc.cluster).preferredFaultDomainName == "site-a"


def _wait_for_update(vc: Vcenter, obj: Any, want: dict[str, str], timeout: float,
                     after: Callable[[], object] | None = None) -> float:
    """Follows WaitForUpdatesEx on obj until each property in want has that value (a reference by its name);
    returns when (monotonic). `after` runs once the initial state is read, so the change must be reported."""
    pc = vc.content.propertyCollector.CreatePropertyCollector()
    spec = vmodl.query.PropertyCollector.FilterSpec(
        objectSet=[vmodl.query.PropertyCollector.ObjectSpec(obj=obj)],
        propSet=[vmodl.query.PropertyCollector.PropertySpec(type=type(obj), pathSet=list(want))])
    pc.CreateFilter(spec, True)
    options = vmodl.query.PropertyCollector.WaitOptions(maxWaitSeconds=1)
    seen: dict[str, Any] = {}
    version = ""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            update = pc.WaitForUpdatesEx(version, options)
            if update is None:
                continue
            for filter_set in update.filterSet:
                for change in (c for o in filter_set.objectSet for c in o.changeSet):
                    seen[change.name] = getattr(change.val, "name", change.val)
            if not version and after is not None:
                assert not all(seen.get(k) == v for k, v in want.items()), f"already {want} before the change"
                after()
            version = update.version
            if all(seen.get(k) == v for k, v in want.items()):
                return time.monotonic()
    finally:
        pc.Destroy()
    raise AssertionError(f"WaitForUpdatesEx never showed {want} on {obj.name}: {seen}")


def _wait_for_vm_update(vc: Vcenter, vm: Any, host: str, power: str, timeout: float) -> float:
    return _wait_for_update(vc, vm, {"runtime.host": host, "runtime.powerState": power}, timeout)


def test_abrupt_power_loss_restarts_the_vm_on_the_other_host_of_its_site(sim: Simulator, vc: Vcenter) -> None:
    vm = vc.vm("pg-node-a")
    host = vc.host("esx-a1")
    lost = time.monotonic()
    _wait_for_update(vc, host, {"runtime.powerState": "poweredOff", "runtime.connectionState": "notResponding"}, 5,
                     after=lambda: sim.post("/hosts/esx-a1/power", {"state": "off"}))
    assert host.runtime.powerState == "poweredOff"
    assert host.runtime.connectionState == "notResponding"
    assert {h["name"]: h["connection"] for h in sim.get("/hosts")}["esx-a1"] == "notResponding"
    assert vc.health() == "red"

    restarted = _wait_for_vm_update(vc, vm, "esx-a2", "poweredOn", timeout=10)
    assert restarted - lost >= sim.model["ha_restart_delay_s"] - 0.05
    assert vc.vm("pg-node-b").runtime.host.name == "esx-b1"  # the other site is untouched

    [failed] = vc.events("DasHostFailedEvent")
    assert failed.failedHost.name == "esx-a1"
    [ha] = vc.events("com.vmware.vc.ha.VmRestartedByHAEvent")
    assert isinstance(ha, vim.event.EventEx)
    assert (ha.vm.name, ha.host.name, ha.computeResource.name) == ("pg-node-a", "esx-a2", "stretched-01")
    wait_until(lambda: "power-on node-a" in sim.hook_calls(), 20, "the hook to start node-a")
    assert sim.hook_calls()[:2] == ["power-off node-a", "power-on node-a"]

    _wait_for_update(vc, host, {"runtime.powerState": "poweredOn", "runtime.connectionState": "connected"}, 5,
                     after=lambda: sim.post("/hosts/esx-a1/power", {"state": "on"}))
    assert vc.health() != "red"


def test_a_vm_whose_site_is_down_returns_when_a_host_of_its_site_powers_on(sim: Simulator, vc: Vcenter) -> None:
    sim.post("/hosts/esx-a1/power", {"state": "off"})
    sim.post("/hosts/esx-a2/power", {"state": "off"})
    time.sleep(sim.model["ha_restart_delay_s"] * 2)
    vm = vc.vm("pg-node-a")
    assert vm.runtime.powerState == "poweredOff", "HA must not move the VM to the other site"
    assert vc.events("com.vmware.vc.ha.VmRestartedByHAEvent") == []

    sim.post("/hosts/esx-a2/power", {"state": "on"})
    _wait_for_vm_update(vc, vm, "esx-a2", "poweredOn", timeout=10)


def test_graceful_shutdown_powers_vms_off_without_ha_restart(sim: Simulator, vc: Vcenter) -> None:
    WaitForTask(vc.host("esx-b1").ShutdownHost_Task(force=True))
    assert vc.host("esx-b1").runtime.powerState == "poweredOff"
    time.sleep(sim.model["ha_restart_delay_s"] * 2)
    vm = vc.vm("pg-node-b")
    assert (vm.runtime.powerState, vm.runtime.host.name) == ("poweredOff", "esx-b1")
    assert vc.events("com.vmware.vc.ha.VmRestartedByHAEvent", "DasHostFailedEvent") == []
    assert sim.hook_calls() == ["power-off node-b"]


def test_a_host_without_power_cannot_be_reconnected(sim: Simulator, vc: Vcenter) -> None:
    sim.post("/hosts/esx-b2/power", {"state": "off"})
    host = vc.host("esx-b2")
    with pytest.raises(vim.fault.HostConnectFault):
        WaitForTask(host.ReconnectHost_Task())
    assert host.runtime.connectionState == "notResponding"
    sim.post("/hosts/esx-b2/power", {"state": "on"})
    WaitForTask(host.ReconnectHost_Task())
    assert host.runtime.connectionState == "connected"


def test_shutdown_without_force_needs_maintenance_mode(vc: Vcenter) -> None:
    with pytest.raises(vim.fault.InvalidState):
        WaitForTask(vc.host("esx-b2").ShutdownHost_Task(force=False))
    assert vc.host("esx-b2").runtime.powerState == "poweredOn"


def test_maintenance_moves_vms_within_their_site_and_relocation_takes_the_migration_time(
        sim: Simulator, vc: Vcenter) -> None:
    host = vc.host("esx-b1")
    spec = vim.host.MaintenanceSpec(vsanMode=vim.vsan.host.DecommissionMode(objectAction="ensureObjectAccessibility"))
    WaitForTask(host.EnterMaintenanceMode_Task(timeout=60, maintenanceSpec=spec))
    assert host.runtime.inMaintenanceMode is True
    vm = vc.vm("pg-node-b")
    assert (vm.runtime.host.name, vm.runtime.powerState) == ("esx-b2", "poweredOn")
    assert vc.health() == "yellow"  # components on esx-b1 are absent, the repair timer runs
    WaitForTask(host.ExitMaintenanceMode_Task(timeout=60))
    assert host.runtime.inMaintenanceMode is False

    started = time.monotonic()
    WaitForTask(vm.RelocateVM_Task(spec=vim.vm.RelocateSpec(host=host)))
    assert time.monotonic() - started >= sim.model["migration_s"]
    assert vm.runtime.host.name == "esx-b1"
    WaitForTask(vm.MigrateVM_Task(host=vc.host("esx-b2"), priority="defaultPriority"))
    assert vm.runtime.host.name == "esx-b2"
    assert vc.health() == "green"


def _placement(vc: Vcenter, vm_name: str) -> dict[str, Any]:
    """The VM's vdisk object as HostVsanInternalSystem.QueryVsanObjects describes it."""
    ids = vc.vsan["vsan-cluster-object-system"].VsanQueryObjectIdentities(
        cluster=vc.cluster, includeObjIdentity=True)
    vm_id = vc.vm(vm_name)._moId  # identities carry references bound to the vSAN stub: compare ids
    [vdisk] = [i for i in ids.identities if i.vm._moId == vm_id and i.type == "vdisk"]
    internal = vc.host("esx-b2").configManager.vsanInternalSystem
    objects = json.loads(internal.QueryVsanObjects(uuids=[vdisk.uuid]))
    return {"uuid": vdisk.uuid, **objects}


def test_objects_are_placed_on_the_vm_host_the_other_site_and_the_witness(vc: Vcenter) -> None:
    ids = vc.vsan["vsan-cluster-object-system"].VsanQueryObjectIdentities(cluster=vc.cluster, includeObjIdentity=True)
    names = {vc.vm(name)._moId: name for name in VMS}
    by_vm: dict[str, set[str]] = {}
    for identity in ids.identities:
        by_vm.setdefault(names[identity.vm._moId], set()).add(identity.type)
    assert by_vm == {name: {"vmnamespace", "vdisk"} for name in VMS}

    # As RVC finds a VM's objects: the namespace UUID is the directory of vmPathName, each disk's
    # backing.backingObjectId its vdisk object.
    vm = vc.vm("pg-node-a")
    assert vm.datastore[0].summary.type == "vsan"
    namespace = vm.summary.config.vmPathName.split("] ")[1].split("/")[0]
    [disk] = [d for d in vm.config.hardware.device if isinstance(d, vim.vm.device.VirtualDisk)]
    mine = {i.type: i.uuid for i in ids.identities if i.vm._moId == vm._moId}
    assert mine == {"vmnamespace": namespace, "vdisk": disk.backing.backingObjectId}

    nodes = vc.node_uuids()
    disks = json.loads(vc.host("esx-a1").configManager.vsanInternalSystem.QueryPhysicalVsanDisks(
        props=["devName", "owner", "isSsd"]))
    placed = _placement(vc, "pg-node-a")
    config = placed["dom_objects"][placed["uuid"]]["config"]
    mirror = config["content"]["child-1"]
    assert mirror["type"] == "RAID_1"
    components = [mirror["child-1"], mirror["child-2"], config["content"]["child-2"]]
    assert [c["type"] for c in components] == ["Component", "Component", "Witness"]
    where = []
    for c in components:
        assert c["attributes"]["componentState"] == 5  # ACTIVE
        owner = nodes[placed["lsom_objects"][c["componentUuid"]]["owner"]]
        disk = disks[c["diskUuid"]]
        assert nodes[disk["owner"]] == owner and disk["isSsd"] == 0  # on a capacity device of that host
        where.append((owner, disk["devName"]))
    assert where[0] == ("esx-a1", device("esx-a1", 1))
    assert where[1][0] in SITES["site-b"]
    assert where[2][0] == WITNESS


def test_a_permanent_disk_error_degrades_its_components(sim: Simulator, vc: Vcenter) -> None:
    sim.post(f"/disks/esx-a1/{device('esx-a1', 1)}", {"fault": "permanent"})
    placed = _placement(vc, "pg-node-a")
    home = placed["dom_objects"][placed["uuid"]]["config"]["content"]["child-1"]["child-1"]
    assert home["attributes"]["componentState"] in (9, 5)  # DEGRADED, or ACTIVE again once rebuilt
    state = sim.get("/state")
    assert {d["device"]: d["state"] for d in state["disks"] if d["host"] == "esx-a1"}[device("esx-a1", 1)] == "permanent"


@pytest.mark.parametrize("rate_mb_s", [256.0, 512.0])
def test_resync_after_a_disk_error_drains_at_the_modelled_rate_to_zero(tmp_path: Path, rate_mb_s: float) -> None:
    with running(tmp_path, {**MODEL, "resync_rate_mb_s": rate_mb_s, "component_mb": 512}) as sim:
        vc = Vcenter(sim)
        try:
            assert vc.resync().totalBytesToSync == 0
            started = time.monotonic()
            sim.post(f"/disks/esx-a1/{device('esx-a1', 1)}", {"fault": "permanent"})
            first = vc.resync()
            expected_bytes = 2 * 512 * MIB  # pg-node-a's namespace and vdisk components on that device
            assert first.totalObjectsToSync == 2
            assert expected_bytes - rate_mb_s * MIB * 0.5 < first.totalBytesToSync <= expected_bytes
            assert first.totalRecoveryETA == pytest.approx(first.totalBytesToSync / (rate_mb_s * MIB), abs=1)
            page = vc.resync(offset=1, numberOfObjects=1)
            assert (page.totalObjectsToSync, len(page.objects)) == (2, 1)
            assert page.objects[0].uuid != vc.resync(offset=0, numberOfObjects=1).objects[0].uuid
            assert vc.health() == "yellow"

            samples = []
            while (summary := vc.resync()).totalBytesToSync > 0:
                samples.append(summary.totalBytesToSync)
                assert time.monotonic() - started < 30, "resync never finished"
                time.sleep(0.05)
            took = time.monotonic() - started
            modelled = expected_bytes / (rate_mb_s * MIB)
            assert modelled - 0.3 < took < modelled + 1.0
            assert samples == sorted(samples, reverse=True)
            assert summary.totalObjectsToSync == 0 and summary.totalRecoveryETA == 0 and summary.objects == []
            assert vc.health() == "green"
            assert any(call.startswith(f"io-load site-a {rate_mb_s:g} ") for call in sim.hook_calls())
        finally:
            Disconnect(vc.si)


def test_health_is_green_then_yellow_for_absent_components_then_red_for_a_host_down(
        sim: Simulator, vc: Vcenter) -> None:
    assert vc.health() == "green"
    sim.post(f"/disks/esx-b1/{device('esx-b1', 1)}", {"fault": "unplug"})
    assert vc.health() == "yellow"
    assert vc.resync().totalObjectsToSync == 0  # absent: waits for the repair timer
    sim.post("/hosts/esx-a2/power", {"state": "off"})
    assert vc.health() == "red"
    summary = vc.vsan["vsan-cluster-health-system"].VsanQueryVcClusterHealthSummary(cluster=vc.cluster)
    assert sum(h.numObjects for h in summary.objectHealth.objectHealthDetail) == 4
    assert any("esx-a2" in t.testName for g in summary.groups for t in g.groupTests)
    with pytest.raises(vmodl.fault.HostNotConnected):
        vc.host("esx-a2").configManager.vsanInternalSystem.QueryVsanObjects(uuids=[])
    sim.post("/hosts/esx-a2/power", {"state": "on"})
    sim.post(f"/disks/esx-b1/{device('esx-b1', 1)}", {"fault": "clear"})
    assert vc.health() == "green"


def test_a_cache_device_error_fails_the_disk_group_and_pauses_io_of_its_vms(sim: Simulator, vc: Vcenter) -> None:
    sim.post(f"/disks/esx-a1/{device('esx-a1', 0)}", {"fault": "permanent"})
    wait_until(lambda: f"io-pause node-a {sim.model['io_pause_s']:g}" in sim.hook_calls(), 20, "io-pause for node-a")
    state = sim.get("/state")
    on_group = [c for o in state["objects"] for c in o["components"] if c["host"] == "esx-a1"]
    assert on_group and all(c["state"] == 9 for c in on_group)  # every component of the group: DEGRADED
    assert vc.resync().totalObjectsToSync > 0


def test_repair_timer_is_set_through_the_cluster_config_and_repair_can_start_now(sim: Simulator, vc: Vcenter) -> None:
    """objectRepairTimer is "delay time in minutes ... Default value: 60" (VsanExtendedConfig)."""
    config = vc.vsan["vsan-cluster-config-system"]
    assert config.VsanClusterGetConfig(cluster=vc.cluster).extendedConfig.objectRepairTimer == 60  # the model's 3600 s
    spec = vim.vsan.ReconfigSpec(modify=True, extendedConfig=vim.vsan.VsanExtendedConfig(objectRepairTimer=90))
    vc.wait_vsan_task(config.VsanClusterReconfig(cluster=vc.cluster, vsanReconfigSpec=spec))
    assert config.VsanClusterGetConfig(cluster=vc.cluster).extendedConfig.objectRepairTimer == 90
    assert sim.get("/state")["repair_timer_s"] == 90 * 60

    sim.post(f"/disks/esx-b1/{device('esx-b1', 1)}", {"fault": "unplug"})
    assert vc.resync().totalObjectsToSync == 0
    assert _object_health(vc) == {"healthy": 2, "reducedavailabilitywithnorebuilddelaytimer": 2}
    health = vc.vsan["vsan-cluster-health-system"]
    vc.wait_vsan_task(health.VsanHealthRepairClusterObjectsImmediate(cluster=vc.cluster))
    assert vc.resync().totalObjectsToSync == 2
    assert _object_health(vc) == {"healthy": 2, "reducedavailabilitywithactiverebuild": 2}


def _object_health(vc: Vcenter) -> dict[str, int]:
    result = vc.vsan["vsan-cluster-object-system"].VsanQueryObjectIdentities(
        cluster=vc.cluster, includeHealth=True, includeObjIdentity=False)
    return {h.health: h.numObjects for h in result.health.objectHealthDetail}


def test_govc_reads_the_same_state(sim: Simulator, vc: Vcenter) -> None:
    require(govc=True)
    assert set(sim.govc("ls", "/dc-lab/host/stretched-01").split()) >= {
        f"/dc-lab/host/stretched-01/{h}" for hosts in SITES.values() for h in hosts}
    sim.post("/hosts/esx-a1/power", {"state": "off"})
    _wait_for_vm_update(vc, vc.vm("pg-node-a"), "esx-a2", "poweredOn", timeout=10)

    info = json.loads(sim.govc("host.info", "-json", "/dc-lab/host/stretched-01/esx-a1"))
    [host] = info["hostSystems"] if "hostSystems" in info else info["HostSystems"]
    assert host["runtime"]["connectionState"] == "notResponding"
    vm_info = sim.govc("vm.info", "pg-node-a")
    assert "poweredOn" in vm_info and "esx-a2" in vm_info
    events = sim.govc("events", "vm/pg-node-a")
    assert "vSphere HA restarted virtual machine pg-node-a on host esx-a2" in events


def test_stops_cleanly_on_sigterm_and_refuses_other_addresses(tmp_path: Path) -> None:
    with running(tmp_path / "run", MODEL) as sim:
        pid = json.loads((tmp_path / "run" / "ready.json").read_text())["pid"]
        assert sim.get("/hosts")
        os.kill(pid, signal.SIGTERM)
        wait_until(lambda: not Path(f"/proc/{pid}").exists() or "zombie" in _proc_state(pid), 10, "exit on SIGTERM")
    assert "stopping on terminated" in (tmp_path / "run" / "vsim.log").read_text()

    config = json.loads((tmp_path / "run" / "vsim.json").read_text())
    config["listen"] = "0.0.0.0:0"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(config))
    done = subprocess.run([str(simulator_binary()), "-config", str(bad)], capture_output=True, text=True,
                          timeout=30, env={**os.environ, "HARNESS_VSIM_PASSWORD": "x"}, check=False)
    assert done.returncode != 0 and "only 127.0.0.1" in done.stderr


def _proc_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().lower()
    except FileNotFoundError:
        return "zombie"


def test_login_needs_the_configured_password(sim: Simulator) -> None:
    with pytest.raises(vim.fault.InvalidLogin):
        SmartConnect(host="127.0.0.1", port=sim.port, user=USERNAME, pwd=sim.password + "x",
                     sslContext=sim.ssl_context())


def test_vm_power_through_vcenter_reaches_the_hook(sim: Simulator, vc: Vcenter) -> None:
    vm = vc.vm("pg-node-b")
    WaitForTask(vm.PowerOffVM_Task())
    assert vm.runtime.powerState == "poweredOff"
    WaitForTask(vm.PowerOnVM_Task())
    assert vm.runtime.powerState == "poweredOn"
    wait_until(lambda: len(sim.hook_calls()) == 2, 20, "two hook calls")
    assert sim.hook_calls() == ["power-off node-b", "power-on node-b"]


def test_a_transient_disk_error_ends_by_itself(sim: Simulator, vc: Vcenter) -> None:
    # esx-b1's second capacity device holds pg-node-b's components.
    sim.post(f"/disks/esx-b1/{device('esx-b1', 2)}", {"fault": "transient", "seconds": 0.5})
    assert vc.health() == "yellow"
    wait_until(lambda: vc.health() == "green", 5, "the transient errors to end")
    states = {(d["host"], d["device"]): d["state"] for d in sim.get("/state")["disks"]}
    assert states[("esx-b1", device("esx-b1", 2))] == "healthy"


def test_maintenance_with_full_data_evacuation_ends_when_the_host_holds_no_component(
        sim: Simulator, vc: Vcenter) -> None:
    host = vc.host("esx-b1")
    before = sim.get("/state")
    held = [c["uuid"] for o in before["objects"] for c in o["components"] if c["host"] == "esx-b1"]
    assert len(held) == 4  # pg-node-b's two objects and pg-node-a's mirrors
    spec = vim.host.MaintenanceSpec(vsanMode=vim.vsan.host.DecommissionMode(objectAction="evacuateAllData"))
    started = time.monotonic()
    WaitForTask(host.EnterMaintenanceMode_Task(timeout=60, maintenanceSpec=spec))
    took = time.monotonic() - started
    assert took >= len(held) * sim.model["component_mb"] / sim.model["resync_rate_mb_s"] - 0.2
    after = {c["uuid"]: c["host"] for o in sim.get("/state")["objects"] for c in o["components"]}
    assert {after[u] for u in held} == {"esx-b2"}  # rebuilt in the same site
    assert vc.resync().totalObjectsToSync == 0
    assert host.runtime.inMaintenanceMode is True
    assert vc.vm("pg-node-b").runtime.host.name == "esx-b2"


def test_components_back_from_a_host_outage_resync_what_they_missed(tmp_path: Path) -> None:
    with running(tmp_path, {**MODEL, "stale_write_mb_s": 200.0, "ha_restart_delay_s": 30.0}) as sim:
        vc = Vcenter(sim)
        try:
            sim.post("/hosts/esx-b2/power", {"state": "off"})  # esx-b2 holds no component
            sim.post("/hosts/esx-a1/power", {"state": "off"})
            time.sleep(0.5)
            sim.post("/hosts/esx-a1/power", {"state": "on"})
            sim.post("/hosts/esx-b2/power", {"state": "on"})
            summary = vc.resync()
            assert summary.totalObjectsToSync == 4  # every object has a component on esx-a1
            reasons = {r for o in summary.objects for c in o.components for r in c.reasons}
            assert reasons == {"stale"}
            assert 0 < summary.totalBytesToSync <= 4 * sim.model["component_mb"] * MIB  # capped at a component
            wait_until(lambda: vc.resync().totalBytesToSync == 0, 10, "the stale resync to finish")
            assert vc.health() == "green"
        finally:
            Disconnect(vc.si)


def test_a_resync_type_that_is_not_a_vsan_sync_reason_is_refused(sim: Simulator, vc: Vcenter) -> None:
    """resyncType is "one of the values defined in VsanSyncReason"; the simulator refuses others (stricter
    than documented: what vCenter does with them is not), so a backend that sends one fails here."""
    with pytest.raises(vmodl.fault.InvalidArgument):
        vc.resync(resyncType="all")
    assert vc.resync(resyncType="repair").totalObjectsToSync == 0


def test_the_vsan_api_answers_clients_of_version10_too(sim: Simulator, vc: Vcenter) -> None:
    old = vsanapiutils.GetVsanVcMos(vc.si._stub, context=sim.ssl_context(), version="vsan.version.version10")
    summary = old["vsan-cluster-object-system"].QuerySyncingVsanObjectsSummary(
        cluster=vc.cluster, syncingObjectFilter=vim.cluster.VsanSyncingObjectFilter())
    assert (summary.totalObjectsToSync, summary.totalBytesToSync) == (0, 0)
    assert old["vsan-cluster-health-system"].VsanQueryVcClusterHealthSummary(cluster=vc.cluster).overallHealth == "green"


def test_vmwares_own_sdk_reads_the_served_versions_document_as_the_backend_does(sim: Simulator) -> None:
    """The stand-in checked without the backend: the vSAN SDK's GetLatestVmodlVersion (VMware's parser of
    /sdk/vsanServiceVersions.xml) picks the same version from the simulator's document. It turns certificate
    checks off for its whole process (ssl._create_default_https_context), so it runs in a child process, against
    this loopback simulator only; the backend never calls it."""
    script = "import sys, vsanapiutils\nprint(vsanapiutils.GetLatestVmodlVersion('127.0.0.1', int(sys.argv[1])))"
    done = subprocess.run([sys.executable, "-c", script, str(sim.port)], capture_output=True, text=True, timeout=60,
                          check=True)
    assert done.stdout.strip() == "vsan.version.version22"
