"""Regressions across nights by change-point detection: a shift in a figure's level, not one bad night.

The median/MAD rule (`reports.regression`) compares tonight with a few recent nights; it cannot tell a
night that wobbled from a level that moved. Here each figure's nightly history is segmented into runs
of constant level by PELT (Killick, Fearnhead & Eckley 2012) with an absolute-deviation cost (the
segment's median, so one outlier night is not a segment of its own), a penalty proportional to the
noise and to log(n), and segments of at least `min_size` nights. Run as a nightly job runs it: each
night the history so far is segmented again, and an **alarm** is a change point among the last
`recent` nights, in the worse direction, by more than the figure's absolute floor, not alarmed on an
earlier night. The noise scale is robust: the median absolute difference between consecutive
nights, which a level shift moves only once.

Implemented here (about 60 lines, numpy only) rather than with `ruptures`, which brings scipy for the
two cost functions this needs. Parameters are fixed before evaluation (`benchmarks/changepoint_eval.py`
measures them on held-out seeds).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from reports.tables import Better


@dataclass(frozen=True)
class Detector:
    # Chosen on calibration seeds 0-29 of benchmarks/changepoint_eval.py (a 30 % step in heavy-tailed noise of 10 %
    # with outlier nights): found by night 3 in all, 0.88 false alarms per 100 nights; then fixed.
    penalty_k: float = 1.25  # penalty = penalty_k * noise * log(n), in the cost's units (absolute deviations)
    min_size: int = 2  # nights in a segment: a level needs two nights to exist
    recent: int = 4  # an alarm concerns a change among the last `recent` nights


@dataclass(frozen=True)
class Alarm:
    night: int  # the night (0-based) on which the alarm was raised
    change_at: int  # the first night of the new level
    before: float  # the level (median) before
    after: float  # the level after


def noise_scale(values: Sequence[float]) -> float:
    """Robust noise of a series: the median absolute difference of consecutive values / (sqrt 2 x 0.6745)."""
    x = np.asarray(values, dtype=np.float64)
    if len(x) < 3:
        return 0.0
    return float(np.median(np.abs(np.diff(x)))) / (math.sqrt(2) * 0.6745)


def segment(values: Sequence[float], detector: Detector = Detector(), noise: float | None = None) -> list[int]:
    """The change points of `values` (indices where a new level begins), by PELT with an L1 cost."""
    x = np.asarray(values, dtype=np.float64)
    n = len(x)
    scale = noise_scale(values) if noise is None else noise
    if n < 2 * detector.min_size or scale <= 0.0:
        return []
    penalty = detector.penalty_k * scale * math.log(n)

    def cost(start: int, end: int) -> float:
        part = x[start:end]
        return float(np.abs(part - np.median(part)).sum())

    best = [0.0] + [math.inf] * n  # best[t]: the least cost of x[:t]
    last = [0] * (n + 1)  # last[t]: where the last segment of that best split begins
    candidates = [0]
    for end in range(detector.min_size, n + 1):
        options = [(best[s] + cost(s, end) + penalty, s) for s in candidates if end - s >= detector.min_size]
        if options:
            best[end], last[end] = min(options)
        # pruning: a start that cannot beat the best split now never will
        candidates = [s for s in candidates if end - s < detector.min_size or best[s] + cost(s, end) <= best[end]]
        if end - detector.min_size + 1 >= detector.min_size:
            candidates.append(end - detector.min_size + 1)
    points, end = [], n
    while end > 0:
        start = last[end]
        if start > 0:
            points.append(start)
        end = start
    return sorted(points)


def alarms(values: Sequence[float], better: Better, *, floor: float = 0.0, detector: Detector = Detector(),
           start: int = 6) -> list[Alarm]:
    """Night by night from `start`, as a nightly job would see it: each new alarm and the change it concerns."""
    raised: list[Alarm] = []
    alarmed: set[int] = set()
    for night in range(start, len(values)):
        seen = values[: night + 1]
        points = segment(seen, detector)
        for i, change in enumerate(points):
            if change < night + 1 - detector.recent or any(abs(change - a) <= 1 for a in alarmed):
                continue
            before_start = points[i - 1] if i > 0 else 0
            after_end = points[i + 1] if i + 1 < len(points) else len(seen)
            before = float(np.median(seen[before_start:change]))
            after = float(np.median(seen[change:after_end]))
            worse = after - before if better == "lower" else before - after
            if worse > floor:
                raised.append(Alarm(night, change, before, after))
                alarmed.add(change)
    return raised
