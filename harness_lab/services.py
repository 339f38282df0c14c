"""The lab's long-running processes, each with its real pid recorded in the state directory.

Teardown and faults find processes only through these pid files (never by name), so two
labs on one machine never signal each other's processes. A pid file records the process's
identity too (start time and boot id): a pid file left from another boot, or naming a pid the
kernel has since given to another process, is ignored, so teardown (as root) never signals a
bystander.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness_kernel import procs
from harness_kernel.procs import ProcessIdentity
from harness_lab import shell


@dataclass(frozen=True)
class Services:
    """Pid files under `directory`, one per named service (`node-a`, `monitor`, `sshd`...)."""

    directory: Path

    def pidfile(self, name: str) -> Path:
        return self.directory / f"{name}.pid"

    def logfile(self, name: str) -> Path:
        return self.directory / f"{name}.log"

    def start(self, name: str, argv: Sequence[str], *, netns: str | None = None, user: str | None = None,
              env: Mapping[str, str] | None = None, cwd: Path | None = None, socket_dir: Path | None = None) -> int:
        self.directory.mkdir(parents=True, exist_ok=True)
        proc = shell.spawn(argv, netns=netns, user=user, env=env, log=self.logfile(name), cwd=cwd, socket_dir=socket_dir)
        identity = ProcessIdentity.of(proc.pid)  # our unreaped child: readable even if it already exited
        self.pidfile(name).write_text(identity.render() if identity.start_ticks is not None else f"{proc.pid}\n")
        return proc.pid

    def pid(self, name: str) -> int | None:
        """The recorded pid if that process is still the one we started; None for a stale or bare pid file."""
        try:
            recorded = ProcessIdentity.parse(self.pidfile(name).read_text())
        except FileNotFoundError:
            return None
        if recorded is None or not recorded.is_running_process():
            return None
        return recorded.pid

    def alive(self, name: str) -> bool:
        """Alive and not a zombie: a killed child of this process stays a zombie until reaped."""
        pid = self.pid(name)
        if pid is None:
            return False
        reap(pid)
        return procs.running(pid)

    def tree(self, name: str) -> list[int]:
        pid = self.pid(name)
        return procs.tree(pid) if pid is not None else []

    def names(self) -> list[str]:
        return sorted(p.stem for p in self.directory.glob("*.pid")) if self.directory.is_dir() else []

    def kill(self, name: str, *, grace_s: float = 0.0) -> None:
        """Stop a service's whole tree: SIGTERM with `grace_s` first if asked, then SIGKILL. Idempotent."""
        pid = self.pid(name)
        if pid is None:
            return
        members = procs.tree(pid)
        if grace_s > 0:
            for member in members:
                _signal(member, signal.SIGCONT)
                _signal(member, signal.SIGTERM)
            deadline = time.monotonic() + grace_s
            while time.monotonic() < deadline and any(procs.running(p) for p in members):
                reap(pid)
                time.sleep(0.1)
        latecomers = procs.tree(pid) if self.pid(name) == pid else []  # re-check: the root may be gone
        for member in [*members, *latecomers]:
            _signal(member, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(procs.running(p) for p in members):
            reap(pid)
            time.sleep(0.05)
        reap(pid)

    def forget(self, name: str) -> None:
        self.pidfile(name).unlink(missing_ok=True)


def _signal(pid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def reap(pid: int) -> None:
    """Collect the exit status if `pid` is our child, so it does not linger as a zombie."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)
