"""The time at risk: how long the data had fewer in-sync copies than the cluster held before the fault.

Read from the cluster's own probe (`harness.clusters.CountsCopies`: the HA manager's node states and the
database's replication view), sampled about once a second for the whole experiment, never computed from the
harness's own events. The promise is what the cluster held in its steady state before the fault (the policy in
effect), so a cluster that runs with fewer copies by design is not judged against a number it never had.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class CopiesPoint:
    """One probe of the cluster: the copies a commit reaches (None: nothing confirms one) and what said so."""

    t: float
    in_sync: int | None
    states: str
    modelled: bool = False  # a platform's model gave part of it (the bound lab's vSAN)


@dataclass(frozen=True)
class RiskSpan:
    """Samples in a row with fewer copies than promised: from the first of them to the first sample after them
    with the promised copies again (None: still reduced at the last sample)."""

    start: float
    end: float | None
    fewest: int | None  # None: at some sample no primary answered, so no copy was confirmed
    promised: int
    reduced_states: str  # what the cluster said at the span's first sample
    restored_states: str  # ... at the sample that ended it ("" while open)
    passed_through: tuple[str, ...] = ()  # what it said in between, each change once
    modelled: bool = False  # a platform's model said so for part of the span, not the cluster

    def seconds(self, until: float) -> float:
        return (self.end if self.end is not None else until) - self.start


def promised_copies(points: Sequence[CopiesPoint], before: float) -> int | None:
    """The most copies the cluster held before `before` (its steady state); None when it was never probed."""
    held = [p.in_sync for p in points if p.t < before and p.in_sync is not None]
    return max(held) if held else None


def _short(point: CopiesPoint, promised: int) -> bool:
    return point.in_sync is None or point.in_sync < promised


def risk_spans(points: Sequence[CopiesPoint], promised: int, start: float, end: float) -> list[RiskSpan]:
    """The spans with fewer copies than `promised` among the samples taken in [start, end]."""
    spans: list[RiskSpan] = []
    opened: list[CopiesPoint] = []
    for point in sorted((p for p in points if start <= p.t <= end), key=lambda p: p.t):
        if _short(point, promised):
            opened.append(point)
            continue
        if opened:
            spans.append(_span(opened, promised, point))
            opened = []
    if opened:
        spans.append(_span(opened, promised, None))
    return spans


def _span(short: Sequence[CopiesPoint], promised: int, restored: CopiesPoint | None) -> RiskSpan:
    counts = [p.in_sync for p in short]
    fewest = None if None in counts else min(c for c in counts if c is not None)
    changes = [p.states for i, p in enumerate(short) if i > 0 and p.states != short[i - 1].states]
    return RiskSpan(short[0].t, restored.t if restored else None, fewest, promised, short[0].states,
                    restored.states if restored else "", tuple(changes), any(p.modelled for p in short))


def time_at_risk(spans: Sequence[RiskSpan], until: float) -> float:
    """Seconds with fewer copies than promised (an open span counts up to `until`)."""
    return sum(span.seconds(until) for span in spans)
