"""The one protocol every workload meets, so an experiment runs any of them, or several at once.

A workload writes its samples into the series it was given and its events on the timeline;
the experiment only starts it, stops it and asks it to verify. Kinds today: OLTP virtual users
(`workloads.oltp.OltpDriver`, with a commit ledger), fio (`workloads.fio.FioWorkload`), and
the observe-only server counter (`workloads.pgcounter.PgCommitCounter`), which measures a load
someone else makes and so can say nothing about lost commits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

NO_LEDGER_VERDICT = "no lost-commit verdict: this workload keeps no ledger"


@dataclass(frozen=True)
class StopReport:
    """What stopping a workload found. Each workload adds its own totals in a subclass."""

    workload: str
    stuck: list[str]  # threads or processes still running when stop gave up waiting
    crashed: list[str]  # parts that died of a harness bug or a failed tool, not of a database error

    @property
    def clean(self) -> bool:
        return not self.stuck and not self.crashed


@dataclass(frozen=True)
class LedgerReport:
    """Which acknowledged commits survived, read back from the database after the run."""

    acknowledged: int
    acknowledged_present: int
    lost_count: int
    failed: int
    failed_present_count: int
    lost: list[int] = field(default_factory=list)  # the first ids found missing
    failed_present: list[int] = field(default_factory=list)  # committed despite an error (in doubt)
    # each acknowledged range of one client with ids missing: (client, first seq, last seq, missing), so anyone can
    # count the rows of that range again; at most MAX_LISTED ranges
    short_ranges: list[tuple[int, int, int, int]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No acknowledged commit is missing. Failed-but-present rows do not break durability."""
        return self.lost_count == 0

    def summary(self) -> str:
        return (f"ledger: {self.acknowledged} acknowledged, {self.lost_count} LOST, "
                f"{self.failed} failed/unknown of which {self.failed_present_count} committed anyway")


def ledger_summary(report: LedgerReport | None) -> str:
    """The lost-commit line of a report, also for a workload without a ledger."""
    return NO_LEDGER_VERDICT if report is None else report.summary()


@runtime_checkable
class Workload(Protocol):
    """start → (faults) → stop → verify. `stop` returns within about a second and never raises for
    a database outage; `verify` runs once the database is reachable again."""

    @property
    def name(self) -> str:
        """The source name of the workload's timeline events."""

    @property
    def keeps_ledger(self) -> bool:
        """True when `verify` proves which acknowledged commits survived (a lost-commit verdict)."""

    def start(self) -> None: ...

    def stop(self) -> StopReport: ...

    def verify(self) -> LedgerReport | None:
        """The ledger's verdict; None for a workload that keeps no ledger (fio, server counters)."""


@runtime_checkable
class Monitored(Protocol):
    """A workload that can fail on its own (a remote load generator lost): `problem` says so while it runs."""

    def problem(self) -> str | None: ...


@runtime_checkable
class CatchesUp(Protocol):
    """A workload whose events reach the timeline late (remote load generators are read once a second):
    `catch_up` hands over now what it has settled, so the experiment reads an outage before the load stops."""

    def catch_up(self) -> None: ...
