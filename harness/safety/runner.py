"""The fault lifecycle: allow-list → journal → dead man → inject → in effect → guards → revert → clear.

- The journal entry is durable (fsync) before anything touches the target; it states the
  fault's deadline, and carries what a revert needs without this process.
- Every fault has a deadline: the run trips on it itself, the guardian enforces it if the
  run cannot, and a target-side dead man's switch (where the fault has one) is armed for it.
- Revert runs in `finally`: on test end, on failure, on a stop condition, on Ctrl-C, SIGTERM
  and SIGHUP (`signals.FaultSignals`); no signal escapes it, and the third one aborts it
  with the journal kept.
- Revert is fail closed, through the one routine the guardian and `recover` use too
  (`revert.revert_entry`, under the entry's lock): only a positive CLEARED disarms the dead
  man's switch and removes the journal entry. Status rewrites are best effort: a full disk
  does not stop a revert.
- A failed revert does not hide the test's own verdict (an AssertionError stays the error;
  the revert failure is added to it and reported to `on_revert_failed`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from faults.assumptions import Assumes, require
from faults.base import DeadMansSwitch, Fault, FaultPlan, FaultState, NamedDeadMansSwitch, Preflight
from faults.registry import acting, permit
from harness.safety.guards import Guard
from harness.safety.identity import cluster_identity
from harness.safety.journal import EntryBusy, Journal, JournalEntry
from harness.safety.revert import ALREADY_REVERTED, DEFAULT_REVERT_TIMEOUT_S, observe, revert_entry, snapshot
from harness.safety.signals import FaultSignals, tell_operator
from harness_kernel import __version__
from harness_kernel.errors import HarnessError, RevertFailedError, StopConditionTripped
from harness_kernel.history import EventKind
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.models import Topology

log = logging.getLogger(__name__)


@dataclass
class RunnerSettings:
    settle_timeout_s: float = 30.0
    revert_timeout_s: float = DEFAULT_REVERT_TIMEOUT_S
    poll_interval_s: float = 0.1
    guard_interval_s: float = 0.25
    deadman_margin_s: float = 60.0
    default_hold_s: float = 900.0
    """How long a fault given no `duration_s` may stay in effect (an S1 step, a bare `inject(spec)`)."""
    deadline_cap_s: float = 3600.0
    """The longest deadline of a fault given no `duration_s`."""
    say: Callable[[str], None] = tell_operator
    """Where a revert that waits reports its progress, and a signal what it does (the operator's terminal)."""

    def deadline(self, duration_s: float | None) -> tuple[float, str]:
        """Seconds from inject until the fault must be gone, and how that was reckoned (for the journal)."""
        if duration_s is not None:
            seconds = self.settle_timeout_s + max(0.0, duration_s) + self.deadman_margin_s
            return seconds, (f"{duration_s:g} s duration + {self.settle_timeout_s:g} s settle + "
                             f"{self.deadman_margin_s:g} s margin")
        wanted = self.settle_timeout_s + self.default_hold_s + self.revert_timeout_s + self.deadman_margin_s
        seconds = min(wanted, self.deadline_cap_s)
        return seconds, (f"no duration given: {self.settle_timeout_s:g} s settle + {self.default_hold_s:g} s default hold + "
                         f"{self.revert_timeout_s:g} s revert + {self.deadman_margin_s:g} s margin, "
                         f"capped at {self.deadline_cap_s:g} s")


@dataclass
class ActiveFault:
    """What a test holds while a fault is in effect."""

    fault: Fault
    entry: JournalEntry
    injected_at: float
    in_effect_at: float | None = None
    stop_reason: str | None = None
    revert_error: BaseException | None = None
    reverted: bool = False
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
                 run_id: str, settings: RunnerSettings | None = None, *, allow_destructive: bool = False,
                 on_revert_failed: Callable[[RevertFailedError], None] | None = None) -> None:
        self.topology = topology
        self.topology_source = topology_source
        self.journal = journal
        self.timeline = timeline
        self.run_id = run_id
        self.settings = settings or RunnerSettings()
        self.allow_destructive = allow_destructive
        self.on_revert_failed = on_revert_failed

    def check_allowed(self, fault: Fault) -> FaultPlan:
        plan = fault.plan()
        permit(plan, self.topology, allow_destructive=self.allow_destructive)
        return plan

    def new_entry(self, fault: Fault, duration_s: float | None, acts: dict[str, str]) -> JournalEntry:
        """`acts`: what acts, as `registry.acting` names it (what a reverter rebuilds)."""
        seconds, basis = self.settings.deadline(duration_s)
        entry = JournalEntry(spec=fault.spec, topology_source=self.topology_source, topology_name=self.topology.name,
                             run_id=self.run_id, cluster=cluster_identity(self.topology),
                             topology=snapshot(self.topology), revert_timeout_s=self.settings.revert_timeout_s,
                             deadline_basis=basis, backend=acts,
                             release=__version__)
        entry.deadline_wall = entry.created_wall + seconds
        return entry

    @contextmanager
    def inject(self, fault: Fault, *, duration_s: float | None = None,
               guards: Sequence[Guard] = ()) -> Iterator[ActiveFault]:
        """Inject `fault` for the block's duration, then revert whatever happens."""
        plan = self.check_allowed(fault)
        acts = acting(fault, self.topology)  # a fault no reverter could rebuild after a crash stops here
        if isinstance(fault, Preflight):
            fault.preflight()  # an unreachable or untrusted endpoint fails here, before the journal and the fault
        if isinstance(fault, Assumes):  # so does a cluster that is not as the backend assumes
            for assumption, answer in require(fault, fault.spec.kind, fault.spec.target):
                log.info("%s on %s: assumption %s holds: %s", fault.spec.kind, fault.spec.target, assumption.id,
                         answer.seen)
        spec = fault.spec
        entry = self.new_entry(fault, duration_s, acts)
        attrs = {"fault": spec.kind, "target": spec.target, **spec.params}
        what_acts = {**acts, "via": plan.backend, "plan": plan.render().splitlines()[0]}
        signals = FaultSignals(entry.describe(), self.settings.revert_timeout_s, self.settings.say)
        stop_watch = threading.Event()
        active: ActiveFault | None = None
        body_error: BaseException | None = None
        try:
            signals.install()
            self.journal.write(entry)  # durable before anything touches the target; failing, nothing does
            log.info("%s: journaled (entry %s); deadline in %.0f s (%s)", entry.describe(), entry.id,
                     (entry.deadline_wall or 0) - entry.created_wall, entry.deadline_basis)
            active = ActiveFault(fault=fault, entry=entry,
                                 injected_at=self.timeline.record(EventKind.INJECT, "runner", **attrs, acting=what_acts).t)
            if isinstance(fault, NamedDeadMansSwitch):
                fault.deadman_marker = entry.deadman_marker
            if isinstance(fault, DeadMansSwitch):
                assert entry.deadline_wall is not None
                fault.arm_deadman(entry.deadline_wall - time.time() + self.settings.revert_timeout_s)
            fault.inject()
            entry.status = "in-effect"
            entry.notes["inject_returned"] = True
            self.journal.update(entry, role="run", wait_s=1.0)
            self._await_effect(fault)
            active.in_effect_at = self.timeline.record(EventKind.IN_EFFECT, "runner", **attrs).t
            threading.Thread(target=self._watch, args=(active, guards, stop_watch, attrs),
                             name=f"guards-{spec.kind}", daemon=True).start()
            yield active
            if active.stopped:
                raise StopConditionTripped(active.stop_reason or "stopped")
        except BaseException as exc:
            body_error = exc
            raise
        finally:
            if active is not None:
                self._finish(active, attrs, signals, stop_watch, body_error)
            else:  # interrupted before the target was touched (or the journal could not be written)
                signals.restore()
                with contextlib.suppress(OSError):
                    self.journal.remove(entry)

    def _finish(self, active: ActiveFault, attrs: dict[str, Any], signals: FaultSignals, stop_watch: threading.Event,
                body_error: BaseException | None) -> None:
        """Revert with every signal held; keep the body's verdict if the revert fails too."""
        while True:
            try:
                signals.defer()  # a signal landing before this line is caught below and held like the others
                break
            except KeyboardInterrupt:
                signals.held_after_all()
        try:
            stop_watch.set()
            try:
                self._revert(active, attrs)  # waits for a stop condition's revert under way in the watcher
            except RevertFailedError as failure:
                if not isinstance(body_error, AssertionError | KeyboardInterrupt):
                    raise
                body_error.add_note(str(failure))  # the verdict stays; the revert failure goes with it
                log.error("%s", failure)
        finally:
            signals.restore()
        held = signals.pending()
        if held is not None and body_error is None:
            raise held

    def _revert(self, active: ActiveFault, attrs: dict[str, Any]) -> None:
        with active._revert_lock:
            if active.revert_error is not None:
                raise active.revert_error
            if active.reverted:
                return
            fault, entry = active.fault, active.entry
            self.timeline.record(EventKind.REVERT, "runner", **attrs)
            try:
                done = revert_entry(self.journal, entry, role="run", fault=fault,
                                    timeout_s=self.settings.revert_timeout_s, say=self.settings.say,
                                    poll_s=self.settings.poll_interval_s, wait_s=self.settings.revert_timeout_s + 30,
                                    waiting=self._waiting(entry))
            except (HarnessError, OSError, EntryBusy) as exc:
                self.timeline.record(EventKind.REVERT_FAILED, "runner", error=str(exc), **attrs)
                failure = RevertFailedError(
                    f"{entry.describe()}: revert failed ({exc}); the journal keeps it for 'python -m harness recover'")
                active.revert_error = failure
                if self.on_revert_failed is not None:
                    self.on_revert_failed(failure)
                raise failure from exc
            if done == ALREADY_REVERTED:
                log.info("%s: reverted by another reverter while this run was late", entry.describe())
            active.reverted = True
            entry.status = "reverted"
            self.timeline.record(EventKind.REVERTED, "runner", **attrs)

    def _waiting(self, entry: JournalEntry) -> Callable[[str, float], None]:
        told = [0.0]

        def waiting(holder: str, waited: float) -> None:
            if waited - told[0] >= 5.0 or told[0] == 0.0:
                told[0] = waited
                self.settings.say(f"waiting for {holder} to finish reverting {entry.describe()} ({waited:.0f} s)")

        return waiting

    def _await_effect(self, fault: Fault) -> None:
        deadline = time.monotonic() + self.settings.settle_timeout_s
        state, error = observe(fault)
        while state is not FaultState.IN_EFFECT:
            if time.monotonic() > deadline:
                raise HarnessError(f"{fault.spec.kind} on {fault.spec.target} did not take effect within "
                                   f"{self.settings.settle_timeout_s:.0f} s (state: {state.value}"
                                   f"{'; ' + error if error else ''})")
            time.sleep(self.settings.poll_interval_s)
            state, error = observe(fault)

    def _watch(self, active: ActiveFault, guards: Sequence[Guard], stop: threading.Event, attrs: dict[str, Any]) -> None:
        """Guards and the fault's deadline; a stop condition reverts at once, in a thread that outlives this one."""
        deadline = active.entry.deadline_wall
        while not stop.wait(self.settings.guard_interval_s):
            name, reason = "", None
            for guard in guards:
                try:
                    reason = guard.evaluate()
                except Exception as exc:  # a broken guard must stop the experiment, not hide
                    reason = f"guard {guard.name} raised {exc!r}"
                if reason:
                    name = guard.name
                    break
            if not reason and deadline is not None and time.time() >= deadline:
                name, reason = "deadline", f"fault still in effect at its deadline ({active.entry.deadline_basis})"
            if not reason or stop.is_set():
                continue
            active.stop_reason = f"{name}: {reason}"
            self.timeline.record(EventKind.STOP_CONDITION, "runner", guard=name, reason=reason)
            log.warning("stop condition %s tripped: %s; reverting now", name, reason)
            active._stopped.set()
            # not a daemon: the interpreter waits for this revert even if the main thread is interrupted
            threading.Thread(target=self._revert_quietly, args=(active, {**attrs, "reason": "stop-condition"}),
                             name=f"revert-{active.fault.spec.kind}", daemon=False).start()
            return

    def _revert_quietly(self, active: ActiveFault, attrs: dict[str, Any]) -> None:
        try:
            self._revert(active, attrs)
        except Exception:
            log.exception("revert after stop condition failed")  # the main thread raises it again
