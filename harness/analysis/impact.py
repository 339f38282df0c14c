"""What a fault did to throughput: before / during / after, drop and time to recover."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from harness.analysis.intervals import Interval, mean_interval
from harness.analysis.steady import Level, SteadyBand, level, recovered_at, segments
from harness_kernel.history.series import SecondPoint


@dataclass(frozen=True)
class Impact:
    baseline: Level
    during: Level | None  # the new steady state reached while the fault was in effect
    after: Level | None  # the steady state after revert / rejoin
    recovered_at: int | None  # first second of the new steady state after the fault took effect
    time_to_recover_s: float | None
    outage_s: int  # seconds with zero throughput after the fault took effect
    segments: tuple[Level, ...]
    intervals: Mapping[str, Interval] = field(default_factory=dict)  # "baseline", "during", "after": each window's mean

    @property
    def drop_pct(self) -> float | None:
        """Drop of the degraded steady state against the baseline, in percent."""
        if self.during is None or self.baseline.mean <= 0:
            return None
        return 100.0 * (self.baseline.mean - self.during.mean) / self.baseline.mean


def impact(points: Sequence[SecondPoint], fault_t: float, revert_t: float | None, *,
           baseline_s: int, band: SteadyBand | None = None, settle_s: int = 0) -> Impact:
    """Measure the fault's effect on the per-second throughput.

    `fault_t` is when the fault took effect, `revert_t` when it was reverted (None if it
    lasts past the series). The baseline is the `baseline_s` seconds before `fault_t`;
    `settle_s` seconds after revert are skipped before the after-level is read.
    """
    band = band or SteadyBand()
    t = [p.t for p in points]
    tps = [p.tps for p in points]
    start = int(fault_t)
    baseline = level(t, tps, start - baseline_s, start)
    end_during = int(revert_t) if revert_t is not None else (t[-1] + 1 if t else start)
    # The new steady state may be reached only after revert (a host that must come back first).
    recovered = recovered_at(t, tps, fault_t, band)
    during = level(t, tps, recovered, end_during) if recovered is not None and recovered < end_during else None
    after = None
    if revert_t is not None:
        after_start = recovered_at(t, tps, revert_t + settle_s, band)
        if after_start is not None:
            after = level(t, tps, after_start, t[-1] + 1)
    outage = sum(1 for ti, v in zip(t, tps, strict=True) if fault_t <= ti < end_during and v == 0)
    intervals = {name: mean_interval([v for ti, v in zip(t, tps, strict=True) if window.start <= ti < window.end])
                 for name, window in (("baseline", baseline), ("during", during), ("after", after))
                 if window is not None and window.seconds >= 3 and any(window.start <= ti < window.end for ti in t)}
    return Impact(
        baseline=baseline,
        during=during,
        after=after,
        recovered_at=recovered,
        time_to_recover_s=None if recovered is None else max(0.0, recovered - fault_t),
        outage_s=outage,
        segments=tuple(segments(t, tps, band)),
        intervals=intervals,
    )
