"""Commit gaps: the write outage as the clients saw it, to within one transaction.

Per-second buckets are too coarse to measure an outage to 100 ms. Every user reports each
successful commit's end time and each error's time; when a commit ends more than
`threshold_s` after the previous one (across all users), the interval between the two is one
'commit-gap' event on the timeline. Only the open gap is kept in memory.
"""

from __future__ import annotations

import threading

from harness_kernel.history import EventKind
from harness_kernel.history.timeline import Timeline


class CommitGapDetector:
    def __init__(self, timeline: Timeline, source: str, threshold_s: float = 0.5) -> None:
        self.timeline = timeline
        self.source = source
        self.threshold_s = threshold_s
        self._lock = threading.Lock()
        self._last_ok: float | None = None
        self._first_error: float | None = None
        self._errors = 0
        self.gaps = 0

    def committed(self, t_end: float) -> None:
        with self._lock:
            last = self._last_ok
            if last is not None and t_end <= last:
                return  # a slower user finishing an older commit: the gap, if any, is already closed
            if last is not None and t_end - last > self.threshold_s:
                self._emit(last, t_end)
            self._last_ok = t_end
            self._first_error = None
            self._errors = 0

    def failed(self, t: float) -> None:
        with self._lock:
            if self._first_error is None:
                self._first_error = t
            self._errors += 1

    def settled_upto(self) -> float | None:
        """The last commit: every gap that ends by then is on the timeline already (None: no commit yet)."""
        with self._lock:
            return self._last_ok

    def close(self, t: float) -> None:
        """At stop: a gap still open is recorded with end=None (the outage had not ended)."""
        with self._lock:
            if self._last_ok is not None and t - self._last_ok > self.threshold_s:
                self._emit(self._last_ok, None)

    def _emit(self, start: float, end: float | None) -> None:
        self.gaps += 1
        self.timeline.record(EventKind.COMMIT_GAP, self.source, t=start, start=start, end=end,
                             duration_s=None if end is None else end - start,
                             first_error=self._first_error, errors=self._errors)
