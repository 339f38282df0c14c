"""Commands on a remote Linux box over SSH (paramiko), for backends that drive routers and hosts.

The host key is always checked: pinned in the topology (`host_key`) or found in the system's
known_hosts; an unknown key is refused, never learned. Authentication uses the key file or
password the topology references; neither appears in errors or logs. Connecting is retried
a few times within a bounded time, since management networks drop the odd SYN.

Nothing waits without a bound: every command has a deadline (`command_timeout_s`, or the call's
`timeout_s`) after which its channel is closed and ControlPlaneError raised, whether the router
is silent, never sends the exit status, or never answers the exec request; the session sends a
keepalive every 5 s, so a dead peer is noticed.
"""

from __future__ import annotations

import base64
import socket
import threading
import time

import paramiko
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, stop_after_delay, wait_exponential

from faults.transports import wire
from faults.transports.shell import CommandResult, checked
from harness_kernel.errors import ConfigError, ControlPlaneError, CredentialRejectedError
from harness_kernel.topology.credentials import resolve_secret
from harness_kernel.topology.management import SshEndpoint
from harness_kernel.topology.models import Topology

_TRANSIENT = (socket.timeout, ConnectionError, EOFError, paramiko.ssh_exception.NoValidConnectionsError)
KEEPALIVE_S = 5
_POLL_S = 0.01


def endpoint_named(topology: Topology, name: str) -> tuple[int, SshEndpoint]:
    for index, endpoint in enumerate(topology.management.ssh):
        if endpoint.name == name:
            return index, endpoint
    raise ConfigError(f"management.ssh has no endpoint named {name!r}")


