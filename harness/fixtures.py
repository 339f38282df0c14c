"""Fixtures for experiments against a live cluster: the cluster, its OLTP schema, one experiment per test.

Loaded with the harness's pytest plugin, so any pytest project that installs the harness can
write its own experiments with them, as the ready-made suites in `harness_suites` do.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from harness.clusters import Cluster, Provisioned, cluster_for, cluster_parts, observers, probe
from harness.experiment import Experiment
from harness.phases import PhaseDurations
from harness.plugin_state import run_options, run_switches
from harness.progress import Progress
from harness.safety.run import HarnessRun
from harness_kernel.errors import ConfigError, HarnessError
from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from workloads.base import Workload
from workloads.oltp import (
    ConnectionSettings,
    Dialect,
    DriverConfig,
    OltpDriver,
    PostgresDialect,
    TSqlDialect,
    prepare_schema,
)
from workloads.oltp.schema import Scale
from workloads.pgcounter import PgCommitCounter
from workloads.sqlcounter import SqlServerCommitCounter

if TYPE_CHECKING:
    from harness.scenario_report import ScenarioReport


@pytest.fixture(scope="session")
def cluster(harness_run: HarnessRun, pytestconfig: pytest.Config,
            product_versions: dict[str, str]) -> Iterator[Cluster]:
    """The cluster under test, chosen by the topology; one the harness provisions is brought up
    here (unless already up) and down at the end (unless --keep-lab)."""
    view = cluster_for(harness_run.topology)
    started_here = view.up() if isinstance(view, Provisioned) else False
    product_versions.update(view.describe())
    for part in cluster_parts(harness_run.topology).values():  # platforms from plug-ins, read-only
        product_versions.update(part.describe())
    product_versions.update(probe(harness_run.topology))
    yield view
    if started_here and isinstance(view, Provisioned) and not run_switches(pytestconfig).keep_lab:
        view.down()


@pytest.fixture(scope="session")
def schema(cluster: Cluster, harness_run: HarnessRun, pytestconfig: pytest.Config) -> Scale | None:
    """TPC-B data with at least as many branches as users (pgbench's rule): every transaction
    updates one branch row and holds its lock through the commit, so with fewer branches the
    commits, and any added commit latency, queue behind each other. An observe-only run creates nothing."""
    if run_switches(pytestconfig).workload == "observe":
        return None
    options = run_options(pytestconfig)
    scale = Scale(branches=options.scale, accounts_per_branch=options.accounts_per_branch)
    users = options.users
    if scale.branches < users:
        warnings.warn(f"--scale {scale.branches} is below --users {users}: commits will queue on branch rows", stacklevel=1)
    dialect, settings = cluster.connection()
    database = next((d for d in harness_run.topology.databases if d.database == settings.database), None)
    prepare_schema(dialect, settings, scale, scratch=database is not None and database.database_is_scratch)
    return scale


@pytest.fixture
def durations(pytestconfig: pytest.Config) -> PhaseDurations:
    options = run_options(pytestconfig)
    return PhaseDurations(baseline_s=options.baseline_s, observe_s=options.observe_s, settle_s=options.settle_s,
                          recover_timeout_s=options.recover_timeout_s, steady_window_s=options.steady_window_s)


@pytest.fixture
def progress(pytestconfig: pytest.Config) -> Progress:
    """A live bar on a terminal (bypassing capture), one line per wait start and end in a log or with
    --quiet-progress."""
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    released = capture.global_and_fixture_disabled if capture is not None else contextlib.nullcontext

    def write(text: str) -> None:
        with released():
            sys.stderr.write(text)
            sys.stderr.flush()

    with released():
        terminal = sys.stderr.isatty()
    return Progress(write, quiet=run_switches(pytestconfig).quiet_progress, terminal=terminal)


def server_counter(dialect: Dialect, settings: ConnectionSettings, timeline: Timeline,
                   series: TransactionSeries) -> Workload:
    """--workload observe: the database server's own commit counter, whatever load someone else makes."""
    if isinstance(dialect, PostgresDialect):
        return PgCommitCounter(settings, timeline, series, dialect=dialect)
    if isinstance(dialect, TSqlDialect):
        return SqlServerCommitCounter(settings, timeline, series, dialect=dialect)
    raise ConfigError(f"--workload observe: no server commit counter for {dialect.name}")


def new_experiment(harness_run: HarnessRun, cluster: Cluster, schema: Scale | None, timeline: Timeline,
                   progress: Progress, durations: PhaseDurations, config: pytest.Config,
                   series: TransactionSeries | None = None, degraded_on_purpose: bool = False) -> Experiment:
    """An experiment with the run's OLTP workload (or the server's commit counter), not yet started; several
    experiments of one test may write one `series`, so its plot shows them all."""
    from reports.allure.steps import phase  # Allure only when experiments run

    series = series if series is not None else TransactionSeries()
    dialect, settings = cluster.connection()
    workload: Workload
    options = run_options(config)
    driver = DriverConfig(users=options.users, scale=schema) if schema is not None else None
    if driver is None:
        workload = server_counter(dialect, settings, timeline, series)
    elif options.load_workers or options.load_scheduler:
        workload = distributed_load(dialect, settings, timeline, series, driver, config)
    else:
        workload = OltpDriver(dialect, settings, timeline, series, driver)
    topology = harness_run.topology
    return Experiment(harness_run, cluster, timeline, progress, [workload], durations, series=series, step=phase,
                      degraded_on_purpose=degraded_on_purpose, parts=list(cluster_parts(topology).values()),
                      observers=observers(topology), repeats=options.repeat,
                      accept_weaker_replication=options.accept_weaker_replication)


def distributed_load(dialect: Dialect, settings: ConnectionSettings, timeline: Timeline, series: TransactionSeries,
                     driver: DriverConfig, config: pytest.Config) -> Workload:
    """The OLTP users spread over Dask workers: a local cluster (--load-workers) or the user's (--load-scheduler)."""
    from workloads.load.distributed import DistributedOltp, local_cluster, remote_cluster

    options = run_options(config)
    workers, scheduler = options.load_workers, options.load_scheduler
    if workers and scheduler:
        raise ConfigError("--load-workers starts a local cluster, --load-scheduler uses yours: give one of them")
    if scheduler is None and not workers:
        raise ConfigError("spreading the load needs --load-workers N or --load-scheduler tcp://HOST:PORT")
    client = local_cluster(workers) if workers else remote_cluster(str(scheduler))
    return DistributedOltp(dialect, settings, timeline, series, driver, client, generators=workers or None,
                           owns_cluster=bool(workers))


@pytest.fixture
def experiment(harness_run: HarnessRun, cluster: Cluster, schema: Scale | None, timeline: Timeline,
               progress: Progress, durations: PhaseDurations, pytestconfig: pytest.Config) -> Iterator[Experiment]:
    """One experiment under load on a healthy cluster; the cluster is healthy again afterwards."""
    from reports.allure.steps import ChangeTicket, link_change_ticket  # Allure only when experiments run

    heal_or_rebuild(cluster, durations, before=True)
    options = run_options(pytestconfig)
    if options.change_ticket:
        link_change_ticket(ChangeTicket(options.change_ticket, options.change_url or "{ticket}"))
    with new_experiment(harness_run, cluster, schema, timeline, progress, durations, pytestconfig) as running:
        yield running
    heal_or_rebuild(cluster, durations, before=False)


@pytest.fixture
def scenario_report(pytestconfig: pytest.Config, key_numbers: dict[str, str]) -> Iterator[ScenarioReport]:
    """`scenario_report.record(...)`: labels, evidence, the table kept in --tables-dir, key numbers;
    `scenario_report.judge([...])`: the verdicts, into the record and judged."""
    from harness.scenario_report import ScenarioReport  # plotting only when a scenario reports
    from reports.regression import earlier_values, read_history

    options = run_options(pytestconfig)
    directory, history = options.tables_dir, options.figures_history
    nights = earlier_values(read_history(Path(history))) if history else {}
    report = ScenarioReport(Path(directory) if directory else None, key_numbers, nights)
    yield report
    report.flush()


def heal_or_rebuild(cluster: Cluster, durations: PhaseDurations, *, before: bool) -> None:
    """The next test starts on a healthy cluster; one the harness provisions is rebuilt if it cannot
    heal, and the harness is reported broken either way."""
    try:
        cluster.wait_healthy(durations.recover_timeout_s)
        return
    except HarnessError as exc:
        problem = str(exc)
    rebuilt = isinstance(cluster, Provisioned)
    if isinstance(cluster, Provisioned):
        cluster.rebuild()
    raise HarnessError(f"cluster not healthy {'before' if before else 'after'} the experiment ({problem}); "
                       f"{'rebuilt' if rebuilt else 'not rebuilt'}")
