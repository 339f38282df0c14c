"""What makes several load generators one workload: their clocks, their commit gaps, their ledgers.

Each generator times its transactions on its own clock. The harness measures each clock's
offset at start (the sample with the shortest round trip wins; its half round trip bounds the
error) and checks it again at the end (the drift is reported), so every per-second bucket
lands on the harness clock. A write outage is what *no* generator could commit through: the
merged commit gaps are the intersection of every generator's gaps, kept where longer than the
driver's threshold. The merge runs while the generators run (`GapMerger`): a merged gap is
final once every generator has committed past its end, so the experiment reads each outage
when it is over, not when the workload stops (a repeated trial's phases need it then).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

Interval = tuple[float, float]


@dataclass(frozen=True)
class ClockOffset:
    offset_s: float  # the generator's clock minus the harness clock
    uncertainty_s: float  # half the round trip of the sample used


def measure_offset(remote_clock: Callable[[], float], local_clock: Callable[[], float] = time.time,
                   samples: int = 5) -> ClockOffset:
    """NTP's estimate: remote time minus the midpoint of the local send and receive, best round trip wins."""
    best: ClockOffset | None = None
    for _ in range(samples):
        sent = local_clock()
        remote = remote_clock()
        received = local_clock()
        candidate = ClockOffset(remote - (sent + received) / 2, (received - sent) / 2)
        if best is None or candidate.uncertainty_s < best.uncertainty_s:
            best = candidate
    assert best is not None
    return best


def common_gaps(per_generator: Sequence[Sequence[Interval]], threshold_s: float) -> list[Interval]:
    """The intervals in which every generator was in a commit gap, longer than `threshold_s`."""
    if not per_generator:
        return []
    common = sorted(per_generator[0])
    for gaps in per_generator[1:]:
        common = _intersect(common, sorted(gaps))
    return [(start, end) for start, end in common if end - start > threshold_s]


def _intersect(a: Sequence[Interval], b: Sequence[Interval]) -> list[Interval]:
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


@dataclass
class GapMerger:
    """The merged commit gaps as the generators report them, each handed out once, when it is final.

    A generator reports the gaps it has closed and how far its gaps are settled: its last commit
    (a gap that starts before it has ended, and was reported). A merged gap is final when it ends
    at or before every generator's settled point: no later report can change it."""

    generators: int
    threshold_s: float
    closed: list[list[Interval]] = field(default_factory=list)
    settled: list[float | None] = field(default_factory=list)
    handed_out: list[Interval] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.closed = [[] for _ in range(self.generators)]
        self.settled = [None] * self.generators

    def report(self, generator: int, closed: Sequence[Interval], settled_upto: float | None) -> None:
        self.closed[generator].extend(closed)
        known = self.settled[generator]
        if settled_upto is not None and (known is None or settled_upto > known):
            self.settled[generator] = settled_upto

    def final(self) -> list[Interval]:
        """The merged gaps that became final since the last call."""
        if not self.closed or any(s is None for s in self.settled):
            return []
        horizon = min(s for s in self.settled if s is not None)
        new = [gap for gap in common_gaps(self.closed, self.threshold_s)
               if gap[1] <= horizon and gap not in self.handed_out]
        self.handed_out += new
        return new
