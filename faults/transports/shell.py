"""One contract for a shell on a machine the faults act on, and the local one.

Like testinfra's backends: a fault family (the router's nft and tc faults) is written once
against `Shell`, and the topology decides the wire: `SshShell` for a real router,
`LocalShell` for a namespace on this machine (the embedded lab's router). Every command is
bounded in time; the exit status is returned, not raised, so a fault can tell "not there"
from "could not look".
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from typing import Protocol

from faults.transports import wire
from harness_kernel.errors import ConfigError, ControlPlaneError

_NETNS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


@dataclass(frozen=True)
class CommandResult:
    status: int
    stdout: str
    stderr: str


class Shell(Protocol):
    wire: str  # "ssh", "local": how plans say the commands travel

    @property
    def where(self) -> str:
        """Where commands run, for plans and errors (never a credential)."""

    def run(self, command: str, *, input_text: str | None = None, timeout_s: float | None = None) -> CommandResult:
        """Run one `sh` command line; raise ControlPlaneError only if it could not be run or did not end in time."""

    def check(self, command: str, *, input_text: str | None = None, timeout_s: float | None = None) -> str:
        """Run and raise ControlPlaneError with the command's stderr when it fails."""

    def close(self) -> None: ...


def checked(shell: Shell, done: CommandResult, command: str) -> str:
    """`done`'s stdout, or ControlPlaneError naming the command and its stderr (shared by every shell's `check`)."""
    if done.status != 0:
        detail = (done.stderr or done.stdout).strip()[-500:]
        raise ControlPlaneError(f"{shell.where}: `{command}` failed ({done.status}): {detail}")
    return done.stdout


class LocalShell:
    """`sh -c` on this machine, inside network namespace `netns` when given (`ip netns exec`)."""

    wire = "local"

    def __init__(self, netns: str | None = None, *, command_timeout_s: float = 30.0) -> None:
        if netns is not None and not _NETNS.match(netns):
            raise ConfigError(f"network namespace {netns!r}: not a valid name")
        self.netns = netns
        self.command_timeout_s = command_timeout_s

    @property
    def where(self) -> str:
        return f"namespace {self.netns}" if self.netns else "this machine"

    def run(self, command: str, *, input_text: str | None = None, timeout_s: float | None = None) -> CommandResult:
        wire.sent("shell", self.where, command, reads=wire.command_reads(command))
        argv = ["sh", "-c", command]
        if self.netns is not None:
            argv = ["ip", "netns", "exec", self.netns, *argv]
        try:
            done = subprocess.run(argv, input=input_text, capture_output=True, text=True, check=False,
                                  timeout=timeout_s or self.command_timeout_s,
                                  env={"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                       "LANG": "C.UTF-8"})
        except subprocess.TimeoutExpired:
            raise ControlPlaneError(f"{self.where}: {command.split()[0]!r} did not end within "
                                    f"{timeout_s or self.command_timeout_s:.0f} s") from None
        except OSError as exc:
            raise ControlPlaneError(f"{self.where}: could not run {command.split()[0]!r} ({exc})") from None
        return CommandResult(done.returncode, done.stdout, done.stderr)

    def check(self, command: str, *, input_text: str | None = None, timeout_s: float | None = None) -> str:
        return checked(self, self.run(command, input_text=input_text, timeout_s=timeout_s), command)

    def close(self) -> None:
        """Nothing to close: every command is its own process."""
