"""PowerShell on a Windows node over WS-Management (pywinrm), bounded as a whole.

pywinrm's `Session.run_ps` waits for the command without limit (a Receive that times out is
retried forever), so this transport drives its `Protocol` itself: Create a shell, run
`powershell -encodedcommand` (UTF-16LE, base64), Receive until Done or the deadline, Signal
terminate, Delete the shell. Every script starts with `$ProgressPreference='SilentlyContinue';
$ErrorActionPreference='Stop'`, so progress records do not pollute stderr and the first error
ends the script with exit 1; the error shown is PowerShell's own message decoded from its
`#< CLIXML` stream, never the raw XML and never the credential.

HTTPS (5986) with the server certificate validated is the default (`tls.ca_file` as the trust
path); `tls.verify: false` switches validation off for that endpoint only. Plain http is
accepted only to 127.0.0.1 (a local listener or tunnel): Basic over http elsewhere would send
the password readable. ntlm, kerberos and credssp (for `-Cluster` calls on other nodes)
encrypt the messages themselves.
"""

from __future__ import annotations

import base64
import json
import re
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

from faults.transports import wire
from harness_kernel.errors import ConfigError, ControlPlaneError, CredentialRejectedError
from harness_kernel.topology.credentials import resolve_secret
from harness_kernel.topology.management import WinRmEndpoint
from harness_kernel.topology.models import Topology

PREAMBLE = "$ProgressPreference='SilentlyContinue'; $ErrorActionPreference='Stop'; "
# cmd.exe's command line limit is 8191 characters; "powershell -encodedcommand " takes 27 of them
MAX_ENCODED = 8191 - len("powershell -encodedcommand ")
LOOPBACK = ("127.0.0.1", "::1", "localhost")


class EndpointUnreachable(ControlPlaneError):
    """The endpoint did not answer (refused, timed out, TLS or login failed): another node's may."""


class LoginRejected(EndpointUnreachable, CredentialRejectedError):
    """The endpoint answered and refused the login: tried on another node, and bad input (exit 4) if all refuse."""


def winrm_endpoint(topology: Topology, name: str) -> tuple[int, WinRmEndpoint]:
    for index, endpoint in enumerate(topology.management.winrm):
        if endpoint.name == name:
            return index, endpoint
    raise ConfigError(f"management.winrm has no endpoint named {name!r}")


def encoded_command(script: str) -> str:
    """The script as `-encodedcommand` takes it: UTF-16LE, base64."""
    return base64.b64encode(script.encode("utf-16-le")).decode("ascii")


def clixml_message(stderr: bytes) -> str:
    """PowerShell's error text from a `#< CLIXML` stream (error records only; progress records dropped)."""
    text = stderr.decode("utf-8", errors="replace")
    if not text.startswith("#< CLIXML"):
        return text.strip()
    body = re.sub(r'\sxmlns="[^"]*"', "", text.split("\n", 1)[1] if "\n" in text else "")
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return "(an error PowerShell reported in a form that could not be read)"
    lines = [(node.text or "").replace("_x000D__x000A_", "\n") for node in root.iter("S") if node.get("S") == "Error"]
    return "".join(lines).strip()


