"""The lab bound to a vSphere simulator: `python -m harness lab up --vsphere`.

On top of the running lab it starts the simulator (`harness-vsim`: vCenter + vSAN, stretched
across the lab's two sites), the hosts' BMCs (Redfish emulator) and ESXi shells (sshd per
host), and writes a `kind: vsphere` topology that points the production backends at them,
with TLS verified against the lab's CA and credentials by environment reference only.

The simulator drives the lab through its hook, `python -m harness lab vm --prefix P ...`, the
lab's public API: a host losing power kills the lab node whose VM it runs, HA restarts it, a
disk-group failure pauses its I/O, a resync writes on its site's storage. What the lab models
rather than does is in the simulator's `model` (HA delay, I/O pause, resync rate, migration
time); `io_pause_s` is the lab's cap (`IO_PAUSE_MAX_S`): a share of the quickest detection of the HA
manager as the lab configures it (`harness_lab.postgres.io_pause_cap_s`).

Credentials are generated per lab and kept in its private directory (0600); they are printed
as `export` lines for the user's shell and never written into the topology.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness_kernel.errors import ConfigError, ControlPlaneError
from harness_kernel.paths import tools_dir
from harness_kernel.topology.loader import parse_topology
from harness_kernel.topology.models import Topology
from harness_lab.ca import LabCa
from harness_lab.controller import CODE_ROOT, IO_PAUSE_MAX_S, Lab
from harness_lab.esxi import EsxiEndpoint, EsxiShells
from harness_lab.layout import LabLayout, default_state_dir
from harness_lab.redfish_emulator import RedfishEmulator, system_id

DATACENTER = "dc-lab"
CLUSTER = "stretched-01"
SITES = {"site-a": ("esx-a1", "esx-a2"), "site-b": ("esx-b1", "esx-b2")}
PREFERRED = "site-a"
WITNESS = "vsan-witness-01"
WITNESS_SITE = "witness"
VMS = {"node-a": ("pg-node-a", "esx-a1"), "node-b": ("pg-node-b", "esx-b1")}  # node -> (VM, first host)
VM_DISK_GB = 8
MODEL = {"ha_restart_delay_s": 3.0, "resync_rate_mb_s": 40.0, "component_mb": 2048, "io_pause_s": IO_PAUSE_MAX_S,
         "repair_timer_s": 3600, "migration_s": 2.0,
         # a clear after a permanent device error restores it (1) or leaves it failed (0): assumption A-vsan-permanent-clear
         "permanent_clear_heals": 1,
         # the hardware compatibility health group is red (1), as on many labs, or green (0): never judged by preflight
         "hcl_red": 0,
         # vMotion (harness_lab.vmotion): pre-copy of a 2 GB VM over 10 GbE with 2 MB in flight per round trip,
         # the guest dirtying 50 MB/s; then a 1 s stun (capped at IO_PAUSE_MAX_S, under the HA detection time)
         "vm_memory_mb": 2048.0, "vmotion_mb_s": 1250.0, "vmotion_window_mb": 2.0, "dirty_mb_s": 50.0, "stun_s": 1.0,
         # a vSAN IOPS limit (LabCluster.modelled_disk_limit): an operation writing to the limited disk runs at limit x 32 KB/s,
         # vSAN's normalized I/O size (docs/reference/sqlserver-restore-and-vsan-iops-limit.md, 6a-6b)
         "iops_limit_io_kb": 32.0}
VCENTER_USER = "administrator@vsphere.local"
BMC_USER = "harness"
SSH_USER = "root"
SIM_SERVICE = "vsim"
SIM_PASSWORD_ENV = "HARNESS_VSIM_PASSWORD"
# A second vCenter account whose role may read and nothing else: what `doctor` says of an account
# that lacks the privileges the faults need (and what the simulator refuses it).
READONLY_USER = "harness-readonly@vsphere.local"
READONLY_PRIVILEGES = ("System.Anonymous", "System.View", "System.Read")
SIM_READONLY_PASSWORD_ENV = "HARNESS_VSIM_READONLY_PASSWORD"
READY_TIMEOUT_S = 30.0


def disk_group(host: str) -> dict[str, Any]:
    """`esx-a1` -> cache naa.5000c5000a100, capacity naa.5000c5000a101 and ...a102 (one group per host)."""
    tag = host.removeprefix("esx-")
    return {"cache": f"naa.5000c5000{tag}00", "capacity": [f"naa.5000c5000{tag}01", f"naa.5000c5000{tag}02"]}


def hosts() -> list[str]:
    return [h for site in SITES.values() for h in site]


def env_names(prefix: str) -> dict[str, str]:
    """The environment variables the topology references, one set per lab."""
    p = prefix.upper()
    return {"vcenter": f"HARNESS_LAB_{p}_VCENTER_PASSWORD", "bmc": f"HARNESS_LAB_{p}_BMC_PASSWORD",
            "ssh_key": f"HARNESS_LAB_{p}_SSH_KEY", "vcenter_readonly": f"HARNESS_LAB_{p}_VCENTER_READONLY_PASSWORD"}


def simulator_binary() -> Path:
    return tools_dir() / "bin" / "harness-vsim"


def model_with(overrides: Mapping[str, float]) -> dict[str, float]:
    """The lab's model with some parameters changed (a shorter resync for a quick run); unknown names refused."""
    unknown = sorted(set(overrides) - set(MODEL))
    if unknown:
        raise ConfigError(f"unknown model parameter(s) {', '.join(unknown)}; known: {', '.join(sorted(MODEL))}")
    if any(value < 0 for value in overrides.values()):
        raise ConfigError("model parameters are durations, sizes and rates: none may be negative")
    wrong = sorted(name for name, value in overrides.items() if isinstance(MODEL[name], int) and value != int(value))
    if wrong:
        raise ConfigError(f"model parameter(s) {', '.join(wrong)} take whole numbers")
    # the simulator reads whole-number parameters as integers: keep each parameter's own type
    return {**MODEL, **{name: type(MODEL[name])(value) for name, value in overrides.items()}}


