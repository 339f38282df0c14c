"""What was injected and reverted, when, with which parameters: read back from the timeline.

The runner records `inject` / `in-effect` / `revert` / `reverted` (or `revert-failed`) with the
fault kind, target and parameters as attributes; pairing them here gives both the shaded
windows of the plots and the fault record attached to every test.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from harness_kernel.history import EventKind
from harness_kernel.history.timeline import Event, Timeline
from reports.html import esc, page

_IDENTITY = ("fault", "target", "acting")  # the rest of an INJECT event's attrs are the fault's params


@dataclass(frozen=True)
class FaultWindow:
    """One fault from `inject` to `reverted`; `end` is None while it was never reverted."""

    fault: str
    target: str
    start: float
    end: float | None
    in_effect: float | None = None
    revert: float | None = None
    revert_failed: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.fault} @ {self.target}"

    def end_or(self, fallback: float) -> float:
        return fallback if self.end is None else self.end

    @property
    def revert_s(self) -> float | None:
        """How long the revert took, from its start to the fault's check seeing it cleared."""
        return None if self.revert is None or self.end is None else self.end - self.revert

    @property
    def legend(self) -> str:
        """The label with the parameters that tell one window from another (S1's RTT steps)."""
        shown = ", ".join(f"{k}={v}" for k, v in self.params.items() if isinstance(v, int | float | str) and k != "instance")
        return f"{self.label} ({shown})" if shown else self.label

    @property
    def outcome(self) -> str:
        if self.revert_failed is not None:
            return "revert failed"
        return "reverted" if self.end is not None else "not reverted"


def _same_fault(event: Event, fault: str, target: str) -> bool:
    return str(event.attrs.get("fault", "")) == fault and str(event.attrs.get("target", "")) == target


def _next(timeline: Timeline, kind: EventKind, after: float, fault: str, target: str) -> Event | None:
    return next((e for e in timeline.events(kind) if e.t >= after and _same_fault(e, fault, target)), None)


def fault_windows(timeline: Timeline) -> list[FaultWindow]:
    """Pair every `inject` with the first later `reverted` of the same fault kind and target."""
    windows = []
    for inject in timeline.events(EventKind.INJECT):
        fault, target = str(inject.attrs.get("fault", "fault")), str(inject.attrs.get("target", "?"))
        reverted = _next(timeline, EventKind.REVERTED, inject.t, fault, target)
        in_effect = _next(timeline, EventKind.IN_EFFECT, inject.t, fault, target)
        revert = _next(timeline, EventKind.REVERT, inject.t, fault, target)
        failed = _next(timeline, EventKind.REVERT_FAILED, inject.t, fault, target)
        params = {k: v for k, v in inject.attrs.items() if k not in _IDENTITY}
        windows.append(FaultWindow(
            fault=fault, target=target, start=inject.t, end=None if reverted is None else reverted.t,
            in_effect=None if in_effect is None else in_effect.t, revert=None if revert is None else revert.t,
            revert_failed=None if failed is None else str(failed.attrs.get("error", "revert failed")), params=params))
    return windows


def fault_record(timeline: Timeline) -> list[dict[str, Any]]:
    """The windows as plain data, with wall-clock stamps for people matching them to other logs."""
    record = []
    for window in fault_windows(timeline):
        entry = asdict(window) | {"params": dict(window.params), "outcome": window.outcome,
                                  "start_wall": timeline.wall_of(window.start),
                                  "end_wall": None if window.end is None else timeline.wall_of(window.end)}
        record.append(entry)
    return record


def fault_record_json(timeline: Timeline) -> str:
    return json.dumps(fault_record(timeline), indent=1, default=str)


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def fault_record_html(timeline: Timeline, title: str = "Fault record") -> str:
    """One row per fault: timing on the run clock, outcome and parameters."""
    head = ("<tr><th class=text>fault</th><th class=text>target</th><th>inject s</th><th>in effect s</th>"
            "<th>revert s</th><th>reverted s</th><th class=text>outcome</th><th class=text>parameters</th></tr>")
    rows = []
    for w in fault_windows(timeline):
        css = "pass" if w.outcome == "reverted" else "fail"
        params = ", ".join(f"{k}={v}" for k, v in w.params.items()) or "—"
        rows.append(f"<tr><td class=text>{esc(w.fault)}</td><td class=text>{esc(w.target)}</td>"
                    f"<td>{_seconds(w.start)}</td><td>{_seconds(w.in_effect)}</td><td>{_seconds(w.revert)}</td>"
                    f"<td>{_seconds(w.end)}</td><td class='text {css}'>{esc(w.outcome)}</td>"
                    f"<td class=text>{esc(params)}</td></tr>")
    body = f"<table>{head}{''.join(rows)}</table>" if rows else "<p class=note>No fault was injected.</p>"
    return page(title, body + "<p class=note>Times are seconds on the run's monotonic clock.</p>")
