"""Events a server reports on its own clock (HA manager, DMVs, vCenter), and that clock's offset.

A cluster names its HA manager's events (`DETECTED`, `PROMOTED`) and hands them over with the
server's wall time; `harness.analysis.align` puts them on the harness clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness_kernel.history.events import EventKind


@dataclass(frozen=True)
class ServerEvent:
    wall: float  # the server's own clock, seconds since the epoch
    kind: EventKind
    source: str
    description: str
    attrs: dict[str, Any] = field(default_factory=dict)


def measure_offset(server_now: Callable[[], float], wall: Callable[[], float], samples: int = 5) -> float:
    """Server clock minus harness clock, from the round trip with the least delay (its midpoint)."""
    best: tuple[float, float] | None = None
    for _ in range(samples):
        sent = wall()
        server = server_now()
        received = wall()
        rtt = received - sent
        offset = server - (sent + rtt / 2)
        if best is None or rtt < best[0]:
            best = (rtt, offset)
    assert best is not None
    return best[1]
