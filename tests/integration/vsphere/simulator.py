"""The vSAN-aware vCenter simulator (harness/lab/vsim) started for one test module, and a topology pointing at it.

The simulator listens on 127.0.0.1 only, serves TLS with a CA made here, and reads its password
from the environment. Its hook (what the lab does when a VM loses power) is a small script that
records the actions, so these tests need neither the lab nor root. The production clients are
the only thing that talks to /sdk and /vsanHealth; the control API is read to cross-check, and
written only where a person would act (powering a host on by hand).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from harness.topology.loader import parse_topology
from harness.topology.models import Topology

PASSWORD_ENV = "HARNESS_VSIM_PASSWORD"
SITES = {"site-a": ("esx-a1", "esx-a2"), "site-b": ("esx-b1", "esx-b2")}
VMS = {"pg-node-a": ("esx-a1", "node-a"), "pg-node-b": ("esx-b1", "node-b")}
READY_S = 60.0


def binary() -> str | None:
    """The simulator: $HARNESS_VSIM, else the project's tools folder, else a build in /tmp."""
    tools = Path(os.environ.get("HARNESS_TOOLS", Path(__file__).resolve().parents[3] / ".tools"))
    for candidate in (os.environ.get("HARNESS_VSIM"), str(tools / "bin" / "harness-vsim"), "/tmp/pyvs-vsim"):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("harness-vsim")


def govc_binary() -> str | None:
    """govc built from the simulator's module: $HARNESS_GOVC, the project's tools folder, or a build in /tmp."""
    tools = Path(os.environ.get("HARNESS_TOOLS", Path(__file__).resolve().parents[3] / ".tools"))
    for candidate in (os.environ.get("HARNESS_GOVC"), str(tools / "bin" / "govc"), "/tmp/pyvs-govc"):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def cache(host: str) -> str:
    return f"naa.5000c5000{host[-2:]}00"


def capacity(host: str) -> list[str]:
    return [f"naa.5000c5000{host[-2:]}0{i}" for i in (1, 2)]


