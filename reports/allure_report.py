"""Allure helpers the pytest plugin and the suites call: labels, parameters, steps, evidence, results files.

Calls made inside a test go through `allure.dynamic` / `allure.attach` (no-ops when pytest
runs without `--alluredir`); the results-directory files (`environment.properties`,
`categories.json`) are written once per session by the plugin.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import allure

import harness
from harness.errors import HarnessError
from harness.history.series import MetricSeries, TransactionSeries
from harness.history.timeline import Timeline
from reports.fault_record import fault_record_html, fault_record_json
from reports.metrics_export import metric_series_csv, metrics_json, transactions_csv
from reports.plots import latency_timeline_png, tps_timeline_png
from reports.tables import Table, to_html, to_markdown

SLO_VIOLATED = "SLO violated"
HARNESS_BROKEN = "Harness or infrastructure broken"
_SECRET_KEY = re.compile(r"pass(word)?|secret|token|credential|api[_-]?key|private", re.IGNORECASE)


class Phase(StrEnum):
    """The experiment's phases, in order: each becomes one Allure step."""

    BASELINE = "baseline"
    INJECT = "inject"
    OBSERVE = "observe"
    REVERT = "revert"
    RECOVER = "recover"


@dataclass(frozen=True)
class ExperimentLabels:
    """epic = scenario (S1..S7), feature = fault kind, story = target."""

    scenario: str
    fault_kind: str
    target: str
    severity: str = "critical"
    tags: Sequence[str] = ()


@dataclass(frozen=True)
class ChangeTicket:
    """A change request a run is evidence for; `url_template` holds `{ticket}`."""

    ticket: str
    url_template: str = "{ticket}"

    @property
    def url(self) -> str:
        return self.url_template.format(ticket=self.ticket)


def _dynamic() -> Any:
    """`allure.dynamic` is untyped; this is the one place that says so."""
    return allure.dynamic


def apply_labels(labels: ExperimentLabels) -> None:
    dynamic = _dynamic()
    dynamic.epic(labels.scenario)
    dynamic.feature(labels.fault_kind)
    dynamic.story(labels.target)
    dynamic.severity(labels.severity)
    for tag in labels.tags:
        dynamic.tag(tag)


def add_parameters(parameters: Mapping[str, object]) -> None:
    """Show the experiment's knobs (fault, target, latency...); values that look secret are masked."""
    for name, value in parameters.items():
        _dynamic().parameter(name, "***" if _SECRET_KEY.search(name) else str(value))


def link_change_ticket(ticket: ChangeTicket) -> None:
    _dynamic().link(ticket.url, link_type="link", name=f"change {ticket.ticket}")


@contextmanager
def phase(name: Phase | str, detail: str = "") -> Iterator[None]:
    """One Allure step per phase; `detail` says what the phase does (e.g. '4 ms RTT on A-B')."""
    title = str(name) if not detail else f"{name}: {detail}"
    with allure.step(title):
        yield


def attach_png(data: bytes, name: str) -> None:
    allure.attach(data, name=name, attachment_type=allure.attachment_type.PNG)


def attach_table(table: Table) -> None:
    """The scenario table as HTML (rendered inline by Allure) and Markdown (for tickets)."""
    allure.attach(to_html(table), name=f"{table.title} (table)", attachment_type=allure.attachment_type.HTML)
    allure.attach(to_markdown(table), name=f"{table.title} (markdown)", attachment_type="text/markdown",
                  extension="md")


def attach_fault_record(timeline: Timeline) -> None:
    allure.attach(fault_record_html(timeline), name="fault record", attachment_type=allure.attachment_type.HTML)
    allure.attach(fault_record_json(timeline), name="fault record (json)", attachment_type=allure.attachment_type.JSON)


