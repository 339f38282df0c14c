"""Allure calls made inside a test: labels, parameters, steps, evidence (plots, tables, metrics).

They go through `allure.dynamic` / `allure.attach` (no-ops when pytest runs without
`--alluredir`). The results-directory files written once per session are in `results_dir`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import allure

from harness_kernel.history.series import MetricSeries, TransactionSeries
from harness_kernel.history.timeline import Timeline
from reports.allure.results_dir import SECRET_KEY
from reports.fault_record import fault_record_html, fault_record_json
from reports.metrics_export import metric_series_csv, metrics_json, transactions_csv
from reports.plots import Threshold, latency_timeline_png, tps_timeline_png
from reports.scenario_record import PLOT_NAME, Scenario
from reports.tables import Table, to_html, to_markdown


class Phase(StrEnum):
    """The experiment's phases, in order: each becomes one Allure step."""

    BASELINE = "baseline"
    INJECT = "inject"
    OBSERVE = "observe"
    REVERT = "revert"
    RECOVER = "recover"


@dataclass(frozen=True)
class ExperimentLabels:
    """epic = scenario (its code and name), feature = fault kind, story = target."""

    scenario: Scenario
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
    dynamic.epic(labels.scenario.epic)
    dynamic.feature(labels.fault_kind)
    dynamic.story(labels.target)
    dynamic.severity(labels.severity)
    for tag in labels.tags:
        dynamic.tag(tag)


def add_parameters(parameters: Mapping[str, object]) -> None:
    """Show the experiment's knobs (fault, target, latency...); values that look secret are masked."""
    for name, value in parameters.items():
        _dynamic().parameter(name, "***" if SECRET_KEY.search(name) else str(value))


class _Shown:
    """A value Allure shows as it is: allure-commons quotes strings and shows other objects by their repr."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def title_and_parameters(title: str, parameters: Mapping[str, str]) -> None:
    """The test's title as the published tables name it, and its parameters as plain values (replacing
    pytest's own representation of a parameter of the same name)."""
    _dynamic().title(title)
    for name, value in parameters.items():
        _dynamic().parameter(name, _Shown("***" if SECRET_KEY.search(name) else value))


def attach_json(text: str, name: str) -> None:
    allure.attach(text, name=name, attachment_type=allure.attachment_type.JSON)


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


def attach_metrics(series: TransactionSeries, metrics: Sequence[MetricSeries] = (),
                   commit_gaps: Sequence[tuple[float, float]] = (), ledger: Mapping[str, Any] | None = None) -> None:
    allure.attach(metrics_json(series, metrics, commit_gaps, ledger), name="metrics (json)",
                  attachment_type=allure.attachment_type.JSON)
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
    tps_floor: Threshold | None = None  # the TPS the scenario must keep, drawn as a line on the throughput plot
    ledger: Mapping[str, Any] | None = None  # the commit ledger's books, exported with the metrics


def attach_evidence(evidence: Evidence) -> None:
    """Plots, table, metrics and fault record, in the order a reviewer reads them."""
    prefix = f"{evidence.title}: " if evidence.title else ""
    attach_png(tps_timeline_png(evidence.timeline, evidence.series, evidence.metrics, title=f"{prefix}throughput",
                                floor=evidence.tps_floor),
               PLOT_NAME)
    attach_png(latency_timeline_png(evidence.timeline, evidence.series, title=f"{prefix}commit latency"),
               "latency timeline")
    if evidence.table is not None:
        attach_table(evidence.table)
    attach_metrics(evidence.series, evidence.metrics, evidence.timeline.commit_gaps(), evidence.ledger)
    attach_fault_record(evidence.timeline)
    for name, text in evidence.extra.items():
        allure.attach(text, name=name, attachment_type=allure.attachment_type.TEXT)
