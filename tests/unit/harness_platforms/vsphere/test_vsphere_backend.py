"""The vsphere backend without a server: discovery compared with the topology, plans, refusals, recovery.

Discovery itself is exercised through pyVmomi against the simulator (tests/integration/vsphere);
here its parts are fed pyVmomi's own data objects, built as vCenter would return them.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest
from pyVmomi import vim

from faults import registry
from faults.base import FaultSpec, FaultState
from faults.transports.vcenter import Limits, VCenterSession
from harness_kernel.errors import ConfigError
from harness_kernel.topology.loader import parse_topology
from harness_kernel.topology.models import Topology
from harness_platforms.vsphere.faults import HostMaintenance, HostShutdown, VmMigrate
from harness_platforms.vsphere.probes import (
    Discovery,
    DiskGroupSeen,
    HostSeen,
    VmSeen,
    host_seen,
    mismatches,
    recovery_problems,
    rules_seen,
)

HOSTS = {"site-a": ("esx-a1", "esx-a2"), "site-b": ("esx-b1", "esx-b2")}


def cache(host: str) -> str:
    return f"naa.5000c5000{host[-2:]}00"


def capacity(host: str) -> list[str]:
    return [f"naa.5000c5000{host[-2:]}0{i}" for i in (1, 2)]


def document(**vcenter: Any) -> dict[str, Any]:
    """A stretched 2+2 vSphere topology as the lab contract names it (documentation addresses, never contacted)."""
    return {
        "name": "unit-vsphere", "kind": "vsphere",
        "sites": [{"name": site, "hosts": [{"name": h, "address": f"192.0.2.{10 + i}", "ssh": f"ssh-{h}",
                                            "disk_groups": [{"cache": cache(h), "capacity": capacity(h)}]}
                                           for i, h in enumerate(hosts)]} for site, hosts in HOSTS.items()],
        "witness": {"name": "vsan-witness-01", "address": "198.51.100.10", "site": "witness"},
        "databases": [{"name": "bench", "kind": "postgres", "endpoint": "192.0.2.50", "port": 5432, "database": "bench",
                       "nodes": [{"name": "node-a", "host": "esx-a1", "vm": "pg-node-a"},
                                 {"name": "node-b", "host": "esx-b1", "vm": "pg-node-b"}]}],
        "management": {
            "vcenter": {"address": "vcsa.example.net", "cluster": "stretched-01", "datacenter": "dc-lab",
                        "credential": {"username": "harness@vsphere.local", "password": {"env": "HARNESS_TEST_VC_PW"}},
                        **vcenter},
            "ssh": [{"name": f"ssh-{h}", "address": "192.0.2.200", "port": 2200 + i, "username": "root",
                     "key_file": {"env": "HARNESS_TEST_KEY"}} for i, h in enumerate(h for hs in HOSTS.values() for h in hs)]},
        "allow_list": ["host:esx-a2", "node:bench/node-a", "disk:esx-b2/naa.5000c5000b201", "diskgroup:esx-b2/0"],
    }


def topology(**vcenter: Any) -> Topology:
    return parse_topology(document(**vcenter), "unit")


def seen_as_topology() -> Discovery:
    """What vCenter reports for a cluster exactly as `topology()` describes it."""
    hosts = {h: HostSeen(h, site, "poweredOn", "connected", False, f"uuid-{h}",
                         (DiskGroupSeen(cache(h), tuple(capacity(h))),))
             for site, names in HOSTS.items() for h in names}
    vms = {"pg-node-a": VmSeen("pg-node-a", "esx-a1", "poweredOn"), "pg-node-b": VmSeen("pg-node-b", "esx-b1", "poweredOn")}
    return Discovery("stretched-01", "dc-lab", hosts, vms, "vsan-witness-01", "site-a", True, True, "fullyAutomated", ())


def test_a_cluster_as_the_topology_describes_it_has_no_mismatch() -> None:
    assert mismatches(topology(), seen_as_topology()) == []


def test_every_mismatch_is_listed_with_the_topology_field_it_contradicts() -> None:
    seen = seen_as_topology()
    hosts = dict(seen.hosts)
    hosts["esx-a2"] = replace(hosts["esx-a2"], site="site-b")  # wrong fault domain
    del hosts["esx-b2"]  # missing host
    hosts["esx-c1"] = HostSeen("esx-c1", "site-c", "poweredOn", "connected", False, "u", ())  # unknown host
    hosts["esx-b1"] = replace(hosts["esx-b1"], disk_groups=(DiskGroupSeen(cache("esx-b1"), ("naa.other",)),))
    vms = {"pg-node-b": VmSeen("pg-node-b", "esx-a1", "poweredOn")}  # pg-node-a missing, pg-node-b in the wrong site
    wrong = replace(seen, hosts=hosts, vms=vms, witness="other-witness", preferred_site="site-z")
    problems = "\n".join(mismatches(topology(), wrong))
    for expected in ("sites[0].hosts[1]: host 'esx-a2' is in fault domain 'site-b' in vCenter, in site 'site-a'",
                     "sites[1].hosts[1].name: cluster 'stretched-01' has no host 'esx-b2'",
                     "vCenter's cluster has host 'esx-c1' (fault domain 'site-c'), which the topology does not list",
                     "sites[1].hosts[0].disk_groups: host 'esx-b1' has cache naa.5000c5000b100 + naa.other in vCenter",
                     "witness.name: the topology names 'vsan-witness-01', vCenter's vSAN witness is 'other-witness'",
                     "preferred fault domain 'site-z' is not a site of the topology",
                     "databases[0].nodes[0].vm: no VM named 'pg-node-a' runs on cluster 'stretched-01'",
                     "databases[0].nodes[1].host: VM 'pg-node-b' runs on 'esx-a1' (site 'site-a'), the topology puts it "
                     "on 'esx-b1' (site 'site-b')"):
        assert expected in problems


def test_an_esa_host_shows_its_groups_without_a_cache_tier() -> None:
    seen = seen_as_topology()
    hosts = dict(seen.hosts)
    hosts["esx-a1"] = replace(hosts["esx-a1"], disk_groups=(DiskGroupSeen(None, tuple(capacity("esx-a1"))),))
    assert any("cache (none: ESA)" in p for p in mismatches(topology(), replace(seen, hosts=hosts)))


def test_a_host_is_read_from_the_vsan_host_config_vcenter_returns() -> None:
    config = vim.vsan.host.ConfigInfo(
        faultDomainInfo=vim.vsan.host.ConfigInfo.FaultDomainInfo(name="site-a"),
        clusterInfo=vim.vsan.host.ConfigInfo.ClusterInfo(nodeUuid="5f0c-node"),
        storageInfo=vim.vsan.host.ConfigInfo.StorageInfo(diskMapping=[vim.vsan.host.DiskMapping(
            ssd=vim.host.ScsiDisk(canonicalName="naa.5000c5000a100"),
            nonSsd=[vim.host.ScsiDisk(canonicalName=d) for d in capacity("esx-a1")])]))
    host = host_seen("esx-a1", {"runtime.powerState": "poweredOn", "runtime.connectionState": "connected",
                                "runtime.inMaintenanceMode": False, "config.vsanHostConfig": config})
    assert host == HostSeen("esx-a1", "site-a", "poweredOn", "connected", False, "5f0c-node",
                            (DiskGroupSeen("naa.5000c5000a100", tuple(capacity("esx-a1"))),))
    assert host.usable


def test_vm_host_rules_are_read_with_their_groups_resolved_to_names() -> None:
    esx_a1, esx_a2 = vim.HostSystem("host-11"), vim.HostSystem("host-12")
    config = vim.cluster.ConfigInfoEx(
        group=[vim.cluster.VmGroup(name="vms-a", vm=[]), vim.cluster.HostGroup(name="hosts-a", host=[esx_a1, esx_a2])],
        rule=[vim.cluster.VmHostRuleInfo(name="a-should-run-on-a", enabled=True, mandatory=False, vmGroupName="vms-a",
                                         affineHostGroupName="hosts-a"),
              vim.cluster.AffinityRuleSpec(name="not a placement rule", enabled=True)])
    rules = rules_seen(config, {"host-11": "esx-a1", "host-12": "esx-a2"})
    assert [(r.name, r.enabled, r.mandatory, r.affine, r.hosts) for r in rules] == [
        ("a-should-run-on-a", True, False, True, ("esx-a1", "esx-a2"))]


def test_recovery_needs_hosts_connected_out_of_maintenance_and_vms_running_in_their_site() -> None:
    seen = seen_as_topology()
    assert recovery_problems(topology(), seen) == []
    hosts = dict(seen.hosts)
    hosts["esx-a2"] = replace(hosts["esx-a2"], maintenance=True)
    hosts["esx-b2"] = replace(hosts["esx-b2"], connection="notResponding", power="unknown")
    vms = {"pg-node-a": VmSeen("pg-node-a", "esx-b1", "poweredOn"), "pg-node-b": VmSeen("pg-node-b", "esx-b1", "poweredOff")}
    assert recovery_problems(topology(), replace(seen, hosts=hosts, vms=vms)) == [
        "host esx-a2 is in maintenance mode", "host esx-b2 is notResponding, unknown",
        "VM pg-node-a runs on esx-b1, outside its site site-a", "VM pg-node-b is poweredOff"]


# -- faults: built and planned without contacting anything -----------------------------------
def build(kind: str, target: str, params: dict[str, Any] | None = None, **vcenter: Any) -> Any:
    return registry.build(FaultSpec(kind, target, params or {}), topology(**vcenter))


def never_connected(fault: Any) -> None:
    assert fault.session._si is None


def test_host_shutdown_without_a_bmc_is_refused_unless_the_topology_opts_in() -> None:
    fault = build("host-power-off", "host:esx-a2")
    assert isinstance(fault, HostShutdown)
    plan = fault.plan().render()
    assert "refused: host-power-off on esx-a2 without a BMC would be ShutdownHost_Task(force=True)" in plan
    for step in (fault.preflight, fault.inject):
        with pytest.raises(ConfigError, match=r"(?s)graceful shutdown.*HA may record a clean power-off.*nothing can "
                                              r"power the host on again.*allow_host_shutdown is true"):
            step()
    fault.revert()  # never injected: nothing to wait for
    never_connected(fault)


def test_an_opted_in_host_shutdown_plans_a_revert_that_waits_for_a_person() -> None:
    fault = build("host-power-off", "host:esx-a2", allow_host_shutdown=True)
    plan = fault.plan()
    assert plan.inject_steps == ("ShutdownHost_Task(force=True) on esx-a2 (graceful: HA may not restart its VMs; nothing "
                                 "can power it on again)",)
    assert "a person must power it on" in plan.revert_steps[0] and "at most 900 s" in plan.revert_steps[0]
    assert plan.credentials == ("management.vcenter.credential",)
    never_connected(fault)


def test_maintenance_plans_the_vsan_evacuation_mode_and_its_bounds() -> None:
    fault = build("host-maintenance", "host:esx-a2", {"vsan_mode": "evacuateAllData", "timeout_s": 600.0})
    assert isinstance(fault, HostMaintenance)
    plan = fault.plan()
    assert plan.inject_steps == ("EnterMaintenanceMode_Task(timeout=600, evacuatePoweredOffVms=False, "
                                 "maintenanceSpec.vsanMode.objectAction=evacuateAllData) on esx-a2, waiting at most 600 s",)
    assert "ExitMaintenanceMode_Task" in plan.revert_steps[0]
    never_connected(fault)


def test_vm_migrate_goes_to_vsphere_and_names_the_nodes_vm() -> None:
    spec = FaultSpec("vm-migrate", "node:bench/node-a")
    assert registry.resolve(spec, topology()).platform == "vsphere"
    fault = registry.build(spec, topology())
    assert isinstance(fault, VmMigrate) and fault.vm == "pg-node-a"
    plan = fault.plan()
    assert "RelocateVM_Task of VM pg-node-a to a connected host of another site" in plan.inject_steps[0]
    assert "back to the host it ran on at inject (else esx-a1)" in plan.revert_steps[0]
    with pytest.raises(ConfigError, match=r"params\.to_host: 'esx-z9' is not a host"):
        build("vm-migrate", "node:bench/node-a", {"to_host": "esx-z9"})


def test_vm_migrate_without_a_vm_name_uses_the_nodes_name() -> None:
    raw = document()
    raw["databases"][0]["nodes"][0].pop("vm")
    fault = registry.build(FaultSpec("vm-migrate", "node:bench/node-a"), parse_topology(raw, "unit"))
    assert fault.vm == "node-a"  # type: ignore[attr-defined]


def test_the_default_destination_is_a_usable_host_of_another_site() -> None:
    fault = build("vm-migrate", "node:bench/node-a")
    seen = seen_as_topology()
    assert fault.destination(seen, "esx-a1") == "esx-b1"
    hosts = dict(seen.hosts)
    hosts["esx-b1"] = replace(hosts["esx-b1"], maintenance=True)
    assert fault.destination(replace(seen, hosts=hosts), "esx-a1") == "esx-b2"
    assert build("vm-migrate", "node:bench/node-a", {"to_host": "esx-a2"}).destination(seen, "esx-a1") == "esx-a2"


def test_a_fault_whose_vcenter_cannot_be_read_is_unknown_never_cleared(monkeypatch: pytest.MonkeyPatch,
                                                                       unused_port: int) -> None:
    monkeypatch.setenv("HARNESS_TEST_VC_PW", "not-a-real-password")
    topo = topology(address="127.0.0.1", port=unused_port)
    for kind, target in (("host-maintenance", "host:esx-a2"), ("vm-migrate", "node:bench/node-a")):
        fault = registry.build(FaultSpec(kind, target), topo)
        fault.session.limits = Limits(connect_s=1, read_s=2, attempts=2, retry_total_s=2, backoff_s=0.01)
        assert fault.check() is FaultState.UNKNOWN


@pytest.fixture
def unused_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_sessions_are_shared_per_endpoint_and_built_without_contact() -> None:
    first, second = build("host-maintenance", "host:esx-a2"), build("vm-migrate", "node:bench/node-a")
    assert first.session is second.session
    assert isinstance(first.session, VCenterSession) and first.session._si is None
    assert copy.copy(first.session.where) == "management.vcenter vcsa.example.net:443"
