"""One harness run against one topology: its identity, journal, lock, and the faults it builds.

Shared by the pytest plugin and the CLI so both inject faults through the same lifecycle.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from faults import registry
from faults.base import Fault, FaultPlan, FaultSpec
from harness.history.timeline import Timeline
from harness.safety.guards import Guard
from harness.safety.journal import Journal
from harness.safety.lock import TopologyLock
from harness.safety.runner import ActiveFault, FaultRunner, RunnerSettings
from harness.topology.credentials import Secret, missing_secrets, resolve_secret
from harness.topology.models import Topology


@dataclass
class HarnessSession:
    topology: Topology
    topology_source: str
    state_dir: Path
    allow_destructive: bool = False
    run_id: str = field(default_factory=lambda: time.strftime("%Y%m%dT%H%M%S-") + uuid.uuid4().hex[:6])
    runner_settings: RunnerSettings = field(default_factory=RunnerSettings)

    def __post_init__(self) -> None:
        self.journal = Journal(self.state_dir / "journal")
        self._lock = TopologyLock(self.state_dir / "locks", self.topology.name)

    def acquire(self) -> None:
        """Claim the topology for this run; a second run gets TargetBusyError naming us."""
        self._lock.acquire()

    def release(self) -> None:
        self._lock.release()

    def build(self, spec: FaultSpec) -> Fault:
        return registry.build(spec, self.topology)

    def plan(self, specs: Sequence[FaultSpec]) -> list[FaultPlan]:
        """Plans from the topology alone: contacts nothing, needs no credential."""
        return [self.build(spec).plan() for spec in specs]

    def missing_credentials(self) -> list[str]:
        return missing_secrets(self.topology.secret_refs())

    def resolved_secrets(self) -> list[Secret]:
        """Every secret the topology references, looked up now (raises naming the first missing one)."""
        return [resolve_secret(ref, path) for path, ref in self.topology.secret_refs()]

    @contextmanager
    def inject(self, timeline: Timeline, fault: Fault | FaultSpec, *, duration_s: float | None = None,
               guards: Sequence[Guard] = ()) -> Iterator[ActiveFault]:
        built = self.build(fault) if isinstance(fault, FaultSpec) else fault
        runner = FaultRunner(self.topology, self.topology_source, self.journal, timeline, self.run_id,
                             self.runner_settings, allow_destructive=self.allow_destructive)
        with runner.inject(built, duration_s=duration_s, guards=guards) as active:
            yield active
