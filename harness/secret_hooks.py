"""Pytest hooks that keep resolved secrets out of everything a run prints or leaves behind.

Masking log records is not enough: pytest prints exception text, tracebacks, `--showlocals`
values and captured output from its reports, and writes them to JUnit; Allure writes its own
copies. So reports are masked as they are made, the terminal is masked as a last resort, and
result files (Allure, JUnit, --tables-dir) are scrubbed after every test (a killed run leaves
only its current test unscrubbed) and, in a `finally`, at session end.
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TextIO

import pytest

from harness_kernel.redaction import Redactor, masking, redacted_logging, usernames_in
from harness_kernel.topology.credentials import Secret
from reports.results_scrub import scrub_file, scrub_tree

PLUGIN_NAME = "harness-redaction"


def install(config: pytest.Config, secrets: Sequence[Secret], topology: Any) -> None:
    """Mask `secrets` (and base64 of `user:secret` for the topology's users) for the rest of the run."""
    redactor = Redactor(secrets, usernames_in(topology))
    if not redactor:
        return
    stack = ExitStack()
    stack.enter_context(redacted_logging(redactor))
    config.add_cleanup(stack.close)
    config.pluginmanager.register(RedactionPlugin(config, redactor), PLUGIN_NAME)


def _masked(value: Any, redactor: Redactor, seen: set[int]) -> Any:
    """`value` with every string inside masked; pytest's report objects are changed in place."""
    if isinstance(value, str):
        return redactor.mask(value)
    if id(value) in seen:
        return value
    seen.add(id(value))
    if isinstance(value, list):
        value[:] = [_masked(v, redactor, seen) for v in value]
    elif isinstance(value, tuple):
        items = [_masked(v, redactor, seen) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    elif isinstance(value, dict):
        for key in value:
            value[key] = _masked(value[key], redactor, seen)
    elif type(value).__module__.startswith("_pytest.") and hasattr(value, "__dict__"):  # TerminalRepr and parts
        for name, item in list(vars(value).items()):
            object.__setattr__(value, name, _masked(item, redactor, seen))
    return value


def _property(value: object, redactor: Redactor) -> object:
    """JUnit writes str(value): a non-string whose text holds a secret becomes its masked text."""
    text = value if isinstance(value, str) else str(value)
    masked = redactor.mask(text)
    return masked if masked != text else value


def mask_report(report: pytest.TestReport | pytest.CollectReport, redactor: Redactor) -> None:
    report.longrepr = _masked(report.longrepr, redactor, set())
    report.sections = [(title, redactor.mask(content)) for title, content in report.sections]
    if isinstance(report, pytest.TestReport):
        report.user_properties = [(name, _property(value, redactor)) for name, value in report.user_properties]
        if isinstance(getattr(report, "wasxfail", None), str):
            report.wasxfail = redactor.mask(report.wasxfail)


class RedactionPlugin:
    def __init__(self, config: pytest.Config, redactor: Redactor) -> None:
        self.config = config
        self.redactor = redactor
        self._clean: dict[Path, tuple[int, int]] = {}
        self._streams: list[tuple[str, TextIO]] = []
        self._wrappers: dict[int, TextIO] = {}  # one per real stream keeps the order of writes

    # -- reports, as they are made (innermost, so every other hook sees them masked) ------
    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        mask_report(report, self.redactor)
        return report

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Generator[None, pytest.CollectReport,
                                                                                     pytest.CollectReport]:
        report = yield
        mask_report(report, self.redactor)
        return report

    # -- the terminal, as a last resort -----------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        def wrap(stream: TextIO) -> TextIO:
            return self._wrappers.setdefault(id(stream), masking(stream, self.redactor))

        if self.config.pluginmanager.has_plugin("terminalreporter"):
            writer = self.config.get_terminal_writer()
            if hasattr(writer, "_file"):
                writer._file = wrap(writer._file)
        if self.config.getoption("capture", "fd") == "no":  # -s: prints go straight to the terminal
            self._streams = [("stdout", sys.stdout), ("stderr", sys.stderr)]
            sys.stdout, sys.stderr = wrap(sys.stdout), wrap(sys.stderr)
        capturing = getattr(self.config.pluginmanager.get_plugin("capturemanager"), "_global_capturing", None)
        for name in ("out", "err"):  # --capture=tee-sys: captured, and copied to the real stream
            tee: Any = getattr(getattr(capturing, name, None), "tmpfile", None)
            if hasattr(tee, "_other"):
                tee._other = wrap(tee._other)

    # -- result files -------------------------------------------------------------------------
    def scrub_outputs(self, *, final: bool = True) -> None:
        """Allure and --tables-dir (only files changed since the last scrub); at the end JUnit too."""
        option = self.config.option
        for directory in (getattr(option, "allure_report_dir", None), getattr(option, "tables_dir", None)):
            if directory:
                scrub_tree(Path(directory), self.redactor, self._clean)
        junit = getattr(option, "xmlpath", None)
        if final and junit and Path(junit).is_file():  # written at session end
            scrub_file(Path(junit), self.redactor)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logfinish(self, nodeid: str, location: tuple[str, int | None, str]) -> Generator[None, None, None]:
        try:
            return (yield)  # Allure writes the test's result when its own wrapper finishes
        finally:
            self.scrub_outputs(final=False)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> Generator[None, None, None]:
        try:
            return (yield)  # environment.properties, JUnit, late evidence: any of it may raise
        finally:
            self.scrub_outputs()

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.scrub_outputs()
        for stream in self._wrappers.values():
            stream.flush()
        for name, original in self._streams:
            setattr(sys, name, original)