def _ca_and_server(folder: Path) -> Path:
    """A CA and a certificate for 127.0.0.1 it signs; returns the CA file (the topology's tls.ca_file)."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "vsim test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
          .not_valid_after(now + dt.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    (folder / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (folder / "server.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "server.key").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                          serialization.NoEncryption()))
    return folder / "ca.pem"


@dataclass
class Sim:
    sdk_port: int
    control: str
    ca_file: Path
    hook_log: Path
    folder: Path
    password: str

    def govc(self, *args: str) -> str:
        """govc (govmomi v0.52.0, a client we did not write) against the same simulator, TLS verified."""
        path = govc_binary()
        assert path is not None
        env = {**os.environ, "GOVC_URL": f"https://127.0.0.1:{self.sdk_port}/sdk", "GOVC_USERNAME": "harness",
               "GOVC_PASSWORD": self.password, "GOVC_TLS_CA_CERTS": str(self.ca_file)}
        env.pop("GOVC_INSECURE", None)
        done = subprocess.run([path, *args], env=env, capture_output=True, text=True, timeout=30, check=False)
        assert done.returncode == 0, f"govc {' '.join(args)}: {done.stderr[-500:]}"
        return done.stdout

    def govc_host(self, name: str) -> dict[str, Any]:
        """govc's view of a host's runtime (inMaintenanceMode, connectionState, powerState)."""
        info = json.loads(self.govc("host.info", "-json", f"/dc-lab/host/stretched-01/{name}"))
        runtime: dict[str, Any] = info["hostSystems"][0]["runtime"]
        return runtime

    def govc_vm_host(self, vm: str) -> str:
        """The host govc says runs `vm` (its `vm.info` "Host:" line)."""
        for line in self.govc("vm.info", vm).splitlines():
            if line.strip().startswith("Host:"):
                return line.split(":", 1)[1].strip()
        raise AssertionError(f"govc vm.info {vm}: no Host line")

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.control + path, timeout=10) as reply:  # loopback only
            return json.load(reply)

    def post(self, path: str, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(self.control + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as reply:
            text = reply.read()
        return json.loads(text) if text.strip() else None

    def hook_actions(self) -> list[list[str]]:
        if not self.hook_log.exists():
            return []
        return [line.split() for line in self.hook_log.read_text().splitlines() if line.strip()]

    def topology(self, **changes: Any) -> Topology:
        """The vSphere topology of this simulator (production backends, TLS verified against the test CA)."""
        raw: dict[str, Any] = {
            "name": "vsim", "kind": "vsphere",
            "sites": [{"name": site, "hosts": [{"name": h, "address": "127.0.0.1",
                                                "disk_groups": [{"cache": cache(h), "capacity": capacity(h)}]}
                                               for h in hosts]} for site, hosts in SITES.items()],
            "witness": {"name": "vsan-witness-01", "address": "127.0.0.1", "site": "witness"},
            "databases": [{"name": "bench", "kind": "postgres", "endpoint": "127.0.0.1", "port": 5432,
                           "database": "bench",
                           "nodes": [{"name": node, "host": host, "vm": vm} for vm, (host, node) in VMS.items()]}],
            "management": {"vcenter": {"address": "127.0.0.1", "port": self.sdk_port, "cluster": "stretched-01",
                                       "datacenter": "dc-lab", "tls": {"ca_file": str(self.ca_file)},
                                       "credential": {"username": "harness", "password": {"env": PASSWORD_ENV}}}},
            "allow_list": [],
        }
        for key, value in changes.items():
            raw[key] = value
        return parse_topology(raw, "vsim")


def config(folder: Path, model: dict[str, float]) -> dict[str, Any]:
    hook = folder / "hook.py"
    hook.write_text("import sys\nwith open(sys.argv[1], 'a') as f:\n    f.write(' '.join(sys.argv[2:]) + '\\n')\n")
    return {
        "datacenter": "dc-lab", "cluster": "stretched-01",
        "sites": [{"name": site, "preferred": site == "site-a",
                   "hosts": [{"name": h, "disk_groups": [{"cache": cache(h), "capacity": capacity(h)}]} for h in hosts]}
                  for site, hosts in SITES.items()],
        "witness": {"name": "vsan-witness-01", "site": "witness"},
        "vms": [{"name": vm, "host": host, "node": node, "disk_gb": 8} for vm, (host, node) in VMS.items()],
        "model": model,
        "hook": [sys.executable, str(hook), str(folder / "hook.log")],
        "listen": "127.0.0.1:0", "control_listen": "127.0.0.1:0",
        "tls": {"cert": str(folder / "server.pem"), "key": str(folder / "server.key")},
        "username": "harness", "password_env": PASSWORD_ENV, "ready_file": str(folder / "ready.json"),
    }


@contextmanager
def running(folder: Path, model: dict[str, float], password: str) -> Iterator[Sim]:
    """Start the simulator from a config written to `folder`; stop it (its process group) afterwards."""
    path = binary()
    assert path is not None
    folder.mkdir(parents=True, exist_ok=True)
    ca_file = _ca_and_server(folder)
    (folder / "vsim.json").write_text(json.dumps(config(folder, model), indent=2))
    log = (folder / "vsim.log").open("wb")
    process = subprocess.Popen([path, "-config", str(folder / "vsim.json")], stdout=log, stderr=subprocess.STDOUT,
                               env={**os.environ, PASSWORD_ENV: password}, start_new_session=True)
    try:
        ready = folder / "ready.json"
        deadline = time.monotonic() + READY_S
        while not ready.exists():
            if process.poll() is not None:
                raise RuntimeError(f"the simulator exited ({process.returncode}): {(folder / 'vsim.log').read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the simulator wrote no {ready} within {READY_S:g} s")
            time.sleep(0.05)
        info = json.loads(ready.read_text())
        port = int(str(info["sdk"]).rsplit(":", 1)[1].split("/", 1)[0])
        yield Sim(port, str(info["control"]).rstrip("/"), ca_file, folder / "hook.log", folder, password)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        log.close()
