"""Put server-side events (HA manager, DMVs, vCenter) on the harness clock.

Each server's clock is offset from the harness's; the offset is measured at start
(`harness_kernel.history.server.measure_offset`) and subtracted here.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness_kernel.history.server import ServerEvent
from harness_kernel.history.timeline import Timeline


def align(events: Iterable[ServerEvent], offset_s: float, timeline: Timeline) -> int:
    """Record each named server event on the timeline, on the harness clock; returns how many."""
    recorded = 0
    for event in events:
        t = timeline.t_of_wall(event.wall - offset_s)
        timeline.record(event.kind, event.source, t=t, description=event.description, **event.attrs)
        recorded += 1
    return recorded
