"""The pytest plugin: options, the run against `--topology`, and the fault fixtures.

How outcomes are judged is `harness.outcomes`, `--dry-run` is `harness.dryrun`, and the fixtures
of experiments against a live cluster are `harness.fixtures`; all load with this module.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from faults.base import Fault, FaultSpec
from harness import secret_hooks
from harness.plugin_state import STATE, PluginState, plugin_state
from harness.run_options import RunOptions, check_restore_destination, read_options
from harness.run_record import run_record
from harness.safety.guards import Guard
from harness.safety.revert import DEFAULT_REVERT_TIMEOUT_S
from harness.safety.run import HarnessRun
from harness.safety.runner import ActiveFault, RunnerSettings
from harness.safety.signals import sigterm_raises
from harness.topology_source import canonical, load_source
from harness_kernel.errors import ConfigError, HarnessError
from harness_kernel.history.timeline import Timeline
from harness_kernel.paths import state_dir
from harness_kernel.topology.models import WIDEST_SITE_PREFIX
from reports.allure.results_dir import environment_properties, write_categories, write_environment

pytest_plugins = ["harness.fixtures", "harness.outcomes", "harness.dryrun"]



def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "resilience harness")
    group.addoption("--topology", default=None, metavar="FILE|lab[:PREFIX]",
                    help="topology YAML of the target, or 'lab' for the embedded lab")
    group.addoption("--dry-run", action="store_true", default=False,
                    help="print every planned fault and touch nothing")
    group.addoption("--allow-destructive", action="store_true", default=False,
                    help="allow destructive faults on a topology that is not the embedded lab")
    group.addoption("--state-dir", default=None, help="where the journal and locks live (default $HARNESS_STATE_DIR)")
    group.addoption("--keep-lab", action="store_true", default=False, help="leave the embedded lab running at the end")
    group.addoption("--no-guardian", action="store_true", default=False,
                    help="inject without a guardian: a crash or kill -9 of the run leaves its fault until "
                         "`python -m harness recover` (the run record says the run was unguarded)")
    group.addoption("--change-ticket", default=None, help="change ticket id to link from the report")
    group.addoption("--change-url", default=None, help="URL template of change tickets, with {ticket}")
    group.addoption("--baseline-s", type=float, default=15.0, help="steady-load baseline before each fault (s)")
    group.addoption("--observe-s", type=float, default=20.0, help="how long each fault stays in effect (s)")
    group.addoption("--settle-s", type=float, default=10.0, help="load kept after recovery to read the new level (s)")
    group.addoption("--recover-timeout-s", type=float, default=240.0,
                    help="longest wait for the cluster to heal after a fault is reverted (s)")
    group.addoption("--revert-timeout-s", type=float, default=DEFAULT_REVERT_TIMEOUT_S,
                    help="longest a revert may take to prove the fault gone; the dead man's switch waits this long "
                         "past the fault's deadline, and recover as long (s)")
    group.addoption("--steady-window-s", type=int, default=10,
                    help="seconds throughput must hold inside the band to count as a steady state")
    group.addoption("--workload", choices=("oltp", "observe"), default="oltp",
                    help="oltp: the harness's virtual users with a commit ledger; observe: only read the database's "
                         "own commit counter while your application or HammerDB makes the load (no lost-commit verdict)")
    group.addoption("--users", type=int, default=8, help="OLTP virtual users")
    group.addoption("--scale", type=int, default=10, metavar="BRANCHES",
                    help="OLTP data scale in branches, as pgbench -s; keep it >= --users, or commits queue on "
                         "the few branch rows and the suite measures lock waits")
    group.addoption("--accounts-per-branch", type=int, default=10_000,
                    help="accounts per branch (pgbench has 100000; fewer keep the load and any rebuild short)")
    group.addoption("--rtt-steps", default="0,2,4,8", help="S1: added inter-site RTT steps (ms)")
    group.addoption("--step-s", type=float, default=20.0, help="S1: measured seconds per RTT step")
    group.addoption("--warmup-s", type=float, default=5.0, help="S1: warm-up seconds per RTT step")
    group.addoption("--load-workers", type=int, default=0,
                    help="spread the OLTP users over a local Dask cluster of N worker processes (default: in-process)")
    group.addoption("--load-scheduler", default=None, metavar="tcp://HOST:PORT",
                    help="spread the OLTP users over the Dask workers of this scheduler (your load machines; "
                         "--users per worker)")
    group.addoption("--migration-rtt-steps", default="0,1,2,4",
                    help="S5: added inter-site RTT steps (ms) at which the database VM migrates")
    group.addoption("--io-profile", default="mail", help="S6: the I/O workload's fio profile (mail: 70/30 r/w, 32 KiB)")
    group.addoption("--io-rate-iops", type=int, default=1000,
                    help="S6: the I/O workload's offered load (fio rate_iops; 0: as fast as it goes)")
    group.addoption("--mail-instances", type=int, default=2,
                    help="S6: mail databases (each with its log) sharing --io-rate-iops")
    group.addoption("--mail-log-iops", type=int, default=0,
                    help="S6: log writes/s over all instances (0: a quarter of --io-rate-iops)")
    group.addoption("--mail-db-read-ms", type=float, default=None,
                    help="S6: judge the mail databases' average read latency against this (default: not judged)")
    group.addoption("--mail-log-write-ms", type=float, default=None,
                    help="S6: judge the mail logs' average write latency against this (default: not judged)")
    group.addoption("--soak-s", type=float, default=0.0,
                    help="S6: an N-1 soak of the mail workload this long, one node down throughout (0: none)")
    group.addoption("--io-dir", default=None,
                    help="S6: directory fio writes in (default on the lab: the primary site's storage); on a real "
                         "cluster, a disk of the same datastore mounted on this machine")
    group.addoption("--backup-rates", default="none",
                    help="S7: one backup per rate, comma-separated: 'none' (unthrottled) or a pg_basebackup "
                         "--max-rate such as 4M")
    group.addoption("--backup-destination", default=None,
                    help="S7: where the backup is written (default on the lab: its backup area)")
    group.addoption("--backup-timeout-s", type=float, default=1800.0, help="S7: bound on one backup (and restore)")
    group.addoption("--restore-destination", default=None,
                    help="S7: the directory the restore's copy is written into: PostgreSQL: on this machine "
                         "(default: the database's backup_area; the lab sets its own); SQL Server: on the server, "
                         "where every file of the copy (databases[].restore_as) is moved")
    group.addoption("--qos-iops-limit", type=int, default=None,
                    help="S7: also a backup under this vSAN IOPS limit (a storage policy with VSAN.iopsLimit on the "
                         "primary's disk), beside one without it; where a platform sets one (vSphere)")
    group.addoption("--qos-disk", default="Hard disk 1",
                    help="S7: the label of the primary's virtual disk that holds the backup destination")
    group.addoption("--inconclusive", choices=("flag", "fail"), default="flag",
                    help="a figure whose 95 %% interval holds its threshold: flag it in the summary (nightly runs), "
                         "or fail the test (go-live acceptance)")
    group.addoption("--figures-history", default=None, metavar="PATH",
                    help="the figures history of earlier nights (figures.jsonl beside the report): a duration measured "
                         "in one trial tonight takes its 95 %% interval from its spread over the last nights")
    group.addoption("--accept-weaker-replication", action="store_true", default=False,
                    help="judge the lost-commit SLO even when the cluster replicates more weakly than the topology's "
                         "databases[].replication (by default a '0 lost' then is not judged: it proves nothing)")
    group.addoption("--repeat", type=int, default=1, metavar="N",
                    help="S2, S3 and S4: each fault case N times, a baseline before each (slow drift cancels); the "
                         "tables give the median of the trials and the verdicts their 95 %% interval across them")
    group.addoption("--quiet-progress", action="store_true", default=False,
                    help="one line per wait instead of a live progress bar (CI)")
    group.addoption("--tables-dir", default=None, help="write the scenario tables (HTML, Markdown, JSON) here")
    group.addoption("--widest-site-subnet", type=int, default=WIDEST_SITE_PREFIX, metavar="PREFIX",
                    help=f"accept site subnets as wide as /PREFIX (default /{WIDEST_SITE_PREFIX}): a partition drops a "
                         "whole site subnet, so only the command line may widen it")


MARKERS = (
    "scenario(name): the validation scenario (S1..S7) a test reproduces",
    "fault_kind(kind): the kind of fault a test injects",
    "faults(*faults): faults a test injects, for dry-run plans (FaultSpec or ScenarioFault)",
    "repeated: the test runs its fault case --repeat times (Experiment.run_failures), as its dry-run plan says",
)


def pytest_configure(config: pytest.Config) -> None:
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
    state = config.stash[STATE] = PluginState()
    try:
        state.options = read_options(config.getoption)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    if state.options.inconclusive == "fail":  # go-live acceptance: a verdict the measurement cannot give fails
        config.addinivalue_line("filterwarnings", "error::harness.analysis.slo.InconclusiveVerdict")
    source = config.getoption("--topology")
    if source is None:
        return
    try:
        topology = load_source(source, widest_site_prefix=state.options.widest_site_subnet)
        check_restore_destination(state.options.restore_destination, topology, source)  # now the engine is known
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    run = HarnessRun(topology=topology, topology_source=canonical(source),
                     state_dir=state_dir(config.getoption("--state-dir")),
                     allow_destructive=config.getoption("--allow-destructive"),
                     runner_settings=runner_settings(state.options),
                     start_guardian=not config.getoption("--no-guardian"))
    if not config.getoption("--dry-run"):
        missing = run.missing_credentials()
        if missing:
            raise pytest.UsageError("missing credentials: " + "; ".join(missing))
        secrets = run.resolved_secrets()
        state.secrets = secrets
        secret_hooks.install(config, secrets, topology)
    state.run = run


def runner_settings(options: RunOptions) -> RunnerSettings:
    """How the run's faults are bounded: the revert's own timeout, not the cluster's time to heal."""
    return RunnerSettings(revert_timeout_s=options.revert_timeout_s)


