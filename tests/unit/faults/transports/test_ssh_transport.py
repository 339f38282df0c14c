"""The SSH transport never hangs (review #20): every exec has a deadline, a missing exit status is an error,
and the session sends keepalives. Driven against an in-process paramiko server on loopback."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import paramiko
import pytest

from faults.transports.ssh import SshShell
from harness_kernel.errors import ControlPlaneError
from harness_kernel.topology.credentials import SecretRef
from harness_kernel.topology.management import SshEndpoint

PASSWORD_ENV = "HARNESS_TEST_LOOPBACK_SSH_PASSWORD"
PASSWORD = "loopback-only"


class _Server(paramiko.ServerInterface):
    """Answers exec requests by name: `ok` exits 3 with output; `no-status` sends output and EOF and never
    an exit status; `silent` sends nothing at all."""

    def get_allowed_auths(self, username: str) -> str:
        return "password"

    def check_auth_password(self, username: str, password: str) -> int:
        return paramiko.AUTH_SUCCESSFUL if password == PASSWORD else paramiko.AUTH_FAILED

    def check_channel_request(self, kind: str, chanid: int) -> int:
        return paramiko.OPEN_SUCCEEDED if kind == "session" else paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_exec_request(self, channel: paramiko.Channel, command: bytes) -> bool:
        threading.Thread(target=self._answer, args=(channel, command.decode()), daemon=True).start()
        return True

    @staticmethod
    def _answer(channel: paramiko.Channel, command: str) -> None:
        time.sleep(0.05)
        if command == "ok":
            channel.sendall(b"out")
            channel.sendall_stderr(b"err")
            channel.send_exit_status(3)
            channel.shutdown_write()
            channel.close()
        elif command == "no-status":
            channel.sendall(b"partial")
            channel.shutdown_write()  # EOF on stdout, and then nothing: no exit-status, no close


class LoopbackSshd:
    def __init__(self) -> None:
        self.key = paramiko.RSAKey.generate(1024)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.transports: list[paramiko.Transport] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            transport = paramiko.Transport(conn)
            transport.add_server_key(self.key)
            transport.start_server(server=_Server())
            self.transports.append(transport)

    def endpoint(self) -> SshEndpoint:
        return SshEndpoint(name="loop", address="127.0.0.1", port=self.port, username="harness",
                           password=SecretRef(env=PASSWORD_ENV), host_key=f"{self.key.get_name()} {self.key.get_base64()}")

    def close(self) -> None:
        self.sock.close()
        for transport in self.transports:
            transport.close()


@pytest.fixture(scope="module")
def sshd() -> Iterator[LoopbackSshd]:
    server = LoopbackSshd()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def shell(sshd: LoopbackSshd, monkeypatch: pytest.MonkeyPatch) -> Iterator[SshShell]:
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    opened = SshShell(sshd.endpoint(), "management.ssh[0]", command_timeout_s=1.0)
    try:
        yield opened
    finally:
        client = opened._client
        if client is not None:
            client.close()  # without the shell's lock: a command stuck in it must not hang the teardown
        opened.close()


def in_thread(call, limit_s: float) -> tuple[bool, object]:  # type: ignore[no-untyped-def]
    """(finished within limit_s, its result or exception)."""
    outcome: list[object] = []

    def body() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:
            outcome.append(exc)
    worker = threading.Thread(target=body, daemon=True)
    worker.start()
    worker.join(limit_s)
    return not worker.is_alive(), outcome[0] if outcome else None


def test_a_command_returns_its_status_and_both_streams(shell: SshShell) -> None:
    done = shell.run("ok")
    assert (done.status, done.stdout, done.stderr) == (3, "out", "err")


def test_a_missing_exit_status_is_an_error_within_the_command_timeout(shell: SshShell) -> None:
    finished, outcome = in_thread(lambda: shell.run("no-status"), 6)
    assert finished, "run() still waits for an exit status that never comes"
    assert isinstance(outcome, ControlPlaneError) and "1 s" in str(outcome), outcome


def test_a_command_that_sends_nothing_times_out_with_a_clear_error(shell: SshShell) -> None:
    finished, outcome = in_thread(lambda: shell.check("silent"), 6)
    assert finished
    assert isinstance(outcome, ControlPlaneError) and "did not finish within 1 s" in str(outcome), outcome


def test_every_exec_takes_its_own_timeout(shell: SshShell) -> None:
    started = time.monotonic()
    with pytest.raises(ControlPlaneError):
        shell.check("silent", timeout_s=0.3)
    assert time.monotonic() - started < 0.9


def test_the_session_sends_keepalives(shell: SshShell) -> None:
    shell.run("ok")
    transport = shell._client.get_transport()  # type: ignore[union-attr]
    assert transport is not None
    assert transport.packetizer._Packetizer__keepalive_interval == 5  # type: ignore[attr-defined]
