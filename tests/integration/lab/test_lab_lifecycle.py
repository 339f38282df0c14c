"""Lab up/down for real: idempotent up, cleanup of a half-torn-down lab, down leaves nothing, clear errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from faults import registry
from faults.base import FaultSpec, FaultState
from harness_kernel.errors import ControlPlaneError
from harness_kernel.topology.models import LabSettings
from harness_lab import netns
from harness_lab.controller import Lab
from harness_lab.layout import LabLayout
from tests.integration.lab.lab_support import make_state_dir

PREFIX = "hlabu"
pytestmark = pytest.mark.own_lab  # its subject is a lab of its own: it runs beside the shared lab\'s specs


@pytest.fixture(scope="module")
def spare_lab() -> Iterator[Lab]:
    state = make_state_dir(PREFIX)
    lab = Lab(LabLayout.from_settings(LabSettings(prefix=PREFIX, state_dir=str(state))))
    try:
        yield lab
    finally:
        lab.down()


def leftovers(lab: Lab, pids: list[int]) -> list[str]:
    found = [f"netns {ns}" for ns in netns.existing_namespaces() if ns.startswith(f"{lab.layout.prefix}-")]
    found += [f"link {link}" for link in netns.root_links() if link.startswith(lab.layout.prefix)]
    routes = subprocess.run(["ip", "-4", "route", "show", str(lab.layout.subnet)], capture_output=True, text=True).stdout
    found += [f"route {line}" for line in routes.splitlines() if line.strip()]
    found += [f"pid {pid}" for pid in pids if Path(f"/proc/{pid}").exists() and "Z" not in _state(pid)]
    return found


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return "Z"


def test_up_is_idempotent_and_cleans_a_half_torn_down_lab(spare_lab: Lab) -> None:
    spare_lab.up()
    first_monitor = spare_lab.services.pid("monitor")
    spare_lab.up()  # already complete: nothing rebuilt
    assert spare_lab.services.pid("monitor") == first_monitor
    # Half torn down: the witness namespace gone, the monitor and one node killed, pid files left behind.
    spare_lab.services.kill("monitor")
    spare_lab.services.kill("node-b")
    subprocess.run(["ip", "netns", "del", spare_lab.layout.witness.netns or ""], check=True)
    took = spare_lab.up()
    assert spare_lab.healthy()
    assert spare_lab.status().up
    print(f"\nup over a half-torn-down lab: {took:.1f} s")


ARM_INJECT_AND_DIE = """
import json, os, signal, sys
from faults import registry
from faults.base import FaultSpec
from harness_lab.layout import LabLayout
from harness_kernel.topology.models import LabSettings
settings, spec = LabSettings.model_validate_json(sys.argv[1]), FaultSpec.from_dict(json.loads(sys.argv[2]))
fault = registry.build(spec, LabLayout.from_settings(settings).topology())
fault.arm_deadman(3)
fault.inject()
os.kill(os.getpid(), signal.SIGKILL)  # the harness is gone: no revert, no disarm
"""


def test_deadmans_switch_ends_a_fault_without_the_harness(spare_lab: Lab) -> None:
    spare_lab.up()
    topology = spare_lab.layout.topology()
    spec = FaultSpec("witness-isolation", "witness:witness")
    assert topology.lab is not None
    child = subprocess.run([sys.executable, "-c", ARM_INJECT_AND_DIE, topology.lab.model_dump_json(),
                            json.dumps(spec.to_dict())], capture_output=True, text=True, timeout=60)
    assert child.returncode == -9, child.stderr
    fault = registry.build(spec, topology)
    assert fault.check() is FaultState.IN_EFFECT, "the dead harness left its partition in place"
    deadline = time.monotonic() + 15
    while fault.check() is not FaultState.CLEARED and time.monotonic() < deadline:
        time.sleep(0.5)
    assert fault.check() is FaultState.CLEARED, "the switch on the router removed the rule by itself"
    fault.revert()  # idempotent: nothing left to do


def test_down_leaves_nothing(spare_lab: Lab) -> None:
    spare_lab.up()
    pids = [pid for name in spare_lab.services.names() for pid in spare_lab.services.tree(name)]
    assert pids
    spare_lab.down()
    assert leftovers(spare_lab, pids) == []
    assert not spare_lab.layout.state_dir.exists()
    spare_lab.down()  # idempotent


def test_up_explains_what_is_wrong(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    lab = Lab(LabLayout.from_settings(LabSettings(prefix="hlabv", state_dir=str(closed / "state"))))
    with pytest.raises(ControlPlaneError, match="postgres cannot enter"):
        lab.up()
    monkeypatch.setattr(os, "geteuid", lambda: 65534)  # as an ordinary user
    with pytest.raises(ControlPlaneError, match="needs root"):
        lab.up()
    assert not lab.network.present()
