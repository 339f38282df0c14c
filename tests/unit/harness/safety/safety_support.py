"""Shared pieces of the fault-lifecycle tests: a harness run in a child process, and faults that misbehave.

Every fault here is real: it freezes (SIGSTOP) a real process tree and reads /proc to know
whether it is in effect. What they add is the misbehaviour of a real control plane: a revert
that fails at first, a check that errors, a fault that comes back, a dead man's switch.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from faults.backends.process import ProcessFreeze
from faults.base import FaultSpec, FaultState
from harness_kernel import procs
from harness_kernel.errors import ControlPlaneError
from tests.support.waiting import eventually

ROOT = Path(__file__).resolve().parents[4]
SCRIPT = Path(__file__).with_name("fault_script.py")
FREEZE = FaultSpec(kind="process-freeze", target="process:victim")


def journal_files(state: Path) -> list[Path]:
    return sorted((state / "journal").glob("*.json"))


def journal_statuses(state: Path) -> list[str]:
    return [json.loads(p.read_text())["status"] for p in journal_files(state)]


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    env.update(extra)
    return env


@contextmanager
def hangup_at_default() -> Iterator[None]:
    """SIGHUP at its default while a child is started (dispositions are inherited through exec), then as it was."""
    previous = signal.getsignal(signal.SIGHUP)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, previous)


class Child:
    """A child process whose output lines are read in the background, so a test can wait for one."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        # its own session: no controlling terminal, so operator messages go to its stderr; and the hangup at its
        # default, as a run started from a terminal has it, whatever the test runner inherited (under nohup it is
        # ignored, and a run keeps a hangup its caller ignores ignored: the hangup specs would then test nohup)
        with hangup_at_default():
            self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                                            env=env or child_env(), start_new_session=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.out: list[str] = []
        self.err: list[str] = []
        assert self.process.stdout is not None and self.process.stderr is not None
        self._readers = [threading.Thread(target=self._read, args=(self.process.stdout, self.out, True), daemon=True),
                         threading.Thread(target=self._read, args=(self.process.stderr, self.err, False), daemon=True)]
        for reader in self._readers:
            reader.start()

    def _read(self, stream: object, sink: list[str], announce: bool) -> None:
        for line in stream:  # type: ignore[attr-defined]
            sink.append(line)
            if announce:
                self.lines.put(line.strip())

    @property
    def pid(self) -> int:
        return self.process.pid

    def expect(self, wanted: str, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {wanted!r} line within {timeout_s} s; output so far:\n{self.output()}")
            try:
                if self.lines.get(timeout=left) == wanted:
                    return
            except queue.Empty:
                continue

    def signal(self, signum: int) -> None:
        os.kill(self.process.pid, signum)

    def wait(self, timeout_s: float = 60.0) -> int:
        try:
            code = self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"the run did not end within {timeout_s} s; its output:\n{self.output()}") from None
        for reader in self._readers:
            reader.join(timeout=5)
        return code

    def output(self) -> str:
        return "".join(self.out) + "\n--- stderr ---\n" + "".join(self.err)

    def kill_group(self) -> None:
        with_suppressed(lambda: os.killpg(self.process.pid, signal.SIGKILL))
        self.process.wait(timeout=10)


