"""Turning findings into a scenario's table rows and key numbers."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from harness.analysis.impact import WindowGaps, window_gaps
from harness.analysis.intervals import Interval, mean_interval, ratio_interval, repeats_interval
from harness.analysis.slo import SloCheck
from harness.clusters import FailoverForecast
from harness.experiment import Experiment, Findings
from harness_kernel.history.series import SecondPoint
from reports.tables import MODELLED_MARK

GB = 1e9


@dataclass(frozen=True)
class WindowStats:
    """The OLTP workload over one window: mean and lowest per-second TPS, median p95, mean transaction time, and
    what the mean hides (whole seconds without any commit, the longest commit gap)."""

    tps: float | None
    min_tps: float | None
    p95_ms: float | None
    avg_txn_ms: float | None
    interval: Interval | None = None  # the mean TPS's 95 % interval (moving-block bootstrap), from 3 seconds on
    gaps: WindowGaps | None = None

    def outage(self, name: str) -> list[str]:
        """A finding when this window, meant to be steady, holds seconds without any commit."""
        return self.gaps.outage(name) if self.gaps is not None else []


def window_stats(experiment: Experiment, start: float, end: float, users: int) -> WindowStats:
    """Whole seconds inside [start, end); a window shorter than a second takes the seconds it touches."""
    return pooled_window_stats(experiment, [(start, end)], users)


def pooled_window_stats(experiment: Experiment, spans: Sequence[tuple[float, float]], users: int) -> WindowStats:
    """One condition measured in several blocks (interleaved with another condition's, so that a slow drift falls
    on both): the whole seconds inside each [start, end) pooled, their gaps added up."""
    points: list[SecondPoint] = []
    silent, longest = 0, None
    commit_gaps = experiment.timeline.commit_gaps()
    for start, end in spans:
        first, last = math.ceil(start), math.floor(end)
        if last <= first:
            first, last = math.floor(start), math.ceil(end)
        inside = experiment.series.points(first, last)
        points += inside
        gaps = window_gaps([p.t for p in inside], [p.tps for p in inside], first, last, commit_gaps)
        silent += gaps.seconds_without_commit
        longest = max((g for g in (longest, gaps.longest_gap_s) if g is not None), default=None)
    if not points:
        return WindowStats(None, None, None, None)
    tps = statistics.fmean(p.tps for p in points)
    p95s = [p.p95_ms for p in points if p.p95_ms is not None]
    # closed loop without think time: mean response time = users / throughput (Little's law)
    return WindowStats(tps, min(p.tps for p in points), statistics.median(p95s) if p95s else None,
                       1000.0 * users / tps if tps else None,
                       mean_interval([p.tps for p in points]) if len(points) >= 3 else None,
                       WindowGaps(silent, longest))


def window_ratio(numerator: WindowStats, denominator: WindowStats) -> Interval | None:
    """One window's mean TPS over another's, with its 95 % interval (None where either has none)."""
    if numerator.interval is None or denominator.interval is None:
        return None
    return ratio_interval(numerator.interval, denominator.interval)


def tps_after(findings: Findings) -> float | None:
    """The steady level the business runs at while the fault holds (None: none was reached before the revert)."""
    return findings.impact.after.mean if findings.impact.after else None


def tps_ratio_interval(findings: Findings) -> Interval | None:
    """TPS after over before, with its 95 % interval: each window's mean by the moving-block bootstrap, the ratio
    by the delta method (`harness.analysis.intervals.ratio_interval`)."""
    after, before = findings.impact.intervals.get("after"), findings.impact.intervals.get("before")
    return ratio_interval(after, before) if after is not None and before is not None else None


def no_steady_state(trials: Sequence[Findings], observe_s: float) -> str | None:
    """Why TPS after / before cannot be judged: a trial reached no steady state while the fault held."""
    missing = sum(1 for f in trials if f.impact.after is None)
    if not missing:
        return None
    which = "" if len(trials) == 1 else f" in {missing} of {len(trials)} trials"
    return (f"no steady state while the fault held ({observe_s:g} s){which}: a longer --observe-s would show one; "
            "the time to recover says when the business came back")


def median_of(values: Sequence[float | None]) -> float | None:
    """The median of the values measured (None when none was)."""
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def tps_ratio(trials: Sequence[Findings]) -> tuple[float | None, Interval | None]:
    """TPS after / before and its 95 % interval: of one trial, by its windows' bootstrap; of repeated trials, the
    median of their ratios with the interval across them (None: a trial reached no steady state)."""
    ratios = [f.impact.after.mean / f.impact.before.mean for f in trials
              if f.impact.after is not None and f.impact.before.mean > 0]
    if len(ratios) < len(trials):
        return None, None
    if len(trials) == 1:
        return ratios[0], tps_ratio_interval(trials[0])
    found = repeats_interval(ratios)
    return (found.value if found else None), found


def duration(values: Sequence[float | None]) -> tuple[float | None, Interval | None]:
    """A duration measured once per trial: the value of one, or the median of repeated trials with its interval
    across them (not when a trial measured none: its median is then the measured trials', judged on its value)."""
    found = repeats_interval([v for v in values if v is not None]) if None not in values else None
    return (found.value, found) if found is not None else (median_of(values), None)


def fmt(value: float | None, unit: str = "", digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}{unit}"


def fmt_lost(lost: int | None) -> str:
    return "n/a (no ledger)" if lost is None else str(lost)


def forecast_beside_measured(forecast: FailoverForecast | None, detect_s: float | None,
                             client_rto_s: float | None) -> dict[str, str]:
    """The cluster's own prediction next to the measurement, for a cluster that makes one (SQL Server)."""
    if forecast is None:
        return {}
    return {"detection settings": forecast.detection,
            "detect: forecast / measured": f"{fmt(forecast.detection_s, ' s')} / {fmt(detect_s, ' s')}",
            "RTO: redo estimate / client measured": f"{fmt(forecast.rto_s, ' s')} / {fmt(client_rto_s, ' s')}",
            "RPO: log send queue before the fault": fmt(forecast.rpo_kb, " KB", 0)}


AT_RISK = "time at risk (fewer in-sync copies than before the fault)"


def time_at_risk_check(trials: Sequence[Findings], maximum_s: float) -> SloCheck:
    """How long the data had fewer in-sync copies than the cluster held before the fault, as its probe said; not
    judged (and said so) on a cluster that gives no count of its copies."""
    values = [t.at_risk_s for t in trials]
    if None in values:
        return SloCheck(AT_RISK, None, "<=", maximum_s, " s",
                        not_judged="the cluster gave no count of its in-sync copies")
    value, interval = duration(values)
    modelled = at_risk_modelled(trials)
    return SloCheck(AT_RISK, value, "<=", maximum_s, " s", interval=interval, trial_figure=not modelled,
                    basis=at_risk_basis(trials[-1]), modelled=modelled)


def at_risk_modelled(trials: Sequence[Findings]) -> bool:
    """A platform's model said part of the time at risk (the bound lab's vSAN resync)."""
    return any(span.modelled for t in trials for span in t.at_risk or ())


def at_risk_basis(findings: Findings) -> str:
    """The cluster's states at the start and at the end of each span, times from the fault in effect."""
    if not findings.at_risk:
        return "the promised copies held at every probe (about one a second)"
    told = []
    for span in findings.at_risk:
        start = f"from +{span.start - findings.in_effect_t:.1f} s ({span.reduced_states})"
        start += "".join(f" through ({states})" for states in span.passed_through)
        end = (f"to +{span.end - findings.in_effect_t:.1f} s ({span.restored_states})" if span.end is not None
               else "still reduced at the trial's end")
        told.append(f"{start} {end}; promised {span.promised}, fewest "
                    f"{'unconfirmed' if span.fewest is None else span.fewest}")
    return "; then ".join(told)


SIGNS = {"<=": "≤", ">=": "≥", "<": "<", ">": ">"}


def within(shown: str, op: str, threshold: float, unit: str = "") -> str:
    """A key figure with the threshold it is judged against beside it: "9.0 s (≤ 35 s)"."""
    return f"{shown} ({SIGNS[op]} {threshold:g}{unit})"


def kept_share(value: float | None, reference: float | None, min_ratio: float) -> str:
    """TPS kept against its reference, with the threshold: "92 % (≥ 80 %)"."""
    share = 100 * value / reference if value is not None and reference else None
    return within(fmt(share, " %", 0), ">=", 100 * min_ratio, " %")


def at_risk_figure(trials: Sequence[Findings], maximum_s: float) -> str:
    """The time at risk as a key figure, with its threshold, marked where a platform's model gave part of it."""
    modelled = at_risk_modelled(trials)
    return within(fmt_modelled(fmt(median_of([t.at_risk_s for t in trials]), " s", 0), modelled), "<=",
                  maximum_s, " s")


def fmt_modelled(shown: str, modelled: bool) -> str:
    """A figure the platform's model gave, marked as the report's tables mark it."""
    return f"{shown} {MODELLED_MARK}" if modelled else shown