def pytest_sessionstart(session: pytest.Session) -> None:
    harness = plugin_state(session.config).run
    if harness is not None and not session.config.getoption("--dry-run") and not _is_collect_only(session.config):
        try:
            harness.acquire()
        except HarnessError as exc:
            raise pytest.UsageError(str(exc)) from None
    _install_sigterm(session.config)


def _is_collect_only(config: pytest.Config) -> bool:
    return bool(config.getoption("--collect-only", False))


def _install_sigterm(config: pytest.Config) -> None:
    """SIGTERM, and SIGHUP (the operator's SSH session drops), unwind like Ctrl-C so every revert in a `finally`
    runs; left as they were under nohup. The one handler is `sigterm_raises`, held until pytest cleans up."""
    held = contextlib.ExitStack()
    held.enter_context(sigterm_raises())
    config.add_cleanup(held.close)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    harness = plugin_state(session.config).run
    if harness is not None:
        harness.release()
    results_dir = getattr(session.config.option, "allure_report_dir", None)
    if results_dir:
        topology = harness.topology.name if harness else "none"
        products = plugin_state(session.config).products
        record = run_record(run_id=harness.run_id, topology_source=harness.topology_source,
                            command=list(session.config.invocation_params.args),
                            change_ticket=session.config.getoption("--change-ticket"),
                            guarded=harness.start_guardian) if harness else {}
        write_environment(Path(results_dir), environment_properties(topology, products, record))
        write_categories(Path(results_dir))


