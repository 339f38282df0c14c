"""The simulated hosts' BMCs: sushy-tools' Redfish emulator on 127.0.0.1, TLS from the lab's CA.

One emulator serves one system per simulated host, named like the host (`esx-a1`), with a
UUID derived from the lab prefix and the host name, so the topology can pin `system_id`.
HTTP basic auth is on (the emulator's `SUSHY_EMULATOR_AUTH_FILE`, bcrypt entries only).

The driver is a small subclass of the emulator's fake driver: a reset posts to the
simulator's control API (`POST /hosts/<host>/power`) at once, and `PowerState` is read from the
simulator (`GET /hosts`), so a host powered off through vCenter shows Off on its BMC too. The
stock fake driver applies a change only after a random 1-11 s. This relies on the emulator's
internals (`fakedriver.FakeDriver._get/_update`, `main.app`): pinned to sushy-tools 2.2.0.

`python -m harness_lab.redfish_emulator CONFIG.json` runs it (the lab starts it as a service);
when listening it writes CONFIG's `ready_file` atomically: {"url": "https://127.0.0.1:P", "pid": N}.
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_kernel.errors import ControlPlaneError
from harness_lab.services import Services

SERVICE = "redfish"
PINNED = "2.2.0"
READY_TIMEOUT_S = 20.0
CONTROL_TIMEOUT_S = 10.0
_NAMESPACE = uuid.UUID("6f1d3c2e-6a35-4d55-9a4e-4c1b8f6e0b11")


def system_id(prefix: str, host: str) -> str:
    """The Redfish system id (a UUID) of a simulated host: stable for a lab prefix and host name."""
    return str(uuid.uuid5(_NAMESPACE, f"{prefix}/{host}"))


def _mac(system: str) -> str:
    raw = uuid.UUID(system).bytes[:5]
    return "52:54:00:" + ":".join(f"{b:02x}" for b in raw[:3])


def htpasswd_line(username: str, password: str) -> str:
    import bcrypt
    return f"{username}:{bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=10)).decode()}\n"


@dataclass(frozen=True)
class RedfishEmulator:
    """The emulator as a lab service: configured in `directory`, its pid kept by `services`."""

    directory: Path
    services: Services

    @property
    def config_file(self) -> Path:
        return self.directory / "emulator.json"

    @property
    def ready_file(self) -> Path:
        return self.directory / "ready.json"

    def start(self, *, prefix: str, hosts: list[str], control_url: str, cert_file: Path, key_file: Path,
              username: str, password: str, pythonpath: str) -> str:
        """Start (or restart) the emulator; returns its base URL once it listens."""
        self.services.kill(SERVICE)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.directory.chmod(0o700)
        state = self.directory / "state"
        if state.exists():  # the emulator only adds unseen systems: a fresh state per run
            for leftover in state.iterdir():
                leftover.unlink()
        state.mkdir(exist_ok=True)
        auth = self.directory / "htpasswd"
        auth.write_text(htpasswd_line(username, password))
        auth.chmod(0o600)
        self.ready_file.unlink(missing_ok=True)
        systems = [{"uuid": system_id(prefix, h), "name": h, "power_state": "On", "external_notifier": False,
                    "nics": [{"mac": _mac(system_id(prefix, h)), "ip": "127.0.0.1"}]} for h in hosts]
        self.config_file.write_text(json.dumps({
            "control": control_url, "cert": str(cert_file), "key": str(key_file), "ready_file": str(self.ready_file),
            "sushy": {"SUSHY_EMULATOR_FAKE_DRIVER": True, "SUSHY_EMULATOR_FAKE_SYSTEMS": systems,
                      "SUSHY_EMULATOR_STATE_DIR": str(state), "SUSHY_EMULATOR_AUTH_FILE": str(auth)}}, indent=1))
        self.services.start(SERVICE, [sys.executable, "-m", "harness_lab.redfish_emulator", str(self.config_file)],
                            env={"PYTHONPATH": pythonpath}, cwd=self.directory)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not self.ready_file.exists():
            if not self.services.alive(SERVICE) or time.monotonic() > deadline:
                tail = "\n".join(self.services.logfile(SERVICE).read_text(errors="replace").splitlines()[-10:])
                raise ControlPlaneError(f"redfish emulator not listening within {READY_TIMEOUT_S:g} s\n{tail}")
            time.sleep(0.05)
        return str(json.loads(self.ready_file.read_text())["url"])


# -- the emulator process ---------------------------------------------------------------------
def _control(base: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=CONTROL_TIMEOUT_S) as reply:  # loopback only (the lab's simulator)
        raw = reply.read()
    return json.loads(raw) if raw else None


def simulated_host_driver(base: type, control_url: str) -> type:
    """The fake driver with power taken from, and given to, the simulator's control API."""

    class SimulatedHostDriver(base):  # type: ignore[misc]
        def get_power_state(self, identity: str) -> str:
            system = self._get(identity)
            for host in _control(control_url, "GET", "/hosts"):
                if host.get("name") == system["name"]:
                    state = "On" if host.get("power") == "on" else "Off"
                    if state != system.get("power_state"):
                        self._update(system, power_state=state, pending_power=None)
                    return state
            return str(system["power_state"])

        def set_power_state(self, identity: str, state: str) -> None:
            system = self._get(identity)
            if state in ("On", "ForceOn"):
                steps = ["on"]
            elif state in ("ForceOff", "GracefulShutdown"):  # the simulator knows abrupt power loss only
                steps = ["off"]
            elif state in ("ForceRestart", "GracefulRestart", "PowerCycle"):
                steps = ["off", "on"]
            elif state == "Nmi":
                return
            else:
                from sushy_tools import error  # type: ignore[import-untyped]
                raise error.NotSupportedError(f"Power state {state} is not supported")
            for step in steps:
                _control(control_url, "POST", f"/hosts/{system['name']}/power", {"state": step})
            self._update(system, power_state="On" if steps[-1] == "on" else "Off", pending_power=None)

    return SimulatedHostDriver


def serve(config_file: Path) -> None:
    from sushy_tools.emulator import main as emulator  # type: ignore[import-untyped]
    from sushy_tools.emulator.resources.systems import fakedriver  # type: ignore[import-untyped]
    from werkzeug.serving import make_server

    config = json.loads(config_file.read_text())
    fakedriver.FakeDriver = simulated_host_driver(fakedriver.FakeDriver, config["control"])
    app = emulator.app
    app.configure(extra_config=config["sushy"])
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(config["cert"], config["key"])
    server = make_server("127.0.0.1", 0, app, threaded=True, ssl_context=context)
    ready = Path(config["ready_file"])
    partial = ready.with_suffix(".tmp")
    partial.write_text(json.dumps({"url": f"https://127.0.0.1:{server.server_port}", "pid": os.getpid()}))
    partial.replace(ready)
    server.serve_forever()


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
