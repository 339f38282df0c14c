"""Reading a run back from its Allure results directory: each test, its verdict, its scenario record.

The summary page and the nightly figures are built from the results alone (what `--alluredir`
kept), so `python -m harness report` works on any run, today's or an archived one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reports.scenario_record import ATTACHMENT_NAME, PLOT_NAME, ScenarioRecord


@dataclass(frozen=True)
class RecordedTest:
    """One test of the run as Allure recorded it."""

    uuid: str
    title: str
    full_name: str
    status: str  # passed / failed (an SLO violated) / broken (harness or infrastructure) / skipped
    start: int | None
    labels: Mapping[str, str]
    message: str
    record: ScenarioRecord | None
    stop: int | None = None  # ms since the epoch, as `start`
    plot: bytes | None = None  # the throughput timeline (PNG) the test attached, for the page a board prints

    @property
    def scenario(self) -> str:
        return self.labels.get("epic", "").split(" ", 1)[0]  # "S4 application failover" -> "S4"


def _attachment_path(results: Path, data: Mapping[str, Any], name: str) -> Path | None:
    for attachment in data.get("attachments", []):
        if attachment.get("name") == name:
            path = results / str(attachment.get("source", ""))
            return path if path.is_file() and path.parent == results else None
    return None


def _attachment(results: Path, data: Mapping[str, Any], name: str) -> str | None:
    path = _attachment_path(results, data, name)
    return path.read_text() if path is not None else None


def _labels(labels: list[Mapping[str, Any]]) -> dict[str, str]:
    """Name -> value; Allure's model lets either be absent (allure-pytest writes `package` without a value when
    pytest's rootdir is not the suites' folder): a value absent is empty, a label without a name is no label."""
    return {str(label["name"]): str(label.get("value") or "") for label in labels if label.get("name")}


def read_tests(results: Path) -> list[RecordedTest]:
    """Every test result, in the order they started; the last retry of a test only."""
    latest: dict[str, RecordedTest] = {}
    for path in sorted(results.glob("*-result.json")):
        data = json.loads(path.read_text())
        record_text = _attachment(results, data, ATTACHMENT_NAME)
        details = data.get("statusDetails") or {}
        run = RecordedTest(uuid=str(data.get("uuid", path.stem)), title=str(data.get("name", "")),
                      full_name=str(data.get("fullName", "")), status=str(data.get("status", "unknown")),
                      start=data.get("start"),
                      labels=_labels(data.get("labels") or []),
                      message=str(details.get("message", "")),
                      record=ScenarioRecord.from_json(record_text) if record_text else None, stop=data.get("stop"),
                      plot=plot.read_bytes() if (plot := _attachment_path(results, data, PLOT_NAME)) else None)
        key = f"{run.full_name}|{sorted(p.get('value', '') for p in data.get('parameters', []))}"
        if key not in latest or (run.start or 0) >= (latest[key].start or 0):
            latest[key] = run
    return sorted(latest.values(), key=lambda r: (r.start or 0, r.title))


def read_environment(results: Path) -> dict[str, str]:
    """`environment.properties` as written by the plugin (escapes undone)."""
    path = results / "environment.properties"
    found = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        key: list[str] = []
        value: list[str] = []
        target, escaped = key, False
        for ch in line:
            if escaped:
                target.append({"n": "\n", "r": "\r"}.get(ch, ch))
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == "=" and target is key:
                target = value
            else:
                target.append(ch)
        if key:
            found["".join(key)] = "".join(value)
    return found


def report_ids(site: Path, tests: Sequence[RecordedTest]) -> dict[str, str]:
    """Our test uuid -> the id the Allure report routes to (`#<id>`), matched by full name and start time."""
    by_run: dict[tuple[str, int | None], str] = {}
    for path in (site / "data" / "test-results").glob("*.json"):
        data = json.loads(path.read_text())
        by_run[(str(data.get("fullName", "")), data.get("start"))] = str(data.get("id", path.stem))
    return {t.uuid: by_run[(t.full_name, t.start)] for t in tests if (t.full_name, t.start) in by_run}