def running_model(layout: LabLayout) -> dict[str, float] | None:
    """The model the lab's simulator runs with (None: the lab is not bound to one)."""
    try:
        config = json.loads((layout.state_dir / "vsphere" / "vsim.json").read_text())
    except (OSError, ValueError):
        return None
    model = config.get("model") if isinstance(config, dict) else None
    return {str(k): float(v) for k, v in model.items()} if isinstance(model, dict) else None


def simulator_config(prefix: str, *, hook: list[str], cert_file: Path, key_file: Path, ready_file: Path,
                     model: Mapping[str, float] | None = None, witness_address: str | None = None) -> dict[str, Any]:
    """The simulator's config file (the shared contract's format); the password comes from its environment."""
    return {
        "datacenter": DATACENTER, "cluster": CLUSTER,
        "sites": [{"name": site, "preferred": site == PREFERRED,
                   "hosts": [{"name": h, "disk_groups": [disk_group(h)], "uuid": system_id(prefix, h)} for h in names]}
                  for site, names in SITES.items()],
        "witness": {"name": WITNESS, "site": WITNESS_SITE, **({"address": witness_address} if witness_address else {})},
        "vms": [{"name": vm, "host": host, "node": node, "disk_gb": VM_DISK_GB} for node, (vm, host) in VMS.items()],
        "model": dict(model if model is not None else MODEL),
        "hook": hook,
        "listen": "127.0.0.1:0", "control_listen": "127.0.0.1:0",
        "tls": {"cert": str(cert_file), "key": str(key_file)},
        "username": VCENTER_USER, "password_env": SIM_PASSWORD_ENV,
        "accounts": [{"username": READONLY_USER, "password_env": SIM_READONLY_PASSWORD_ENV,
                      "privileges": list(READONLY_PRIVILEGES)}],
        "ready_file": str(ready_file),
    }


def hook_command(layout: LabLayout) -> list[str]:
    """This Python, this code, this lab: what the simulator runs to act on the lab's nodes."""
    return ["/usr/bin/env", f"PYTHONPATH={CODE_ROOT}", sys.executable, "-m", "harness", "lab", "vm",
            "--prefix", layout.prefix, "--state-dir", str(layout.state_dir)]


@dataclass(frozen=True)
class Endpoints:
    """Where the bound lab's management endpoints listen, and what pins them."""

    vcenter_port: int
    redfish_port: int
    esxi: tuple[EsxiEndpoint, ...]
    router_host_key: str
    ca_file: Path


