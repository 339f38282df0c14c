"""The run's single history: every event on one monotonic clock with a wall-clock stamp.

Faults, workloads and the HA-manager watchers append; analysis and reports only read. The
kinds of event and their attributes are `harness_kernel.history.events.EventKind`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness_kernel.history.events import EventKind


@dataclass(frozen=True)
class Event:
    """One thing that happened. `t` is seconds since the timeline origin (monotonic)."""

    t: float
    wall: float
    kind: EventKind
    source: str
    attrs: Mapping[str, Any] = field(default_factory=dict)


class Timeline:
    """Thread-safe append-only event log.

    `t` values come from `time.monotonic()` relative to the origin so that clock steps on
    the harness machine cannot reorder events; `wall` is for display and for aligning
    server-side event times.
    """

    def __init__(self, origin_monotonic: float | None = None, origin_wall: float | None = None) -> None:
        self.origin_monotonic = time.monotonic() if origin_monotonic is None else origin_monotonic
        self.origin_wall = time.time() if origin_wall is None else origin_wall
        self._events: list[Event] = []
        self._lock = threading.Lock()

    def now(self) -> float:
        """Seconds since the origin on the monotonic clock."""
        return time.monotonic() - self.origin_monotonic

    def to_t(self, monotonic: float) -> float:
        return monotonic - self.origin_monotonic

    def wall_of(self, t: float) -> float:
        return self.origin_wall + t

    def t_of_wall(self, wall: float) -> float:
        """Map a wall-clock time (already offset-corrected) onto the timeline."""
        return wall - self.origin_wall

    def record(self, kind: EventKind, source: str, t: float | None = None, **attrs: Any) -> Event:
        at = self.now() if t is None else t
        event = Event(t=at, wall=self.wall_of(at), kind=EventKind(kind), source=source, attrs=dict(attrs))
        with self._lock:
            self._events.append(event)
        return event

    def events(self, kind: EventKind | None = None, source: str | None = None) -> list[Event]:
        with self._lock:
            found = list(self._events)
        found.sort(key=lambda e: e.t)
        return [e for e in found if (kind is None or e.kind == kind) and (source is None or e.source == source)]

    def first(self, kind: EventKind, after: float = float("-inf"), source: str | None = None) -> Event | None:
        return next((e for e in self.events(kind, source) if e.t >= after), None)

    def last(self, kind: EventKind, before: float = float("inf"), source: str | None = None) -> Event | None:
        found = [e for e in self.events(kind, source) if e.t <= before]
        return found[-1] if found else None

    def commit_gaps(self) -> list[tuple[float, float]]:
        """Every commit gap as (start, end); a gap still open when the workload stopped ends at infinity."""
        return [(float(e.attrs["start"]), float("inf") if e.attrs.get("end") is None else float(e.attrs["end"]))
                for e in self.events(EventKind.COMMIT_GAP)]

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events())

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)

    def to_dict(self) -> dict[str, Any]:
        return {
            "origin_wall": self.origin_wall,
            "events": [asdict(e) | {"kind": str(e.kind), "attrs": dict(e.attrs)} for e in self.events()],
        }

    def dump(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict(), indent=1, default=str))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Timeline:
        timeline = cls(origin_monotonic=0.0, origin_wall=float(data["origin_wall"]))
        for raw in data["events"]:
            timeline._events.append(
                Event(t=float(raw["t"]), wall=float(raw["wall"]), kind=EventKind(raw["kind"]),
                      source=str(raw["source"]), attrs=dict(raw.get("attrs", {})))
            )
        return timeline

    @classmethod
    def load(cls, path: Path) -> Timeline:
        return cls.from_dict(json.loads(path.read_text()))
