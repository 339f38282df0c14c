"""Failover phases, from the client's and the HA manager's side of the same timeline.

fault in effect → last successful commit → first error → failure detected (HA manager) →
new primary promoted (role change) → [databases online → listener online, where the cluster
reports them: SQL Server] → first successful commit → new steady state. Server-side events are
put on the timeline already aligned (see `align`); the client side comes from the workload's
`commit-gap` events, which carry exact commit times rather than per-second buckets.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness_kernel.history import EventKind
from harness_kernel.history.timeline import Event, Timeline


@dataclass(frozen=True)
class FailoverPhases:
    in_effect: float
    last_commit: float | None
    first_error: float | None
    detected: float | None
    promoted: float | None
    first_commit: float | None
    databases_online: float | None = None
    listener_online: float | None = None

    @property
    def detect_s(self) -> float | None:
        return _span(self.in_effect, self.detected)

    @property
    def promote_s(self) -> float | None:
        return _span(self.detected, self.promoted)

    @property
    def databases_online_s(self) -> float | None:
        """Role change done until every database is online on the new primary (redo caught up)."""
        return _span(self.promoted, self.databases_online)

    @property
    def listener_s(self) -> float | None:
        """Databases online (or, without that event, the role change) until the listener is online."""
        return _span(self.databases_online if self.databases_online is not None else self.promoted,
                     self.listener_online)

    @property
    def first_commit_after_promote_s(self) -> float | None:
        return _span(self.promoted, self.first_commit)

    @property
    def total_s(self) -> float | None:
        """Fault in effect until clients commit again: the failover duration."""
        return _span(self.in_effect, self.first_commit)

    @property
    def client_rto_s(self) -> float | None:
        """Write outage the clients saw: last commit before to first commit after."""
        return _span(self.last_commit, self.first_commit)


def _span(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def _end(gap: Event) -> float:
    """A gap still open when the workload stopped never ended."""
    end = gap.attrs.get("end")
    return float("inf") if end is None else float(end)


def outage_gap(timeline: Timeline, after: float, source: str | None = None) -> Event | None:
    """The longest commit gap that ends after `after` (the outage the fault caused)."""
    gaps = [e for e in timeline.events(EventKind.COMMIT_GAP, source) if _end(e) >= after]
    return max(gaps, key=lambda e: _end(e) - float(e.attrs["start"]), default=None)


def longest_gap_within(timeline: Timeline, start: float, end: float) -> float | None:
    """The longest commit gap overlapping [start, end], in seconds (a gap still open counts up to `end`);
    None: no gap longer than the driver's threshold (a live migration's stun as the clients saw it)."""
    spans = [min(_end(e), end) - float(e.attrs["start"]) for e in timeline.events(EventKind.COMMIT_GAP)
             if float(e.attrs["start"]) <= end and _end(e) >= start]
    return max(spans, default=None)


def failover_phases(timeline: Timeline, in_effect: float) -> FailoverPhases:
    gap = outage_gap(timeline, in_effect)
    last_commit = float(gap.attrs["start"]) if gap else None
    first_commit = _end(gap) if gap and gap.attrs.get("end") is not None else None
    first_error = gap.attrs.get("first_error") if gap else None
    detected = timeline.first(EventKind.DETECTED, after=in_effect - 1.0)
    promoted = timeline.first(EventKind.PROMOTED, after=in_effect - 1.0)
    databases_online = timeline.first(EventKind.DATABASES_ONLINE, after=in_effect - 1.0)
    listener_online = timeline.first(EventKind.LISTENER_ONLINE, after=in_effect - 1.0)
    return FailoverPhases(
        in_effect=in_effect,
        last_commit=last_commit,
        first_error=float(first_error) if first_error is not None else None,
        detected=detected.t if detected else None,
        promoted=promoted.t if promoted else None,
        first_commit=first_commit,
        databases_online=databases_online.t if databases_online else None,
        listener_online=listener_online.t if listener_online else None,
    )
