"""The vSphere simulator (`harness-vsim`, with `govc` beside it) started for a test, and ways to talk to it.

One place for what the simulator suites share: where the binaries are (the tools directory,
`HARNESS_TOOLS`), when a test skips for want of them (never when `HARNESS_REQUIRE_VSIM` is set:
then it fails), the stretched cluster the lab runs (`harness_lab.vsphere_binding.simulator_config`), TLS
from a CA made per run (`harness_lab.ca.LabCa`, so clients verify the certificate as they would
vCenter's), and a process started and stopped within a bounded time.

The simulator listens on 127.0.0.1 only and reads its password from its environment. Its hook
(what the lab does when a VM loses power or pauses) is a script that appends each call's
arguments to a file the test reads; it refuses to run with the vCenter password in its environment.
"""

from __future__ import annotations

import json
import os
import secrets
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness_kernel.topology.loader import parse_topology
from harness_kernel.topology.models import Topology
from harness_lab import vsphere_binding as lab
from harness_lab.ca import LabCa

REQUIRE_ENV = "HARNESS_REQUIRE_VSIM"
PASSWORD_ENV = lab.SIM_PASSWORD_ENV
USERNAME = lab.VCENTER_USER
READONLY_PASSWORD_ENV, READONLY_USER = lab.SIM_READONLY_PASSWORD_ENV, lab.READONLY_USER
DATACENTER, CLUSTER, WITNESS = lab.DATACENTER, lab.CLUSTER, lab.WITNESS
SITES = {site: list(hosts) for site, hosts in lab.SITES.items()}
VMS = {vm: (host, node) for node, (vm, host) in lab.VMS.items()}  # VM -> (first host, lab node)
READY_TIMEOUT_S = 60.0
WITNESS_ADDRESS = "192.0.2.9"  # its management address in the simulator and the tests' topology (RFC 5737: never contacted)
STOP_TIMEOUT_S = 10.0

HOOK_SCRIPT = (
    f"import os, sys; assert {PASSWORD_ENV!r} not in os.environ and {lab.SIM_READONLY_PASSWORD_ENV!r} not in os.environ; "
    "open(sys.argv[1], 'a').write(' '.join(sys.argv[2:]) + '\\n')"
)

# The simulator's model for the integration tests: short HA delay, fast resync, small components.
MODEL = {"ha_restart_delay_s": 2.0, "resync_rate_mb_s": 200.0, "component_mb": 256, "io_pause_s": 1.0,
         "repair_timer_s": 3600, "migration_s": 1.5}


def device(host: str, n: int) -> str:
    """Canonical name of a host's device: 0 is the cache device, 1 and 2 the capacity devices."""
    group = lab.disk_group(host)
    return str([group["cache"], *group["capacity"]][n])


def simulator_binary() -> Path:
    return lab.simulator_binary()


def govc_binary() -> Path:
    """govc, built by `make setup` from the simulator's module into the same folder."""
    return simulator_binary().with_name("govc")


def missing(*, govc: bool = False) -> str | None:
    """Why the simulator tests cannot run here (which binary is not built), or None."""
    wanted = [simulator_binary(), *([govc_binary()] if govc else [])]
    absent = [str(path) for path in wanted if not os.access(path, os.X_OK)]
    if not absent:
        return None
    return f"not built: {', '.join(absent)} (make setup builds them; HARNESS_TOOLS chooses the tools directory)"


def require(*, govc: bool = False) -> None:
    """Skip the test when a binary is not built, saying which; with HARNESS_REQUIRE_VSIM set, fail instead."""
    reason = missing(govc=govc)
    if reason is None:
        return
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{reason}; {REQUIRE_ENV} is set, so this is a failure, not a skip", pytrace=False)
    pytest.skip(f"{reason}; set {REQUIRE_ENV}=1 to make this a failure")


