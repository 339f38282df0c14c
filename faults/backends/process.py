"""Local processes: freeze a process tree (SIGSTOP) and thaw it (SIGCONT).

Real and observable: a frozen process shows state 'T' in /proc. Used for stand-in services
on the harness machine; the lab's host-hang builds on the same tree operations.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path

from faults.base import FaultPlan, FaultSpec, FaultState
from faults.kinds import Params
from harness_kernel import procs
from harness_kernel.errors import ConfigError
from harness_kernel.topology.models import Topology
from harness_kernel.topology.targets import Target

KIND_FREEZE = "process-freeze"


@dataclass
class ProcessFreeze:
    """SIGSTOP a declared process's tree, only when the pid file's process runs the declared program."""

    spec: FaultSpec
    pidfile: Path
    executable: str

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> ProcessFreeze:
        for proc in topology.processes:
            if proc.name == target.name:
                return cls(spec, Path(proc.pidfile), proc.executable)
        raise ConfigError(f"{spec.kind}: target {spec.target!r} is not a process of the topology")

    def plan(self) -> FaultPlan:
        whose = f"the pid in {self.pidfile}, if it runs {self.executable}"
        return FaultPlan(self.spec, "process",
                         inject_steps=(f"SIGSTOP the process tree of {whose}",),
                         revert_steps=(f"SIGCONT the process tree of {whose}",))

    def _root(self) -> tuple[int | None, str | None]:
        """The pid to act on, or None and why not."""
        try:
            pid = procs.read_pidfile(self.pidfile)
        except procs.NotAPidFile as exc:
            return None, str(exc)
        if pid is None:
            return None, f"no pid in {self.pidfile}"
        return (None, reason) if (reason := procs.why_not_a_target(pid, self.executable)) else (pid, None)

    def inject(self) -> None:
        root, why = self._root()
        if root is None:
            raise ConfigError(f"{self.spec.target}: not frozen: {why}")
        if not procs.freeze_tree(root):
            raise ConfigError(f"{self.spec.target}: no running process in {self.pidfile}")

    def check(self) -> FaultState:
        root, _ = self._root()
        share = procs.stopped_fraction(root) if root is not None else None
        if share is None or share == 0.0:
            return FaultState.CLEARED
        return FaultState.IN_EFFECT if share == 1.0 else FaultState.UNKNOWN

    def revert(self) -> None:
        root, _ = self._root()
        if root is not None:
            procs.signal_tree(root, signal.SIGCONT)
