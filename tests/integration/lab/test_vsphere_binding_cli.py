"""`python -m harness lab up --vsphere` end to end, with a stand-in for the simulator binary.

A stand-in executable for the simulator, placed in a tools directory of the test's own
(HARNESS_TOOLS), does what the contract asks of `harness-vsim` (the real one is
`test_vsphere_binding_sim.py`'s), so its calls can be recorded: it reads
`-config`, takes its password from the variable the config names, serves TLS with the lab's
certificate, serves the control API, writes the ready file, and on a host's power change runs
the hook for the VMs on that host. So the command line, the config, the hook's plumbing, the
printed topology and exports, a host power-off through the production redfish backend reaching
the lab's node, and `lab down` are all checked for real. Prefix `hvsb2` (or
HARNESS_TEST_VSPHERE_CLI_PREFIX).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from faults import registry
from faults.base import FaultSpec, FaultState
from harness_kernel import procs
from harness_kernel.topology.loader import load_topology
from harness_kernel.topology.models import LabSettings, Topology
from harness_lab import netns
from harness_lab.controller import CODE_ROOT, Lab
from harness_lab.layout import LabLayout
from harness_platforms.redfish.faults import HostPowerOff
from tests.integration.lab.lab_support import make_state_dir

PREFIX = os.environ.get("HARNESS_TEST_VSPHERE_CLI_PREFIX", "hvsb2")
pytestmark = pytest.mark.own_lab  # its subject is a lab of its own: it runs beside the shared lab\'s specs

STAND_IN = '''#!{python}
"""Stand-in for harness-vsim (the contract's config, ready file, control API and hook), for tests."""
import json, os, ssl, subprocess, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

config = json.load(open(sys.argv[sys.argv.index("-config") + 1]))
assert os.environ[config["password_env"]], "no password in the environment"
log = open(os.path.join(os.path.dirname(config["ready_file"]), "stand-in-calls.jsonl"), "a", buffering=1)
hosts = {{h["name"]: {{"site": s["name"], "power": "on"}} for s in config["sites"] for h in s["hosts"]}}

def hook(*args):
    done = subprocess.run(config["hook"] + list(args), capture_output=True, text=True, timeout=60)
    log.write(json.dumps({{"hook": list(args), "rc": done.returncode, "err": done.stderr[-300:]}}) + "\\n")

class Control(BaseHTTPRequestHandler):
    def do_GET(self):
        self.reply([{{"name": n, "site": h["site"], "power": h["power"], "connection": "connected"}} for n, h in hosts.items()])
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{{}}")
        log.write(json.dumps({{"post": self.path, "body": body}}) + "\\n")
        parts = self.path.strip("/").split("/")
        if parts[0] == "hosts":
            hosts[parts[1]]["power"] = body["state"]
            for vm in config["vms"]:
                if vm["host"] == parts[1]:
                    hook("power-off" if body["state"] == "off" else "power-on", vm["node"])
        self.reply({{}})
    def reply(self, data):
        raw = json.dumps(data).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(raw))); self.end_headers(); self.wfile.write(raw)
    def log_message(self, *args):
        pass

class Sdk(Control):
    def do_GET(self):
        self.reply({{"sdk": "stand-in"}})

control = ThreadingHTTPServer(("127.0.0.1", 0), Control)
sdk = ThreadingHTTPServer(("127.0.0.1", 0), Sdk)
context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
context.load_cert_chain(config["tls"]["cert"], config["tls"]["key"])
sdk.socket = context.wrap_socket(sdk.socket, server_side=True)
threading.Thread(target=sdk.serve_forever, daemon=True).start()
ready = config["ready_file"]
with open(ready + ".tmp", "w") as out:
    json.dump({{"sdk": f"https://127.0.0.1:{{sdk.server_port}}/sdk", "control": f"http://127.0.0.1:{{control.server_port}}",
               "pid": os.getpid()}}, out)
