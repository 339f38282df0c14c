"""The lab's vSphere binding, driven by the production clients: Redfish through the emulator, ESXi over SSH.

The simulator's control API is played here by a stand-in on 127.0.0.1 that records each call
and keeps the hosts' power (the contract's `GET /hosts`, `POST /hosts/<host>/power`,
`POST /disks/<host>/<device>`), so each call the BMCs and ESXi shells make can be asserted; the
real simulator is `test_vsphere_binding_sim.py`'s. Everything else is
real: the lab, its CA, the sushy-tools emulator with the lab's driver, one sshd per host with
the disk fault script, the production `redfish` backend and SSH transport with TLS verified
and host keys pinned, and the simulator's hook (`lab vm ...`) acting on the lab's nodes.

This module brings up a lab of its own (prefix `hvsb1`, or HARNESS_TEST_VSPHERE_LAB_PREFIX);
`python -m harness lab down --prefix hvsb1` removes it by hand.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import pytest

from faults import registry
from faults.base import Fault, FaultSpec, FaultState
from faults.transports.redfish import RedfishClient, endpoint_named
from faults.transports.ssh import SshShell
from faults.transports.ssh import endpoint_named as ssh_endpoint_named
from harness_kernel import procs
from harness_kernel.errors import ControlPlaneError
from harness_kernel.topology.models import Topology
from harness_lab.controller import IO_PAUSE_MAX_S, Lab
from harness_lab.vsphere_binding import Bound, VsphereBinding, hook_command
from harness_platforms.redfish.faults import HostPowerOff, SitePowerOff
from harness_platforms.vsphere.vsan.section import settings as vsan_settings
from tests.integration.lab.lab_support import own_lab
from tests.support.json_http import JsonHandler

PREFIX = os.environ.get("HARNESS_TEST_VSPHERE_LAB_PREFIX", "hvsb1")
pytestmark = pytest.mark.own_lab  # its subject is a lab of its own: it runs beside the shared lab\'s specs


class StandIn:
    """The simulator's control API as the contract gives it; every call recorded."""

    def __init__(self, hosts: list[str]) -> None:
        self.power = dict.fromkeys(hosts, "on")
        self.calls: list[tuple[str, str, dict[str, Any] | None]] = []
        stand_in = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:
                stand_in.calls.append(("GET", self.path, None))
                self.reply([{"name": h, "site": f"site-{h[4]}", "power": p,
                              "connection": "connected" if p == "on" else "notResponding"}
                             for h, p in stand_in.power.items()])

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                stand_in.calls.append(("POST", self.path, body))
                parts = self.path.strip("/").split("/")
                if parts[0] == "hosts" and parts[1] in stand_in.power:
                    stand_in.power[parts[1]] = body["state"]
                self.reply({})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def posts(self) -> list[tuple[str, dict[str, Any] | None]]:
        return [(path, body) for method, path, body in self.calls if method == "POST"]


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    with own_lab(PREFIX) as built:
        yield built


@pytest.fixture(scope="module")
def stand_in() -> Iterator[StandIn]:
    server = StandIn(["esx-a1", "esx-a2", "esx-b1", "esx-b2"])
    yield server
    server.server.shutdown()


@pytest.fixture(scope="module")
def bound(lab: Lab, stand_in: StandIn) -> Bound:
    return VsphereBinding(lab).bind(sdk_url="https://127.0.0.1:1/sdk", control_url=stand_in.url)


@pytest.fixture
def topology(bound: Bound, monkeypatch: pytest.MonkeyPatch) -> Topology:
    for name, value in bound.exports.items():
        monkeypatch.setenv(name, value)
    return bound.topology


def build(cls: type[HostPowerOff] | type[SitePowerOff], spec: FaultSpec, topology: Topology) -> Fault:
    """The fault, with no manager to ask which server a BMC powers: no vCenter runs in this module (its
    address is a closed port); the BMC-to-host binding is the simulator module's to test."""
    resolved = registry.resolve(spec, topology)
    fault: Fault = dataclasses.replace(cls.from_spec(spec, resolved.params, resolved.target, topology), host_identity=None)
    return fault


