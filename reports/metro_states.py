"""What the metro storage decided, read back from the history: spans of constant state, per group and row.

The experiment records a group's states when they change (`EventKind.METRO`); a state holds from
its event to the next event of the same group and source, the last one to the end of the run.
The rows are what a reader asks of a partition: did the copies stay in sync, was the link up,
which site served, and did each site reach the arbiter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness_kernel.history import EventKind
from harness_kernel.history.timeline import Timeline

# each state's weight for a reader: the colour a plot gives it, the same for every product
GOOD = ("in sync", "up", "serving", "reachable")
WAITING = ("resyncing", "partial", "standby")
BAD = ("fractured", "down", "suspended", "unreachable")


@dataclass(frozen=True)
class StateSpan:
    source: str
    group: str
    row: str  # "replica", "link", "<site> serving", "<site> arbiter"
    state: str
    start: float
    end: float | None  # None: still so when the run ended

    def overlaps(self, start: float, end: float) -> bool:
        return self.start < end and (self.end is None or self.end > start)


def _rows(attrs: Mapping[str, Any]) -> dict[str, str]:
    rows = {"replica": str(attrs.get("replica", "unknown")), "link": str(attrs.get("link", "unknown"))}
    sites = attrs.get("sites")
    for site, view in (sites.items() if isinstance(sites, Mapping) else ()):
        if isinstance(view, Mapping):
            rows[f"{site} serving"] = str(view.get("serving", "unknown"))
            rows[f"{site} arbiter"] = str(view.get("arbiter", "unknown"))
    return rows


def metro_spans(timeline: Timeline) -> list[StateSpan]:
    """Every row's spans of constant state, in the order the rows first appear."""
    open_spans: dict[tuple[str, str, str], StateSpan] = {}
    order: dict[tuple[str, str, str], int] = {}  # a row's place: where it first appeared
    closed: list[StateSpan] = []
    for event in timeline.events(EventKind.METRO):
        group = str(event.attrs.get("group", ""))
        rows = _rows(event.attrs)
        for key in [k for k in open_spans if k[:2] == (event.source, group)]:
            span = open_spans[key]
            if rows.get(key[2]) != span.state:  # a row gone from the group (a site no longer listed) closes too
                closed.append(StateSpan(span.source, span.group, span.row, span.state, span.start, event.t))
                del open_spans[key]
        for row, state in rows.items():
            key = (event.source, group, row)
            order.setdefault(key, len(order))
            open_spans.setdefault(key, StateSpan(event.source, group, row, state, event.t, None))
    return sorted(closed + list(open_spans.values()), key=lambda s: (order[(s.source, s.group, s.row)], s.start))


def states_during(spans: Sequence[StateSpan], row: str, start: float, end: float) -> list[str]:
    """The states a row (of any group: the lab has one) went through between `start` and `end`, in order."""
    seen: list[str] = []
    for span in sorted((s for s in spans if s.row == row and s.overlaps(start, end)), key=lambda s: s.start):
        if not seen or seen[-1] != span.state:
            seen.append(span.state)
    return seen


def serving_sites(spans: Sequence[StateSpan], start: float, end: float) -> list[str]:
    """The sites that served at some moment between `start` and `end`."""
    return sorted({s.row.removesuffix(" serving") for s in spans
                   if s.row.endswith(" serving") and s.state == "serving" and s.overlaps(start, end)})


def always_served(spans: Sequence[StateSpan], start: float, end: float) -> bool | None:
    """Some site served at every moment between `start` and `end` (None: nothing was read in that window)."""
    serving = [s for s in spans if s.row.endswith(" serving") and s.overlaps(start, end)]
    if not serving:
        return None
    cuts = sorted({start, *(s.start for s in serving if s.start > start),
                   *(s.end for s in serving if s.end is not None and s.end < end)})
    return all(any(s.state == "serving" and s.overlaps(t, t + 1e-6) for s in serving) for t in cuts)


def in_sync_again(spans: Sequence[StateSpan], after: float) -> float | None:
    """When the replica was in sync again for good, at or after `after`: the start of its last span, if that one is
    in sync and lasts to the end of the run (None: not in sync when the run ended). A blip out of sync after the
    revert (a monitor that reaches its nodes again re-checks them) counts until it is over."""
    replica = [s for s in spans if s.row == "replica"]
    last = max(replica, key=lambda s: s.start, default=None)
    if last is None or last.state != "in sync" or last.end is not None:
        return None
    return max(last.start, after)


def weight(state: str) -> str:
    """"good", "waiting", "bad" or "unknown": how a plot colours a state, whatever the product called it."""
    return "good" if state in GOOD else "waiting" if state in WAITING else "bad" if state in BAD else "unknown"
