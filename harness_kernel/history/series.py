"""Per-second series on the timeline clock, with memory bounded for multi-hour runs.

Transactions are folded into one bucket per second (counts, error classes and a log-scale
latency histogram with ~4 % resolution), so memory grows with run length in seconds, not
with the transaction count.
"""

from __future__ import annotations

import bisect
import math
import threading
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

_MIN_MS = 0.05
_GROWTH = 1.04
_BINS = 400  # 0.05 ms .. ~0.05*1.04^400 ms (~330 s)


def _bin_of(latency_ms: float) -> int:
    if latency_ms <= _MIN_MS:
        return 0
    return min(_BINS - 1, int(math.log(latency_ms / _MIN_MS, _GROWTH)) + 1)


def _bin_value(index: int) -> float:
    """Representative latency of a bin (geometric middle)."""
    if index == 0:
        return _MIN_MS
    return float(_MIN_MS * _GROWTH ** (index - 0.5))


class _Bucket:
    """One second's outcomes. A second that can no longer change much is packed (its histogram as bytes,
    a few hundred bytes instead of a dictionary's few kilobytes), so a day's run stays small; a late
    record unpacks it again."""

    __slots__ = ("_error_classes", "_histogram", "_packed", "commits", "errors")

    def __init__(self) -> None:
        self.commits = 0
        self.errors = 0
        self._error_classes: Counter[str] | None = None
        self._histogram: Counter[int] | None = None
        self._packed = b""

    @property
    def error_classes(self) -> Counter[str]:
        if self._error_classes is None:
            self._error_classes = Counter()
        return self._error_classes

    @property
    def histogram(self) -> Counter[int]:
        """The latency histogram to add to (unpacks a packed second)."""
        if self._histogram is None:
            self._histogram = Counter(dict(self.histogram_items()))
            self._packed = b""
        return self._histogram

    def histogram_items(self) -> list[tuple[int, int]]:
        """(bin, count) pairs, read without unpacking."""
        if self._histogram is not None:
            return list(self._histogram.items())
        flat = array("I", self._packed)
        return list(zip(flat[0::2], flat[1::2], strict=True))

    def error_items(self) -> list[tuple[str, int]]:
        return [] if self._error_classes is None else list(self._error_classes.items())

    def pack(self) -> None:
        if self._histogram is not None:
            self._packed = array("I", [n for item in sorted(self._histogram.items()) for n in item]).tobytes()
            self._histogram = None

    def add(self, other: _Bucket) -> None:
        self.commits += other.commits
        self.errors += other.errors
        if other._error_classes:
            self.error_classes.update(other._error_classes)
        self.histogram.update(dict(other.histogram_items()))

    def percentiles(self, qs: tuple[float, ...]) -> tuple[float | None, ...]:
        """The latency at each quantile of `qs` (ascending), from one pass over the sorted histogram."""
        items = sorted(self.histogram_items())
        total = sum(count for _, count in items)
        if total == 0:
            return tuple(None for _ in qs)
        found: list[float | None] = []
        seen, at = 0, 0
        for q in qs:
            while at < len(items) and seen + items[at][1] < q * total:
                seen += items[at][1]
                at += 1
            found.append(_bin_value(items[min(at, len(items) - 1)][0]))
        return tuple(found)

    def point(self, t: int, seconds: int) -> SecondPoint:
        p50, p95, p99 = self.percentiles((0.50, 0.95, 0.99))
        errors = dict(self.error_items()) if self._error_classes else _NO_ERRORS
        return SecondPoint(t, self.commits, self.errors, p50, p95, p99, errors, seconds)


_NO_ERRORS: Mapping[str, int] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class SecondPoint:
    """One second of a transactional workload. `t` is the second's start on the timeline."""

    t: int
    commits: int
    errors: int
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    error_classes: Mapping[str, int]
    seconds: int = 1  # more than one: a coarser point of a long series (its counts summed, its percentiles merged)

    @property
    def tps(self) -> float:
        return self.commits / self.seconds

    def to_dict(self) -> dict[str, Any]:
        return {"t": self.t, "tps": self.tps if self.seconds > 1 else self.commits, "errors": self.errors,
                "p50_ms": self.p50_ms, "p95_ms": self.p95_ms, "p99_ms": self.p99_ms,
                "error_classes": dict(self.error_classes), **({"seconds": self.seconds} if self.seconds > 1 else {})}


