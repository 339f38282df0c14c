"""The production vsphere and vsan backends through pyVmomi against the vSAN-aware simulator.

Each test acts only through the production clients (registry-built faults, `verify`, `VsanCluster`)
and cross-checks with the simulator's own state (its control API, read-only).
"""

from __future__ import annotations

import secrets
import threading
import time
from pathlib import Path

import pytest

from faults import registry
from faults.base import FaultSpec, FaultState
from faults.transports.vcenter import VCenterSession, close_all, session_for
from harness.safety.journal import Journal
from harness.safety.runner import FaultRunner, RunnerSettings
from harness_kernel.errors import ConfigError, ControlPlaneError
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.management import TlsPolicy
from harness_platforms.vsphere.probes import HOST_FAILED_EVENTS, discover, ha_events, verify, wait_recovered
from harness_platforms.vsphere.vsan.probes import VsanCluster, VsanQuiet, disk_targets
from tests.support.vsim import MODEL, PASSWORD_ENV, SITES, VMS, WITNESS_ADDRESS, Simulator, running, wait_until


def host_state(sim: Simulator, name: str) -> dict[str, str]:
    return next(h for h in sim.get("/hosts") if h["name"] == name)


def vm_host(sim: Simulator, vm: str) -> str:
    return str(next(v for v in sim.get("/state")["vms"] if v["name"] == vm)["host"])


def test_discovery_matches_the_topology(sim: Simulator) -> None:
    seen = verify(sim.topology())
    assert seen.sites == {site: tuple(sorted(hosts)) for site, hosts in SITES.items()}
    assert (seen.witness, seen.preferred_site, seen.datacenter) == ("vsan-witness-01", "site-a", "dc-lab")
    assert {name: (vm.host, vm.power) for name, vm in seen.vms.items() if name in VMS} == {
        vm: (host, "poweredOn") for vm, (host, _) in VMS.items()}
    assert all(h.usable and h.node_uuid and len(h.disk_groups) == 1 for h in seen.hosts.values())
    assert seen.hosts["esx-a1"].disk_groups[0].cache == "naa.5000c5000a100"
    assert set(sim.govc("ls", "/dc-lab/host/stretched-01").split()) >= {
        f"/dc-lab/host/stretched-01/{h}" for hosts in SITES.values() for h in hosts}
    assert {vm: sim.govc_vm_host(vm) for vm in VMS} == {vm: host for vm, (host, _) in VMS.items()}


def test_a_topology_that_does_not_match_is_refused_listing_every_mismatch(sim: Simulator) -> None:
    good = sim.topology()
    raw_sites = [{"name": s.name, "hosts": [h.model_dump(exclude_none=True) for h in s.hosts]} for s in good.sites]
    raw_sites[0]["hosts"][1]["name"] = "esx-a9"
    raw_sites[1]["hosts"][0]["disk_groups"] = [{"cache": "naa.5000c5000b100", "capacity": ["naa.5000c5000b1ff"]}]
    databases = [good.databases[0].model_dump(exclude_none=True)]
    databases[0]["nodes"][1]["vm"] = "pg-node-x"
    bad = sim.topology(sites=raw_sites, databases=databases,
                       witness={"name": "witness-02", "address": WITNESS_ADDRESS, "site": "witness"})
    with pytest.raises(ConfigError) as caught:
        verify(bad)
    text = str(caught.value)
    for expected in ("sites[0].hosts[1].name: cluster 'stretched-01' has no host 'esx-a9'",
                     "vCenter's cluster has host 'esx-a2'",
                     "sites[1].hosts[0].disk_groups: host 'esx-b1' has cache naa.5000c5000b100",
                     "witness.name: the topology names 'witness-02', vCenter's vSAN witness is 'vsan-witness-01'",
                     "databases[0].nodes[1].vm: no VM named 'pg-node-x'"):
        assert expected in text