@pytest.fixture(scope="session")
def harness_run(pytestconfig: pytest.Config) -> HarnessRun:
    """The run against `--topology`; tests that need a target fail clearly without one."""
    harness = plugin_state(pytestconfig).run
    if harness is None:
        raise ConfigError("this test needs a target: pass --topology FILE or --topology lab")
    return harness


@pytest.fixture
def timeline() -> Timeline:
    """A fresh history for one test."""
    return Timeline()


Injector = Callable[..., AbstractContextManager[ActiveFault]]


@pytest.fixture
def inject(harness_run: HarnessRun, timeline: Timeline) -> Injector:
    """`with inject(spec_or_fault, duration_s=..., guards=[...]) as active:` — reverted on any exit."""

    def _inject(fault: Fault | FaultSpec, *, duration_s: float | None = None,
                guards: Sequence[Guard] = ()) -> AbstractContextManager[ActiveFault]:
        return harness_run.inject(timeline, fault, duration_s=duration_s, guards=guards)

    return _inject


@pytest.fixture
def key_numbers(request: pytest.FixtureRequest) -> dict[str, str]:
    """Figures a test puts here appear next to its verdict in the closing summary."""
    numbers: dict[str, str] = {}
    plugin_state(request.config).numbers[request.node.nodeid] = numbers
    return numbers


@pytest.fixture(scope="session")
def product_versions(pytestconfig: pytest.Config) -> dict[str, str]:
    """Versions of the products under test, as discovered; they go to environment.properties."""
    return plugin_state(pytestconfig).products
