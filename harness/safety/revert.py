"""The one way a fault is reverted, by the run, the guardian or `recover`: fail closed, bounded, retried.

A fault counts as gone only when its `check()` positively says CLEARED. A check that raises
is UNKNOWN (asked again), never CLEARED. A revert the control plane refuses, or a fault seen
in effect again after its revert (an inject still in flight landing late), is reverted again,
with backoff, until the revert timeout. Only after a positive CLEARED is the dead man's
switch disarmed and the journal entry removed; otherwise both stay for the next reverter.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from types import MappingProxyType
from typing import Any, Final

from pydantic import ValidationError
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_exponential

from faults import registry
from faults.base import DeadMansSwitch, Fault, FaultSpec, FaultState, NamedDeadMansSwitch
from harness.safety.journal import Journal, JournalEntry
from harness.safety.snapshots import upgraded
from harness_kernel.errors import ConfigError, RevertFailedError
from harness_kernel.topology.loader import format_validation_error
from harness_kernel.topology.models import Topology

log = logging.getLogger(__name__)

Say = Callable[[str], None]
PROGRESS_EVERY_S = 5.0
BACK_AGAIN_AFTER_S = 2.0  # in effect this long after a revert returned: revert again
STUCK_AFTER_S = 5.0  # not cleared this long after a revert returned (it did not take): revert again
CONFIRM_S = 0.5  # CLEARED must hold this long
CONFIRM_AFTER_UNFINISHED_INJECT_S = 5.0  # ... and this long if the inject never returned (it may still land)
DEFAULT_REVERT_TIMEOUT_S = 240.0  # --revert-timeout-s's default, and for entries written before they recorded theirs


class _NotCleared(Exception):
    def __init__(self, state: FaultState) -> None:
        super().__init__(f"still {state.value}")
        self.state = state


def observe(fault: Fault) -> tuple[FaultState, str | None]:
    """The fault's state; a check that raises is UNKNOWN (with its error), never CLEARED."""
    try:
        return fault.check(), None
    except Exception as exc:
        log.info("%s on %s: check failed (%s); counted as unknown", fault.spec.kind, fault.spec.target, exc)
        return FaultState.UNKNOWN, f"check failed: {exc}"


def revert_until_cleared(fault: Fault, *, timeout_s: float, poll_s: float = 0.2, say: Say | None = None,
                         confirm_s: float = CONFIRM_S) -> None:
    """Revert `fault` until checks positively say CLEARED for `confirm_s`; RevertFailedError after `timeout_s`.

    CLEARED must hold for `confirm_s` (a check that errors neither confirms nor breaks it):
    an inject still in flight (a slow `nft -f` that commits late) shows up as IN_EFFECT again,
    and is reverted again. So is a revert that returned but did not take (still not cleared
    after `STUCK_AFTER_S`): `revert()` is idempotent, so asking again is always safe.
    """
    what = f"{fault.spec.kind} on {fault.spec.target}"
    started = time.monotonic()
    deadline = started + timeout_s
    seen: dict[str, Any] = {"state": FaultState.UNKNOWN, "error": None, "told": started}

    def once() -> None:
        fault.revert()
        reverted_at = time.monotonic()
        back_since: float | None = None
        cleared_since: float | None = None
        while True:
            state, error = observe(fault)
            seen["state"], seen["error"] = state, error or seen["error"]
            now = time.monotonic()
            if state is FaultState.CLEARED:
                cleared_since = cleared_since or now
                if now - cleared_since >= confirm_s:
                    return
            elif error is None:
                cleared_since = None
            if now >= deadline:
                raise _NotCleared(state)
            if state is FaultState.IN_EFFECT:
                back_since = back_since or now
                if now - back_since >= BACK_AGAIN_AFTER_S:
                    raise _NotCleared(state)  # the revert did not take, or the fault came back: again
            else:
                back_since = None
            if say is not None and now - seen["told"] >= PROGRESS_EVERY_S:
                seen["told"] = now
                say(f"still reverting {what}: {state.value} after {now - started:.0f} s (up to {timeout_s:.0f} s)")
            if cleared_since is None and now - reverted_at >= STUCK_AFTER_S:
                raise _NotCleared(state)  # asked once, nothing changed: ask again
            time.sleep(min(poll_s, max(0.0, deadline - now)))

    def before_sleep(retry_state: Any) -> None:
        outcome = retry_state.outcome
        error = outcome.exception() if outcome is not None else None
        if error is not None and not isinstance(error, _NotCleared):
            seen["error"] = f"revert failed: {error}"
            log.warning("%s: %s; reverting again", what, error)
        else:
            log.info("%s: still %s; reverting again (idempotent)", what, seen["state"].value)

    try:
        for attempt in Retrying(stop=stop_after_delay(timeout_s), wait=wait_exponential(multiplier=0.2, max=5.0),
                                retry=retry_if_exception_type(Exception), reraise=True, before_sleep=before_sleep):
            with attempt:
                once()
    except Exception as exc:
        last = seen["error"] if isinstance(exc, _NotCleared) else f"revert failed: {exc}"
        raise RevertFailedError(f"{what}: not positively cleared within {timeout_s:.0f} s "
                                f"(last seen {seen['state'].value}{'; ' + last if last else ''})") from exc


