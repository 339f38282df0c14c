"""The pytest plugin: options, the topology and fault fixtures, dry-run, and outcome classes.

Outcomes: an SLO violated is a test *failure*; the harness or infrastructure broken
(`HarnessError`) is a test *error*, and a run with errors but no failures exits with
`EXIT_HARNESS_BROKEN` so that CI can tell the two apart.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Generator, Sequence
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from faults.base import Fault, FaultSpec
from harness.errors import ConfigError, HarnessError
from harness.history.timeline import Timeline
from harness.paths import state_dir
from harness.safety.guards import Guard
from harness.safety.run import HarnessSession
from harness.safety.runner import ActiveFault, RunnerSettings
from harness.safety.signals import Terminated
from harness.topology.credentials import Secret, redacted_logging
from harness.topology.loader import load_topology
from harness.topology.models import Topology
from reports.allure_report import environment_properties, write_categories, write_environment
from reports.redact import scrub_tree
from reports.summary import Outcome, format_summary

EXIT_HARNESS_BROKEN = 10
_SESSION_KEY = pytest.StashKey[HarnessSession | None]()
_OUTCOMES_KEY = pytest.StashKey[dict[str, Outcome]]()
_NUMBERS_KEY = pytest.StashKey[dict[str, dict[str, str]]]()
_PRODUCTS_KEY = pytest.StashKey[dict[str, str]]()
_SECRETS_KEY = pytest.StashKey[list[Secret]]()
_BROKEN_KEY = pytest.StashKey[int]()
_FAILED_KEY = pytest.StashKey[int]()


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
    group.addoption("--change-ticket", default=None, help="change ticket id to link from the report")
    group.addoption("--change-url", default=None, help="URL template of change tickets, with {ticket}")
    group.addoption("--baseline-s", type=float, default=15.0, help="steady-load baseline before each fault (s)")
    group.addoption("--observe-s", type=float, default=20.0, help="how long each fault stays in effect (s)")
    group.addoption("--settle-s", type=float, default=10.0, help="load kept after recovery to read the new level (s)")
    group.addoption("--recover-timeout-s", type=float, default=240.0, help="longest wait for the cluster to heal (s)")
    group.addoption("--steady-window-s", type=int, default=10,
                    help="seconds throughput must hold inside the band to count as a steady state")
    group.addoption("--users", type=int, default=8, help="OLTP virtual users")
    group.addoption("--scale", type=int, default=10, metavar="BRANCHES",
                    help="OLTP data scale in branches, as pgbench -s; keep it >= --users, or commits queue on "
                         "the few branch rows and the suite measures lock waits")
    group.addoption("--accounts-per-branch", type=int, default=10_000,
                    help="accounts per branch (pgbench has 100000; fewer keep the load and any rebuild short)")
    group.addoption("--rtt-steps", default="0,2,4,8", help="S1: added inter-site RTT steps (ms)")
    group.addoption("--step-s", type=float, default=20.0, help="S1: measured seconds per RTT step")
    group.addoption("--warmup-s", type=float, default=5.0, help="S1: warm-up seconds per RTT step")
    group.addoption("--quiet-progress", action="store_true", default=False,
                    help="one line per wait instead of a live progress bar (CI)")
    group.addoption("--tables-dir", default=None, help="write the scenario tables (HTML, Markdown, JSON) here")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_BROKEN_KEY] = 0
    config.stash[_FAILED_KEY] = 0
    config.stash[_SESSION_KEY] = None
    config.stash[_OUTCOMES_KEY] = {}
    config.stash[_NUMBERS_KEY] = {}
    config.stash[_PRODUCTS_KEY] = {}
    config.stash[_SECRETS_KEY] = []
    source = config.getoption("--topology")
    if source is None:
        return
    try:
        topology = load_topology(source)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    session = HarnessSession(topology=topology, topology_source=_canonical_source(source),
                             state_dir=state_dir(config.getoption("--state-dir")),
                             allow_destructive=config.getoption("--allow-destructive"),
                             runner_settings=RunnerSettings(revert_timeout_s=config.getoption("--recover-timeout-s")))
    if not config.getoption("--dry-run"):
        missing = session.missing_credentials()
        if missing:
            raise pytest.UsageError("missing credentials: " + "; ".join(missing))
        secrets = session.resolved_secrets()
        config.stash[_SECRETS_KEY] = secrets
        stack = ExitStack()
        stack.enter_context(redacted_logging(secrets))
        config.add_cleanup(stack.close)
    config.stash[_SESSION_KEY] = session


def _canonical_source(source: str) -> str:
    return source if source == "lab" or source.startswith("lab:") else str(Path(source).resolve())


def pytest_sessionstart(session: pytest.Session) -> None:
    harness = session.config.stash[_SESSION_KEY]
    if harness is not None and not session.config.getoption("--dry-run") and not _is_collect_only(session.config):
        try:
            harness.acquire()
        except HarnessError as exc:
            raise pytest.UsageError(str(exc)) from None
    _install_sigterm(session.config)


def _is_collect_only(config: pytest.Config) -> bool:
    return bool(config.getoption("--collect-only", False))


def _install_sigterm(config: pytest.Config) -> None:
    """SIGTERM, and SIGHUP (the operator's SSH session drops), unwind like Ctrl-C so every revert in a `finally` runs."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Terminated(f"signal {signum}")

    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    for signum, before in previous.items():
        if before != signal.SIG_IGN:  # nohup: the user asked for the run to outlive the terminal
            signal.signal(signum, handler)

    def restore() -> None:
        for signum, before in previous.items():
            signal.signal(signum, before if before is not None else signal.SIG_DFL)

    config.add_cleanup(restore)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    harness = session.config.stash[_SESSION_KEY]
    if harness is not None:
        harness.release()
    results_dir = getattr(session.config.option, "allure_report_dir", None)
    if results_dir:
        topology = harness.topology.name if harness else "none"
        products: dict[str, str] = session.config.stash[_PRODUCTS_KEY]
        write_environment(Path(results_dir), environment_properties(topology, products))
        write_categories(Path(results_dir))
        scrub_tree(Path(results_dir), [s.reveal() for s in session.config.stash[_SECRETS_KEY]])
    if exitstatus == pytest.ExitCode.TESTS_FAILED and session.config.stash[_FAILED_KEY] == 0 \
            and session.config.stash[_BROKEN_KEY] > 0:
        session.exitstatus = EXIT_HARNESS_BROKEN


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
        item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if not report.failed:
        _remember_outcome(item, report)
        return report
    broken = call.excinfo is not None and call.excinfo.errisinstance(HarnessError)
    if broken and report.when == "call":
        report.when = "setup"  # reported as an error, not as a product failure
    if broken or report.when != "call":
        item.config.stash[_BROKEN_KEY] += 1
    else:
        item.config.stash[_FAILED_KEY] += 1
    _remember_outcome(item, report)
    return report


def _remember_outcome(item: pytest.Item, report: pytest.TestReport) -> None:
    """Each test's outcome for the closing summary; the worst phase wins."""
    if report.failed:
        status = "failed" if report.when == "call" else "error"
    elif report.skipped:
        status = "skipped"
    elif report.when == "call":
        status = "passed"
    else:
        return
    outcomes = item.config.stash[_OUTCOMES_KEY]
    current = outcomes.get(item.nodeid)
    if current is not None and current.status in ("failed", "error"):
        return
    crash = getattr(report.longrepr, "reprcrash", None)
    reason = str(crash.message) if report.failed and crash is not None else ""
    marker = item.get_closest_marker("scenario")
    scenario = str(marker.args[0]) if marker and marker.args else ""
    numbers = item.config.stash[_NUMBERS_KEY].get(item.nodeid, {})
    outcomes[item.nodeid] = Outcome(item.name, scenario, status, numbers, reason)


# --- dry-run -----------------------------------------------------------------------------------

def planned_specs(item: pytest.Item, topology: Topology) -> list[FaultSpec]:
    """The faults a collected test will inject, read from its parameters and `faults` marker."""
    values: list[Any] = []
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        values.extend(callspec.params.values())
    for marker in item.iter_markers("faults"):
        values.extend(marker.args)
    specs: list[FaultSpec] = []
    for value in values:
        specs.extend(_specs_in(value, topology))
    return specs


def _specs_in(value: Any, topology: Topology) -> list[FaultSpec]:
    if isinstance(value, FaultSpec):
        return [value]
    if hasattr(value, "plan_specs"):
        return list(value.plan_specs(topology))
    if isinstance(value, list | tuple):
        return [spec for v in value for spec in _specs_in(v, topology)]
    return []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("--dry-run"):
        return
    skip = pytest.mark.skip(reason="dry-run: planned only")
    for item in items:
        item.add_marker(skip)


def pytest_report_collectionfinish(config: pytest.Config, items: Sequence[pytest.Item]) -> list[str]:
    if not config.getoption("--dry-run"):
        return []
    harness = config.stash[_SESSION_KEY]
    if harness is None:
        return ["dry-run: no --topology given, nothing to plan"]
    lines = [f"dry-run against topology {harness.topology.name!r} ({harness.topology_source}); nothing is contacted"]
    planned = 0
    for item in items:
        for spec in planned_specs(item, harness.topology):
            lines.append(f"[{item.nodeid}]")
            if not harness.factory.supports(spec.kind, harness.topology.kind):
                lines.append(f"  {spec.kind} on {spec.target}: no backend for this fault kind in this installation yet")
                continue
            lines.extend("  " + line for line in harness.build(spec).plan().render().splitlines())
            allowed = spec.target in harness.topology.allow_list or not spec.destructive
            if not allowed:
                lines.append("  NOT ALLOWED: target is not in the allow_list")
            planned += 1
    lines.append(f"dry-run: {planned} fault(s) planned in {len(items)} test(s)")
    missing = harness.missing_credentials()
    lines.append("credentials missing for a real run: " + ("; ".join(missing) if missing else "none"))
    return lines


# --- fixtures ----------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def harness_session(pytestconfig: pytest.Config) -> HarnessSession:
    """The run against `--topology`; tests that need a target fail clearly without one."""
    harness = pytestconfig.stash[_SESSION_KEY]
    if harness is None:
        raise ConfigError("this test needs a target: pass --topology FILE or --topology lab")
    return harness


@pytest.fixture
def timeline() -> Timeline:
    """A fresh history for one test."""
    return Timeline()


Injector = Callable[..., AbstractContextManager[ActiveFault]]


@pytest.fixture
def inject(harness_session: HarnessSession, timeline: Timeline) -> Injector:
    """`with inject(spec_or_fault, duration_s=..., guards=[...]) as active:` — reverted on any exit."""

    def _inject(fault: Fault | FaultSpec, *, duration_s: float | None = None,
                guards: Sequence[Guard] = ()) -> AbstractContextManager[ActiveFault]:
        return harness_session.inject(timeline, fault, duration_s=duration_s, guards=guards)

    return _inject


@pytest.fixture
def key_numbers(request: pytest.FixtureRequest) -> dict[str, str]:
    """Figures a test puts here appear next to its verdict in the closing summary."""
    numbers: dict[str, str] = {}
    request.config.stash[_NUMBERS_KEY][request.node.nodeid] = numbers
    return numbers


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    outcomes = list(config.stash[_OUTCOMES_KEY].values())
    if any(o.scenario for o in outcomes):
        terminalreporter.write_line("")
        for line in format_summary([o for o in outcomes if o.scenario]).splitlines():
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def product_versions(pytestconfig: pytest.Config) -> dict[str, str]:
    """Versions of the products under test, as discovered; they go to environment.properties."""
    return pytestconfig.stash[_PRODUCTS_KEY]
