"""What one scenario test leaves for the summary page and the nightly trend: its table and its key figures.

Written next to the evidence as the `scenario record` attachment (JSON), so the summary is built
from the Allure results alone, and read back by `reports.summary_page`. A key figure is a cell of
a column marked with the direction that is better (`Column.better`): failover seconds lower,
throughput higher. Its key names the scenario, the row and the column, so the same figure is
found again the next night.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, cast

from harness_kernel.topology.targets import shown
from reports.tables import Better, Table, format_cell, to_html_fragment


@dataclass(frozen=True)
class Scenario:
    """A suite's scenario as the suite names it (its folder's `SCENARIO`): the code its tables, numbers and records
    key on, and its plain name. The Allure tree's top level shows both, the code first, so S1..S7 sort by name."""

    code: str
    name: str = ""

    @property
    def epic(self) -> str:
        return f"{self.code} {self.name}" if self.name else self.code

ATTACHMENT_NAME = "scenario record"
HALTED = "trials halted by a guard"  # the verdict a trial stopped early by a guard fails its scenario with
PLOT_NAME = "TPS timeline"  # the throughput plot each scenario attaches; the board's page prints it


@dataclass(frozen=True)
class Figure:
    key: str  # "S4 · unplanned: the active node's host fails · total (s)"
    scenario: str
    row: str
    column: str
    value: float
    better: Better
    shown: str  # as the table shows it
    points: bool = False  # a percentage: its changes are measured in points
    floor: float = 0.0  # a change smaller than this (the figure's unit) is never a regression
    provenance: str = "measured"  # or "modelled": the platform's model gave it; never judged across nights


@dataclass(frozen=True)
class Judged:
    """One SLO verdict as the run gave it: the figure, its interval when it is an estimate, the threshold, the
    outcome (PASS / FAIL / INCONCLUSIVE / NOT JUDGED) and, for an estimate, how its interval was made."""
    name: str
    value: float | None
    unit: str
    op: str
    threshold: float
    outcome: str
    low: float | None = None
    high: float | None = None
    level: float | None = None
    n: int | None = None  # samples behind the estimate
    method: str = ""  # "" for a value judged as it is (a count, one duration)
    provenance: str = "measured"  # or "modelled": the lab's model, not a measurement of a product
    note: str = ""  # why not judged; what would settle an INCONCLUSIVE
    trial_figure: bool = False  # varies from trial to trial (a duration): kept in the history even without interval
    interval_from_nights: bool = False  # one trial tonight: the interval is the last nights' spread, not tonight's
    basis: str = ""  # what the figure was read from (the cluster's states), quoted beside it


@dataclass(frozen=True)
class ScenarioRecord:
    scenario: str
    title: str
    fault_kind: str
    target: str
    mechanism: str  # how the fault was made, e.g. "latency via lab (Toxiproxy)"
    verdict: str  # the table's: pass / fail / not judged ("" without a table)
    table_html: str  # the table as the summary page shows it
    numbers: Mapping[str, str] = field(default_factory=dict)
    figures: Sequence[Figure] = ()
    verdicts: Sequence[Judged] = ()
    findings: Sequence[str] = ()  # what no threshold judges: an outage inside a window meant to be steady
    # the commit ledger's books (acknowledged, present after the run, lost and their first ids, failed or in
    # flight and those committed anyway), so that anyone can re-count the lost-commit verdict
    ledger: Mapping[str, Any] | None = None
    # the replication mode the cluster said it ran with, before, during and after each fault (quoted)
    replication: Sequence[str] = ()
    weaker_replication: str = ""  # why the run met a replication weaker than the topology's policy ("": it did not)

    @property
    def case(self) -> str:
        """The title without its target ("S4 · unplanned: ... on host-b" -> "S4 · unplanned: ..."): the same case
        every night, whichever node the fault found there (a verdict's key in the nightly history)."""
        return self.title.removesuffix(f" on {shown(self.target)}")

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> ScenarioRecord:
        data = cast(dict[str, Any], json.loads(text))
        figures = [Figure(**f) for f in data.pop("figures", [])]
        verdicts = [Judged(**v) for v in data.pop("verdicts", [])]
        return cls(**data, figures=figures, verdicts=verdicts)


def row_label(table: Table, row: Mapping[str, Any]) -> str:
    """A row's name: its first cell, read with the column's title when that cell is a number
    ("added RTT (ms)" and 4 -> "added RTT 4 ms")."""
    first = table.columns[0]
    shown = format_cell(first, row.get(first.key))
    if first.text:
        return shown
    name, _, unit = first.title.partition(" (")
    return f"{name} {shown} {unit.rstrip(')')}".rstrip()


def figures_of(scenario: str, table: Table, modelled: Collection[str] = ()) -> list[Figure]:
    """Every numeric cell of the table's key-figure columns; those of the `modelled` columns (keys) marked so."""
    found = []
    for row in table.rows:
        label = row_label(table, row)
        for column in table.columns:
            value = row.get(column.key)
            if column.better is None or not isinstance(value, int | float):
                continue
            found.append(Figure(key=f"{scenario} · {label} · {column.title}", scenario=scenario, row=label,
                                column=column.title, value=float(value), better=column.better,
                                shown=format_cell(column, value), points=column.points, floor=column.floor,
                                provenance="modelled" if column.key in modelled else "measured"))
    return found


def scenario_record(scenario: str, title: str, *, fault_kind: str, target: str, mechanism: str, table: Table | None,
                    numbers: Mapping[str, str], modelled: Collection[str] = (),
                    findings: Sequence[str] = (), ledger: Mapping[str, Any] | None = None,
                    replication: Sequence[str] = (), weaker_replication: str = "") -> ScenarioRecord:
    return ScenarioRecord(scenario=scenario, title=title, fault_kind=fault_kind, target=target, mechanism=mechanism,
                          verdict=table.verdict.value if table is not None else "",
                          # the section's heading gives the test's verdict: the table's own would be a second one
                          table_html=to_html_fragment(dataclasses.replace(table, overall_verdict=False), modelled)
                          if table is not None else "",
                          numbers=dict(numbers),
                          figures=figures_of(scenario, table, modelled) if table is not None else [],
                          findings=list(findings), ledger=dict(ledger) if ledger is not None else None,
                          replication=list(replication), weaker_replication=weaker_replication)
