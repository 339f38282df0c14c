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
from harness.options import add_options, read
from harness.plugin_state import STATE, PluginState, plugin_state, run_options, run_switches
from harness.run_options import RunOptions, RunSwitches, read_options
from harness.run_record import run_record
from harness.safety.guards import Guard
from harness.safety.run import HarnessRun
from harness.safety.runner import ActiveFault, RunnerSettings
from harness.safety.signals import sigterm_raises
from harness.topology_source import canonical, load_source
from harness_kernel.errors import ConfigError, HarnessError
from harness_kernel.history.timeline import Timeline
from harness_kernel.paths import state_dir
from reports.allure.results_dir import environment_properties, write_categories, write_environment

pytest_plugins = ["harness.fixtures", "harness.outcomes", "harness.dryrun"]



def pytest_addoption(parser: pytest.Parser) -> None:
    """The core's options, as `RunSwitches` and `RunOptions` declare them (the suites declare their own)."""
    group = parser.getgroup("harness", "resilience harness")
    add_options(group, RunSwitches)
    add_options(group, RunOptions)


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
        state.switches = read(RunSwitches, config.getoption)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    if state.options.inconclusive == "fail":  # go-live acceptance: a verdict the measurement cannot give fails
        config.addinivalue_line("filterwarnings", "error::harness.analysis.slo.InconclusiveVerdict")
    switches = state.switches
    source = switches.topology
    if source is None:
        return
    try:
        topology = load_source(source, widest_site_prefix=state.options.widest_site_subnet)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    run = HarnessRun(topology=topology, topology_source=canonical(source),
                     state_dir=state_dir(switches.state_dir),
                     allow_destructive=switches.allow_destructive,
                     runner_settings=runner_settings(state.options),
                     start_guardian=not switches.no_guardian)
    if not switches.dry_run:
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
    harness_run = plugin_state(session.config).run
    if harness_run is not None and not run_switches(session.config).dry_run and not _is_collect_only(session.config):
        try:
            harness_run.acquire()
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
    harness_run = plugin_state(session.config).run
    if harness_run is not None:
        harness_run.release()
    results_dir = getattr(session.config.option, "allure_report_dir", None)
    if results_dir:
        topology = harness_run.topology.name if harness_run else "none"
        products = plugin_state(session.config).products
        record = run_record(run_id=harness_run.run_id, topology_source=harness_run.topology_source,
                            command=list(session.config.invocation_params.args),
                            change_ticket=run_options(session.config).change_ticket,
                            guarded=harness_run.start_guardian) if harness_run else {}
        write_environment(Path(results_dir), environment_properties(topology, products, record))
        write_categories(Path(results_dir))


@pytest.fixture(scope="session")
def harness_run(pytestconfig: pytest.Config) -> HarnessRun:
    """The run against `--topology`; tests that need a target fail clearly without one."""
    harness_run = plugin_state(pytestconfig).run
    if harness_run is None:
        raise ConfigError("this test needs a target: pass --topology FILE or --topology lab")
    return harness_run


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
