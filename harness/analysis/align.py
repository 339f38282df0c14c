"""Put server-side events (HA manager, DMVs, vCenter) on the harness clock.

Each server's clock is offset from the harness's; the offset is measured at start
(server time minus harness wall time, e.g. from a `select now()` round trip, taking the
midpoint of the request) and subtracted here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from harness.timeline import Timeline


@dataclass(frozen=True)
class ServerEvent:
    wall: float  # the server's own clock, seconds since the epoch
    source: str
    description: str
    attrs: dict[str, Any] = field(default_factory=dict)


def measure_offset(server_now: Callable[[], float], wall: Callable[[], float], samples: int = 5) -> float:
    """Server clock minus harness clock, from the round trip with the least delay."""
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


def align(events: Iterable[ServerEvent], offset_s: float, timeline: Timeline,
          classify: Callable[[ServerEvent], str | None]) -> int:
    """Record each event `classify` names ('detected', 'promoted', ...) on the timeline."""
    recorded = 0
    for event in events:
        kind = classify(event)
        if kind is None:
            continue
        t = timeline.t_of_wall(event.wall - offset_s)
        timeline.record(kind, event.source, t=t, description=event.description, **event.attrs)
        recorded += 1
    return recorded
