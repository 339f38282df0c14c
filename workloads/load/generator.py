"""One load generator: the OLTP driver on a load machine, held by a Dask worker as an actor.

It runs the very driver the harness runs in-process, on a timeline whose origin is the
harness's, shifted by the offset measured for this machine's clock, so its per-second buckets
and its commit gaps are already on the harness clock. It hands back only plain data: while it
runs, the completed seconds (the harness's live series and stop conditions need them every
second) and the commit gaps it closed with how far its gaps are settled (the harness merges
an outage once it is over); at the end everything left, its open gap and its ledger books.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from harness_kernel.history import EventKind
from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from harness_kernel.odbc.settings import ConnectionSettings
from workloads.oltp.dialect import Dialect
from workloads.oltp.driver import DriverConfig, OltpDriver
from workloads.oltp.ledger import LedgerBook

SETTLED_S = 2  # a second is complete once the clock is this far past it (a commit is counted when it returns)


@dataclass
class Settled:
    """What a generator hands over every second: seconds completed, and gaps closed since the last call."""

    buckets: dict[int, dict[str, Any]]
    last_commit_t: float | None
    gaps: list[tuple[float, float]]
    gaps_settled_upto: float | None  # its last commit: every gap that ends by then is in `gaps` or was sent


@dataclass
class Handback:
    """What a generator returns at stop: its last buckets, its gaps, its ledger books, its stop report."""

    buckets: dict[int, dict[str, Any]]
    last_commit_t: float | None
    gaps: list[tuple[float, float | None]]
    books: list[LedgerBook]
    stuck: list[str] = field(default_factory=list)
    crashed: list[str] = field(default_factory=list)
    clock: float = 0.0  # its wall clock when it stopped, for the drift check


class LoadGenerator:
    """A Dask actor: `start`, then `settled` every second, then `stop`."""

    def __init__(self) -> None:
        self.driver: OltpDriver | None = None
        self.series = TransactionSeries()
        self.timeline = Timeline()
        self.sent_upto: int | None = None
        self.gaps_sent = 0

    def clock(self) -> float:
        return time.time()

    def start(self, dialect: Dialect, settings: ConnectionSettings, config: DriverConfig, origin_wall: float) -> None:
        """`origin_wall`: the harness timeline's origin as this machine's clock reads it."""
        self.timeline = Timeline(origin_monotonic=time.monotonic() - (time.time() - origin_wall), origin_wall=origin_wall)
        self.driver = OltpDriver(dialect, settings, self.timeline, self.series, config)
        self.driver.start()

    def settled(self) -> Settled:
        """The seconds completed and the gaps closed since the last call (each handed back once)."""
        upto = math.floor(self.timeline.now()) - SETTLED_S
        since = 0 if self.sent_upto is None else self.sent_upto + 1
        buckets = {s: b for s, b in self.series.export(since).items() if s <= upto}
        self.sent_upto = max(upto, self.sent_upto if self.sent_upto is not None else upto)
        settled_upto = self.driver.gaps.settled_upto() if self.driver is not None else None  # before the gaps
        closed = self.timeline.events(EventKind.COMMIT_GAP)[self.gaps_sent:]
        self.gaps_sent += len(closed)
        return Settled(buckets, self.series.last_commit_t,
                        [(float(e.attrs["start"]), float(e.attrs["end"])) for e in closed], settled_upto)

    def stop(self) -> Handback:
        if self.driver is None:
            raise RuntimeError("this load generator was never started")
        report = self.driver.stop()
        since = 0 if self.sent_upto is None else self.sent_upto + 1
        gaps = [(float(e.attrs["start"]), None if e.attrs.get("end") is None else float(e.attrs["end"]))
                for e in self.timeline.events(EventKind.COMMIT_GAP)]
        return Handback(self.series.export(since), self.series.last_commit_t, gaps,
                        [u.book for u in self.driver.users], list(report.stuck), list(report.crashed), time.time())
