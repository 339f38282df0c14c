"""Every workload meets one protocol (start, stop, verify), so an experiment can run any of them.

mypy proves the signatures (each module checks its class against `Workload`); these check the
runtime shape and what a report says for a workload without a ledger.
"""

from __future__ import annotations

from pathlib import Path

from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.credentials import Secret
from workloads.base import NO_LEDGER_VERDICT, LedgerReport, StopReport, Workload, ledger_summary
from workloads.fio import PROFILES, FioJob, FioWorkload
from workloads.oltp import ConnectionSettings, Credentials, Endpoint, OltpDriver, OltpStopReport, PostgresDialect

SETTINGS = ConnectionSettings((Endpoint("127.0.0.1", 5432),), "bench", Credentials("app", Secret("pw")))


def test_the_oltp_driver_is_a_workload_that_keeps_a_ledger():
    driver = OltpDriver(PostgresDialect(), SETTINGS, Timeline(), TransactionSeries())
    assert isinstance(driver, Workload)
    assert driver.keeps_ledger and driver.name == "oltp"
    assert issubclass(OltpStopReport, StopReport)


def test_fio_is_a_workload_without_a_ledger(tmp_path: Path):
    workload = FioWorkload(FioJob(PROFILES["mail"], tmp_path), tmp_path, Timeline())
    assert isinstance(workload, Workload)
    assert not workload.keeps_ledger and workload.verify() is None


def test_a_workload_without_a_ledger_gives_no_lost_commit_verdict():
    assert ledger_summary(None) == NO_LEDGER_VERDICT == "no lost-commit verdict: this workload keeps no ledger"
    assert ledger_summary(LedgerReport(10, 10, 0, 1, 0)).startswith("ledger: 10 acknowledged, 0 LOST")


def test_a_stop_report_is_clean_only_when_nothing_is_stuck_or_crashed():
    assert StopReport("oltp", [], []).clean
    assert not StopReport("oltp", ["vu-3"], []).clean
    assert not StopReport("fio", [], ["fio pid 7: exit status 1"]).clean
