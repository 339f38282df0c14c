"""Every workload meets one protocol (start, stop, verify), so an experiment can run any of them.

`isinstance` against a runtime-checkable protocol checks names only; `meets` also compares each
method's parameters and each property's kind with the protocol's, so a workload whose `stop` took
an argument, or whose `name` were a method, fails here and not in the middle of a night's run.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.credentials import Secret
from workloads.base import NO_LEDGER_VERDICT, LedgerReport, StopReport, Workload, ledger_summary
from workloads.fio import PROFILES, FioJob, FioWorkload
from workloads.oltp import ConnectionSettings, Credentials, Endpoint, OltpDriver, OltpStopReport, PostgresDialect

SETTINGS = ConnectionSettings((Endpoint("127.0.0.1", 5432),), "bench", Credentials("app", Secret("pw")))


def meets(obj: Any, protocol: type) -> list[str]:
    """How `obj` differs from `protocol`: a missing member, a method where a property (or attribute) is asked,
    a method whose required parameters are not the protocol's (extra ones must have defaults)."""
    problems = []
    for name, member in vars(protocol).items():
        if name.startswith("_") or not (callable(member) or isinstance(member, property)):
            continue
        if not hasattr(obj, name):
            problems.append(f"no {name}")
            continue
        actual = inspect.getattr_static(obj, name)
        is_method = inspect.isfunction(actual)
        if isinstance(member, property):
            if is_method:
                problems.append(f"{name}: a method where the protocol has a property")
            continue
        if not is_method:
            problems.append(f"{name}: not a method")
            continue
        want = list(inspect.signature(member).parameters)
        have = inspect.signature(actual).parameters
        required = [n for n, p in have.items() if p.default is inspect.Parameter.empty
                    and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if required != want or not set(want) <= set(have):
            problems.append(f"{name}{tuple(required)}: the protocol's is {name}{tuple(want)}")
    return problems


def test_a_workload_that_differs_from_the_protocol_in_a_parameter_or_a_property_is_told_apart():
    class Drifted:
        keeps_ledger = True  # an attribute meets a read-only property

        def name(self) -> str:
            return "drifted"

        def start(self, now: bool) -> None: ...
        def stop(self, timeout_s: float = 1.0) -> StopReport: ...  # an extra parameter with a default is fine
        def verify(self) -> None: ...

    assert isinstance(Drifted(), Workload), "names alone match: isinstance cannot tell"
    assert meets(Drifted(), Workload) == ["name: a method where the protocol has a property",
                                          "start('self', 'now'): the protocol's is start('self',)"]


def test_the_oltp_driver_is_a_workload_that_keeps_a_ledger():
    driver = OltpDriver(PostgresDialect(), SETTINGS, Timeline(), TransactionSeries())
    assert isinstance(driver, Workload) and meets(driver, Workload) == []
    assert driver.keeps_ledger and driver.name == "oltp"
    assert issubclass(OltpStopReport, StopReport)


def test_fio_is_a_workload_without_a_ledger(tmp_path: Path):
    workload = FioWorkload(FioJob(PROFILES["mail"], tmp_path), tmp_path, Timeline())
    assert isinstance(workload, Workload) and meets(workload, Workload) == []
    assert not workload.keeps_ledger and workload.verify() is None


def test_a_workload_without_a_ledger_gives_no_lost_commit_verdict():
    assert ledger_summary(None) == NO_LEDGER_VERDICT == "no lost-commit verdict: this workload keeps no ledger"
    assert ledger_summary(LedgerReport(10, 10, 0, 1, 0)).startswith("ledger: 10 acknowledged, 0 LOST")


def test_a_stop_report_is_clean_only_when_nothing_is_stuck_or_crashed():
    assert StopReport("oltp", [], []).clean
    assert not StopReport("oltp", ["vu-3"], []).clean
    assert not StopReport("fio", [], ["fio pid 7: exit status 1"]).clean
