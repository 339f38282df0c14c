"""Failover phases from pg_auto_failover's event log: when the monitor saw the failure, when it promoted.

Pure functions over `HaEvent`s (server wall clock; align with `Lab.clock_offset()`).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.lab.postgres import HaEvent

PROMOTED_STATES = ("wait_primary", "primary")


def failure_detected(events: Sequence[HaEvent]) -> HaEvent | None:
    """The monitor marked a node unhealthy (its health checks failed)."""
    return next((e for e in events if "marked as unhealthy" in e.description), None)


def promoted(events: Sequence[HaEvent], node: str | None = None) -> HaEvent | None:
    """A node (other than any given) reported itself primary after a promotion (`wait_primary` first)."""
    for event in events:
        reported = event.description.startswith("New state is reported")
        if reported and event.reportedstate in PROMOTED_STATES and (node is None or event.node == node):
            return event
    return None
