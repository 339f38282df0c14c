"""Stop conditions: evaluated continuously while a fault is in effect.

A guard returns None while all is well, or the reason to abort. The runner then reverts
at once and the test fails with that reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol


class Guard(Protocol):
    name: str

    def evaluate(self) -> str | None: ...


@dataclass
class Deadline:
    """Abort once the fault has been in effect longer than `seconds`."""

    seconds: float
    name: str = "deadline"
    _start: float = field(default_factory=time.monotonic)

    def evaluate(self) -> str | None:
        elapsed = time.monotonic() - self._start
        if elapsed > self.seconds:
            return f"fault in effect for {elapsed:.1f} s, longer than the {self.seconds:.0f} s deadline"
        return None


@dataclass
class ThroughputFloor:
    """Abort when throughput stays below `ratio` x baseline for `longer_than_s` seconds of the fault.

    Only seconds since the guard started (the runner starts guards once the fault is in
    effect) count: a window reaching back before the fault never trips it, and one longer
    than the fault lasts never can. `longer_than_s` must exceed the expected failover time,
    or every failover trips it: `during_fault` sets it from the failover SLO.
    `recent_tps(seconds)` returns the per-second values of the last whole `seconds`.
    """

    recent_tps: Callable[[float], Sequence[float]]
    baseline_tps: float
    ratio: float
    longer_than_s: float
    name: str = "throughput-floor"
    clock: Callable[[], float] = time.monotonic
    _since: float | None = None

    @classmethod
    def during_fault(cls, recent_tps: Callable[[float], Sequence[float]], baseline_tps: float, *,
                     failover_max_s: float, ratio: float = 0.1, min_hold_s: float = 10.0,
                     clock: Callable[[], float] = time.monotonic) -> ThroughputFloor:
        """The experiment's floor: near-zero throughput for longer than a failover may take (the SLO is
        then violated anyway) stops the experiment. It can trip whenever the fault lasts longer than that."""
        return cls(recent_tps=recent_tps, baseline_tps=baseline_tps, ratio=ratio,
                   longer_than_s=max(failover_max_s, min_hold_s), clock=clock)

    def evaluate(self) -> str | None:
        now = self.clock()
        if self._since is None:
            self._since = now
        if now - self._since < self.longer_than_s + 1.0:  # the whole window after the start, in whole seconds
            return None
        window = self.recent_tps(self.longer_than_s)
        if len(window) < int(self.longer_than_s):
            return None
        floor = self.baseline_tps * self.ratio
        if max(window, default=0.0) < floor:
            return (f"TPS stayed below {floor:.0f} ({self.ratio:.0%} of baseline {self.baseline_tps:.0f}) "
                    f"for {self.longer_than_s:.0f} s")
        return None
