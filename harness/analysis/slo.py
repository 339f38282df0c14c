"""SLO verdicts: each threshold of the topology judged against a figure, with its uncertainty when it has one.

A figure with a 95 % interval (`harness.analysis.intervals`) is PASS when the whole interval meets the
threshold, FAIL when none of it does, and INCONCLUSIVE when the threshold lies inside it: the
measurement cannot tell, and the verdict says what would settle it. A figure without an interval
(a count, such as lost commits: one lost commit is a FAIL) is judged on its value.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from harness.analysis.intervals import NIGHTS_METHOD, REPEATS_METHOD, Interval
from harness.analysis.replication import lost_commits_not_judged

_OPS: dict[str, Callable[[float, float], bool]] = {"<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt}
Outcome = Literal["PASS", "FAIL", "INCONCLUSIVE", "NOT JUDGED"]


class InconclusiveVerdict(UserWarning):
    """A figure whose interval holds its threshold: flagged in the summary, a failure under `--inconclusive fail`
    (the plugin turns this warning into an error then)."""


class Finding(UserWarning):
    """What no threshold judges and a reader must still see: an outage inside a window meant to be steady (a mean
    of 928 TPS can hold 9 s without any commit). The run's summary lists it beside the test's verdict."""


@dataclass(frozen=True)
class SloCheck:
    """One service-level threshold judged against what was measured (the run's verdict combines them)."""

    name: str
    measured: float | None
    op: str
    threshold: float
    unit: str = ""
    not_judged: str | None = None  # why this run cannot judge it (e.g. an observe-only workload keeps no ledger)
    interval: Interval | None = None  # the figure's 95 % interval, when it is an estimate
    # a figure that varies from trial to trial (a duration): with no interval of tonight's own (one trial),
    # the spread of its last nights gives it one (`ScenarioReport.judge`)
    trial_figure: bool = False
    basis: str = ""  # what the figure was read from, when the cluster said it (the HA manager's states)
    modelled: bool = False  # a platform's model gave (part of) it: marked so, never judged across nights

    @classmethod
    def lost_commits(cls, lost: int | None, maximum: int, *, weaker: str | None = None,
                     accepted: bool = False) -> SloCheck:
        """Acknowledged commits lost; not judged (and said so) when no workload kept a ledger, or when the run met a
        replication weaker than the policy (`weaker`, `harness.analysis.replication`) and lost none: unless the
        user `accepted` the weaker mode, that is no evidence the policy holds."""
        why = "no ledger: observe-only workload" if lost is None else lost_commits_not_judged(weaker, lost, maximum,
                                                                                            accepted)
        return cls("acknowledged commits lost", lost, "<=", maximum, not_judged=why,
                   basis=weaker + " (accepted)" if weaker and accepted else "")

    @property
    def outcome(self) -> Outcome:
        if self.not_judged is not None:
            return "NOT JUDGED"
        if self.measured is None:
            return "FAIL"
        if self.interval is None:
            return "PASS" if _OPS[self.op](self.measured, self.threshold) else "FAIL"
        meets = [_OPS[self.op](edge, self.threshold) for edge in (self.interval.low, self.interval.high)]
        return "PASS" if all(meets) else "FAIL" if not any(meets) else "INCONCLUSIVE"

    @property
    def passed(self) -> bool:
        return self.outcome != "FAIL"

    def render(self) -> str:
        if self.not_judged is not None:
            return f"{self.name}: not judged ({self.not_judged})"
        shown = "not measured" if self.measured is None else f"{self.measured:.2f}{self.unit}"
        if self.interval is not None and self.measured is not None:
            shown += f" [{self.interval.low:.2f}, {self.interval.high:.2f}]"
        mark = {"PASS": "ok", "FAIL": "VIOLATED", "INCONCLUSIVE": "INCONCLUSIVE"}[self.outcome]
        settle = f"; {self.settle()}" if self.outcome == "INCONCLUSIVE" else ""
        return f"{self.name}: {shown} (required {self.op} {self.threshold:g}{self.unit}) {mark}{settle}"

    def settle(self) -> str:
        """What would tell: more seconds in the windows (a narrower interval), or repeats of the fault."""
        assert self.interval is not None
        if self.interval.method == NIGHTS_METHOD:
            return (f"the threshold lies inside the 95 % interval from the spread of the last {self.interval.n} "
                    "nights (one trial tonight): repeated trials (--repeat) would settle it")
        if self.interval.method == REPEATS_METHOD:
            return (f"the threshold lies inside the 95 % interval of {self.interval.n} trials: more trials "
                    "(--repeat) would settle it")
        return (f"the threshold lies inside the 95 % interval of {self.interval.n} samples (block "
                f"{self.interval.block}): longer windows or repeated trials would settle it")


def assert_verdicts(verdicts: Sequence[SloCheck]) -> list[SloCheck]:
    """One AssertionError (a test *failure*: the product missed its SLO) listing every FAIL; the INCONCLUSIVE
    ones are warned about (`InconclusiveVerdict`: the run's summary flags them) and returned."""
    failed = [v for v in verdicts if v.outcome == "FAIL"]
    if failed:
        raise AssertionError("SLO violated: " + "; ".join(v.render() for v in failed))
    unsure = [v for v in verdicts if v.outcome == "INCONCLUSIVE"]
    if unsure:
        warnings.warn(InconclusiveVerdict("; ".join(v.render() for v in unsure)), stacklevel=2)
    return unsure