def topology_document(layout: LabLayout, endpoints: Endpoints) -> dict[str, Any]:
    """The `kind: vsphere` topology of the bound lab, as a document (what `lab up --vsphere` writes)."""
    lab = layout.topology()
    env = env_names(layout.prefix)
    tls = {"verify": True, "ca_file": str(endpoints.ca_file)}
    key_file = {"env": env["ssh_key"]}
    ports = {e.host: e for e in endpoints.esxi}
    subnets = {s.name: list(s.subnets) for s in lab.sites}
    sites = [{"name": site, "subnets": subnets[site],
              "hosts": [{"name": h, "address": "127.0.0.1", "bmc": f"bmc-{h}", "ssh": f"esxi-{h}",
                         "disk_groups": [disk_group(h)]} for h in names]} for site, names in SITES.items()]
    assert lab.witness is not None
    routers = [{"name": r.name, "ssh": r.ssh,
                "links": [{"between": list(link.between), "interfaces": dict(link.interfaces)} for link in r.links]}
               for r in lab.routers]
    databases = []
    for db in lab.databases:
        entry = db.model_dump(mode="json", exclude_none=True, exclude_defaults=True, exclude={"nodes"})
        entry.update(name=db.name, kind=db.kind, endpoint=db.endpoint, database=db.database)
        # the host is where the VM starts (and the site it belongs to); vCenter says where it runs now
        entry["nodes"] = [{"name": n.name, "vm": VMS[n.name][0], "host": VMS[n.name][1], "address": n.address,
                           "port": n.port} for n in db.nodes]
        databases.append(entry)
    router_ssh = lab.management.ssh[0]
    document: dict[str, Any] = {
        "name": f"vsphere-lab-{layout.prefix}",
        "kind": "vsphere",
        "lab": {"prefix": layout.prefix},
        "sites": sites,
        "witness": {"name": WITNESS, "address": lab.witness.address, "site": lab.witness.site or WITNESS_SITE},
        "routers": routers,
        "databases": databases,
        "management": {
            "vcenter": {"address": "127.0.0.1", "port": endpoints.vcenter_port, "datacenter": DATACENTER,
                        "cluster": CLUSTER, "tls": tls,
                        "credential": {"username": VCENTER_USER, "password": {"env": env["vcenter"]}}},
            "vsan": {},  # the disk fault lines VMware documents, as the vsan platform's defaults give them
            "redfish": [{"name": f"bmc-{h}", "address": "127.0.0.1", "port": endpoints.redfish_port,
                         "system_id": system_id(layout.prefix, h), "tls": tls,
                         "credential": {"username": BMC_USER, "password": {"env": env["bmc"]}}} for h in hosts()],
            "ssh": [{"name": router_ssh.name, "address": router_ssh.address, "port": router_ssh.port,
                     "username": router_ssh.username, "key_file": key_file, "host_key": endpoints.router_host_key},
                    *({"name": f"esxi-{h}", "address": "127.0.0.1", "port": ports[h].port, "username": SSH_USER,
                       "key_file": key_file, "host_key": ports[h].host_key} for h in hosts())],
        },
    }
    # Every target: the database VMs' hosts can be any host of their sites (HA moves them), and the lab's links.
    document["allow_list"] = sorted(parse_topology(document, "generated topology").targets())
    return document


