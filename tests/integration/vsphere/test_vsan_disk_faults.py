"""vSAN disk and disk-group faults through the production vsan backend against the simulator.

The faults run VMware's fault script's command lines over SSH with pinned host keys, as on
ESXi: one sshd per simulated host (the lab's ESXi shells), whose script tells the simulator.
Every read (placement, device state, resync, health) goes through pyVmomi to /sdk and /vsanHealth.
"""

from __future__ import annotations

import itertools
import secrets
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from faults import registry
from faults.assumptions import Assumes, AssumptionNotHeldError, ProbeResult, require
from faults.base import FaultSpec, FaultState
from faults.transports.vcenter import close_all
from harness.safety.journal import Journal
from harness.safety.runner import FaultRunner, RunnerSettings
from harness_kernel.errors import ConfigError, ControlPlaneError
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.models import Topology
from harness_lab.esxi import EsxiShells
from harness_lab.services import Services
from harness_platforms.vsphere.assumptions import DISK_FAULT_SCRIPT, PERMANENT_CLEAR, PHYSICAL_DISK_DEVNAME, RESYNC_TYPE_UNSET
from harness_platforms.vsphere.probes import DiskGroupSeen, verify
from harness_platforms.vsphere.vsan import faults as vsan_faults
from harness_platforms.vsphere.vsan.probes import ResyncSummary, VsanCluster, VsanQuiet, disk_targets
from harness_platforms.vsphere.vsan.section import settings as vsan_settings
from tests.support.provenance import MUTATION
from tests.support.vsim import MODEL, PASSWORD_ENV, Simulator, running

KEY_ENV = "HARNESS_TEST_ESXI_KEY"


@contextmanager
def esxi_shells(sim: Simulator, folder: Path) -> Iterator[Topology]:
    """An sshd per simulated host acting on `sim`, and the simulator's topology reaching them (key in KEY_ENV)."""
    folder.mkdir(parents=True, exist_ok=True)
    key = folder / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, timeout=30)
    services = Services(folder / "pids")
    services.directory.mkdir(parents=True, exist_ok=True)
    shells = EsxiShells(folder / "esxi", services)
    hosts = [h.name for h in sim.topology().hosts()]
    try:
        endpoints = shells.start(hosts, control_url=sim.control_url, client_public_key=key.with_suffix(".pub"),
                                 prefix="hvtest")
        topology = sim.topology()
        sites = [{"name": s.name, "hosts": [{**h.model_dump(exclude_none=True), "ssh": f"esxi-{h.name}"}
                                            for h in s.hosts]} for s in topology.sites]
        management = topology.management.model_dump(exclude_none=True)
        management["ssh"] = [{"name": f"esxi-{e.host}", "address": "127.0.0.1", "port": e.port, "username": "root",
                              "key_file": {"env": KEY_ENV}, "host_key": e.host_key} for e in endpoints]
        management["vsan"] = {}  # VMware's documented lines: the section's defaults, as the lab's shells serve them
        with pytest.MonkeyPatch.context() as env:
            env.setenv(KEY_ENV, str(key))
            yield sim.topology(sites=sites, management=management)
    finally:
        for host in hosts:
            services.kill(f"esxi-{host}")


@contextmanager
def another_simulator(folder: Path, model: dict[str, float], esa_hosts: tuple[str, ...] = (),
                      **env: str) -> Iterator[tuple[Simulator, Topology]]:
    """A second simulator with its own model (and environment: a stand-in mutation), and its ESXi shells."""
    password = secrets.token_urlsafe(16)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(PASSWORD_ENV, password)
        for name, value in env.items():
            patch.setenv(name, value)
        with running(folder / "vsim", model, password=password, username="harness", esa_hosts=esa_hosts) as other:
            patch.delenv(MUTATION, raising=False)  # the simulator has it; this process's stand-ins must not
            try:
                with esxi_shells(other, folder / "esxi") as topology:
                    yield other, topology
            finally:
                close_all()


