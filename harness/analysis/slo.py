"""SLO verdicts: each threshold of the topology becomes a named, explained pass/fail."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass

_OPS: dict[str, Callable[[float, float], bool]] = {"<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt}


@dataclass(frozen=True)
class SloCheck:
    """One service-level threshold judged against what was measured (the run's verdict combines them)."""

    name: str
    measured: float | None
    op: str
    threshold: float
    unit: str = ""
    not_judged: str | None = None  # why this run cannot judge it (e.g. an observe-only workload keeps no ledger)

    @classmethod
    def lost_commits(cls, lost: int | None, maximum: int) -> SloCheck:
        """Acknowledged commits lost; not judged (and said so) when no workload kept a ledger."""
        return cls("acknowledged commits lost", lost, "<=", maximum,
                   not_judged=None if lost is not None else "no ledger: observe-only workload")

    @property
    def passed(self) -> bool:
        if self.not_judged is not None:
            return True
        return self.measured is not None and _OPS[self.op](self.measured, self.threshold)

    def render(self) -> str:
        if self.not_judged is not None:
            return f"{self.name}: not judged ({self.not_judged})"
        shown = "not measured" if self.measured is None else f"{self.measured:.2f}{self.unit}"
        mark = "ok" if self.passed else "VIOLATED"
        return f"{self.name}: {shown} (required {self.op} {self.threshold:g}{self.unit}) {mark}"


def assert_verdicts(verdicts: Sequence[SloCheck]) -> None:
    """One AssertionError (a test *failure*: the product missed its SLO) listing every miss."""
    failed = [v for v in verdicts if not v.passed]
    if failed:
        raise AssertionError("SLO violated: " + "; ".join(v.render() for v in failed))
