"""S6 mixed-workload interference and N-1: OLTP and a mail-like I/O workload, alone and together.

Each workload is measured alone and both at once, on the same storage; the table gives the
change per metric (TPS, average transaction time, IOPS, I/O latency), the published "TPS
-3.81 %, mail IOPS -12 %" line. OLTP alone is measured in two halves, before and after the
mixed window, so a slow drift of the database cancels in TPS mixed / alone; the I/O workload
uses direct I/O where the filesystem takes it and its files are flushed between windows, so no
write-back of one window lands in the next. The N-1 case repeats it with the standby's host down for the
whole measurement (a node failed and not replaced). The I/O workload is the mail workload
(`workloads.mail`: per instance a database of random 32 KiB reads and writes and its log of
sequential synchronous writes) at a steady offered load (`--io-rate-iops` for the databases,
`--mail-log-iops` for the logs), or with `--io-profile oltp` one fio job of 8 KiB pages.

With `--soak-s`, the N-1 soak: the mail workload (and the OLTP workload) held for that long with
one node down and not replaced, the shape of an ESRP result; its table is the one a Jetstress
reviewer reads (per instance: IOPS against target, database read and log write latency).

On the lab, read the figures as the lab's: on two cores the interference is largely CPU
contention, and with the standby down pg_auto_failover commits without waiting for it, so
N-1 can raise TPS. That is a correct measurement of the lab, not the published shape.
"""

from __future__ import annotations

import contextlib
import shutil
import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from faults.base import new_instance
from harness.analysis.intervals import Interval
from harness.analysis.slo import SloCheck
from harness.clusters import Cluster, Provisioned
from harness.experiment import Experiment
from harness.fixtures import heal_or_rebuild, new_experiment
from harness.phases import PhaseDurations
from harness.plugin_state import run_options
from harness.progress import Progress
from harness.safety.run import HarnessRun
from harness.scenario import Role, ScenarioFault
from harness.scenario_report import ScenarioReport
from harness_kernel.history.series import MetricSeries, TransactionSeries
from harness_kernel.history.timeline import Timeline
from harness_suites.evidence import fmt, kept_share, pooled_window_stats, window_ratio, window_stats
from harness_suites.plugin import options_of
from harness_suites.s6 import SCENARIO
from harness_suites.s6.options import Options
from harness_suites.s6.table import Interference, esrp_table, s6_interference_table
from harness_suites.steps import options as steps_options
from reports.allure.steps import phase
from workloads.fio import PROFILES, FioJob, FioWorkload, direct_io_supported, flush_files
from workloads.mail import MailJob, MailWorkload, even_instances
from workloads.oltp.schema import Scale

STANDBY_DOWN = ScenarioFault("N-1: the standby's host down", Role.STANDBY_HOST,
                             "host-power-loss")
LAB_NOTE = ("lab: on 2 cores the interference is largely CPU contention, and with the standby down pg_auto_failover "
            "commits without waiting for it, so N-1 can raise TPS: a measurement of the lab, not the published shape")


@dataclass(frozen=True)
class IoStats:
    iops: float | None
    latency_ms: float | None


def io_stats(fio: FioWorkload, start: float, end: float) -> IoStats:
    """Mean IOPS (reads + writes) over [start, end), and latency weighted by each direction's IOPS."""
    def inside(metric: str) -> dict[int, float]:
        return {round(p.t): p.value for p in fio.series[metric].points() if start <= p.t < end}

    reads, writes = inside("read_iops"), inside("write_iops")
    read_lat, write_lat = inside("read_lat"), inside("write_lat")
    seconds = sorted(set(reads) | set(writes))
    if not seconds:
        return IoStats(None, None)
    iops = [reads.get(s, 0.0) + writes.get(s, 0.0) for s in seconds]
    weighted = sum(reads.get(s, 0.0) * read_lat.get(s, 0.0) + writes.get(s, 0.0) * write_lat.get(s, 0.0)
                   for s in seconds)
    return IoStats(statistics.fmean(iops), weighted / sum(iops) if sum(iops) else None)