def test_host_power_off_through_the_bmc_reaches_the_simulator(topology: Topology, stand_in: StandIn) -> None:
    assert registry.resolve(FaultSpec("host-power-off", "host:esx-a1"), topology).platform == "redfish"
    fault = build(HostPowerOff, FaultSpec("host-power-off", "host:esx-a1"), topology)
    fault.preflight()  # type: ignore[attr-defined]
    stand_in.calls.clear()
    started = time.monotonic()
    fault.inject()
    took = time.monotonic() - started
    assert stand_in.posts() == [("/hosts/esx-a1/power", {"state": "off"})]
    assert took < 2.0, f"ForceOff took {took:.2f} s to show as PowerState Off"
    assert fault.check() is FaultState.IN_EFFECT
    fault.revert()
    assert stand_in.posts()[-1] == ("/hosts/esx-a1/power", {"state": "on"})
    assert fault.check() is FaultState.CLEARED
    fault.revert()  # idempotent: nothing more is sent
    assert len(stand_in.posts()) == 2


def test_power_read_by_the_bmc_is_the_simulators(topology: Topology, stand_in: StandIn) -> None:
    """A host powered off by another path (vCenter) shows Off on its BMC too."""
    index, endpoint = endpoint_named(topology, "bmc-esx-b2")
    client = RedfishClient(endpoint, f"management.redfish[{index}]")
    stand_in.power["esx-b2"] = "off"
    try:
        assert client.power_state() == "Off"
    finally:
        stand_in.power["esx-b2"] = "on"
    assert client.power_state() == "On"
    assert {"ForceOff", "On"} <= set(client.allowed_resets())


def test_site_power_off_takes_both_hosts_of_the_site(topology: Topology, stand_in: StandIn) -> None:
    fault = build(SitePowerOff, FaultSpec("site-power-off", "site:site-b"), topology)
    stand_in.calls.clear()
    fault.inject()
    assert stand_in.power == {"esx-a1": "on", "esx-a2": "on", "esx-b1": "off", "esx-b2": "off"}
    fault.revert()
    assert set(stand_in.power.values()) == {"on"}
    assert [p for p, _ in stand_in.posts()] == ["/hosts/esx-b1/power", "/hosts/esx-b2/power"] * 2


def test_the_bmc_is_refused_without_the_lab_ca(topology: Topology) -> None:
    index, endpoint = endpoint_named(topology, "bmc-esx-a1")
    untrusted = endpoint.model_copy(update={"tls": endpoint.tls.model_copy(update={"ca_file": None})})
    with pytest.raises(ControlPlaneError, match="TLS verification failed"):
        RedfishClient(untrusted, f"management.redfish[{index}]").power_state()


def test_the_disk_fault_script_over_esxi_ssh_reaches_the_simulator(topology: Topology, stand_in: StandIn) -> None:
    host = topology.host("esx-b1")
    assert host.ssh is not None
    index, endpoint = ssh_endpoint_named(topology, host.ssh)
    shell = SshShell(endpoint, f"management.ssh[{index}]")
    commands = vsan_settings(topology).disk_faults
    device = host.disk_groups[0].capacity[0]
    stand_in.calls.clear()
    try:
        shell.check(commands.permanent.replace("@DEVICE@", device))
        shell.check(commands.transient.replace("@DEVICE@", device).replace("@SECONDS@", "30"))
        shell.check(commands.clear.replace("@DEVICE@", device))
        bad = shell.run(commands.transient.replace("@DEVICE@", device).replace("@SECONDS@", "0"))
    finally:
        shell.close()
    assert stand_in.posts() == [(f"/disks/esx-b1/{device}", {"fault": "permanent", "seconds": 0}),
                                (f"/disks/esx-b1/{device}", {"fault": "transient", "seconds": 30}),
                                (f"/disks/esx-b1/{device}", {"fault": "clear", "seconds": 0})]
    assert bad.status != 0 and "-t needs -r SECONDS" in bad.stderr


