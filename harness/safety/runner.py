"""The fault lifecycle: allow-list → journal → inject → in effect → guards → revert → clear.

Revert runs in `finally`: on test end, on failure, on Ctrl-C and on SIGTERM (with
`signals.sigterm_raises`), and a second signal cannot interrupt it. If the process dies
anyway, the journal entry stays and `python -m harness recover` finishes the job.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from faults.base import DeadMansSwitch, Fault, FaultState, Preflight
from faults.registry import permit
from harness.errors import HarnessError, RevertFailedError, StopConditionTripped
from harness.history import EventKind
from harness.history.timeline import Timeline
from harness.safety.guards import Guard
from harness.safety.journal import Journal, JournalEntry
from harness.safety.signals import deferred_signals
from harness.topology.models import Topology

log = logging.getLogger(__name__)


@dataclass
class RunnerSettings:
    settle_timeout_s: float = 30.0
    revert_timeout_s: float = 120.0
    poll_interval_s: float = 0.1
    guard_interval_s: float = 0.25
    deadman_margin_s: float = 60.0


@dataclass
class ActiveFault:
    """What a test holds while a fault is in effect."""

    fault: Fault
    entry: JournalEntry
    injected_at: float
    in_effect_at: float | None = None
    stop_reason: str | None = None
    revert_error: BaseException | None = None
    _stopped: threading.Event = field(default_factory=threading.Event)
    _revert_lock: threading.Lock = field(default_factory=threading.Lock)

    def sleep(self, seconds: float) -> None:
        """Wait while the fault is in effect; raises at once if a guard stops the experiment."""
        if self._stopped.wait(seconds):
            raise StopConditionTripped(self.stop_reason or "stopped")

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()


class FaultRunner:
    def __init__(self, topology: Topology, topology_source: str, journal: Journal, timeline: Timeline,
                 run_id: str, settings: RunnerSettings | None = None, *, allow_destructive: bool = False) -> None:
        self.topology = topology
        self.topology_source = topology_source
        self.journal = journal
        self.timeline = timeline
        self.run_id = run_id
        self.settings = settings or RunnerSettings()
        self.allow_destructive = allow_destructive

    def check_allowed(self, fault: Fault) -> None:
        permit(fault.spec, self.topology, allow_destructive=self.allow_destructive)

    @contextmanager
    def inject(self, fault: Fault, *, duration_s: float | None = None,
               guards: Sequence[Guard] = ()) -> Iterator[ActiveFault]:
        """Inject `fault` for the block's duration, then revert whatever happens."""
        self.check_allowed(fault)
        if isinstance(fault, Preflight):
            fault.preflight()  # an unreachable or untrusted endpoint fails here, before the journal and the fault
        spec = fault.spec
        entry = JournalEntry(spec=spec, topology_source=self.topology_source,
                             topology_name=self.topology.name, run_id=self.run_id)
        if duration_s is not None and isinstance(fault, DeadMansSwitch):
            entry.deadman_until_wall = time.time() + duration_s + self.settings.deadman_margin_s
        self.journal.write(entry)
        attrs = {"fault": spec.kind, "target": spec.target, **spec.params}
        active = ActiveFault(fault=fault, entry=entry, injected_at=self.timeline.record(EventKind.INJECT, "runner", **attrs).t)
        stop_watch = threading.Event()
        watcher: threading.Thread | None = None
        try:
            if entry.deadman_until_wall is not None and isinstance(fault, DeadMansSwitch):
                fault.arm_deadman(duration_s + self.settings.deadman_margin_s if duration_s else 0.0)
            fault.inject()
            entry.status = "in-effect"
            self.journal.write(entry)
            self._await(fault, FaultState.IN_EFFECT, self.settings.settle_timeout_s, "take effect")
            active.in_effect_at = self.timeline.record(EventKind.IN_EFFECT, "runner", **attrs).t
            if guards:
                watcher = threading.Thread(target=self._watch, args=(active, guards, stop_watch),
                                           name=f"guards-{spec.kind}", daemon=True)
                watcher.start()
            yield active
            if active.stopped:
                raise StopConditionTripped(active.stop_reason or "stopped")
        finally:
            stop_watch.set()
            if watcher is not None:
                watcher.join(timeout=5)
            self._revert(active, attrs)

    def _revert(self, active: ActiveFault, attrs: dict[str, Any]) -> None:
        with deferred_signals(), active._revert_lock:
            if active.revert_error is not None:
                raise active.revert_error
            fault, entry = active.fault, active.entry
            if entry.status == "reverted":
                return
            self.timeline.record(EventKind.REVERT, "runner", **attrs)
            entry.status = "reverting"
            self.journal.write(entry)
            try:
                fault.revert()
                self._await(fault, FaultState.CLEARED, self.settings.revert_timeout_s, "clear")
                if isinstance(fault, DeadMansSwitch):
                    fault.disarm_deadman()
            except Exception as exc:
                self.timeline.record(EventKind.REVERT_FAILED, "runner", error=str(exc), **attrs)
                active.revert_error = RevertFailedError(
                    f"{fault.spec.kind} on {fault.spec.target}: revert failed ({exc}); the journal keeps it "
                    f"for 'python -m harness recover'")
                raise active.revert_error from exc
            entry.status = "reverted"
            self.journal.remove(entry)
            self.timeline.record(EventKind.REVERTED, "runner", **attrs)

    def _await(self, fault: Fault, wanted: FaultState, timeout_s: float, verb: str) -> None:
        deadline = time.monotonic() + timeout_s
        state = fault.check()
        while state is not wanted:
            if time.monotonic() > deadline:
                raise HarnessError(f"{fault.spec.kind} on {fault.spec.target} did not {verb} within "
                                   f"{timeout_s:.0f} s (state: {state.value})")
            time.sleep(self.settings.poll_interval_s)
            state = fault.check()

    def _watch(self, active: ActiveFault, guards: Sequence[Guard], stop: threading.Event) -> None:
        while not stop.wait(self.settings.guard_interval_s):
            for guard in guards:
                try:
                    reason = guard.evaluate()
                except Exception as exc:  # a broken guard must stop the experiment, not hide
                    reason = f"guard {guard.name} raised {exc!r}"
                if reason:
                    active.stop_reason = f"{guard.name}: {reason}"
                    self.timeline.record(EventKind.STOP_CONDITION, "runner", guard=guard.name, reason=reason)
                    log.warning("stop condition %s tripped: %s; reverting now", guard.name, reason)
                    active._stopped.set()
                    try:
                        self._revert(active, {"fault": active.fault.spec.kind, "target": active.fault.spec.target,
                                              "reason": "stop-condition"})
                    except Exception:
                        log.exception("revert after stop condition failed")
                    return