# -- rebuilding a fault from its journal entry -----------------------------------------------------

def snapshot(topology: Topology) -> dict[str, Any]:
    """What a revert needs to know of the topology, without the run: secret-free (references only)."""
    return topology.model_dump(mode="json")


JUDGED_BY_THE_RUN: Final = MappingProxyType({"widest_site_prefix": 1})
"""A snapshot's site subnets passed the run's own bound (which its command line may have widened)."""


def topology_of(entry: JournalEntry) -> Topology:
    """The topology as the run saw it (its snapshot), not as today's file says.

    The snapshot was written by the run into the private state directory, so it is read as code
    reads a model (the embedded lab's snapshot included), not as a user's document. Every entry
    has one since the journal first had deadlines; one that cannot be read is named, never guessed
    from today's file."""
    if entry.topology is None:
        raise ConfigError(f"journal entry {entry.id} ({entry.spec.kind} on {entry.spec.target}) has no topology "
                          f"snapshot (written by a release older than the journal's deadlines); revert it by hand "
                          f"against {entry.topology_source}, then clear it")
    try:
        return Topology.model_validate(upgraded(entry), context=JUDGED_BY_THE_RUN)
    except ValidationError as exc:
        raise ConfigError(f"journal entry {entry.id} ({entry.spec.kind} on {entry.spec.target}): its topology "
                          f"snapshot is unusable ({format_validation_error(exc)})") from None


def name_deadman(fault: Fault, entry: JournalEntry) -> None:
    """Give a named dead man's switch its entry's marker (arming and disarming must agree)."""
    if isinstance(fault, NamedDeadMansSwitch):
        fault.deadman_marker = entry.deadman_marker


def disarm(fault: Fault) -> None:
    if isinstance(fault, DeadMansSwitch):
        fault.disarm_deadman()


Builder = Callable[[FaultSpec, Topology], Fault]
Waiting = Callable[[str, float], None]  # (who holds the entry, seconds waited so far)
ALREADY_REVERTED: Final = "already reverted by another reverter"


def revert_entry(journal: Journal, entry: JournalEntry, *, role: str, build: Builder | None = None,
                 fault: Fault | None = None, timeout_s: float | None = None, say: Say | None = None,
                 poll_s: float = 0.2, wait_s: float = 0.0, waiting: Waiting | None = None) -> str:
    """Revert the fault of a journal entry as `role` (run, guardian, recover), holding the entry's lock: the one
    revert routine of the harness.

    The run passes the `fault` it injected; the guardian and `recover` rebuild the class the entry names
    (`registry.rebuild`; `build` stands in for that in tests). The entry is
    read again under the lock: one another reverter removed is done (never written back). Waits for a positive
    CLEARED as long as the run would have (the entry's revert timeout) unless `timeout_s` says otherwise, then
    disarms the dead man's switch and removes the entry. Raises EntryBusy if another reverter holds the entry
    past `wait_s`, RevertFailedError if it does not clear (the entry stays). Returns what was done.
    """
    with journal.entry_lock(entry.id, role=role, wait_s=wait_s, waiting=waiting):
        current = journal.read(entry.id)
        if current is None:
            return ALREADY_REVERTED
        if fault is None:
            topology = topology_of(current)
            fault = (build(current.spec, topology) if build is not None
                     else registry.rebuild(current.spec, topology, current.backend))
            name_deadman(fault, current)
        before, _ = observe(fault)
        returned = current.notes.get("inject_returned") or entry.notes.get("inject_returned")  # the run knows first
        confirm = CONFIRM_S if returned else CONFIRM_AFTER_UNFINISHED_INJECT_S
        current.status = "reverting"
        current.notes = {**current.notes, **({"inject_returned": True} if returned else {}), "reverted_by": role}
        journal.rewrite(current)
        timeout = timeout_s or current.revert_timeout_s or DEFAULT_REVERT_TIMEOUT_S
        revert_until_cleared(fault, timeout_s=timeout, poll_s=poll_s, say=say, confirm_s=confirm)
        try:
            disarm(fault)
        except Exception as exc:
            raise RevertFailedError(f"{current.describe()}: cleared, but its dead man's switch could not be disarmed "
                                    f"({exc}); it could re-break the target later") from exc
        try:
            journal.remove(current)
        except OSError as exc:  # the fault is gone; a stale entry only makes the next reverter check again
            log.warning("journal entry %s: cleared, but could not be removed (%s)", current.id, exc)
        return f"was {before.value}, now cleared"
