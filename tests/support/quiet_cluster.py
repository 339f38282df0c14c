"""A cluster of one node that is always healthy and names no server-side events: a failure's phases come from the
client alone. For experiments whose subject is the harness's own bookkeeping, not a cluster."""

from __future__ import annotations

from harness_kernel.history.server import ServerEvent


class QuietCluster:
    name = "the victim's cluster"

    def preflight(self) -> None:
        return None

    def resync(self) -> None:
        return None

    def primary_node(self) -> str:
        return "node-a"

    def clock_offset(self) -> float:
        return 0.0

    def ha_events(self, since_wall: float, primary_before: str) -> list[ServerEvent]:
        return []