def test_maintenance_mode_enters_and_leaves_as_vcenter_reports(sim: Simulator) -> None:
    topology = sim.topology(allow_list=["host:esx-a2"])
    fault = registry.build(FaultSpec("host-maintenance", "host:esx-a2", {"timeout_s": 60.0}), topology)
    fault.preflight()  # type: ignore[attr-defined]
    assert fault.check() is FaultState.CLEARED
    fault.inject()
    assert fault.check() is FaultState.IN_EFFECT
    assert discover(session_for(topology), topology).hosts["esx-a2"].maintenance
    assert sim.govc_host("esx-a2")["inMaintenanceMode"] is True
    again = registry.build(FaultSpec("host-maintenance", "host:esx-a2"), topology)
    with pytest.raises(ControlPlaneError, match="host esx-a2 is in maintenance mode; it must be connected"):
        again.preflight()  # type: ignore[attr-defined]
    fault.revert()
    assert fault.check() is FaultState.CLEARED
    assert sim.govc_host("esx-a2")["inMaintenanceMode"] is False
    fault.revert()  # idempotent
    wait_recovered(topology, 30)


def test_vmotion_moves_the_vm_to_the_other_site_timed_and_back(sim: Simulator) -> None:
    topology = sim.topology()
    fault = registry.build(FaultSpec("vm-migrate", "node:bench/node-a"), topology)
    fault.preflight()  # type: ignore[attr-defined]
    assert fault.check() is FaultState.CLEARED
    fault.inject()
    evidence = fault.evidence  # type: ignore[attr-defined]
    assert (evidence["from_host"], evidence["to_host"]) == ("esx-a1", "esx-b1")
    assert MODEL["migration_s"] * 0.8 <= evidence["migration_s"] < MODEL["migration_s"] + 5
    assert fault.check() is FaultState.IN_EFFECT and vm_host(sim, "pg-node-a") == "esx-b1"
    assert sim.govc_vm_host("pg-node-a") == "esx-b1"
    fault.revert()
    assert fault.check() is FaultState.CLEARED and vm_host(sim, "pg-node-a") == "esx-a1"
    assert sim.govc_vm_host("pg-node-a") == "esx-a1"
    assert evidence["back_migration_s"] >= MODEL["migration_s"] * 0.8


def test_vsan_reads_placement_resync_timer_and_health(sim: Simulator) -> None:
    topology = sim.topology()
    vsan = VsanCluster(topology)
    placement = vsan.vm_placement("pg-node-a")
    data = [p for p in placement if p.kind == "Component"]
    assert data and all(p.host in {h for hs in SITES.values() for h in hs} and p.device and p.cache for p in data)
    disks, groups = disk_targets(placement, topology.model_copy(update={"allow_list": []}))
    assert disks and groups
    resync = vsan.resync()
    assert resync.idle and resync.source == "cluster"
    assert vsan.repair_timer_min() == MODEL["repair_timer_s"] / 60  # the API's unit is minutes
    assert vsan.health().overall in ("green", "yellow")
    VsanQuiet(vsan).preflight()


def test_server_clock_is_vcenters(sim: Simulator) -> None:
    session = session_for(sim.topology())
    assert abs(session.server_now() - time.time()) < 5
    assert abs(session.clock_offset()) < 1  # the simulator runs on this machine's clock


