"""One harness run against one cluster: its identity, journal, lock, guardian, and the faults it builds.

Shared by the pytest plugin and the CLI so both inject faults through the same lifecycle.
Claiming the cluster (`acquire`) takes the cluster's lock, refuses while the journal still
holds faults on that cluster (a crashed run's: `python -m harness recover` first), and makes
sure the guardian of the state directory is up: a claimed run injects nothing while no
guardian is alive (a kill -9 would leave its fault in place), unless the user said so
(`--no-guardian`, `start_guardian=False`; the run record then says the run was unguarded).
After a failed revert the run injects nothing more: faults never compound.
"""

from __future__ import annotations

import functools
import logging
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from faults import registry, sections
from faults.base import Fault, FaultPlan, FaultSpec
from harness.safety import guardian
from harness.safety.guards import Guard
from harness.safety.identity import cluster_identity
from harness.safety.journal import Journal
from harness.safety.lock import TopologyLock
from harness.safety.runner import ActiveFault, FaultRunner, RunnerSettings
from harness_kernel.errors import HarnessError, RevertFailedError, TargetBusyError
from harness_kernel.history.timeline import Timeline
from harness_kernel.paths import private_dir
from harness_kernel.topology.credentials import Secret, missing_secrets, resolve_secret
from harness_kernel.topology.models import Topology

log = logging.getLogger(__name__)


@dataclass
class HarnessRun:
    topology: Topology
    topology_source: str
    state_dir: Path
    allow_destructive: bool = False
    run_id: str = field(default_factory=lambda: time.strftime("%Y%m%dT%H%M%S-") + uuid.uuid4().hex[:6])
    runner_settings: RunnerSettings = field(default_factory=RunnerSettings)
    start_guardian: bool = True  # False: `--no-guardian`, a run without a guardian on purpose

    def __post_init__(self) -> None:
        self.cluster = cluster_identity(self.topology)
        self._lock = TopologyLock(self.state_dir / "locks", self.cluster)
        self.revert_failures: list[RevertFailedError] = []
        self._claimed = False

    @functools.cached_property
    def journal(self) -> Journal:
        """Opened on first use (claiming the cluster, injecting): a state directory others can write is refused there."""
        return Journal(private_dir(self.state_dir) / "journal")

    def acquire(self) -> None:
        """Claim the cluster for this run; TargetBusyError naming the holder, or the faults left on it."""
        private_dir(self.state_dir)
        self._lock.acquire()
        try:
            self._refuse_leftovers()
            self._claimed = True
            guardian.register_owner(self.state_dir, self.run_id)
            self._ensure_guardian()
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        if self._claimed:
            guardian.unregister_owner(self.state_dir, self.run_id)
            self._claimed = False
        self._lock.release()

    def _refuse_leftovers(self) -> None:
        scan = self.journal.scan()
        mine = [e for e in scan.entries
                if e.cluster == self.cluster or (e.cluster is None and e.topology_name == self.topology.name)]
        problems = [f"{e.describe()} (entry {e.id}, run {e.run_id}, {e.status})" for e in mine]
        problems += [f"unreadable entry {path.name}" for path, _ in scan.unreadable]
        if problems:
            raise TargetBusyError(
                f"the journal in {self.journal.directory} still holds faults on {self.cluster}: {'; '.join(problems)}. "
                "Run `python -m harness recover` (the guardian may be reverting them already) and start again")

    def _ensure_guardian(self) -> None:
        """The state directory's guardian alive (started if need be), or HarnessError before anything is injected."""
        if not self.start_guardian:
            return
        try:
            pid = guardian.ensure_guardian(self.state_dir)
            why = f"see {self.state_dir / guardian.LOG}"
        except Exception as exc:
            pid, why = None, f"{type(exc).__name__}: {exc}"
        if pid is None:
            raise HarnessError(f"no guardian is running for {self.state_dir} ({why}): without one, a crash or kill -9 "
                               "of this run would leave its fault in place. Free the machine and start again, or run "
                               "without a guardian on purpose (--no-guardian; after a crash, python -m harness recover)")

    def build(self, spec: FaultSpec) -> Fault:
        return registry.build(spec, self.topology)

    def plan(self, specs: Sequence[FaultSpec]) -> list[FaultPlan]:
        """Plans from the topology alone: contacts nothing, needs no credential."""
        return [self.build(spec).plan() for spec in specs]

    def missing_credentials(self, *, open_keyring: bool = True) -> list[str]:
        return missing_secrets(sections.every_secret_ref(self.topology), open_keyring=open_keyring)

    def resolved_secrets(self) -> list[Secret]:
        """Every secret the topology references, looked up now (raises naming the first missing one)."""
        return [resolve_secret(ref, path) for path, ref in sections.every_secret_ref(self.topology)]

    @contextmanager
    def inject(self, timeline: Timeline, fault: Fault | FaultSpec, *, duration_s: float | None = None,
               guards: Sequence[Guard] = ()) -> Iterator[ActiveFault]:
        if self.revert_failures:
            raise HarnessError(f"an earlier revert failed ({self.revert_failures[0]}); this run injects no more faults. "
                               "Check the target and run `python -m harness recover`")
        built = self.build(fault) if isinstance(fault, FaultSpec) else fault
        if self._claimed:
            self._ensure_guardian()
        runner = FaultRunner(self.topology, self.topology_source, self.journal, timeline, self.run_id,
                             self.runner_settings, allow_destructive=self.allow_destructive,
                             on_revert_failed=self.revert_failures.append)
        with runner.inject(built, duration_s=duration_s, guards=guards) as active:
            yield active