@dataclass
class Setting:
    """Everything one measurement needs, from the run's fixtures and options."""

    harness_run: HarnessRun
    cluster: Cluster
    schema: Scale | None
    timeline: Timeline
    progress: Progress
    durations: PhaseDurations
    config: pytest.Config
    io_root: Path
    series: TransactionSeries = field(default_factory=TransactionSeries)
    iops: MetricSeries = field(default_factory=lambda: MetricSeries("I/O workload IOPS", "IO/s"))
    direct: bool | None = None  # the I/O workload bypasses the page cache (probed once: see `direct_io`)

    @property
    def data_dir(self) -> Path:
        return self.io_root / "data"

    @property
    def direct_io(self) -> bool:
        if self.direct is None:
            self.direct = direct_io_supported(self.data_dir)
        return self.direct

    def io_note(self) -> str:
        how = "direct I/O (O_DIRECT)" if self.direct_io else "buffered I/O (this filesystem refuses O_DIRECT)"
        return f"I/O workload: {how}; its files flushed to the storage between windows"

    def flush(self) -> None:
        """Between windows: the I/O workload's files to the storage, so no write-back lands in the next window."""
        flush_files(self.data_dir)

    @property
    def window_s(self) -> float:
        return options_of(self.config, steps_options.Options).step_s

    @property
    def users(self) -> int:
        return run_options(self.config).users

    def fio(self, name: str, runtime_s: float | None = None) -> FioWorkload:
        """The I/O workload: the mail workload (databases and logs), or one fio job of another profile."""
        options = options_of(self.config, Options)
        runtime = int((runtime_s or self.window_s * 2) + 30)
        if options.io_profile == "mail":
            return MailWorkload(self.mail_job(runtime), self.io_root / "logs", self.timeline, name=name)
        job = FioJob(PROFILES[options.io_profile], self.data_dir, runtime_s=runtime,
                     rate_iops=options.io_rate_iops or None, direct=self.direct_io)
        return FioWorkload(job, self.io_root / "logs", self.timeline, name=name)

    def mail_job(self, runtime_s: int) -> MailJob:
        options = options_of(self.config, Options)
        db_iops = options.io_rate_iops or 1000
        return MailJob(even_instances(options.mail_instances, db_iops, options.mail_log_iops or max(1, db_iops // 4)),
                       self.data_dir, runtime_s=runtime_s, direct=self.direct_io)

    def experiment(self, *, degraded: bool) -> Experiment:
        return new_experiment(self.harness_run, self.cluster, self.schema, self.timeline, self.progress, self.durations,
                              self.config, series=self.series, degraded_on_purpose=degraded)

    def keep_iops(self, fio: FioWorkload) -> None:
        """The I/O workload's IOPS (reads + writes) onto the one series the test plots."""
        reads = {p.t: p.value for p in fio.series["read_iops"].points()}
        writes = {p.t: p.value for p in fio.series["write_iops"].points()}
        self.iops.extend((t, reads.get(t, 0.0) + writes.get(t, 0.0)) for t in sorted(set(reads) | set(writes)))


def measure(setting: Setting, configuration: str, *,
            degraded: bool) -> tuple[Interference, Experiment, Interval | None, list[str]]:
    """I/O alone for half a window; then one OLTP experiment (one ledger): half a window to warm up (a workload
    just started runs faster for some seconds, until its hot rows' dead versions pile up), OLTP alone for half a
    window, both together for a whole one, OLTP alone for another half. The two alone blocks are pooled, so a
    slow drift of the database falls on both sides of TPS mixed / alone. Then that ratio with its 95 %
    interval, and the findings: an OLTP window holding seconds without any commit."""
    tag = configuration.split(":")[0].lower().replace(" ", "-")
    now = setting.timeline.now
    half = setting.window_s / 2
    alone = setting.fio(f"io-alone-{tag}")
    with phase("observe", f"{configuration}: I/O workload alone"):
        alone.start()
        start = now()
        setting.progress.wait("I/O alone", half)  # rate-limited: its IOPS alone are steady from the first second
        end = now()
        alone.stop()
        setting.flush()
    setting.keep_iops(alone)
    io_alone = io_stats(alone, start, end)
    with setting.experiment(degraded=degraded) as experiment, \
            phase("observe", f"{configuration}: OLTP alone, both together, OLTP alone"):
        experiment.measure("OLTP warm-up (not measured)", half)
        began = now()
        experiment.measure("OLTP alone (first half)", half)
        first_alone = (began, now())
        mixed = setting.fio(f"io-mixed-{tag}")
        mixed.start()
        start = now()
        experiment.measure("OLTP and I/O together", setting.window_s)
        end = now()
        mixed.stop()
        setting.flush()
        setting.keep_iops(mixed)
        began = now()
        experiment.measure("OLTP alone (second half)", half)
        second_alone = (began, now())
        experiment.finish()
        if experiment.ledger is not None and not experiment.ledger.ok:
            raise AssertionError(f"{configuration}: {experiment.ledger.summary}")
    oltp_alone = pooled_window_stats(experiment, [first_alone, second_alone], setting.users)
    oltp_mixed = window_stats(experiment, start, end, setting.users)
    io_mixed = io_stats(mixed, start, end)
    return Interference(configuration=configuration, tps_alone=oltp_alone.tps, tps_mixed=oltp_mixed.tps,
                        txn_ms_alone=oltp_alone.avg_txn_ms, txn_ms_mixed=oltp_mixed.avg_txn_ms,
                        iops_alone=io_alone.iops, iops_mixed=io_mixed.iops,
                        io_ms_alone=io_alone.latency_ms, io_ms_mixed=io_mixed.latency_ms), experiment, \
        window_ratio(oltp_mixed, oltp_alone), \
        [*oltp_alone.outage(f"{configuration}, OLTP alone"), *oltp_mixed.outage(f"{configuration}, mixed")]


def io_root(cluster: Cluster, option: str | None) -> Path:
    """Where fio writes: `--io-dir`, or on a cluster the harness provisions the primary's storage (the database's own)."""
    if option:
        return Path(option)
    if not isinstance(cluster, Provisioned):
        pytest.skip("S6 needs --io-dir: a directory on the database's datastore where the I/O workload may write")
    return cluster.storage_dir(cluster.primary_node())


@contextlib.contextmanager
def own_directory(parent: Path) -> Iterator[Path]:
    """A directory of this run's own under `parent`, removed afterwards (nothing else is touched)."""
    path = parent / f"harness-io-{new_instance()}"
    path.mkdir(parents=True)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.scenario("S6")
@pytest.mark.faults(STANDBY_DOWN)
def test_mixed_workloads_interfere_within_the_slo_with_all_nodes_and_with_one_lost(
        harness_run: HarnessRun, cluster: Cluster, schema: Scale | None, timeline: Timeline,
        progress: Progress, durations: PhaseDurations, pytestconfig: pytest.Config, scenario_report: ScenarioReport) -> None:
    if schema is None:
        pytest.skip("S6 measures its own OLTP workload alone and mixed: not with --workload observe")
    topology = harness_run.topology
    heal_or_rebuild(cluster, durations, before=True)
    with own_directory(io_root(cluster, options_of(pytestconfig, Options).io_dir)) as root:
        setting = Setting(harness_run, cluster, schema, timeline, progress, durations, pytestconfig, root)
        first, _, first_ratio, first_found = measure(setting, "all nodes", degraded=False)
        spec = STANDBY_DOWN.resolve(cluster, topology)
        with phase("inject", f"{spec.kind} on {spec.target} for the whole N-1 measurement"), \
                harness_run.inject(timeline, spec, duration_s=4 * setting.window_s + durations.settle_s + 120):
            progress.wait("settle with one node lost", durations.settle_s)
            last, experiment, last_ratio, last_found = measure(
                setting, f"N-1: {spec.target.removeprefix('host:')} down", degraded=True)
    heal_or_rebuild(cluster, durations, before=False)
    runs, ratios = [first, last], [first_ratio, last_ratio]
    table = s6_interference_table(runs, min_tps_kept_pct=100 * topology.slo.tps_after_min_ratio,
                                  notes=(setting.io_note(), *((LAB_NOTE,) if topology.lab is not None else ())))
    kept = topology.slo.tps_after_min_ratio
    scenario_report.record(SCENARIO, experiment, fault_kind=spec.kind, target=spec.target,
                           title="S6 mixed workloads and N-1", table=table, table_name="s6-interference",
                           metrics=[setting.iops],
                           numbers={r.configuration: f"TPS {fmt(r.tps_alone, '', 0)} -> {fmt(r.tps_mixed, '', 0)}, "
                                                     f"{kept_share(r.tps_mixed, r.tps_alone, kept)}, "
                                                     f"IOPS {fmt(r.iops_alone, '', 0)} -> {fmt(r.iops_mixed, '', 0)}"
                                    for r in runs},
                           findings=[*first_found, *last_found])
    scenario_report.judge([
        *(SloCheck(f"{r.configuration}: TPS mixed / alone", r.tps_mixed / r.tps_alone
                  if r.tps_mixed is not None and r.tps_alone else None, ">=", topology.slo.tps_after_min_ratio,
                   interval=ratio)
          for r, ratio in zip(runs, ratios, strict=True)),
        SloCheck("I/O workload measured in every phase (IOPS)", min(r.iops_mixed or 0.0 for r in runs), ">", 0),
        SloCheck(f"{last.configuration}: OLTP measured (TPS)", last.tps_mixed, ">", 0),
    ])


@pytest.mark.scenario("S6")
@pytest.mark.faults(STANDBY_DOWN)
def test_the_mail_workload_is_held_for_a_whole_window_with_one_node_lost_and_not_replaced(
        harness_run: HarnessRun, cluster: Cluster, schema: Scale | None, timeline: Timeline,
        progress: Progress, durations: PhaseDurations, pytestconfig: pytest.Config, scenario_report: ScenarioReport) -> None:
    options = options_of(pytestconfig, Options)
    if not options.soak_s:
        pytest.skip("the N-1 soak runs when asked for by its length (--soak-s)")
    if options.io_profile != "mail":
        pytest.skip("the N-1 soak is the mail workload's (--io-profile mail)")
    topology = harness_run.topology
    heal_or_rebuild(cluster, durations, before=True)
    with own_directory(io_root(cluster, options.io_dir)) as root:
        setting = Setting(harness_run, cluster, schema, timeline, progress, durations, pytestconfig, root)
        spec = STANDBY_DOWN.resolve(cluster, topology)
        configuration = f"N-1: {spec.target.removeprefix('host:')} down, not replaced"
        with phase("inject", f"{spec.kind} on {spec.target} for the whole soak"), \
                harness_run.inject(timeline, spec, duration_s=options.soak_s + durations.settle_s + 180):
            progress.wait("settle with one node lost", durations.settle_s)
            mail = setting.fio("mail-soak", runtime_s=options.soak_s)
            assert isinstance(mail, MailWorkload)
            with setting.experiment(degraded=True) as experiment, phase("observe", f"{configuration}: the soak"):
                mail.start()
                experiment.measure("N-1 soak", options.soak_s)
                stopped = mail.stop()
                experiment.finish()
            setting.keep_iops(mail)
    heal_or_rebuild(cluster, durations, before=False)
    results = mail.results()
    table = esrp_table(results, configuration=configuration, window_s=options.soak_s,
                       db_read_max_ms=options.mail_db_read_ms, log_write_max_ms=options.mail_log_write_ms,
                       notes=(LAB_NOTE,) if topology.lab is not None else ())
    total = results.total()
    scenario_report.record(SCENARIO, experiment, fault_kind=spec.kind, target=spec.target,
                           title="S6 N-1 soak of the mail workload", table=table, table_name="s6-esrp-soak",
                           metrics=[setting.iops],
                           numbers={"N-1 soak": f"DB {fmt(total.db_iops, '', 0)} of {fmt(total.target_db_iops, '', 0)} "
                                                f"IOPS, read {fmt(total.db_read.mean_ms, ' ms', 2)}, log write "
                                                f"{fmt(total.log_write.mean_ms, ' ms', 2)}"})
    assert stopped.clean, f"the mail workload did not end cleanly: {stopped}"
    scenario_report.judge([
        SloCheck("mail databases measured through the soak (IOPS)", total.db_iops, ">", 0),
        SloCheck("mail logs written through the soak (writes/s)", total.log_iops, ">", 0),
        *(SloCheck(f"{r.name}: database read latency (ms)", r.db_read.mean_ms, "<=", float(options.mail_db_read_ms))
          for r in results.instances if options.mail_db_read_ms is not None),
        *(SloCheck(f"{r.name}: log write latency (ms)", r.log_write.mean_ms, "<=", float(options.mail_log_write_ms))
          for r in results.instances if options.mail_log_write_ms is not None),
        experiment.lost_commits_check(),
    ])