@dataclass
class WinRmSession:
    """One WinRM endpoint. Nothing is contacted until a script runs."""

    endpoint: WinRmEndpoint
    field_path: str  # "management.winrm[0]", for errors about its settings
    read_timeout_s: float = 70.0
    operation_timeout_s: float = 60.0

    @property
    def where(self) -> str:
        e = self.endpoint
        return f"winrm {e.name} ({e.address}:{e.port})"

    @property
    def url(self) -> str:
        e = self.endpoint
        host = f"[{e.address}]" if ":" in e.address else e.address
        return f"{e.scheme}://{host}:{e.port}/wsman"

    def _protocol(self) -> Any:
        e = self.endpoint
        if e.scheme == "http" and e.address not in LOOPBACK:
            raise ConfigError(f"{self.field_path}.scheme: plain http to {e.address} would carry the login in the "
                              "clear or unverified; use https (5986), or http only to 127.0.0.1 (a tunnel)")
        try:
            from winrm.protocol import Protocol
        except ImportError:
            raise ConfigError("the wsfc backend needs pywinrm: pip install 'resilience-harness[wsfc]'") from None
        password = resolve_secret(e.credential.password, f"{self.field_path}.credential.password").reveal()
        validate = e.tls.verify
        # None: requests' own CA bundle, not one an environment variable points at (pywinrm's "legacy")
        trust: Any = e.tls.ca_file if validate and e.tls.ca_file else None
        return Protocol(
            self.url, transport=e.transport, username=e.credential.username, password=password,
            server_cert_validation="validate" if validate else "ignore",
            ca_trust_path=trust,
            read_timeout_sec=int(self.read_timeout_s), operation_timeout_sec=int(self.operation_timeout_s),
            message_encryption="auto", proxy=None)

    def run_ps(self, script: str, *, what: str, timeout_s: float = 120.0) -> str:
        """Run `script`; its standard output. Bounded by `timeout_s` as a whole; errors name `what` and the endpoint."""
        wire.sent("winrm", self.where, f"{what}: {' '.join(dict.fromkeys(wire.powershell_commands(script))) or script[:80]}",
                  reads=wire.powershell_reads(script))
        command = encoded_command(PREAMBLE + script)
        if len(command) > MAX_ENCODED:
            raise ConfigError(f"{what}: the PowerShell script is {len(command)} characters encoded, over the "
                              f"{MAX_ENCODED} a command line takes")
        protocol = self._protocol()
        from winrm.exceptions import InvalidCredentialsError  # pywinrm is there: _protocol() imported it

        deadline = time.monotonic() + timeout_s
        try:
            stdout, stderr, code = self._run(protocol, command, deadline, what)
        except (ConfigError, ControlPlaneError):
            raise
        except InvalidCredentialsError as exc:
            raise LoginRejected(f"{self.where}: {what}: {_short(exc)} ({self.field_path}.credential)") from None
        except Exception as exc:  # requests, pywinrm: their text names the URL, never the password
            raise EndpointUnreachable(f"{self.where}: {what}: {_short(exc)}") from None
        wire.recorded("winrm", self.field_path, {"script": PREAMBLE + script},
                      {"status": code, "stdout": stdout.decode("utf-8", errors="replace"),
                       "stderr": stderr.decode("utf-8", errors="replace")})
        if code != 0:
            message = clixml_message(stderr) or stdout.decode("utf-8", errors="replace").strip() or f"exit code {code}"
            raise ControlPlaneError(f"{self.where}: {what}: {message}")
        return stdout.decode("utf-8", errors="replace")

    def _run(self, protocol: Any, command: str, deadline: float, what: str) -> tuple[bytes, bytes, int]:
        from winrm.exceptions import WinRMOperationTimeoutError

        shell = protocol.open_shell(codepage=65001)
        try:
            command_id = protocol.run_command(shell, f"powershell -encodedcommand {command}")
            out: list[bytes] = []
            err: list[bytes] = []
            try:
                while True:
                    if time.monotonic() >= deadline:
                        raise ControlPlaneError(f"{self.where}: {what}: no answer within the time allowed; "
                                                "the command was told to stop")
                    try:
                        stdout, stderr, code, done = protocol.get_command_output_raw(shell, command_id)
                    except WinRMOperationTimeoutError:
                        continue  # the server's operation timeout passed without output: ask again
                    out.append(stdout)
                    err.append(stderr)
                    if done:
                        return b"".join(out), b"".join(err), int(code)
            finally:
                protocol.cleanup_command(shell, command_id)
        finally:
            protocol.close_shell(shell)

    def run_json(self, script: str, *, what: str, timeout_s: float = 120.0) -> list[dict[str, Any]]:
        """Run a script ending in `ConvertTo-Json`; one object or none comes back as a list."""
        text = self.run_ps(script, what=what, timeout_s=timeout_s).strip()
        if not text:
            return []
        try:
            data = json.loads(text)
        except ValueError:
            raise ControlPlaneError(f"{self.where}: {what}: the answer is not JSON") from None
        rows = data if isinstance(data, list) else [data]
        if not all(isinstance(row, dict) for row in rows):
            raise ControlPlaneError(f"{self.where}: {what}: the answer is not a list of objects")
        return rows


def _short(exc: BaseException) -> str:
    """A library's exception, named and cut short (requests and pywinrm name the URL, not the password)."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 300 else text[:300] + "..."