def test_a_wrong_password_is_a_configuration_error_naming_the_field_not_the_password(
        sim: Simulator, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_TEST_WRONG_PW", "wrong-password-123")
    topology = sim.topology()
    vcenter = topology.management.vcenter
    assert vcenter is not None
    wrong = vcenter.model_copy(update={"credential": vcenter.credential.model_copy(
        update={"password": vcenter.credential.password.model_copy(update={"env": "HARNESS_TEST_WRONG_PW"})})})
    with pytest.raises(ConfigError, match=r"login refused for 'harness' \(management\.vcenter\.credential\)") as caught:
        VCenterSession(wrong, "vsan.version.version20").si()
    assert "wrong-password-123" not in str(caught.value)


def test_an_untrusted_certificate_is_refused_pointing_at_the_ca_file(sim: Simulator) -> None:
    vcenter = sim.topology().management.vcenter
    assert vcenter is not None
    with pytest.raises(ConfigError, match=r"certificate not trusted .*give the CA in management\.vcenter\.tls\.ca_file"):
        VCenterSession(vcenter.model_copy(update={"tls": TlsPolicy()}), "vsan.version.version20").si()


def test_an_opted_in_host_shutdown_waits_for_a_person_to_power_the_host_on(sim: Simulator) -> None:
    topology = sim.topology(management={**sim.topology().management.model_dump(exclude_none=True),
                                        "vcenter": {**sim.topology().management.vcenter.model_dump(exclude_none=True),  # type: ignore[union-attr]
                                                    "allow_host_shutdown": True}})
    fault = registry.build(FaultSpec("host-power-off", "host:esx-a2"), topology)
    since = session_for(topology).server_now()
    fault.inject()
    assert fault.check() is FaultState.IN_EFFECT
    assert host_state(sim, "esx-a2")["power"] == "off"
    assert sim.govc_host("esx-a2")["connectionState"] != "connected"

    def person() -> None:
        time.sleep(1.0)
        sim.post("/hosts/esx-a2/power", {"state": "on"})
    threading.Thread(target=person, daemon=True).start()
    fault.reconnect_wait_s = 60  # type: ignore[attr-defined]
    fault.revert()
    assert fault.check() is FaultState.CLEARED
    events = ha_events(session_for(topology), since)
    assert all(e.attrs["event"] not in HOST_FAILED_EVENTS for e in events)  # graceful: not what HA sees as a failure
    wait_recovered(topology, 60)


def test_ha_restart_is_seen_in_vcenters_events_and_property_updates(sim: Simulator) -> None:
    """An abrupt power loss (what a BMC's ForceOff does; here the simulator's control API stands in for the BMC):
    vCenter reports the host failure and HA's restart of the VM on the other host of its site, on its own clock."""
    topology = sim.topology()
    session = session_for(topology)
    since = session.server_now()
    vm = session.find("VirtualMachine", "pg-node-a")
    started = time.monotonic()
    sim.post("/hosts/esx-a1/power", {"state": "off"})
    session.wait_for(vm, ["runtime.powerState"], lambda v: str(v["runtime.powerState"]) == "poweredOff",
                     "pg-node-a to lose power with its host", 30)
    session.wait_for(vm, ["runtime.powerState"], lambda v: str(v["runtime.powerState"]) == "poweredOn",
                     "HA to restart pg-node-a", 30)
    restart_s = time.monotonic() - started
    assert MODEL["ha_restart_delay_s"] * 0.8 <= restart_s < MODEL["ha_restart_delay_s"] + 10
    assert vm_host(sim, "pg-node-a") == "esx-a2"  # the other host of its own site
    assert sim.govc_vm_host("pg-node-a") == "esx-a2"
    events = ha_events(session, since)
    kinds = [(e.kind.value, e.attrs.get("host"), e.attrs.get("vm")) for e in events]
    assert ("host-failed", "esx-a1", None) in kinds and ("vm-restarted", "esx-a2", "pg-node-a") in kinds
    detected = next(e for e in events if e.kind.value == "host-failed")
    restarted = next(e for e in events if e.kind.value == "vm-restarted")
    assert since - 1 <= detected.wall <= restarted.wall
    assert ["power-off", "node-a"] in sim.hook_actions()
    sim.post("/hosts/esx-a1/power", {"state": "on"})
    session.wait_for(session.find("HostSystem", "esx-a1"), ["runtime.connectionState"],
                     lambda v: str(v["runtime.connectionState"]) == "connected", "esx-a1 to be connected again", 30)
    wait_recovered(topology, 30)


def test_the_fault_runner_journals_injects_and_reverts_a_vsphere_fault(sim: Simulator, tmp_path: Path) -> None:
    """The harness's own runner drives the production fault: preflight, journal, inject, in effect, revert, entry gone."""
    topology = sim.topology(allow_list=["node:bench/node-b"])
    timeline = Timeline()
    runner = FaultRunner(topology, str(tmp_path / "vsim.yaml"), Journal(tmp_path / "journal"), timeline, "run-1",
                         RunnerSettings(poll_interval_s=0.05, settle_timeout_s=10, revert_timeout_s=30),
                         allow_destructive=True)
    fault = registry.build(FaultSpec("vm-migrate", "node:bench/node-b"), topology)
    with runner.inject(fault, duration_s=30) as active:
        assert active.in_effect_at is not None
        assert sim.govc_vm_host("pg-node-b") == "esx-a1"  # the first usable host of the other site
        assert len(runner.journal.pending()) == 1
    assert runner.journal.pending() == []
    assert sim.govc_vm_host("pg-node-b") == "esx-b1"
    kinds = [e.kind.value for e in timeline.events()]
    assert kinds[:2] == ["inject", "in-effect"] and "reverted" in kinds


@pytest.mark.parametrize("posted", ["legacy", "extended", "both"])
def test_a_host_failure_is_found_whichever_of_its_two_events_vcenter_posts(
        posted: str, tmp_path: Path) -> None:
    """vCenter 8's event catalogue lists DasHostFailedEvent and com.vmware.vc.HA.DasHostFailedEvent; which one
    a failure posts is not documented: either, or both, is one host failure."""
    with pytest.MonkeyPatch.context() as env, running(tmp_path / posted, MODEL, password="x" + posted * 3,
                                                       username="harness", ha_host_failed_event=posted) as sim:
        env.setenv(PASSWORD_ENV, "x" + posted * 3)
        topology = sim.topology()
        session = session_for(topology)
        since = session.server_now()
        sim.post("/hosts/esx-b2/power", {"state": "off"})
        deadline = time.monotonic() + 15
        while not (failed := [e for e in ha_events(session, since) if e.kind.value == "host-failed"]):
            assert time.monotonic() < deadline, f"no host failure seen ({posted})"
            time.sleep(0.2)
        assert {e.attrs.get("host") for e in failed} == {"esx-b2"}
        close_all()


def test_the_vsan_api_version_is_the_newest_the_simulator_offers_that_pyvmomi_speaks(sim: Simulator) -> None:
    """Negotiated from /sdk/vsanServiceVersions.xml over the session's verified TLS (the simulator offers 8.0.0.3
    first); a topology value overrides it."""
    session = VCenterSession(sim.topology().management.vcenter)  # type: ignore[arg-type]
    assert session.negotiate_vsan_version() == "vsan.version.version22"
    assert session.vsan("vsan-cluster-config-system") is not None and session.vsan_spoken == "vsan.version.version22"
    pinned = VCenterSession(sim.topology().management.vcenter, "vsan.version.version20")  # type: ignore[arg-type]
    pinned.vsan("vsan-cluster-config-system")
    assert pinned.vsan_spoken == "vsan.version.version20"
    untrusted = VCenterSession(sim.topology().management.vcenter.model_copy(update={"tls": TlsPolicy()}))  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="certificate not trusted"):
        untrusted.negotiate_vsan_version()