os.replace(ready + ".tmp", ready)
control.serve_forever()
'''


@dataclass(frozen=True)
class Up:
    lab: Lab
    output: str
    topology_file: Path
    exports: dict[str, str]


def _harness(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", "lab", *args], capture_output=True, text=True, timeout=240,
                          env=env, check=False)


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    tools = tmp_path_factory.mktemp("tools")
    (tools / "bin").mkdir()
    simulator = tools / "bin" / "harness-vsim"
    simulator.write_text(STAND_IN.format(python=sys.executable))
    simulator.chmod(0o755)
    for name in ("toxiproxy-server",):  # the lab's own tools, from the usual place
        source = Path(os.environ.get("HARNESS_TOOLS") or CODE_ROOT / ".tools") / "bin" / name
        if source.exists():
            (tools / "bin" / name).symlink_to(source)
    state = make_state_dir(PREFIX)
    env = {**os.environ, "HARNESS_TOOLS": str(tools), "PYTHONPATH": str(CODE_ROOT)}
    lab = Lab(LabLayout.from_settings(LabSettings(prefix=PREFIX, state_dir=str(state))))
    try:
        done = _harness("up", "--vsphere", "--prefix", PREFIX, "--state-dir", str(state), env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        found = re.search(r"^topology: (\S+)$", done.stdout, re.M)
        assert found, done.stdout
        exports = dict(re.findall(r"^export (\w+)=(\S+)$", done.stdout, re.M))
        yield Up(lab, done.stdout, Path(found.group(1)), exports)
    finally:
        down = _harness("down", "--prefix", PREFIX, "--state-dir", str(state), env=env)
        shutil.rmtree(state, ignore_errors=True)
        assert down.returncode == 0, down.stdout + down.stderr


@pytest.fixture
def topology(up: Up, monkeypatch: pytest.MonkeyPatch) -> Topology:
    for name, value in up.exports.items():
        monkeypatch.setenv(name, value)
    return load_topology(up.topology_file)


def test_lab_up_vsphere_prints_the_topology_and_the_variables_it_references(up: Up, topology: Topology) -> None:
    assert topology.kind == "vsphere" and topology.lab is not None and topology.lab.prefix == PREFIX
    referenced = {ref.env for _, ref in topology.secret_refs()}
    # and where this lab keeps its state, since it is not the default for its prefix (the topology names the prefix)
    # and the read-only vCenter account's password, for a topology that logs in as it (doctor's failing twin)
    assert referenced | {"HARNESS_LAB_DIR", f"HARNESS_LAB_{PREFIX.upper()}_VCENTER_READONLY_PASSWORD"} == set(up.exports)
    assert up.exports["HARNESS_LAB_DIR"] == str(up.lab.layout.state_dir)
    text = up.topology_file.read_text()
    for name, value in up.exports.items():
        if not name.endswith("_SSH_KEY") and name != "HARNESS_LAB_DIR":
            assert value not in text, f"{name}'s value is in the topology"
    credentials = up.topology_file.parent / "credentials.json"
    assert credentials.stat().st_mode & 0o777 == 0o600


def test_the_simulated_vcenter_serves_the_lab_certificate(topology: Topology) -> None:
    import requests

    vcenter = topology.management.vcenter
    assert vcenter is not None and vcenter.tls.ca_file
    reply = requests.get(f"https://127.0.0.1:{vcenter.port}/sdk", verify=vcenter.tls.ca_file, timeout=5)
    assert reply.status_code == 200


def test_host_power_off_through_the_bmc_kills_the_vms_node_and_on_starts_it(up: Up, topology: Topology) -> None:
    """esx-b1 runs pg-node-b (node-b): its BMC's ForceOff reaches the simulator, whose hook kills node-b."""
    lab = up.lab
    lab.wait_healthy(60)
    spec = FaultSpec("host-power-off", "host:esx-b1")
    resolved = registry.resolve(spec, topology)
    # the stand-in serves no vim API: which server a BMC powers is asked of the real simulator
    # (test_vsphere_binding_sim); here nothing is there to ask
    fault = dataclasses.replace(HostPowerOff.from_spec(spec, resolved.params, resolved.target, topology),
                                host_identity=None)
    fault.preflight()
    fault.inject()
    deadline = time.monotonic() + 30
    while lab.node_alive("node-b") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not lab.node_alive("node-b")
    assert all(procs.state(p) in (None, "Z", "X") for p in lab.node_pids("node-b"))  # dead (init reaps, in its time)
    assert fault.check() is FaultState.IN_EFFECT
    fault.revert()
    deadline = time.monotonic() + 30
    while not lab.node_alive("node-b") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert lab.node_alive("node-b")
    lab.wait_healthy(90)
    calls = [json.loads(line) for line in (up.topology_file.parent / "stand-in-calls.jsonl").read_text().splitlines()]
    hooks = [c for c in calls if "hook" in c]
    assert [h["hook"] for h in hooks] == [["power-off", "node-b"], ["power-on", "node-b"]]
    assert all(h["rc"] == 0 for h in hooks), hooks


def test_lab_down_stops_every_part(up: Up) -> None:
    """Checked here before the fixture's own `down`: every service of the binding is a lab service."""
    names = set(up.lab.services.names())
    assert {"vsim", "redfish", "esxi-esx-a1", "esxi-esx-b2"} <= names
    pids = [up.lab.services.pid(n) for n in ("vsim", "redfish", "esxi-esx-a1")]
    assert all(pids)
    env = {**os.environ, "PYTHONPATH": str(CODE_ROOT)}
    done = _harness("down", "--prefix", PREFIX, "--state-dir", str(up.lab.layout.state_dir), env=env)
    assert done.returncode == 0, done.stderr
    assert not [ns for ns in netns.existing_namespaces() if ns.startswith(f"{PREFIX}-")]
    assert all(procs.state(pid) in (None, "Z", "X") for pid in pids if pid)  # dead (init reaps them in its time)
