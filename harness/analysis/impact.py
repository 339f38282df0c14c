"""What a fault did to throughput, in three windows that mean what their names say, and how long it took.

- **before**: the steady baseline, the `baseline_s` whole seconds before the fault took effect;
- **after**: the steady state the business runs at *while the fault holds*, from the first steady
  stretch after the fault took effect to the revert (None when none was reached before it);
- **recovered**: the steady state after the revert and its settle, to the workload's stop.

A window holds whole seconds only: the second the fault took effect in, the one it was reverted
in and the one the workload stopped in are partial and left out (a last partial second alone
moved S3's drop from 5.9 % to 11.4 %). Each window also says how many of its seconds had no
commit at all and its longest commit gap; an outage inside a window meant to be steady is a
finding of its own (`Impact.outages`), since a mean can hide 9 s of total outage.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from harness.analysis.intervals import Interval, mean_interval
from harness.analysis.steady import Level, SteadyBand, level, recovered_at, segments
from harness_kernel.history.series import SecondPoint

WINDOWS = ("before", "after", "recovered")


@dataclass(frozen=True)
class WindowGaps:
    """What a window's mean hides: its whole seconds without any commit, and its longest commit gap (None: no
    gap longer than the workload's gap threshold)."""

    seconds_without_commit: int
    longest_gap_s: float | None

    def outage(self, name: str) -> list[str]:
        """The finding, when the window `name`, meant to be steady, holds seconds without any commit."""
        return [f"{name}: {self.seconds_without_commit} s without any commit"] if self.seconds_without_commit else []


@dataclass(frozen=True)
class Impact:
    before: Level
    after: Level | None  # the steady state reached while the fault held
    recovered: Level | None  # the steady state after revert / rejoin
    recovered_at: int | None  # first second of the first steady state after the fault took effect
    time_to_recover_s: float | None
    outage_s: int  # whole seconds with zero throughput from the fault taking effect to its revert
    segments: tuple[Level, ...]
    intervals: Mapping[str, Interval] = field(default_factory=dict)  # window name -> its mean TPS's 95 % interval
    gaps: Mapping[str, WindowGaps] = field(default_factory=dict)  # window name -> what its mean hides

    @property
    def drop_pct(self) -> float | None:
        """Drop of the steady state while the fault held against the baseline, in percent."""
        if self.after is None or self.before.mean <= 0:
            return None
        return 100.0 * (self.before.mean - self.after.mean) / self.before.mean

    @property
    def outages(self) -> list[str]:
        """The windows meant to be steady that hold seconds without any commit, as sentences."""
        return [found for name, gaps in self.gaps.items() for found in gaps.outage(name)]


def impact(points: Sequence[SecondPoint], fault_t: float, revert_t: float | None, *,
           baseline_s: int, band: SteadyBand | None = None, settle_s: int = 0, stopped_t: float | None = None,
           commit_gaps: Sequence[tuple[float, float]] = ()) -> Impact:
    """Measure the fault's effect on the per-second throughput.

    `fault_t` is when the fault took effect, `revert_t` when it was reverted (None if it lasts past the
    series), `stopped_t` when the workload stopped (None: its last second is whole). `settle_s` seconds
    after revert are skipped before the recovered level is read. `commit_gaps`: the workload's commit gaps
    as (start, end) times.
    """
    band = band or SteadyBand()
    t = [p.t for p in points]
    tps = [p.tps for p in points]
    start = int(fault_t)
    last_whole = math.floor(stopped_t) if stopped_t is not None else (t[-1] + 1 if t else start)
    before = level(t, tps, start - baseline_s, start)
    fault_end = min(math.floor(revert_t), last_whole) if revert_t is not None else last_whole
    # the first steady state after the fault, reached while it held or only after its revert
    recovered = recovered_at(t, tps, fault_t, band)
    after = level(t, tps, recovered, fault_end) if recovered is not None and recovered < fault_end else None
    back = None
    if revert_t is not None:
        back_start = recovered_at(t, tps, revert_t + settle_s, band)
        if back_start is not None and back_start < last_whole:
            back = level(t, tps, back_start, last_whole)
    outage = sum(1 for ti, v in zip(t, tps, strict=True) if fault_t <= ti < fault_end and v == 0)
    windows = {name: window for name, window in zip(WINDOWS, (before, after, back), strict=True)
               if window is not None and any(window.start <= ti < window.end for ti in t)}
    intervals = {name: mean_interval([v for ti, v in zip(t, tps, strict=True) if window.start <= ti < window.end])
                 for name, window in windows.items() if window.seconds >= 3}
    gaps = {name: window_gaps(t, tps, window.start, window.end, commit_gaps) for name, window in windows.items()}
    return Impact(
        before=before,
        after=after,
        recovered=back,
        recovered_at=recovered,
        time_to_recover_s=None if recovered is None else max(0.0, recovered - fault_t),
        outage_s=outage,
        segments=tuple(segments(t, tps, band)),
        intervals=intervals,
        gaps=gaps,
    )


def window_gaps(t: Sequence[int], tps: Sequence[float], start: float, end: float,
                commit_gaps: Sequence[tuple[float, float]]) -> WindowGaps:
    """The whole seconds of [start, end) without a commit, and the longest commit gap overlapping it (cut to it)."""
    silent = sum(1 for ti, v in zip(t, tps, strict=True) if start <= ti < end and v == 0)
    spans = [min(gap_end, end) - max(gap_start, start) for gap_start, gap_end in commit_gaps
             if gap_start < end and gap_end > start]
    return WindowGaps(silent, max(spans, default=None))
