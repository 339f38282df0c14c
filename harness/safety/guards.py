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
    """Abort when throughput stays below `ratio` x baseline for longer than `longer_than_s`.

    `longer_than_s` must exceed the expected failover time, or every failover trips it.
    `recent_tps(seconds)` returns the per-second values of the last `seconds`.
    """

    recent_tps: Callable[[float], Sequence[float]]
    baseline_tps: float
    ratio: float
    longer_than_s: float
    name: str = "throughput-floor"

    def evaluate(self) -> str | None:
        window = self.recent_tps(self.longer_than_s)
        if len(window) < int(self.longer_than_s):
            return None
        floor = self.baseline_tps * self.ratio
        if max(window, default=0.0) < floor:
            return (f"TPS stayed below {floor:.0f} ({self.ratio:.0%} of baseline {self.baseline_tps:.0f}) "
                    f"for {self.longer_than_s:.0f} s")
        return None


@dataclass
class HealthProbe:
    """Abort after `failures` consecutive failed probes (a probe returns an error or None)."""

    probe: Callable[[], str | None]
    failures: int = 3
    name: str = "health-probe"
    _failed: int = 0

    def evaluate(self) -> str | None:
        problem = self.probe()
        self._failed = self._failed + 1 if problem else 0
        if self._failed >= self.failures:
            return f"health probe failed {self._failed} times in a row: {problem}"
        return None
