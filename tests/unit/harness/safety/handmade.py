"""Faults a user builds by hand and hands to `inject`: importable, so a reverter after a crash can rebuild them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from faults.backends.process import ProcessFreeze


def marker_of(pidfile: Path) -> Path:
    """Where a MarkedFreeze's revert leaves its mark: proof that this class reverted, not the in-tree one."""
    return pidfile.with_name(pidfile.name + ".reverted-by-MarkedFreeze")


@dataclass
class MarkedFreeze(ProcessFreeze):
    """The in-tree freeze, with a revert of its own that leaves a mark beside the pid file."""

    def revert(self) -> None:
        super().revert()
        marker_of(self.pidfile).write_text("reverted\n")


class NotAFault:
    """An importable class that is no fault: a journal naming it must not be acted on."""

    @classmethod
    def from_spec(cls, *args: object) -> NotAFault:
        return cls()
