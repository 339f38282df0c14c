"""Steady states and the segments a disturbed throughput series falls into.

Definitions (configurable through `SteadyBand`):
- a window is *steady* when at least `share` of its seconds lie within ±`tolerance` of the
  window's mean and that mean is above zero;
- *recovered* = the start of the first steady window of `sustain_s` seconds after the
  disturbance (its level may differ from the baseline: a new steady state);
- *segments* split the series wherever `split_after_s` consecutive seconds leave the band
  around the running segment mean, so 520 → 0 → 900 → 520 gives four segments.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SteadyBand:
    tolerance: float = 0.25
    share: float = 0.8
    sustain_s: int = 10
    split_after_s: int = 3


@dataclass(frozen=True)
class Level:
    """Mean and spread of a stretch of per-second values."""

    start: int
    end: int  # exclusive
    mean: float
    stdev: float

    @property
    def seconds(self) -> int:
        return self.end - self.start


def level(t: Sequence[int], values: Sequence[float], start: int, end: int) -> Level:
    chosen = [v for ti, v in zip(t, values, strict=True) if start <= ti < end]
    if not chosen:
        return Level(start, end, 0.0, 0.0)
    return Level(start, end, statistics.fmean(chosen), statistics.pstdev(chosen) if len(chosen) > 1 else 0.0)


def is_steady(window: Sequence[float], band: SteadyBand) -> bool:
    if not window:
        return False
    mean = statistics.fmean(window)
    if mean <= 0:
        return False
    inside = sum(1 for v in window if abs(v - mean) <= band.tolerance * mean)
    return inside >= band.share * len(window)


def recovered_at(t: Sequence[int], values: Sequence[float], after: float, band: SteadyBand) -> int | None:
    """Start of the first steady window of `band.sustain_s` seconds that begins at or after `after`."""
    n = band.sustain_s
    for i, ti in enumerate(t):
        if ti < after or i + n > len(values):
            continue
        window = values[i:i + n]
        if is_steady(window, band) and abs(values[i] - statistics.fmean(window)) <= band.tolerance * statistics.fmean(window):
            return ti
    return None


def segments(t: Sequence[int], values: Sequence[float], band: SteadyBand) -> list[Level]:
    """Split into stretches of one level each; every run of zero-throughput seconds is its own."""
    cuts = [0]
    for i in range(1, len(values)):
        if (values[i] == 0) != (values[i - 1] == 0):
            cuts.append(i)
    cuts.append(len(values))
    out: list[Level] = []
    for a, b in itertools.pairwise(cuts):
        if values[a] == 0:
            out.append(level(t, values, t[a], t[b - 1] + 1))
        else:
            out.extend(_split_levels(t, values, a, b, band))
    return out


def _split_levels(t: Sequence[int], values: Sequence[float], a: int, b: int, band: SteadyBand) -> list[Level]:
    """Within a non-zero run, cut where `split_after_s` seconds in a row leave the running band."""
    out: list[Level] = []
    start, outside = a, 0
    for i in range(a, b):
        mean = statistics.fmean(values[start:i]) if i > start else values[i]
        outside = outside + 1 if abs(values[i] - mean) > band.tolerance * mean else 0
        if outside >= band.split_after_s:
            cut = i - outside + 1
            out.append(level(t, values, t[start], t[cut]))
            start, outside = cut, 0
    out.append(level(t, values, t[start], t[b - 1] + 1))
    return out
