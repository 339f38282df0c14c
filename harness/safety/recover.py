"""Finish what a crashed run left behind: revert every fault still in the journal."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from faults import registry
from faults.base import FaultState
from harness.safety.journal import Journal, JournalEntry
from harness.topology_source import load_source

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RecoverOutcome:
    entry: JournalEntry
    action: str  # "reverted", "skipped", "failed"
    detail: str

    def render(self) -> str:
        spec = self.entry.spec
        return f"{self.action:9} {spec.kind} on {spec.target} (run {self.entry.run_id}, pid {self.entry.pid}): {self.detail}"


def recover(journal: Journal, *, force: bool = False,
            clear_timeout_s: float = 60.0) -> list[RecoverOutcome]:
    """Revert each pending entry; revert is idempotent, so a second pass is harmless.

    Entries of a run that is still alive are left alone unless `force`.
    """
    outcomes = []
    for entry in journal.pending():
        if entry.owner_alive() and not force:
            outcomes.append(RecoverOutcome(entry, "skipped", "its run is still alive; use --force to revert anyway"))
            continue
        try:
            topology = load_source(entry.topology_source)
            fault = registry.build(entry.spec, topology)
            before = fault.check()
            fault.revert()
            deadline = time.monotonic() + clear_timeout_s
            while (state := fault.check()) is not FaultState.CLEARED:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"still {state.value} {clear_timeout_s:.0f} s after revert")
                time.sleep(0.2)
        except Exception as exc:
            log.error("recover of %s failed: %s", entry.id, exc)
            outcomes.append(RecoverOutcome(entry, "failed", str(exc)))
            continue
        journal.remove(entry)
        outcomes.append(RecoverOutcome(entry, "reverted", f"was {before.value}, now cleared"))
    return outcomes