def test_an_esxi_host_key_other_than_the_pinned_one_is_refused(topology: Topology) -> None:
    index, a1 = ssh_endpoint_named(topology, "esxi-esx-a1")
    _, b1 = ssh_endpoint_named(topology, "esxi-esx-b1")
    wrong = a1.model_copy(update={"host_key": b1.host_key})
    with pytest.raises(ControlPlaneError, match="host key does not match"):
        SshShell(wrong, f"management.ssh[{index}]", attempts=1).check("true")


def _hook(lab: Lab, *args: str) -> subprocess.CompletedProcess[str]:
    """The simulator's hook exactly as it runs it."""
    return subprocess.run([*hook_command(lab.layout), *args], capture_output=True, text=True, timeout=60, check=True)


def test_io_pause_stalls_the_nodes_postgres_under_the_detection_time_without_a_failover(lab: Lab) -> None:
    lab.wait_healthy(60)
    primary = lab.primary()
    postgres = [p for p in lab.node_pids(primary) if (procs.PROC / str(p) / "comm").read_text().strip() == "postgres"]
    started_wall = time.time() + lab.clock_offset()
    hook = subprocess.Popen([*hook_command(lab.layout), "io-pause", primary, "10"], stdout=subprocess.PIPE, text=True)
    stopped_seen, started = False, time.monotonic()
    while hook.poll() is None and time.monotonic() - started < 15:
        states = [procs.state(p) for p in postgres]
        stopped_seen |= bool(states) and all(s in ("T", "t", None) for s in states) and any(s is not None for s in states)
        time.sleep(0.05)
    out, _ = hook.communicate(timeout=15)
    took = time.monotonic() - started
    assert hook.returncode == 0 and f"paused {IO_PAUSE_MAX_S:g} s (asked 10 s)" in out
    assert stopped_seen, "the node's postgres processes were never all stopped"
    assert IO_PAUSE_MAX_S - 0.2 < took < IO_PAUSE_MAX_S + 3
    assert all(procs.state(p) not in ("T", "t") for p in postgres if procs.state(p))
    time.sleep(3)  # past the monitor's detection time: no failover followed
    assert lab.primary() == primary
    assert not [e for e in lab.ha_events(started_wall) if "promot" in e.description.lower()]
    lab.wait_healthy(30)


def test_io_load_writes_on_the_sites_storage_and_stops_by_itself(lab: Lab) -> None:
    directory = lab.storage_dir("site-b")
    _hook(lab, "io-load", "site-b", "8", "2")
    assert lab.io_load_running("site-b")
    time.sleep(1.0)
    files = list(directory.glob("resync-load.*"))
    assert len(files) == 1 and files[0].stat().st_size >= 4 * 1024 * 1024
    deadline = time.monotonic() + 10
    while lab.io_load_running("site-b") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not lab.io_load_running("site-b")
    assert not list(directory.glob("resync-load.*"))


def test_io_load_zero_stops_a_running_load(lab: Lab) -> None:
    lab.io_load("site-a", 4, 60)
    assert lab.io_load_running("site-a")
    _hook(lab, "io-load", "site-a", "0", "0")
    assert not lab.io_load_running("site-a")
    assert not list(lab.storage_dir("site-a").glob("resync-load.*"))


def test_power_off_and_on_of_a_vm_kill_and_start_its_node(lab: Lab) -> None:
    lab.wait_healthy(60)
    standby = "node-b" if lab.primary() == "node-a" else "node-a"
    _hook(lab, "power-off", standby)
    assert not lab.node_alive(standby) and not lab.node_pids(standby)
    _hook(lab, "power-on", standby)
    assert lab.node_alive(standby)
    lab.wait_healthy(60)