class SshShell:
    """One SSH session to `endpoint`, opened on first use and reopened after it breaks."""

    wire = "ssh"

    def __init__(self, endpoint: SshEndpoint, field_path: str, *, connect_timeout_s: float = 10.0,
                 command_timeout_s: float = 30.0, attempts: int = 3) -> None:
        self.endpoint = endpoint
        self.field_path = field_path
        self.connect_timeout_s = connect_timeout_s
        self.command_timeout_s = command_timeout_s
        self.attempts = attempts
        self._client: paramiko.SSHClient | None = None
        self._lock = threading.Lock()

    @property
    def where(self) -> str:
        e = self.endpoint
        return f"{e.name} ({e.username}@{e.address}:{e.port})"

    def _host_keys(self, client: paramiko.SSHClient) -> None:
        e = self.endpoint
        if e.host_key:
            try:
                kind, blob = e.host_key.split()[:2]
                key = paramiko.PKey.from_type_string(kind, base64.b64decode(blob))
            except Exception as exc:  # UnknownKeyType, SSHException, binascii.Error: all mean "not a host key"
                raise ConfigError(f"{self.field_path}.host_key: not a '<type> <base64>' host key ({exc})") from None
            name = e.address if e.port == 22 else f"[{e.address}]:{e.port}"
            client.get_host_keys().add(name, kind, key)
        else:
            client.load_system_host_keys()
        client.set_missing_host_key_policy(paramiko.RejectPolicy())

    def _open(self) -> paramiko.SSHClient:
        e = self.endpoint
        key_file = resolve_secret(e.key_file, f"{self.field_path}.key_file").reveal() if e.key_file else None
        password = resolve_secret(e.password, f"{self.field_path}.password").reveal() if e.password else None
        if key_file is None and password is None:
            raise ConfigError(f"{self.field_path}: needs key_file or password")
        client = paramiko.SSHClient()
        self._host_keys(client)
        try:
            for attempt in Retrying(stop=stop_after_attempt(self.attempts) | stop_after_delay(3 * self.connect_timeout_s),
                                    wait=wait_exponential(multiplier=0.5, max=4), reraise=True,
                                    retry=retry_if_exception_type(_TRANSIENT)):
                with attempt:
                    client.connect(e.address, port=e.port, username=e.username, key_filename=key_file, password=password,
                                   timeout=self.connect_timeout_s, auth_timeout=self.connect_timeout_s,
                                   banner_timeout=self.connect_timeout_s, allow_agent=False, look_for_keys=False)
        except paramiko.AuthenticationException:
            raise CredentialRejectedError(f"ssh {self.where}: login refused for {self.endpoint.username!r} "
                                          f"({self.field_path}.key_file / .password)") from None
        except paramiko.BadHostKeyException:
            raise ControlPlaneError(f"ssh {self.where}: host key does not match the pinned one "
                                    f"({self.field_path}.host_key)") from None
        except paramiko.SSHException as exc:
            if "not found in known_hosts" in str(exc):
                raise ControlPlaneError(f"ssh {self.where}: host key unknown; pin it in {self.field_path}.host_key") from None
            raise ControlPlaneError(f"ssh {self.where}: {type(exc).__name__}: {exc}") from None
        except (OSError, EOFError) as exc:
            raise ControlPlaneError(f"ssh {self.where}: unreachable ({exc})") from None
        transport = client.get_transport()
        if transport is not None:
            transport.set_keepalive(KEEPALIVE_S)
        return client

    def run(self, command: str, *, input_text: str | None = None, timeout_s: float | None = None) -> CommandResult:
        """Run one shell command line; the exit status is returned, not raised. Raises ControlPlaneError
        if it has not finished (exit status and both streams' EOF) within the command timeout."""
        limit = timeout_s or self.command_timeout_s
        wire.sent("ssh", self.where, command, reads=wire.command_reads(command))
        with self._lock:
            if self._client is None or not self._alive(self._client):
                self._client = self._open()
            expired = threading.Event()
            try:
                done = self._exec(self._client, command, input_text, limit, expired)
                wire.recorded("ssh", self.field_path, {"command": command},
                              {"status": done.status, "stdout": done.stdout, "stderr": done.stderr})
                return done
            except (OSError, EOFError, paramiko.SSHException) as exc:
                if expired.is_set():
                    raise ControlPlaneError(f"ssh {self.where}: {command.split()[0]!r} did not finish within "
                                            f"{limit:g} s") from None
                self.close_locked()
                raise ControlPlaneError(f"ssh {self.where}: {command.split()[0]!r} did not complete ({exc})") from None

    @staticmethod
    def _exec(client: paramiko.SSHClient, command: str, input_text: str | None, limit: float,
              expired: threading.Event) -> CommandResult:
        transport = client.get_transport()
        if transport is None:
            raise paramiko.SSHException("no transport")
        deadline = time.monotonic() + limit
        channel = transport.open_session(timeout=limit)

        def expire() -> None:  # unblocks every wait on the channel (exec reply, send, exit status)
            expired.set()
            channel.close()
        watchdog = threading.Timer(limit, expire)
        watchdog.daemon = True
        watchdog.start()
        try:
            channel.settimeout(limit)
            channel.exec_command(command)
            if input_text is not None:
                channel.sendall(input_text.encode())
            channel.shutdown_write()
            out, err = bytearray(), bytearray()
            while True:
                while channel.recv_ready():
                    out += channel.recv(65536)
                while channel.recv_stderr_ready():
                    err += channel.recv_stderr(65536)
                ended = channel.status_event.is_set() and (channel.eof_received or channel.closed)
                if ended and not channel.recv_ready() and not channel.recv_stderr_ready():
                    break
                if expired.is_set() or time.monotonic() > deadline:
                    expired.set()
                    raise TimeoutError("command timeout")
                if not channel.status_event.wait(_POLL_S):
                    continue
                time.sleep(_POLL_S)  # the status is in; the streams' EOF follows
            if expired.is_set():
                raise TimeoutError("command timeout")
            return CommandResult(channel.recv_exit_status(), out.decode(errors="replace"), err.decode(errors="replace"))
        finally:
            watchdog.cancel()
            channel.close()

    def check(self, command: str, *, input_text: str | None = None, timeout_s: float | None = None) -> str:
        """Run and raise ControlPlaneError with the command's stderr when it fails."""
        return checked(self, self.run(command, input_text=input_text, timeout_s=timeout_s), command)

    @staticmethod
    def _alive(client: paramiko.SSHClient) -> bool:
        transport = client.get_transport()
        return transport is not None and transport.is_active()

    def close_locked(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def close(self) -> None:
        with self._lock:
            self.close_locked()