@dataclass(frozen=True)
class Simulator:
    """A running simulator: where it listens, how to log in, what it models and what its hook was told."""

    sdk_url: str
    control_url: str
    ca_file: Path
    hook_log: Path
    directory: Path
    username: str
    password: str
    readonly_password: str  # of lab.READONLY_USER, whose role may only read
    model: dict[str, float]
    esa_hosts: tuple[str, ...] = ()  # vSAN ESA hosts: one storage pool, no cache device

    @property
    def port(self) -> int:
        return int(self.sdk_url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def get(self, path: str) -> Any:
        """GET on the control API (loopback only); the JSON it answers."""
        with urllib.request.urlopen(self.control_url + path, timeout=10) as reply:
            return json.load(reply)

    def post(self, path: str, body: dict[str, Any]) -> Any:
        """POST a JSON body to the control API; the JSON it answers, None for an empty answer."""
        request = urllib.request.Request(self.control_url + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as reply:
            text = reply.read()
        return json.loads(text) if text.strip() else None

    def hook_calls(self) -> list[str]:
        """The hook's calls so far, one line each (`power-off node-a`)."""
        if not self.hook_log.exists():
            return []
        return [line for line in self.hook_log.read_text().splitlines() if line.strip()]

    def hook_actions(self) -> list[list[str]]:
        """The hook's calls so far, each split into words."""
        return [line.split() for line in self.hook_calls()]

    def govc(self, *args: str) -> str:
        """govc (govmomi, a client we did not write) against this simulator, TLS verified; its output."""
        env = {**os.environ, "GOVC_URL": self.sdk_url, "GOVC_USERNAME": self.username,
               "GOVC_PASSWORD": self.password, "GOVC_TLS_CA_CERTS": str(self.ca_file), "GOVC_PERSIST_SESSION": "false",
               "GOVMOMI_HOME": str(self.ca_file.parent / "govmomi")}
        env.pop("GOVC_INSECURE", None)
        done = subprocess.run([str(govc_binary()), *args], env=env, capture_output=True, text=True, timeout=30,
                              check=False)
        assert done.returncode == 0, f"govc {' '.join(args)}: {done.stderr[-500:]}"
        return done.stdout

    def govc_host(self, name: str) -> dict[str, Any]:
        """govc's view of a host's runtime (inMaintenanceMode, connectionState, powerState)."""
        info = json.loads(self.govc("host.info", "-json", f"/{DATACENTER}/host/{CLUSTER}/{name}"))
        runtime: dict[str, Any] = info["hostSystems"][0]["runtime"]
        return runtime

    def govc_vm_host(self, vm: str) -> str:
        """The host govc says runs `vm` (its `vm.info` "Host:" line)."""
        for line in self.govc("vm.info", vm).splitlines():
            if line.strip().startswith("Host:"):
                return line.split(":", 1)[1].strip()
        raise AssertionError(f"govc vm.info {vm}: no Host line")

    def topology(self, **changes: Any) -> Topology:
        """A `kind: vsphere` topology of this simulator (TLS verified against its CA; top-level keys replaced)."""
        raw: dict[str, Any] = {
            "name": "vsim", "kind": "vsphere",
            "sites": [{"name": site, "hosts": [{"name": h, "address": "127.0.0.1", "disk_groups": [disk_group(h, self.esa_hosts)]}
                                               for h in hosts]} for site, hosts in SITES.items()],
            "witness": {"name": WITNESS, "address": WITNESS_ADDRESS, "site": lab.WITNESS_SITE},
            "databases": [{"name": "bench", "kind": "postgres", "endpoint": "127.0.0.1", "port": 5432,
                           "database": "bench",
                           "nodes": [{"name": node, "host": host, "vm": vm} for vm, (host, node) in VMS.items()]}],
            "management": {"vcenter": {"address": "127.0.0.1", "port": self.port, "cluster": CLUSTER,
                                       "datacenter": DATACENTER, "tls": {"ca_file": str(self.ca_file)},
                                       "credential": {"username": self.username, "password": {"env": PASSWORD_ENV}}}},
            "allow_list": [],
        }
        raw.update(changes)
        return parse_topology(raw, "vsim")


def disk_group(host: str, esa_hosts: tuple[str, ...]) -> dict[str, Any]:
    """The lab's disk group of `host`; on an ESA host, its devices as one storage pool (no cache)."""
    group = lab.disk_group(host)
    return {"capacity": [group["cache"], *group["capacity"]]} if host in esa_hosts else group


def write_config(directory: Path, model: Mapping[str, float], username: str,
                 ha_host_failed_event: str = "legacy", esa_hosts: tuple[str, ...] = (),
                 site_local_vms: tuple[str, ...] = ()) -> tuple[Path, LabCa]:
    """The lab's simulator config (its cluster, this model, the recording hook) and its TLS, in `directory`."""
    ca = LabCa(directory / "tls")
    ca.ensure("harness-vsim test")
    config = lab.simulator_config("test", hook=[sys.executable, "-c", HOOK_SCRIPT, str(directory / "hook.log")],
                                  cert_file=ca.cert_file, key_file=ca.key_file, ready_file=directory / "ready.json",
                                  model=model, witness_address=WITNESS_ADDRESS)
    config["username"] = username
    config["ha_host_failed_event"] = ha_host_failed_event
    for vm in config["vms"]:
        if vm["name"] in site_local_vms:
            vm["policy"] = "site-local"  # both mirrors in the VM's own site
    for site in config["sites"]:
        for host in site["hosts"]:
            if host["name"] in esa_hosts:
                host.update(esa=True, disk_groups=[{"cache": "", **disk_group(host["name"], esa_hosts)}])
    config_file = directory / "vsim.json"
    config_file.write_text(json.dumps(config, indent=2))
    return config_file, ca


@contextmanager
def running(directory: Path, model: Mapping[str, float], *, password: str | None = None,
            username: str = USERNAME, ha_host_failed_event: str = "legacy",
            esa_hosts: tuple[str, ...] = (), site_local_vms: tuple[str, ...] = ()) -> Iterator[Simulator]:
    """Start the simulator (config, TLS and log in `directory`), wait for its ready file (bounded), then stop it.

    Skips (or fails, see `require`) when the simulator is not built. On the way out the process
    is terminated and waited for (killed if it does not stop), and its log must not hold the password.
    """
    require()
    directory.mkdir(parents=True, exist_ok=True)
    password = password or secrets.token_urlsafe(16)
    readonly_password = secrets.token_urlsafe(16)
    config_file, ca = write_config(directory, model, username, ha_host_failed_event, esa_hosts, site_local_vms)
    ready_file, log_file = directory / "ready.json", directory / "vsim.log"
    with log_file.open("wb") as log:
        process = subprocess.Popen([str(simulator_binary()), "-config", str(config_file)], stdout=log,
                                   stderr=subprocess.STDOUT, env={**os.environ, PASSWORD_ENV: password,
                                                                          READONLY_PASSWORD_ENV: readonly_password},
                                   start_new_session=True)
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not ready_file.exists():
            if process.poll() is not None:
                raise RuntimeError(f"harness-vsim exited with {process.returncode}: {log_file.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"harness-vsim not ready in {READY_TIMEOUT_S:g} s: {log_file.read_text()[-2000:]}")
            time.sleep(0.02)
        ready = json.loads(ready_file.read_text())
        yield Simulator(sdk_url=str(ready["sdk"]), control_url=str(ready["control"]).rstrip("/"), ca_file=ca.ca_file,
                        hook_log=directory / "hook.log", directory=directory, username=username, password=password,
                        readonly_password=readonly_password, model=dict(model), esa_hosts=esa_hosts)
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=STOP_TIMEOUT_S)
        logged = log_file.read_text(errors="replace")
        if password in logged or readonly_password in logged:
            raise AssertionError("the simulator logged a password")


def wait_until(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    """Polls predicate() until it returns a true value (returned) or timeout seconds pass (AssertionError)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)
