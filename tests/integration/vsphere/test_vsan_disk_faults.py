"""vSAN disk and disk-group faults through the production vsan backend against the simulator.

The ESXi SSH endpoints (one sshd per simulated host) are not here yet: until they are, the host's
shell is a local one that runs a stand-in of the fault script taking the real script's flags
(`-p | -t -r SECS | -u | -c -d DEVICE`) and telling the simulator, as the lab's script will. Every
read (placement, device state, resync, health) goes through pyVmomi to /sdk and /vsanHealth.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

from faults import registry
from faults.backends.vsan import ResyncSummary, VsanCluster, VsanQuiet, disk_targets
from faults.base import FaultSpec, FaultState
from faults.transports.shell import CommandResult, LocalShell
from harness.errors import ControlPlaneError
from harness.topology.models import Topology
from tests.integration.vsphere.conftest import MODEL
from tests.support.vsim import Simulator

SCRIPT = """\
import argparse, json, os, urllib.request
p = argparse.ArgumentParser()
g = p.add_mutually_exclusive_group(required=True)
g.add_argument("-p", action="store_true"); g.add_argument("-t", action="store_true")
g.add_argument("-u", action="store_true"); g.add_argument("-c", action="store_true")
p.add_argument("-r", type=float, default=0); p.add_argument("-d", required=True)
a = p.parse_args()
fault = "permanent" if a.p else "transient" if a.t else "unplug" if a.u else "clear"
body = json.dumps({"fault": fault, "seconds": a.r}).encode()
url = os.environ["VSIM_CONTROL"] + "/disks/" + os.environ["VSIM_HOST"] + "/" + a.d
urllib.request.urlopen(urllib.request.Request(url, data=body, method="POST"), timeout=10).read()
"""


class HostShell(LocalShell):
    """The stand-in ESXi shell of one simulated host: commands run here, knowing which host they are on."""

    def __init__(self, sim: Simulator, host: str) -> None:
        super().__init__()
        self.prefix = f"VSIM_CONTROL={sim.control_url} VSIM_HOST={host} "
        self.host = host

    @property
    def where(self) -> str:
        return f"stand-in shell of {self.host}"

    def run(self, command: str, *, input_text: str | None = None, timeout_s: float | None = None) -> CommandResult:
        return super().run(self.prefix + command, input_text=input_text, timeout_s=timeout_s)


def with_script(sim: Simulator, folder: Path) -> Topology:
    script = folder / "vsanfault.py"
    script.write_text(SCRIPT)
    line = f"python3 {script}"  # a plain-words command line, as the topology requires
    topology = sim.topology()
    raw_sites = [{"name": s.name, "hosts": [h.model_dump(exclude_none=True) for h in s.hosts]} for s in topology.sites]
    management = topology.management.model_dump(exclude_none=True)
    management["vsan"] = {"disk_faults": {"permanent": f"{line} -p -d @DEVICE@", "unplug": f"{line} -u -d @DEVICE@",
                                          "transient": f"{line} -t -r @SECONDS@ -d @DEVICE@",
                                          "clear": f"{line} -c -d @DEVICE@"}}
    return sim.topology(sites=raw_sites, management=management)


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


def test_a_capacity_disk_holding_the_vm_fails_resyncs_and_clears(sim: Simulator, tmp_path: Path) -> None:
    topology = with_script(sim, tmp_path)
    vsan = VsanCluster(topology)
    disks, _ = disk_targets(vsan.vm_placement("pg-node-a"), topology)  # found, not guessed
    target = disks[0]
    host = target.split(":", 1)[1].split("/", 1)[0]
    fault = registry.build(FaultSpec("disk-failure", target), topology)
    fault.shell = HostShell(sim, host)  # type: ignore[attr-defined]
    fault.preflight()  # type: ignore[attr-defined]
    assert fault.evidence["repair_timer_s"] == MODEL["repair_timer_s"]  # type: ignore[attr-defined]
    assert fault.check() is FaultState.CLEARED
    fault.inject()
    assert fault.check() is FaultState.IN_EFFECT
    first = vsan.resync()
    assert first.bytes_left > 0 and first.objects > 0 and first.eta_s is not None
    other = registry.build(FaultSpec("disk-group-failure", f"diskgroup:{host}/0"), topology)
    other.shell = HostShell(sim, host)  # type: ignore[attr-defined]
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


def test_a_disk_group_fails_through_its_cache_device_and_pauses_the_vms_io(sim: Simulator, tmp_path: Path) -> None:
    topology = with_script(sim, tmp_path)
    vsan = VsanCluster(topology)
    _, groups = disk_targets(vsan.vm_placement("pg-node-b"), topology)
    target = groups[0]
    host = target.split(":", 1)[1].split("/", 1)[0]
    sample_until_idle(vsan, 60)
    fault = registry.build(FaultSpec("disk-group-failure", target), topology)
    fault.shell = HostShell(sim, host)  # type: ignore[attr-defined]
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


def test_an_unplugged_disk_waits_for_the_repair_timer_unless_repaired_now(sim: Simulator, tmp_path: Path) -> None:
    """Absent components are rebuilt only after the object repair timer (60 min by default): a run shorter than it
    shows no resync, which is vSAN working as designed. "Repair objects immediately" starts it at once."""
    topology = with_script(sim, tmp_path)
    vsan = VsanCluster(topology)
    sample_until_idle(vsan, 60)
    vsan.set_repair_timer(1800)
    assert vsan.repair_timer() == 1800
    disks, _ = disk_targets(vsan.vm_placement("pg-node-a"), topology)
    target = disks[-1]
    host = target.split(":", 1)[1].split("/", 1)[0]
    fault = registry.build(FaultSpec("disk-failure", target, {"mode": "hot-unplug"}), topology)
    fault.shell = HostShell(sim, host)  # type: ignore[attr-defined]
    fault.preflight()  # type: ignore[attr-defined]
    assert fault.evidence["repair_timer_s"] == 1800  # type: ignore[attr-defined]
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
    vsan.set_repair_timer(int(MODEL["repair_timer_s"]))
