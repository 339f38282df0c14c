"""S7 backup under load: a full backup of the database while the OLTP workload runs.

Table per case: backup size, duration and throughput (MB/s), TPS and p95 latency before vs
during, and the impact. PostgreSQL (the lab): `pg_basebackup`, optionally rate-limited
(`--backup-rates`; this kernel has no blkio controller, so an IOPS cap is not offered).
SQL Server: `BACKUP DATABASE ... WITH COPY_ONLY` through the SQL Server backend, so the
user's backup chain is untouched. Revert stops a backup still running and removes its files.
"""

from __future__ import annotations

import pytest

from harness.analysis.slo import SloCheck
from harness.experiment import Experiment
from harness.plugin_state import run_options
from harness.safety.run import HarnessRun
from harness.scenario import Role, ScenarioFault
from harness.scenario_report import ScenarioReport
from harness_suites.evidence import fmt, fmt_lost, kept_share, window_ratio, window_stats, within
from reports.published_tables import BackupUnderLoad, s7_backup_table

MB = 1e6


def backup_case(rate: str, destination: str | None, timeout_s: float) -> ScenarioFault:
    """One backup as dry-run plans it and the test runs it: its rate, destination and bound are its params."""
    params = {"timeout_s": timeout_s, **({"max_rate": rate} if rate != "none" else {}),
              **({"destination": destination} if destination else {})}
    label = "full backup" if rate == "none" else f"full backup at {rate}B/s"
    return ScenarioFault(label, Role.DATABASE, "backup", params)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "case" not in metafunc.fixturenames:
        return
    options = run_options(metafunc.config)
    rates = options.backup_rate_values
    cases = [backup_case(rate, options.backup_destination, options.backup_timeout_s) for rate in rates]
    metafunc.parametrize("case", cases, ids=["unthrottled" if r == "none" else f"at-{r}" for r in rates])


@pytest.mark.scenario("S7")
def test_a_full_backup_under_load_completes_and_keeps_the_business_running(
        case: ScenarioFault, experiment: Experiment, harness_run: HarnessRun, scenario_report: ScenarioReport,
        pytestconfig: pytest.Config) -> None:
    topology = harness_run.topology
    users, timeout_s = pytestconfig.getoption("--users"), pytestconfig.getoption("--backup-timeout-s")
    start = experiment.timeline.now()
    experiment.baseline()
    before = window_stats(experiment, start, experiment.timeline.now(), users)
    spec = case.resolve(experiment.cluster, topology)
    with experiment.fault(spec, guards=[experiment.throughput_guard(before.tps or 0.0)],
                          duration_s=timeout_s + 60) as active:
        done, ended = experiment.await_operation(active, timeout_s)
    experiment.measure("settle", experiment.durations.settle_s)
    experiment.finish()
    # during = exactly the backup's run, as the backup itself reports it (the harness's start precedes it)
    began = experiment.timeline.t_of_wall(done.started_wall) if done.started_wall else active.injected_at
    during = window_stats(experiment, began, ended, users)
    duration = done.finished_wall - done.started_wall if done.finished_wall and done.started_wall else None
    row = BackupUnderLoad(case=case.label, size_mb=done.bytes_done / MB if done.bytes_done is not None else None,
                          duration_s=duration, tps_before=before.tps or 0.0, tps_during=during.tps,
                          p95_before_ms=before.p95_ms, p95_during_ms=during.p95_ms, completed=done.completed)
    table = s7_backup_table([row], min_tps_kept_pct=100 * topology.slo.tps_after_min_ratio)
    lost = experiment.ledger.lost_count if experiment.ledger else None
    throughput = row.size_mb / duration if row.size_mb is not None and duration else None
    scenario_report.record("S7", experiment, fault_kind=spec.kind, target=spec.target, title=f"S7 {case.label}",
                           table=table, table_name=f"s7-{spec.params.get('max_rate', 'unthrottled')}",
                           numbers={"backup": f"{fmt(row.size_mb, ' MB')} in {fmt(duration, ' s')} "
                                              f"({fmt(throughput, ' MB/s')})",
                                    "TPS before": fmt(before.tps, "", 0), "during": fmt(during.tps, "", 0) + ", "
                                    + kept_share(during.tps, before.tps, topology.slo.tps_after_min_ratio),
                                    "lost": within(fmt_lost(lost), "<=", topology.slo.lost_commits_max),
                                    **({"backup error": done.error} if done.error else {})},
                           findings=[*before.outage("before"), *during.outage("during the backup")])
    ratio = during.tps / before.tps if during.tps is not None and before.tps else None
    scenario_report.judge([
        SloCheck("backup completed (1 = yes)", float(done.completed), ">=", 1),
        SloCheck("TPS during / before", ratio, ">=", topology.slo.tps_after_min_ratio,
                 interval=window_ratio(during, before)),
        experiment.lost_commits_check(),
    ])