def attach_metrics(series: TransactionSeries, metrics: Sequence[MetricSeries] = ()) -> None:
    allure.attach(metrics_json(series, metrics), name="metrics (json)", attachment_type=allure.attachment_type.JSON)
    allure.attach(transactions_csv(series), name="transactions per second (csv)", attachment_type=allure.attachment_type.CSV)
    if metrics:
        allure.attach(metric_series_csv(metrics), name="sampled metrics (csv)", attachment_type=allure.attachment_type.CSV)


@dataclass
class Evidence:
    """Everything one experiment leaves behind; `attach_evidence` turns it into attachments."""

    timeline: Timeline
    series: TransactionSeries
    metrics: Sequence[MetricSeries] = ()
    table: Table | None = None
    title: str = ""
    extra: Mapping[str, str] = field(default_factory=dict)


def attach_evidence(evidence: Evidence) -> None:
    """Plots, table, metrics and fault record, in the order a reviewer reads them."""
    prefix = f"{evidence.title}: " if evidence.title else ""
    attach_png(tps_timeline_png(evidence.timeline, evidence.series, evidence.metrics, title=f"{prefix}throughput"),
               "TPS timeline")
    attach_png(latency_timeline_png(evidence.timeline, evidence.series, title=f"{prefix}commit latency"),
               "latency timeline")
    if evidence.table is not None:
        attach_table(evidence.table)
    attach_metrics(evidence.series, evidence.metrics)
    attach_fault_record(evidence.timeline)
    for name, text in evidence.extra.items():
        allure.attach(text, name=name, attachment_type=allure.attachment_type.TEXT)


# --- results-directory files, written once per session ----------------------------------------

def environment_properties(topology: str, products: Mapping[str, str], extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment block: topology, product versions as discovered, harness version."""
    props = {"topology": topology, "harness.version": harness.__version__}
    props |= {f"product.{name}": version for name, version in products.items()}
    return props | dict(extra or {})


def _escape_property(text: str) -> str:
    out = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    return out.replace("=", "\\=").replace(":", "\\:")


def write_environment(results_dir: Path, properties: Mapping[str, str]) -> Path:
    """`environment.properties`; keys that look like credentials are refused, not written."""
    secret_keys = [k for k in properties if _SECRET_KEY.search(k)]
    if secret_keys:
        raise HarnessError(f"environment.properties would carry credential-like keys: {', '.join(secret_keys)}")
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / "environment.properties"
    path.write_text("".join(f"{_escape_property(k)}={_escape_property(str(v))}\n" for k, v in properties.items()))
    return path


def _subclass_names(base: type[BaseException]) -> list[str]:
    names, pending = [], [base]
    while pending:
        cls = pending.pop()
        names.append(cls.__name__)
        pending.extend(cls.__subclasses__())
    return sorted(set(names))


def categories(harness_errors: type[BaseException] = HarnessError) -> list[dict[str, Any]]:
    """SLO violated (a test *failure*) vs harness or infrastructure broken (a test *error*).

    allure-pytest marks AssertionError as failed and every other exception as broken; the
    second category lists the harness's error classes (as loaded when called) so a reader sees
    why, and a third catches broken tests raised by anything else (a bug in the test itself).
    """
    classes = "|".join(re.escape(n) for n in _subclass_names(harness_errors))
    return [
        {"name": SLO_VIOLATED, "matchedStatuses": ["failed"],
         "description": "The product left the envelope the thresholds allow (AssertionError, StopConditionTripped)."},
        {"name": HARNESS_BROKEN, "matchedStatuses": ["broken"], "messageRegex": rf"[\s\S]*\b({classes})\b[\s\S]*",
         "description": "Revert failed, control plane unreachable, lab unhealthy: the product was not judged."},
        {"name": "Test code broken", "matchedStatuses": ["broken"],
         "description": "An unexpected exception in a test or the harness itself."},
    ]


def write_categories(results_dir: Path, rules: Sequence[Mapping[str, Any]] | None = None) -> Path:
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / "categories.json"
    path.write_text(json.dumps(list(rules if rules is not None else categories()), indent=1))
    return path