def refused_before_the_journal(topology: Topology, target: str, folder: Path) -> str:
    """What the runner says when it refuses `target`'s disk failure at its assumptions; asserts nothing was journaled."""
    runner = FaultRunner(topology.model_copy(update={"allow_list": [target]}), str(folder / "t.yaml"),
                         Journal(folder / "journal"), Timeline(), "run-a", RunnerSettings(revert_timeout_s=30),
                         allow_destructive=True)
    fault = registry.build(FaultSpec("disk-failure", target), topology)
    with pytest.raises(AssumptionNotHeldError) as refused, runner.inject(fault, duration_s=5):
        pytest.fail("the body must not run")
    assert runner.journal.pending() == []
    return str(refused.value)


@pytest.fixture(scope="module")
def topology(sim: Simulator, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topology]:
    with esxi_shells(sim, tmp_path_factory.mktemp("esxi")) as found:
        yield found


def sample_until_idle(vsan: VsanCluster, timeout_s: float) -> list[tuple[float, ResyncSummary]]:
    samples = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        summary = vsan.resync()
        samples.append((time.monotonic(), summary))
        if summary.idle:
            return samples
        time.sleep(0.2)
    raise AssertionError(f"resync still running after {timeout_s:g} s: {samples[-1][1]}")


def test_a_capacity_disk_holding_the_vm_fails_resyncs_and_clears(sim: Simulator, topology: Topology) -> None:
    vsan = VsanCluster(topology)
    disks, _ = disk_targets(vsan.vm_placement("pg-node-a"), topology)  # found, not guessed
    target = disks[0]
    host = target.split(":", 1)[1].split("/", 1)[0]
    fault = registry.build(FaultSpec("disk-failure", target), topology)
    fault.preflight()  # type: ignore[attr-defined]
    assert fault.evidence["repair_timer_min"] == MODEL["repair_timer_s"] / 60  # type: ignore[attr-defined]
    assert fault.check() is FaultState.CLEARED
    fault.inject()
    assert fault.check() is FaultState.IN_EFFECT
    first = vsan.resync()
    assert first.bytes_left > 0 and first.objects > 0 and first.eta_s is not None
    other = registry.build(FaultSpec("disk-group-failure", f"diskgroup:{host}/0"), topology)
    with pytest.raises(ControlPlaneError, match="vSAN is resynchronising"):
        other.preflight()  # type: ignore[attr-defined]
    with pytest.raises(ControlPlaneError, match="vSAN is resynchronising"):
        VsanQuiet(vsan).preflight()
    samples = sample_until_idle(vsan, 60)
    busy = [(t, x) for t, x in samples if not x.idle]
    assert len(busy) >= 3, samples
    (t0, s0), (t1, s1) = busy[0], busy[-1]
    rate_mib_s = (s0.bytes_left - s1.bytes_left) / (t1 - t0) / 2**20
    assert 0.75 * MODEL["resync_rate_mb_s"] <= rate_mib_s <= 1.25 * MODEL["resync_rate_mb_s"]  # the modelled rate, measured
    assert all(b.bytes_left <= a.bytes_left for (_, a), (_, b) in itertools.pairwise(samples))
    fault.revert()
    assert fault.check() is FaultState.CLEARED
    assert vsan.health().overall in ("green", "yellow")


@pytest.mark.parametrize("rate_mb_s", [60.0, 240.0])
def test_the_modelled_resync_rate_is_the_rate_measured_after_a_disk_fails_over_ssh(rate_mb_s: float,
                                                                                    tmp_path: Path) -> None:
    """Two simulators that differ only in their modelled resync rate: the harness measures each one's."""
    password = secrets.token_urlsafe(16)
    with pytest.MonkeyPatch.context() as env:
        env.setenv(PASSWORD_ENV, password)
        with running(tmp_path / "vsim", {**MODEL, "resync_rate_mb_s": rate_mb_s}, password=password,
                     username="harness") as sim, esxi_shells(sim, tmp_path / "esxi") as topology:
            vsan = VsanCluster(topology)
            disks, _ = disk_targets(vsan.vm_placement("pg-node-a"), topology)
            fault = registry.build(FaultSpec("disk-failure", disks[0]), topology)
            fault.inject()
            try:
                samples = sample_until_idle(vsan, 120)
            finally:
                fault.revert()
            assert fault.check() is FaultState.CLEARED
    busy = [(t, x) for t, x in samples if not x.idle]
    assert len(busy) >= 3, samples
    (t0, s0), (t1, s1) = busy[0], busy[-1]
    measured = (s0.bytes_left - s1.bytes_left) / (t1 - t0) / 2**20
    print(f"\nmodelled {rate_mb_s:g} MiB/s, measured {measured:.1f} MiB/s over {len(busy)} samples")
    assert 0.75 * rate_mb_s <= measured <= 1.25 * rate_mb_s