def test_a_vm_that_drs_moves_back_under_its_should_rule_is_reported_so_not_unknown(tmp_path: Path) -> None:
    """Fully automated DRS with per-site "should run on" rules (the simulator moves the VM back after
    drs_move_back_s): the migration's evidence names the automation level and the rule, and once DRS has
    moved it home the check says CLEARED and why, instead of UNKNOWN."""
    password = secrets.token_urlsafe(16)
    with pytest.MonkeyPatch.context() as env:
        env.setenv(PASSWORD_ENV, password)
        with running(tmp_path / "vsim", {**MODEL, "drs_move_back_s": 2.0}, password=password, username="harness") as drs:
            try:
                fault = registry.build(FaultSpec("vm-migrate", "node:bench/node-a"), drs.topology())
                fault.inject()
                evidence = fault.evidence  # type: ignore[attr-defined]
                assert evidence["drs"].startswith("fullyAutomated; should rule ")
                assert "can move VM pg-node-a back to site-a" in evidence["drs"]
                assert fault.check() is FaultState.IN_EFFECT
                wait_until(lambda: fault.check() is FaultState.CLEARED, 15, "DRS to move the VM back")
                assert evidence["moved_back"].startswith("VM pg-node-a is back in site-a on esx-a")
                assert "not moved by the harness: by DRS (fullyAutomated; should rule" in evidence["moved_back"]
                fault.revert()  # nothing left to undo
                assert fault.check() is FaultState.CLEARED
            finally:
                close_all()
