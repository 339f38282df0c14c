"""Finish what a dead run left behind: revert every fault still in the journal, one entry at a time.

- An unreadable entry is reported and skipped; the others are still reverted.
- An entry whose run is alive (pid *and* start time: a reused pid is not the run) is left to
  it unless `force`; one another reverter (the run, the guardian, another recover) holds the
  lock of is never touched, even with `force`.
- The fault is rebuilt from the entry's own topology snapshot, reverted fail-closed for as
  long as the run would have waited (its revert timeout), its dead man's switch disarmed,
  and only then the entry removed (`revert.revert_entry`, the guardian's path too).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from faults.base import Fault, FaultSpec
from harness.safety.journal import EntryBusy, Journal, JournalEntry
from harness.safety.revert import Builder, Say, revert_entry
from harness_kernel.topology.models import Topology

log = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_BAD_INPUT = 4
EXIT_REVERT_FAILED = 10


class Factory(Protocol):
    def build(self, spec: FaultSpec, topology: Topology) -> Fault: ...


@dataclass(frozen=True)
class RecoverOutcome:
    entry: JournalEntry
    action: str  # "reverted", "skipped", "failed"
    detail: str

    def render(self) -> str:
        spec = self.entry.spec
        return f"{self.action:9} {spec.kind} on {spec.target} (run {self.entry.run_id}, pid {self.entry.pid}): {self.detail}"


class RecoverReport(list[RecoverOutcome]):
    """The outcome of each readable entry, plus the files that could not be read."""

    unreadable: list[tuple[Path, str]]

    def __init__(self) -> None:
        super().__init__()
        self.unreadable = []

    def lines(self) -> list[str]:
        out = [o.render() for o in self]
        out += [f"unreadable {path}: {reason}; left in place, check it by hand" for path, reason in self.unreadable]
        return out

    @property
    def exit_code(self) -> int:
        """0: everything reverted (or left to its live run); 10: a revert failed; 4: an entry is unreadable."""
        if any(o.action == "failed" for o in self):
            return EXIT_REVERT_FAILED
        if self.unreadable:
            return EXIT_BAD_INPUT
        return EXIT_OK


def recover(journal: Journal, factory: Factory | None = None, *, force: bool = False,
            clear_timeout_s: float | None = None, say: Say | None = None) -> RecoverReport:
    """Revert each pending entry; revert is idempotent, so a second pass is harmless.

    `clear_timeout_s` overrides each entry's own revert timeout (the run's). `factory` builds
    the faults (default: the class each entry names, `registry.rebuild`).
    """
    report = RecoverReport()
    scan = journal.scan()
    report.unreadable.extend(scan.unreadable)
    for path, reason in scan.unreadable:
        log.error("unreadable journal entry %s: %s", path, reason)
    build: Builder | None = factory.build if factory is not None else None
    for entry in scan.entries:
        if not force and entry.owner_alive():
            where = "" if entry.owner.local else f" (on host {entry.hostname}: run recover there)"
            report.append(RecoverOutcome(entry, "skipped", f"its run {entry.owner.describe()} is still alive{where}; "
                                                           "use --force to revert anyway"))
            continue
        try:
            detail = revert_entry(journal, entry, role="recover", build=build, timeout_s=clear_timeout_s, say=say)
        except EntryBusy as busy:
            report.append(RecoverOutcome(entry, "skipped", f"{busy}; left to it"))
            continue
        except Exception as exc:
            log.error("recover of %s failed: %s", entry.id, exc)
            report.append(RecoverOutcome(entry, "failed", f"{exc}; the journal keeps it"))
            continue
        report.append(RecoverOutcome(entry, "reverted", detail))
    return report
