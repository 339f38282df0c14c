"""Typed handles the report tests share between fixtures and tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reports.allure.generate import ReportOutput


@dataclass
class SampleRuns:
    """Two consecutive nightly runs of the sample suite, reported into one output directory."""

    workdir: Path
    secret: str
    results: list[Path] = field(default_factory=list)
    exit_codes: list[int] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    reports: list[ReportOutput] = field(default_factory=list)

    @property
    def report(self) -> ReportOutput:
        return self.reports[-1]


@dataclass
class LoopbackBrowser:
    """A Chromium page that may talk only to loopback and local files; `blocked` lists what it tried."""

    page: Any
    blocked: list[str]
