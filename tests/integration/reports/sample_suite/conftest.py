"""Stands in for the harness plugin's session end: results files, secret scrub, terminal summary."""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from harness_kernel.errors import HarnessError
from reports.allure.results_dir import environment_properties, write_categories, write_environment
from reports.results_scrub import scrub_tree
from reports.summary import Outcome, format_summary

OUTCOMES = pytest.StashKey[list[Outcome]]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[OUTCOMES] = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if report.when == "call" or (report.when == "setup" and not report.passed):
        props = dict(item.user_properties)
        broken = call.excinfo is not None and call.excinfo.errisinstance(HarnessError)
        status = "error" if broken else report.outcome
        reason = "" if call.excinfo is None else call.excinfo.exconly()
        numbers = props.get("numbers", {})
        item.config.stash[OUTCOMES].append(Outcome(item.name, str(props.get("scenario", "")), status,
                                                   numbers if isinstance(numbers, dict) else {}, reason))
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    results = session.config.getoption("allure_report_dir", None)
    if results:
        results_dir = Path(results)
        write_environment(results_dir, environment_properties("sample-sqlite", {"sqlite": __import__("sqlite3").sqlite_version}))
        write_categories(results_dir)
        scrub_tree(results_dir, [os.environ["SAMPLE_DB_PASSWORD"]])


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    outcomes: list[Outcome] = config.stash[OUTCOMES]
    terminalreporter.write_line(format_summary(outcomes))