class TransactionSeries:
    """Thread-safe per-second aggregation of transaction outcomes.

    A transaction counts in the second it *ended* (when the client learned its outcome). Seconds more than
    `PACKED_AFTER_S` behind the newest are packed (see `_Bucket`).
    """

    PACKED_AFTER_S = 5

    def __init__(self, name: str = "oltp") -> None:
        self.name = name
        self._buckets: dict[int, _Bucket] = {}
        self._open: set[int] = set()
        self._newest: int | None = None
        self._lock = threading.Lock()
        self.last_commit_t: float | None = None
        self.first_error_t: float | None = None

    def _bucket(self, second: int) -> _Bucket:
        """The bucket of `second` to write to (held lock); packs what fell behind when a new second begins."""
        bucket = self._buckets.get(second)
        if bucket is None:
            bucket = self._buckets[second] = _Bucket()
        self._open.add(second)
        if self._newest is None or second > self._newest:
            self._newest = second
            self._pack_behind()
        return bucket

    def _pack_behind(self) -> None:
        if self._newest is None:
            return
        for old in [s for s in self._open if s < self._newest - self.PACKED_AFTER_S]:
            self._buckets[old].pack()
            self._open.discard(old)

    def record(self, t_end: float, latency_s: float, ok: bool, error_class: str | None = None) -> None:
        second = math.floor(t_end)
        with self._lock:
            bucket = self._bucket(second)
            if ok:
                bucket.commits += 1
                bucket.histogram[_bin_of(latency_s * 1000.0)] += 1
                if self.last_commit_t is None or t_end > self.last_commit_t:
                    self.last_commit_t = t_end
            else:
                bucket.errors += 1
                bucket.error_classes[error_class or "unknown"] += 1

    def add_commits(self, second: int, count: int, t: float) -> None:
        """Commits counted rather than timed (a server's commit counter): no latencies, so no percentiles."""
        with self._lock:
            bucket = self._bucket(second)
            bucket.commits += count
            if count and (self.last_commit_t is None or t > self.last_commit_t):
                self.last_commit_t = t

    def points(self, start: int | None = None, end: int | None = None, step: int = 1) -> list[SecondPoint]:
        """Every second from `start` to `end` (exclusive), zero-filled where nothing ended; with `step` > 1 one
        point per `step` seconds (counts summed, latency histograms merged: percentiles stay exact to a bin)."""
        out = []
        with self._lock:
            if not self._buckets:
                return []
            first = min(self._buckets) if start is None else start
            last = max(self._buckets) + 1 if end is None else end
            for begin in range(first, last, step):
                seconds = min(step, last - begin)
                if step == 1:  # a second as stored: no merged copy (a day's run reads 86,400 of them)
                    one = self._buckets.get(begin)
                    out.append(one.point(begin, 1) if one is not None else
                               SecondPoint(begin, 0, 0, None, None, None, _NO_ERRORS))
                    continue
                merged = _Bucket()
                for second in range(begin, begin + seconds):
                    if (one := self._buckets.get(second)) is not None:
                        merged.add(one)
                out.append(merged.point(begin, seconds))
        return out

    def export(self, since: int | None = None) -> dict[int, dict[str, Any]]:
        """Buckets from second `since` on, as plain data (what a remote load generator sends home):
        counts, error classes and the latency histogram, so percentiles can be merged, not averaged."""
        with self._lock:
            return {second: {"commits": b.commits, "errors": b.errors, "error_classes": dict(b.error_items()),
                             "histogram": dict(b.histogram_items())}
                    for second, b in self._buckets.items() if since is None or second >= since}

    def absorb(self, exported: Mapping[int, Mapping[str, Any]], last_commit_t: float | None = None) -> None:
        """Add another series' buckets (already on this series' clock) to this one's."""
        with self._lock:
            for second, data in sorted(exported.items(), key=lambda item: int(item[0])):
                bucket = self._bucket(int(second))
                bucket.commits += int(data["commits"])
                bucket.errors += int(data["errors"])
                if data["error_classes"]:
                    bucket.error_classes.update({str(k): int(v) for k, v in data["error_classes"].items()})
                bucket.histogram.update({int(k): int(v) for k, v in data["histogram"].items()})
            self._pack_behind()
            if last_commit_t is not None and (self.last_commit_t is None or last_commit_t > self.last_commit_t):
                self.last_commit_t = last_commit_t

    def recent_tps(self, seconds: float, now: float) -> list[float]:
        """TPS of the last whole `seconds` before `now` (for stop conditions)."""
        end = math.floor(now)
        return [p.tps for p in self.points(end - int(seconds), end)]

    def __len__(self) -> int:
        with self._lock:
            return len(self._buckets)


@dataclass(frozen=True, slots=True)
class MetricPoint:
    t: float
    value: float


class MetricSeries:
    """A sampled metric (IOPS, resync bytes left, RTT...) on the timeline clock."""

    def __init__(self, name: str, unit: str) -> None:
        self.name = name
        self.unit = unit
        self._points: list[MetricPoint] = []
        self._lock = threading.Lock()

    def add(self, t: float, value: float) -> None:
        with self._lock:
            index = bisect.bisect([p.t for p in self._points[-8:]], t) + max(0, len(self._points) - 8)
            self._points.insert(index, MetricPoint(t, value))

    def extend(self, points: Iterable[tuple[float, float]]) -> None:
        for t, value in points:
            self.add(t, value)

    def points(self) -> list[MetricPoint]:
        with self._lock:
            return list(self._points)

    def resampled(self, step_s: float) -> list[MetricPoint]:
        """One point per `step_s` seconds (the mean of the samples in it, at the first sample's time); as sampled
        when `step_s` is at most 1."""
        points = self.points()
        if step_s <= 1 or not points:
            return points
        out: list[MetricPoint] = []
        group: list[MetricPoint] = []
        for point in points:
            if group and point.t - group[0].t >= step_s:
                out.append(MetricPoint(group[0].t, sum(p.value for p in group) / len(group)))
                group = []
            group.append(point)
        out.append(MetricPoint(group[0].t, sum(p.value for p in group) / len(group)))
        return out

    def to_dict(self, step_s: float = 1) -> dict[str, Any]:
        return {"name": self.name, "unit": self.unit, "points": [[p.t, p.value] for p in self.resampled(step_s)]}
