"""How a run is judged: an SLO violated is a test *failure*; the harness or infrastructure broken
(`HarnessError`) is a test *error*. The exit code (README, "Exit codes"): 1 when an SLO failed;
otherwise 10 when the harness or infrastructure broke; otherwise 4 when only bad input stopped
tests (a `ConfigError`: a malformed value, a missing or rejected credential).

After a failed revert the run stops: nothing more is injected on a target that may still be broken.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator
from typing import Any

import pytest

from harness.analysis.slo import Finding, InconclusiveVerdict
from harness.plugin_state import PluginState, plugin_state
from harness_kernel.errors import ConfigError, HarnessError
from reports.outcome import test_verdict
from reports.summary import Outcome, format_summary

EXIT_HARNESS_BROKEN = 10
EXIT_BAD_INPUT = 4
KEY_FIGURE_PREFIX = "harness."


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
        item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "teardown":
        _record_key_figures(item, report)
    if not report.failed:
        _remember_outcome(item, report)
        return report
    broken = call.excinfo is not None and (call.excinfo.errisinstance(HarnessError) or _a_scenario_s_bug(item, call))
    if broken and report.when == "call":
        report.when = "setup"  # reported as an error, not as a product failure
    if broken and call.excinfo is not None and call.excinfo.errisinstance(ConfigError):
        plugin_state(item.config).bad_input += 1
    elif broken or (report.when != "call" and _the_harness_s(item)):
        plugin_state(item.config).broken += 1
    else:  # a product failure, or another project's test failing or erring: pytest's meaning, exit 1
        plugin_state(item.config).failed += 1
    _remember_outcome(item, report)
    harness_run = plugin_state(item.config).run
    if harness_run is not None and harness_run.revert_failures:
        item.session.shouldstop = "a revert failed: the target may still be broken (python -m harness recover)"
    return report


def _the_harness_s(item: pytest.Item) -> bool:
    """A scenario: its setup or teardown erring is the harness broken. Installed beside other tests, the plugin leaves
    theirs alone: a broken fixture of another project keeps pytest's exit code."""
    return item.get_closest_marker("scenario") is not None


def _a_scenario_s_bug(item: pytest.Item, call: pytest.CallInfo[None]) -> bool:
    """A scenario fails only through an SLO check: an AssertionError (`harness.analysis.slo` raises one, and so does
    a scenario's `assert`), an INCONCLUSIVE verdict under `--inconclusive fail`, or `pytest.fail`. Any other
    exception in a scenario's call is the harness's code broken, not the cluster's failure. Tests that are not
    scenarios keep pytest's meaning."""
    excinfo = call.excinfo
    return (call.when == "call" and excinfo is not None and item.get_closest_marker("scenario") is not None
            and not excinfo.errisinstance((AssertionError, InconclusiveVerdict, pytest.fail.Exception,
                                           pytest.skip.Exception, pytest.xfail.Exception)))


def _record_key_figures(item: pytest.Item, report: pytest.TestReport) -> None:
    """The test's key figures as its report's properties, once (on the last phase, when they are all in): pytest's
    JUnit XML writes them as the test case's `<property name="harness.FIGURE" value="..."/>`, which CI systems read."""
    numbers = plugin_state(item.config).numbers.get(item.nodeid, {})
    report.user_properties.extend((f"{KEY_FIGURE_PREFIX}{name}", value) for name, value in numbers.items())


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
    outcomes = plugin_state(item.config).outcomes
    current = outcomes.get(item.nodeid)
    if current is not None and current.status in ("failed", "error"):
        return
    crash = getattr(report.longrepr, "reprcrash", None)
    reason = str(crash.message) if report.failed and crash is not None else ""
    marker = item.get_closest_marker("scenario")
    scenario = str(marker.args[0]) if marker and marker.args else ""
    numbers = plugin_state(item.config).numbers.get(item.nodeid, {})
    outcomes[item.nodeid] = Outcome(item.name, scenario, status, numbers, reason)




@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.exitstatus = exit_status(session, exitstatus)


def exit_status(session: pytest.Session, exitstatus: int) -> int:
    """pytest's status, except that errors without any failure mean the harness was broken (10), or, when
    every error was bad input, that the input was bad (4)."""
    state = plugin_state(session.config)
    if exitstatus == pytest.ExitCode.TESTS_FAILED and state.failed == 0:
        if state.broken > 0:
            return EXIT_HARNESS_BROKEN
        if state.bad_input > 0:
            return EXIT_BAD_INPUT
    return exitstatus


class _Flags:
    """Each `InconclusiveVerdict` and `Finding` a test warned about (pytest hands warnings over with the test's id
    only)."""

    def __init__(self, state: PluginState) -> None:
        self.state = state

    def pytest_warning_recorded(self, warning_message: Any, when: str, nodeid: str, location: Any) -> None:
        if isinstance(warning_message.message, InconclusiveVerdict) and nodeid:
            self.state.inconclusive.setdefault(nodeid, []).append(str(warning_message.message))
        if isinstance(warning_message.message, Finding) and nodeid:
            self.state.findings.setdefault(nodeid, []).append(str(warning_message.message))


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_Flags(plugin_state(config)), "harness-inconclusive")


def _flagged(outcome: Outcome, nodeid: str, state: PluginState) -> Outcome:
    """A passed test is INCONCLUSIVE (saying which verdicts) or passes with findings in the summary, by the
    order the report's banner reads too (`reports.outcome`); its findings are listed whatever its verdict."""
    findings = tuple(state.findings.get(nodeid, ()))
    outcome = dataclasses.replace(outcome, findings=findings)
    verdict = test_verdict(outcome.status, inconclusive=nodeid in state.inconclusive, findings=bool(findings))
    if verdict == "INCONCLUSIVE":
        return dataclasses.replace(outcome, status="inconclusive", reason="; ".join(state.inconclusive[nodeid]))
    if verdict == "PASS with findings":
        return dataclasses.replace(outcome, status="findings")
    return outcome


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = plugin_state(config)
    outcomes = [_flagged(o, nodeid, state) for nodeid, o in state.outcomes.items()]
    if any(o.scenario for o in outcomes):
        terminalreporter.write_line("")
        for line in format_summary([o for o in outcomes if o.scenario]).splitlines():
            terminalreporter.write_line(line)
    harness_run = state.run
    if harness_run is not None and harness_run.revert_failures:
        terminalreporter.write_line("")
        terminalreporter.write_line("REVERT FAILED: the target may still be broken; the journal keeps these faults "
                                    "(python -m harness recover):", red=True)
        for failure in harness_run.revert_failures:
            terminalreporter.write_line(f"  {failure}", red=True)
