"""Failover phases from pg_auto_failover's event log: when the monitor saw the failure, when it promoted.

Pure functions over `HaEvent`s (server wall clock; align with `Lab.clock_offset()`).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness_lab.postgres import HaEvent

PROMOTED_STATES = ("wait_primary", "primary")
# Goals the monitor assigns once a switchover begins (a planned move has no health failure).
SWITCHOVER_GOALS = ("draining", "prepare_promotion", "stop_replication", "report_lsn")


def is_detection(event: HaEvent) -> bool:
    """The monitor marked a node unhealthy, or started moving the primary role."""
    return "marked as unhealthy" in event.description or event.goalstate in SWITCHOVER_GOALS


def is_promotion(event: HaEvent, old_primary: str | None = None) -> bool:
    """A node other than `old_primary` reported itself primary (`wait_primary` first)."""
    return (event.description.startswith("New state is reported") and event.reportedstate in PROMOTED_STATES
            and event.node != old_primary)


def failure_detected(events: Sequence[HaEvent]) -> HaEvent | None:
    """The monitor marked a node unhealthy (its health checks failed)."""
    return next((e for e in events if "marked as unhealthy" in e.description), None)


def promoted(events: Sequence[HaEvent], node: str | None = None) -> HaEvent | None:
    """A node (the given one, if any) reported itself primary after a promotion."""
    return next((e for e in events if is_promotion(e) and (node is None or e.node == node)), None)
