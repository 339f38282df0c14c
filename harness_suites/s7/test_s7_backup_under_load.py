"""S7 backup and restore under load: a full backup of the database, and a restore of it beside it, while the OLTP
workload runs.

Table per case: size, duration and throughput (MB/s), TPS and p95 latency before vs during, and
the impact. PostgreSQL (the lab): `pg_basebackup`, optionally rate-limited (`--backup-rates`;
this kernel has no blkio controller, so an IOPS cap is not offered); the restore copies that
backup into a new directory (`--restore-destination`, by default the database's backup area) and
starts a PostgreSQL of its own on it until the copy answers. SQL Server: `BACKUP DATABASE ...
WITH COPY_ONLY` through the SQL Server backend, so the user's backup chain is untouched, and
`RESTORE DATABASE` of that backup as the scratch database the topology names
(`databases[].restore_as`, refused when it exists), every file moved to `--restore-destination`
on the server. Revert stops a backup or restore still running and removes what it wrote.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from faults import registry
from faults.base import Evidential, FaultSpec, OperationProgress, PlansOutput
from harness.analysis.slo import SloCheck
from harness.clusters import ModelsDiskLimits
from harness.experiment import Experiment
from harness.plugin_state import run_options
from harness.safety.run import HarnessRun
from harness.safety.runner import ActiveFault
from harness.scenario import Role, ScenarioFault
from harness.scenario_report import ScenarioReport
from harness_kernel.errors import HarnessError
from harness_kernel.topology.models import Topology
from harness_suites.evidence import WindowStats, fmt, fmt_lost, fmt_modelled, kept_share, window_ratio, window_stats, within
from harness_suites.plugin import options_of
from harness_suites.s7 import SCENARIO
from harness_suites.s7.options import Options
from harness_suites.s7.table import BackupUnderLoad, s7_backup_table
from reports.tables import MODELLED_MARK

MB = 1e6


def backup_case(rate: str, destination: str | None, timeout_s: float) -> ScenarioFault:
    """One backup as dry-run plans it and the test runs it: its rate, destination and bound are its params."""
    params = {"timeout_s": timeout_s, **({"max_rate": rate} if rate != "none" else {}),
              **({"destination": destination} if destination else {})}
    label = "full backup" if rate == "none" else f"full backup at {rate}B/s"
    return ScenarioFault(label, Role.DATABASE, "backup", params)


@dataclass(frozen=True)
class RestoreOfBackup:
    """A restore of the full backup the test takes first; dry-run plans both, the restore reading the directory
    the backup will write (its instance's)."""

    backup: ScenarioFault
    destination: str | None
    timeout_s: float
    rate: str  # "none" (unthrottled) or a --max-rate

    @property
    def label(self) -> str:
        return "restore of the full backup" + ("" if self.rate == "none" else f" at {self.rate}B/s")

    def __str__(self) -> str:
        return self.label

    def of(self, source: str, destination: str | None) -> ScenarioFault:
        params = {"backup": source, "timeout_s": self.timeout_s, **({"destination": destination} if destination else {}),
                  **({"max_rate": self.rate} if self.rate != "none" else {})}
        return ScenarioFault(self.label, Role.DATABASE, "restore", params)

    def plan_specs(self, topology: Topology) -> list[FaultSpec]:
        specs = []
        for backup in self.backup.plan_specs(topology):
            try:
                taken = registry.build(backup, topology)
            except HarnessError:  # the backup's own plan reports it
                taken = None
            source = taken.planned_output if isinstance(taken, PlansOutput) else "(the backup taken first)"
            restores = self.of(source, self.destination).plan_specs(topology)
            specs += [backup, *restores] if restores else []  # nothing here restores: the test does not apply
        return specs


@dataclass(frozen=True)
class QosComparison:
    """A full backup without, then with, a vSAN IOPS limit on the primary's virtual disk that holds the backup
    destination (the storage policy a vSAN user sets): dry-run plans the backup, the limit and the backup again."""

    backup: ScenarioFault
    iops: int
    disk: str

    @property
    def limit(self) -> ScenarioFault:
        return ScenarioFault(f"IOPS limit {self.iops}", Role.PRIMARY_NODE, "disk-iops-limit",
                             {"iops_limit": self.iops, "disk": self.disk})

    def __str__(self) -> str:
        return f"full backup with and without a {self.iops} IOPS limit"

    def plan_specs(self, topology: Topology) -> list[FaultSpec]:
        limits = self.limit.plan_specs(topology)
        backups = self.backup.plan_specs(topology) if limits else []  # nothing here sets a limit: does not apply
        return [*backups, *limits, *backups]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    options = options_of(metafunc.config, Options)
    if "case" in metafunc.fixturenames:
        rates = options.backup_rate_values
        cases = [backup_case(rate, options.backup_destination, options.backup_timeout_s) for rate in rates]
        metafunc.parametrize("case", cases, ids=["unthrottled" if r == "none" else f"at-{r}" for r in rates])
    if "restore" in metafunc.fixturenames:
        backup = backup_case("none", options.backup_destination, options.backup_timeout_s)
        rate = options.backup_rate_values[0]  # one restore, at the first backup's rate
        metafunc.parametrize("restore", [RestoreOfBackup(backup, options.restore_destination, options.backup_timeout_s,
                                                         rate)],
                             ids=["unthrottled" if rate == "none" else f"at-{rate}"])
    if "qos" in metafunc.fixturenames:
        backup = backup_case("none", options.backup_destination, options.backup_timeout_s)
        if options.qos_iops_limit is None:
            metafunc.parametrize("qos", [pytest.param(None, marks=pytest.mark.skip(
                reason="no --qos-iops-limit: the backup is not compared under a vSAN IOPS limit"))], ids=["no-limit"])
        else:
            metafunc.parametrize("qos", [QosComparison(backup, options.qos_iops_limit, options.qos_disk)],
                                 ids=[f"iops-{options.qos_iops_limit}"])


@pytest.mark.scenario("S7")
def test_a_full_backup_under_load_completes_and_keeps_the_business_running(
        case: ScenarioFault, experiment: Experiment, harness_run: HarnessRun, scenario_report: ScenarioReport,
        pytestconfig: pytest.Config) -> None:
    topology, users = harness_run.topology, run_options(pytestconfig).users
    measured = measure_operation("backup", case, experiment, topology, users,
                                 options_of(pytestconfig, Options).backup_timeout_s)
    report_operation(measured, experiment, scenario_report, topology, users)


@pytest.mark.scenario("S7")
def test_a_restore_under_load_completes_and_keeps_the_business_running(
        restore: RestoreOfBackup, experiment: Experiment, harness_run: HarnessRun, scenario_report: ScenarioReport,
        pytestconfig: pytest.Config) -> None:
    """The backup is taken first (not measured: S7's backup test measures it), then restored beside the database,
    measured against a baseline taken after the backup ended."""
    topology = harness_run.topology
    users, timeout_s = run_options(pytestconfig).users, restore.timeout_s
    backup = restore.backup.resolve(experiment.cluster, topology)
    with experiment.fault(backup, duration_s=2 * timeout_s + 120) as taken:
        made, _ = experiment.await_operation(taken, timeout_s)
        if not made.completed or made.output is None:
            raise HarnessError(f"S7 restore: the backup it restores did not complete ({made.error or 'no output'})")
        measured = measure_operation("restore", restore.of(made.output, restore.destination), experiment, topology,
                                     users, timeout_s)
    report_operation(measured, experiment, scenario_report, topology, users)


@pytest.mark.scenario("S7")
def test_a_backup_under_a_vsan_iops_limit_holds_the_limit_and_keeps_the_business_running(
        qos: QosComparison, experiment: Experiment, harness_run: HarnessRun, scenario_report: ScenarioReport,
        pytestconfig: pytest.Config) -> None:
    """The same full backup without the limit, then with it: the limit as the platform reads it back, the rate each
    achieved and what OLTP felt. Where the platform cannot enforce a limit (the bound lab), its model caps the
    backup's rate, and the rate under the limit is marked modelled."""
    topology = harness_run.topology
    users, timeout_s = run_options(pytestconfig).users, options_of(pytestconfig, Options).backup_timeout_s
    without = measure_operation("backup", qos.backup, experiment, topology, users, timeout_s)
    with experiment.fault(qos.limit.resolve(experiment.cluster, topology), duration_s=timeout_s + 600) as limited:
        evidence = dict(limited.fault.evidence) if isinstance(limited.fault, Evidential) else {}
        if evidence.get("iops_limit_read_back") != str(qos.iops):
            raise HarnessError(f"S7 QoS: the disk's policy reads back VSAN.iopsLimit "
                               f"{evidence.get('iops_limit_read_back')!r}, not {qos.iops}")
        cluster = experiment.cluster
        model = cluster.modelled_disk_limit(qos.iops) if isinstance(cluster, ModelsDiskLimits) else None
        case = replace(qos.backup, label=f"full backup under the {qos.iops} IOPS limit",
                       params={**qos.backup.params, **({"max_rate": model.max_rate} if model else {})})
        under = measure_operation("backup", case, experiment, topology, users, timeout_s)
    experiment.measure("settle", experiment.durations.settle_s)
    experiment.finish()
    during = [operation_window(run, experiment, users) for run in (without, under)]
    rows = [operation_row(without, during[0]),
            operation_row(under, during[1], iops_limit=qos.iops, rate_modelled=model is not None)]
    notes = (*([f"{MODELLED_MARK} {model.model}"] if model is not None else []),
             f"the limit: policy {evidence.get('policy')}, a copy of '{evidence.get('original_policy')}' with "
             f"VSAN.iopsLimit {evidence.get('iops_limit_read_back')}, on {evidence.get('vm')} {evidence.get('disk')}; "
             "read back through the Storage Policy API, its own policy put back after")
    table = replace(s7_backup_table(rows, min_tps_kept_pct=100 * topology.slo.tps_after_min_ratio,
                                    title="S7 backup under a vSAN IOPS limit"), notes=notes)
    free, limited_row = rows
    scenario_report.record(
        SCENARIO, experiment, fault_kind="disk-iops-limit", target=str(evidence.get("vm", "")), title=f"S7 {qos}",
        table=table, table_name="s7-qos", modelled=("mb_s_modelled",) if model is not None else (),
        numbers={"limit": f"VSAN.iopsLimit {evidence.get('iops_limit_read_back')}",
                 "rate": f"{fmt(free.mb_s, ' MB/s')} without, "
                         f"{fmt_modelled(fmt(limited_row.mb_s, ' MB/s'), model is not None)} with",
                 "TPS during": f"{fmt(free.tps_during, '', 0)} without, {fmt(limited_row.tps_during, '', 0)} with"})
    scenario_report.judge([
        SloCheck("backup under the limit completed (1 = yes)", float(under.done.completed), ">=", 1),
        SloCheck("TPS during / before, under the limit",
                 limited_row.tps_during / limited_row.tps_before
                 if limited_row.tps_during is not None and limited_row.tps_before else None,
                 ">=", topology.slo.tps_after_min_ratio, interval=window_ratio(during[1], under.before)),
        experiment.lost_commits_check(),
    ])


def measure_operation(operation: str, case: ScenarioFault, experiment: Experiment, topology: Topology, users: int,
                      timeout_s: float) -> Measured:
    """A baseline, then the operation under load until it ends (at most `timeout_s`), a guard on the throughput."""
    start = experiment.timeline.now()
    experiment.baseline()
    before = window_stats(experiment, start, experiment.timeline.now(), users)
    spec = case.resolve(experiment.cluster, topology)
    with experiment.fault(spec, guards=[experiment.throughput_guard(before.tps or 0.0)],
                          duration_s=timeout_s + 60) as active:
        done, ended = experiment.await_operation(active, timeout_s)
    return Measured(operation, case.label, spec, before, active, done, ended)


@dataclass(frozen=True)
class Measured:
    """One operation under load as the test ran it: the baseline before, the operation's own report."""

    operation: str  # "backup" or "restore"
    label: str
    spec: FaultSpec
    before: WindowStats
    active: ActiveFault
    done: OperationProgress
    ended: float  # on the timeline


def operation_window(run: Measured, experiment: Experiment, users: int) -> WindowStats:
    """`during` is exactly the operation's run, as the operation itself reports it (the harness's start precedes
    it)."""
    done = run.done
    began = experiment.timeline.t_of_wall(done.started_wall) if done.started_wall else run.active.injected_at
    return window_stats(experiment, began, run.ended, users)


def operation_row(run: Measured, during: WindowStats, *, iops_limit: int | None = None,
                  rate_modelled: bool = False) -> BackupUnderLoad:
    done = run.done
    duration = done.finished_wall - done.started_wall if done.finished_wall and done.started_wall else None
    return BackupUnderLoad(case=run.label, size_mb=done.bytes_done / MB if done.bytes_done is not None else None,
                           duration_s=duration, tps_before=run.before.tps or 0.0, tps_during=during.tps,
                           p95_before_ms=run.before.p95_ms, p95_during_ms=during.p95_ms, completed=done.completed,
                           iops_limit=iops_limit, rate_modelled=rate_modelled)


def report_operation(run: Measured, experiment: Experiment, scenario_report: ScenarioReport, topology: Topology,
                     users: int) -> None:
    """The table, key figures and verdicts of a backup or restore under load."""
    experiment.measure("settle", experiment.durations.settle_s)
    experiment.finish()
    done, before = run.done, run.before
    during = operation_window(run, experiment, users)
    row = operation_row(run, during)
    table = s7_backup_table([row], min_tps_kept_pct=100 * topology.slo.tps_after_min_ratio,
                            title=f"S7 {run.operation} under load", operation=run.operation)
    lost = experiment.ledger.lost_count if experiment.ledger else None
    name = f"s7-{run.spec.params.get('max_rate', 'unthrottled')}" if run.operation == "backup" else "s7-restore"
    scenario_report.record(SCENARIO, experiment, fault_kind=run.spec.kind, target=run.spec.target, title=f"S7 {run.label}",
                           table=table, table_name=name,
                           numbers={run.operation: f"{fmt(row.size_mb, ' MB')} in {fmt(row.duration_s, ' s')} "
                                                   f"({fmt(row.mb_s, ' MB/s')})",
                                    "TPS before": fmt(before.tps, "", 0), "during": fmt(during.tps, "", 0) + ", "
                                    + kept_share(during.tps, before.tps, topology.slo.tps_after_min_ratio),
                                    "lost": within(fmt_lost(lost), "<=", topology.slo.lost_commits_max),
                                    **({f"{run.operation} error": done.error} if done.error else {})},
                           findings=[*before.outage("before"), *during.outage(f"during the {run.operation}")])
    ratio = during.tps / before.tps if during.tps is not None and before.tps else None
    scenario_report.judge([
        SloCheck(f"{run.operation} completed (1 = yes)", float(done.completed), ">=", 1),
        SloCheck("TPS during / before", ratio, ">=", topology.slo.tps_after_min_ratio,
                 interval=window_ratio(during, before)),
        experiment.lost_commits_check(),
    ])