def with_suppressed(action: Callable[[], object]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        action()


def run_fault_script(topology_file: Path, state: Path, *options: str) -> Child:
    """A harness run that freezes process:victim and then waits; see fault_script.py for the options."""
    return Child([sys.executable, str(SCRIPT), str(topology_file), str(state), *options])


# -- faults that misbehave like real control planes ---------------------------------------------

@dataclass
class FlakyRevert(ProcessFreeze):
    """The control plane refuses the first `failures` reverts (a busy netlink, a dropped session)."""

    failures: int = 2
    reverts: int = 0

    def revert(self) -> None:
        self.reverts += 1
        if self.reverts <= self.failures:
            raise ControlPlaneError("router r1: `nft delete table` failed: Device or resource busy")
        super().revert()


@dataclass
class ComesBack(ProcessFreeze):
    """An inject still in flight lands after the first revert (a slow `nft -f` that commits late)."""

    late_s: float = 0.3
    reverts: int = 0

    def revert(self) -> None:
        self.reverts += 1
        super().revert()
        if self.reverts == 1:
            root, _ = self._root()
            assert root is not None
            threading.Timer(self.late_s, procs.freeze_tree, (root,)).start()


@dataclass
class FlakyCheck(ProcessFreeze):
    """After the revert, every other check errors (a busy control plane), starting with the first."""

    reverted: bool = False
    checks_after_revert: int = 0

    def revert(self) -> None:
        self.reverted = True
        super().revert()

    def check(self) -> FaultState:
        if self.reverted:
            self.checks_after_revert += 1
            if self.checks_after_revert % 2:
                raise ControlPlaneError("router r1: `nft list table` failed: cache initialization failed")
        return super().check()


@dataclass
class ArmRecorder(ProcessFreeze):
    """Records what the runner asks of its dead man's switch."""

    armed: list[float] = field(default_factory=list)
    disarmed: int = 0

    def arm_deadman(self, seconds: float) -> None:
        self.armed.append(seconds)

    def disarm_deadman(self) -> None:
        self.disarmed += 1


@dataclass
class LocalDeadman(ProcessFreeze):
    """A freeze with a real dead man's switch: `sh -c ': MARKER; sleep N; kill -CONT ...'` on this machine.

    It is named and disarmed like the router backend's (`pkill -f` on the marker). The runner
    gives it a marker unique to the journal entry (`deadman_marker`); without one it falls back
    to a marker made of the target, as the router backend did.
    """

    deadman_marker: str | None = None

    @property
    def marker(self) -> str:
        return self.deadman_marker or f"harness-deadman-{self.spec.target}"

    def arm_deadman(self, seconds: float) -> None:
        root = self._root()
        assert root is not None
        pids = " ".join(str(p) for p in procs.tree(root))
        script = f": {self.marker}; sleep {max(1, round(seconds))}; kill -CONT {pids}; exit 0"
        subprocess.Popen(["sh", "-c", script], start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # armed once the shell runs under its marker (before its exec the child still shows Python's command line)
        assert eventually(lambda: deadman_running(self.marker)), f"the dead man's switch {self.marker} never ran"

    def disarm_deadman(self) -> None:
        pattern = "[" + self.marker[0] + "]" + self.marker[1:]
        subprocess.run(["pkill", "-f", pattern], check=False)


@dataclass
class Unrevertable(ArmRecorder):
    """The revert does nothing and, from then on, every check errors: nothing says the fault is gone."""

    revert_called: bool = False

    def revert(self) -> None:
        self.revert_called = True

    def check(self) -> FaultState:
        if self.revert_called:
            raise ControlPlaneError("router r1: `nft list table` failed: Device or resource busy")
        return super().check()


def deadman_running(marker: str) -> bool:
    return subprocess.run(["pgrep", "-f", "[" + marker[0] + "]" + marker[1:]], capture_output=True).returncode == 0


TRACER = """\
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
PTRACE_ATTACH, WALL = 16, 0x40000000
for pid in map(int, sys.argv[1:]):
    if libc.ptrace(PTRACE_ATTACH, pid, None, None) != 0:
        sys.exit(f"ptrace({pid}): errno {ctypes.get_errno()}")
    os.waitpid(pid, WALL)
print("held", flush=True)
time.sleep(120)
"""


def hold_in_tracing_stop(root: int) -> Child:
    """Keep a process tree stopped in a way SIGCONT cannot end (ptrace-stop): a fault no revert can clear."""
    holder = Child([sys.executable, "-c", TRACER, *map(str, procs.tree(root))])
    holder.expect("held", timeout_s=15)
    return holder