@dataclass(frozen=True)
class LabCredentials:
    vcenter_password: str
    bmc_password: str
    vcenter_readonly_password: str

    @classmethod
    def of_lab(cls, directory: Path) -> LabCredentials:
        """This lab's credentials, generated once and kept (0600) so exported variables stay valid."""
        path = directory / "credentials.json"
        raw = json.loads(path.read_text()) if path.exists() else {}
        made = cls(*(raw.get(name) or secrets.token_urlsafe(18) for name in _CREDENTIALS))
        if [raw.get(name) for name in _CREDENTIALS] != [getattr(made, name) for name in _CREDENTIALS]:
            fd = os.open(path.with_suffix(".tmp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as out:
                json.dump({name: getattr(made, name) for name in _CREDENTIALS}, out)
            path.with_suffix(".tmp").replace(path)
        return made


_CREDENTIALS = ("vcenter_password", "bmc_password", "vcenter_readonly_password")


@dataclass(frozen=True)
class Bound:
    topology_file: Path
    topology: Topology
    exports: dict[str, str]
    control_url: str
    took_s: float

    def render_exports(self) -> str:
        return "\n".join(f"export {k}={v}" for k, v in self.exports.items())


class VsphereBinding:
    """The simulator, the BMCs and the ESXi shells of one lab; all lab services, so `Lab.down()` ends them."""

    def __init__(self, lab: Lab, model: Mapping[str, float] | None = None) -> None:
        self.lab = lab
        self.model = model_with(model or {})
        self.directory = lab.layout.state_dir / "vsphere"
        self.ca = LabCa(self.directory / "ca")
        self.emulator = RedfishEmulator(self.directory / "redfish", lab.services)
        self.esxi = EsxiShells(self.directory / "esxi", lab.services)

    @property
    def topology_file(self) -> Path:
        return self.directory / "topology.yaml"

    def up(self, timeout_s: float = 90.0) -> Bound:
        """The lab (idempotent), then the simulator, BMCs and ESXi shells (restarted), and the topology."""
        started = time.monotonic()
        binary = simulator_binary()
        if not os.access(binary, os.X_OK):
            raise ControlPlaneError(f"the vSphere simulator is not built: {binary} (make setup builds it; "
                                    "HARNESS_TOOLS chooses the tools directory)")
        self.lab.up(timeout_s)
        self._prepare()
        sdk, control = self._start_simulator(binary, LabCredentials.of_lab(self.directory))
        return self.bind(sdk_url=sdk, control_url=control, started=started)

    def _prepare(self) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.directory.chmod(0o700)
        self.ca.ensure(self.lab.layout.prefix)

    def bind(self, *, sdk_url: str, control_url: str, started: float | None = None) -> Bound:
        """BMCs and ESXi shells acting on the simulator at `control_url`, and the topology naming `sdk_url`.

        `up()` calls it with the simulator it started; a test may give any control API that
        speaks the simulator's contract.
        """
        started = time.monotonic() if started is None else started
        self._prepare()
        credentials = LabCredentials.of_lab(self.directory)
        redfish = self.emulator.start(prefix=self.lab.layout.prefix, hosts=hosts(), control_url=control_url,
                                      cert_file=self.ca.cert_file, key_file=self.ca.key_file, username=BMC_USER,
                                      password=credentials.bmc_password, pythonpath=str(CODE_ROOT))
        esxi = self.esxi.start(hosts(), control_url=control_url,
                               client_public_key=self.lab.ssh_key_file.with_suffix(".pub"), prefix=self.lab.layout.prefix)
        endpoints = Endpoints(vcenter_port=_port(sdk_url), redfish_port=_port(redfish), esxi=tuple(esxi),
                              router_host_key=self.lab.ssh_host_key, ca_file=self.ca.ca_file)
        document = topology_document(self.lab.layout, endpoints)
        topology = parse_topology(document, str(self.topology_file))
        self.topology_file.write_text(yaml.safe_dump(document, sort_keys=False))
        env = env_names(self.lab.layout.prefix)
        exports = {env["vcenter"]: credentials.vcenter_password, env["bmc"]: credentials.bmc_password,
                   env["ssh_key"]: str(self.lab.ssh_key_file),
                   env["vcenter_readonly"]: credentials.vcenter_readonly_password}
        if self.lab.layout.state_dir != default_state_dir(self.lab.layout.prefix):
            # the topology names the lab by its prefix alone: say where this one keeps its state
            exports["HARNESS_LAB_DIR"] = str(self.lab.layout.state_dir)
        return Bound(self.topology_file, topology, exports, control_url, time.monotonic() - started)

    def _start_simulator(self, binary: Path, credentials: LabCredentials) -> tuple[str, str]:
        services = self.lab.services
        services.kill(SIM_SERVICE)
        ready = self.directory / "vsim-ready.json"
        ready.unlink(missing_ok=True)
        config = self.directory / "vsim.json"
        config.write_text(json.dumps(simulator_config(self.lab.layout.prefix, hook=hook_command(self.lab.layout),
                                                      cert_file=self.ca.cert_file, key_file=self.ca.key_file,
                                                      ready_file=ready, model=self.model,
                                                      witness_address=_witness_address_of(self.lab)), indent=1))
        services.start(SIM_SERVICE, [str(binary), "-config", str(config)], cwd=self.directory,
                       env={SIM_PASSWORD_ENV: credentials.vcenter_password,
                            SIM_READONLY_PASSWORD_ENV: credentials.vcenter_readonly_password,
                            "PYTHONPATH": str(CODE_ROOT)})
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not ready.exists():
            if not services.alive(SIM_SERVICE) or time.monotonic() > deadline:
                tail = "\n".join(services.logfile(SIM_SERVICE).read_text(errors="replace").splitlines()[-10:])
                raise ControlPlaneError(f"vSphere simulator not ready within {READY_TIMEOUT_S:g} s\n{tail}")
            time.sleep(0.05)
        found = json.loads(ready.read_text())
        return str(found["sdk"]), str(found["control"])


def _witness_address_of(lab: Lab) -> str | None:
    witness = lab.layout.topology().witness
    return witness.address if witness is not None else None


def _port(url: str) -> int:
    """The port of `https://127.0.0.1:P/...`."""
    authority = url.split("://", 1)[-1].split("/", 1)[0]
    return int(authority.rsplit(":", 1)[1])
