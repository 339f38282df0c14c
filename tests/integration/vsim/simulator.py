"""Starts harness-vsim for a test: config and TLS material in tmp_path, the process stopped at the end.

The stretched cluster matches the bound lab (dc-lab / stretched-01, sites site-a and site-b, witness
vsan-witness-01); the TLS certificate is issued by a CA made here, so clients verify it as they would
vCenter's. The hook appends each call's arguments to a file the test reads.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import signal
import ssl
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

from harness.paths import tools_dir

USERNAME = "administrator@vsphere.local"
PASSWORD_ENV = "HARNESS_VSIM_PASSWORD"
READY_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0

SITES = {"site-a": ["esx-a1", "esx-a2"], "site-b": ["esx-b1", "esx-b2"]}
WITNESS = "vsan-witness-01"
VMS = {"pg-node-a": ("esx-a1", "node-a"), "pg-node-b": ("esx-b1", "node-b")}

DEFAULT_MODEL: dict[str, float] = {
    "ha_restart_delay_s": 0.5,
    "resync_rate_mb_s": 400.0,
    "component_mb": 256,
    "io_pause_s": 3.0,
    "repair_timer_s": 3600,
    "migration_s": 0.3,
}

# A script that appends its arguments, one call per line, to the file named first; it refuses to run
# with the vCenter password in its environment.
HOOK_SCRIPT = (
    f"import os, sys; assert {PASSWORD_ENV!r} not in os.environ; "
    "open(sys.argv[1], 'a').write(' '.join(sys.argv[2:]) + '\\n')"
)


def device(host: str, n: int) -> str:
    """Canonical name of a host's device: 0 is the cache device, 1 and 2 the capacity devices."""
    return f"naa.5000c5000{host.removeprefix('esx-')}0{n}"


def simulator_binary() -> Path:
    return tools_dir() / "bin" / "harness-vsim"


def govc_binary() -> Path:
    return tools_dir() / "bin" / "govc"


def missing_binary_reason() -> str | None:
    """Why the simulator tests cannot run here, or None. With HARNESS_REQUIRE_VSIM set they never skip."""
    if simulator_binary().is_file() or os.environ.get("HARNESS_REQUIRE_VSIM"):
        return None
    return f"{simulator_binary()} is not built (make setup); set HARNESS_REQUIRE_VSIM=1 to make this a failure"


@dataclass(frozen=True)
class Simulator:
    """A running simulator: where it listens, how to log in, and what its hook was told."""

    sdk_url: str
    control_url: str
    ca_file: Path
    hook_log: Path
    password: str
    model: dict[str, float]

    @property
    def port(self) -> int:
        return int(self.sdk_url.split(":")[2].split("/")[0])

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def control(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.control_url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)

    def hook_calls(self) -> list[str]:
        if not self.hook_log.exists():
            return []
        return self.hook_log.read_text().splitlines()


def _write_tls(directory: Path) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for 127.0.0.1 signed by it (PEM files)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "harness-vsim test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_file, cert_file, key_file = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    key_file.chmod(0o600)
    return ca_file, cert_file, key_file


def stretched_config(directory: Path, model: dict[str, float], hook_log: Path) -> dict[str, Any]:
    sites = [
        {
            "name": site,
            "preferred": site == "site-a",
            "hosts": [
                {"name": h, "disk_groups": [{"cache": device(h, 0), "capacity": [device(h, 1), device(h, 2)]}]}
                for h in hosts
            ],
        }
        for site, hosts in SITES.items()
    ]
    return {
        "datacenter": "dc-lab",
        "cluster": "stretched-01",
        "sites": sites,
        "witness": {"name": WITNESS, "site": "witness"},
        "vms": [{"name": vm, "host": host, "node": node, "disk_gb": 8} for vm, (host, node) in VMS.items()],
        "model": model,
        "hook": [sys.executable, "-c", HOOK_SCRIPT, str(hook_log)],
        "listen": "127.0.0.1:0",
        "control_listen": "127.0.0.1:0",
        "tls": {"cert": "server.pem", "key": "server.key"},
        "username": USERNAME,
        "password_env": PASSWORD_ENV,
        "ready_file": str(directory / "ready.json"),
    }


@contextmanager
def running_simulator(directory: Path, **model: float) -> Iterator[Simulator]:
    """Starts the simulator with DEFAULT_MODEL updated by `model`; waits for its ready file (bounded); stops it."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_file, _, _ = _write_tls(directory)
    hook_log = directory / "hook-calls.txt"
    full_model = {**DEFAULT_MODEL, **model}
    config = stretched_config(directory, full_model, hook_log)
    config_file = directory / "vsim.json"
    config_file.write_text(json.dumps(config, indent=2))
    password = os.urandom(12).hex()
    ready_file = Path(config["ready_file"])
    log_file = directory / "vsim.log"
    with log_file.open("wb") as log:
        process = subprocess.Popen(
            [str(simulator_binary()), "-config", str(config_file)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, PASSWORD_ENV: password},
        )
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not ready_file.exists():
            if process.poll() is not None:
                raise RuntimeError(f"harness-vsim exited with {process.returncode}: {log_file.read_text()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"harness-vsim not ready in {READY_TIMEOUT_S} s: {log_file.read_text()}")
            time.sleep(0.02)
        ready = json.loads(ready_file.read_text())
        yield Simulator(
            sdk_url=ready["sdk"],
            control_url=ready["control"],
            ca_file=ca_file,
            hook_log=hook_log,
            password=password,
            model=full_model,
        )
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=STOP_TIMEOUT_S)
        if password in log_file.read_text():
            raise AssertionError("the simulator logged its password")


def wait_until(predicate: Any, timeout: float, what: str, interval: float = 0.05) -> Any:
    """Polls predicate() until it returns a true value (returned) or timeout seconds pass (AssertionError)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)