def test_a_disk_group_fails_through_its_cache_device_and_pauses_the_vms_io(sim: Simulator, topology: Topology) -> None:
    vsan = VsanCluster(topology)
    _, groups = disk_targets(vsan.vm_placement("pg-node-b"), topology)
    target = groups[0]
    sample_until_idle(vsan, 60)
    fault = registry.build(FaultSpec("disk-group-failure", target), topology)
    fault.preflight()  # type: ignore[attr-defined]
    fault.inject()
    assert fault.check() is FaultState.IN_EFFECT
    assert vsan.resync().bytes_left > 0
    paused = ["io-pause", "node-b", f"{MODEL['io_pause_s']:g}"]
    deadline = time.monotonic() + 10  # the simulator runs its hook without waiting for it
    while paused not in sim.hook_actions() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert paused in sim.hook_actions()
    sample_until_idle(vsan, 90)
    fault.revert()
    assert fault.check() is FaultState.CLEARED


def test_an_unplugged_disk_waits_for_the_repair_timer_unless_repaired_now(sim: Simulator, topology: Topology) -> None:
    """Absent components are rebuilt only after the object repair timer (60 min by default): a run shorter than it
    shows no resync, which is vSAN working as designed. "Repair objects immediately" starts it at once."""
    vsan = VsanCluster(topology)
    sample_until_idle(vsan, 60)
    vsan.set_repair_timer_min(30)
    assert vsan.repair_timer_min() == 30
    disks, _ = disk_targets(vsan.vm_placement("pg-node-a"), topology)
    target = disks[-1]
    fault = registry.build(FaultSpec("disk-failure", target, {"mode": "hot-unplug"}), topology)
    fault.preflight()  # type: ignore[attr-defined]
    assert fault.evidence["repair_timer_min"] == 30  # type: ignore[attr-defined]
    fault.inject()
    assert fault.check() is FaultState.IN_EFFECT
    time.sleep(1.0)
    assert vsan.resync().bytes_left == 0  # absent, waiting for the timer
    vsan.repair_now()
    deadline = time.monotonic() + 10
    while vsan.resync().bytes_left == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert vsan.resync().bytes_left > 0
    sample_until_idle(vsan, 60)
    fault.revert()
    assert fault.check() is FaultState.CLEARED
    vsan.set_repair_timer_min(int(MODEL["repair_timer_s"]) // 60)


def test_the_disk_faults_assumptions_hold_on_the_simulator(sim: Simulator, topology: Topology) -> None:
    """Every probe runs read-only and PASSes here. The script's flags are a self-consistency check on the lab: its
    look-alike script was written with the flags the assumption names (no VMware copy can run here)."""
    fault = registry.build(FaultSpec("disk-failure", "disk:esx-b1/naa.5000c5000b101"), topology)
    assert isinstance(fault, Assumes)
    answers = {a.id: p for a, p in require(fault, "disk-failure", "disk:esx-b1/naa.5000c5000b101")}
    assert answers[DISK_FAULT_SCRIPT.id].result is ProbeResult.PASS, answers
    assert "lists -c -d -p" in answers[DISK_FAULT_SCRIPT.id].seen
    assert answers[RESYNC_TYPE_UNSET.id].result is ProbeResult.PASS, answers
    assert answers[PHYSICAL_DISK_DEVNAME.id].result is ProbeResult.PASS, answers


def test_a_fault_whose_assumption_does_not_hold_is_refused_naming_it_and_nothing_is_injected(
        sim: Simulator, topology: Topology, tmp_path: Path) -> None:
    """A host whose script is elsewhere (here: a name the host does not have) fails the probe: refused before the
    journal, the device untouched."""
    lines = {mode: line.replace("vsanDiskFaultInjection.pyc", "vsanDiskFaultInjector.pyc")
             for mode, line in vsan_settings(topology).disk_faults.model_dump().items()}
    management = {**topology.management.model_dump(exclude_none=True), "vsan": {"disk_faults": lines}}
    elsewhere = sim.topology(sites=[s.model_dump(exclude_none=True) for s in topology.sites], management=management,
                             allow_list=["disk:esx-b1/naa.5000c5000b101"])
    runner = FaultRunner(elsewhere, str(tmp_path / "t.yaml"), Journal(tmp_path / "journal"), Timeline(), "run-a",
                         RunnerSettings(revert_timeout_s=30), allow_destructive=True)
    fault = registry.build(FaultSpec("disk-failure", "disk:esx-b1/naa.5000c5000b101"), elsewhere)
    with pytest.raises(AssumptionNotHeldError, match=f"assumption {DISK_FAULT_SCRIPT.id} .* is fail on this cluster"), \
            runner.inject(fault, duration_s=5):
        pytest.fail("the body must not run")
    assert runner.journal.pending() == []
    assert fault.check() is FaultState.CLEARED, "nothing was injected"


def test_a_cluster_whose_disk_list_has_no_devname_refuses_disk_faults_naming_the_assumption(tmp_path: Path) -> None:
    """The simulator mutated to answer QueryPhysicalVsanDisks without devName (under another key): the probe
    FAILs, the runner refuses before journaling, and the device is never touched."""
    target = "disk:esx-b1/naa.5000c5000b101"
    with another_simulator(tmp_path, MODEL, **{MUTATION: "vsim/physical_disk.device_name"}) as (_, topology):
        said = refused_before_the_journal(topology, target, tmp_path)
        assert f"assumption {PHYSICAL_DISK_DEVNAME.id}" in said and "is fail on this cluster" in said
        assert "without devName" in said
        disks = VsanCluster(topology).physical_disks("esx-b1")
        assert all(d.health_flags == 0 for d in disks.values()), "nothing was injected"


def test_a_permanent_error_that_outlives_its_clear_fails_the_revert_with_the_manual_remedy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Modelled both ways (permanent_clear_heals 0 here): the check never says CLEARED for a failed device, and
    the revert says what to do by hand. The dry-run's plan warns before anything runs."""
    target = "disk:esx-b1/naa.5000c5000b101"
    monkeypatch.setattr(vsan_faults, "PERMANENT_CLEAR_S", 2.0)
    with another_simulator(tmp_path, {**MODEL, "permanent_clear_heals": 0}) as (_, topology):
        fault = registry.build(FaultSpec("disk-failure", target, {"mode": "permanent"}), topology)
        assert f"warning: whether the clear restores naa.5000c5000b101 after a permanent error is not documented " \
               f"({PERMANENT_CLEAR.id})" in fault.plan().render()
        fault.inject()
        assert fault.check() is FaultState.IN_EFFECT
        with pytest.raises(ControlPlaneError, match=r"still shows naa.5000c5000b101 failed or absent .* must be removed from "
                                                    "its disk group on esx-b1 and claimed again"):
            fault.revert()
        assert fault.check() is FaultState.IN_EFFECT, "a failed device is never reported cleared"


def test_a_red_hardware_compatibility_group_never_blocks_a_run_and_the_judged_groups_are_named(tmp_path: Path) -> None:
    """Overall health red from the HCL group alone (as on many labs): the preflight judges objects and resync
    live, network and cluster from the cached summary, and lets the run start."""
    with another_simulator(tmp_path, {**MODEL, "hcl_red": 1}) as (_, topology):
        vsan = VsanCluster(topology)
        assert vsan.health().overall == "red"
        judged = VsanQuiet(vsan).preflight()
        assert judged.groups == ("com.vmware.vsan.health.test.network", "com.vmware.vsan.health.test.cluster")
        assert judged.objects and set(judged.objects) == {"healthy"} and judged.warnings == []
        assert judged.describe().startswith("objects ") and "network, cluster from the cached summary" in \
            judged.describe()


def test_objects_are_judged_live_so_a_host_lost_after_the_last_health_run_refuses_the_run(tmp_path: Path) -> None:
    with another_simulator(tmp_path, MODEL) as (other, topology):
        vsan = VsanCluster(topology)
        VsanQuiet(vsan).preflight()  # the cached summary now says all green
        other.post("/hosts/esx-b1/power", {"state": "off"})  # it holds components of both VMs
        with pytest.raises(ControlPlaneError, match=r"vSAN objects are not healthy \(\d+ reducedavailability"):
            VsanQuiet(vsan).preflight()
        assert vsan.cached_health().groups["com.vmware.vsan.health.test.network"].health == "green", \
            "the cached summary still predates the loss"


def test_where_the_cluster_summary_is_refused_the_resync_is_read_from_each_hosts_view(tmp_path: Path) -> None:
    """An older or degraded vCenter answering the summary with NotSupported: every connected host is asked
    (QuerySyncingVsanObjects, as RVC's resync dashboard does) and the figures agree with the modelled queue."""
    with another_simulator(tmp_path, {**MODEL, "resync_summary_refused": 1}) as (_, topology):
        vsan = VsanCluster(topology)
        assert vsan.resync() == ResyncSummary(0, 0, None, source="hosts")
        fault = registry.build(FaultSpec("disk-failure", "disk:esx-b1/naa.5000c5000b101"), topology)
        fault.inject()
        try:
            seen = vsan.resync()
            assert seen.source == "hosts" and seen.objects > 0 and seen.components > 0
            assert seen.bytes_left > 0 and seen.eta_s is not None and seen.eta_s > 0
        finally:
            fault.revert()


def test_an_esa_hosts_storage_pool_is_its_devices_and_disk_faults_on_it_are_refused_plainly(tmp_path: Path) -> None:
    """esx-b2 runs vSAN ESA: no disk mappings, its devices listed by QueryVsanManagedDisks' storage pool. The
    topology (its devices, no cache) verifies; a disk failure there is refused, saying why, before anything runs."""
    with another_simulator(tmp_path, MODEL, esa_hosts=("esx-b2",)) as (_, topology):
        seen = verify(topology)
        assert seen.hosts["esx-b2"].esa and not seen.hosts["esx-b1"].esa
        assert seen.hosts["esx-b2"].disk_groups == (
            DiskGroupSeen(None, ("naa.5000c5000b200", "naa.5000c5000b201", "naa.5000c5000b202")),)
        target = "disk:esx-b2/naa.5000c5000b201"
        fault = registry.build(FaultSpec("disk-failure", target), topology)
        assert "esx-b2 is a vSAN ESA host (a storage pool, no disk groups)" in fault.plan().render()
        with pytest.raises(ConfigError, match="disk faults are supported on OSA disk groups only"):
            fault.preflight()  # type: ignore[attr-defined]
        with pytest.raises(ConfigError, match="nothing is injected on ESA"):
            fault.inject()
        assert fault.check() is FaultState.CLEARED


def test_where_an_unset_resync_filter_counts_nothing_the_probe_fails_and_names_the_assumption(tmp_path: Path) -> None:
    """The simulator mutated so that a filter without resyncType matches no reason: while a rebuild runs, the
    unset totals (0) differ from the sum over the reasons, the probe FAILs and the fault is refused by name."""
    with another_simulator(tmp_path, MODEL, **{MUTATION: "vsim/sync_reason.unset_matches_all"}) as (_, topology):
        busy = registry.build(FaultSpec("disk-failure", "disk:esx-a1/naa.5000c5000a101"), topology)
        busy.inject()  # a permanent error: its components are rebuilt at once
        try:
            assert VsanCluster(topology).resync().idle, "the unset summary misses the rebuild: the danger guarded"
            fault = registry.build(FaultSpec("disk-failure", "disk:esx-b1/naa.5000c5000b101"), topology)
            assert isinstance(fault, Assumes)
            with pytest.raises(AssumptionNotHeldError, match=f"assumption {RESYNC_TYPE_UNSET.id} .* is fail on this "
                                                             r"cluster: unset: 0 objects; by reason: [1-9]"):
                require(fault, "disk-failure", "disk:esx-b1/naa.5000c5000b101")
            assert fault.check() is FaultState.CLEARED, "nothing was injected"
        finally:
            busy.revert()
