"""What a suite test says about its run, in one call: labels, evidence, the kept table, key numbers.

Every scenario test ends the same way: Allure labels (epic = scenario, feature = fault
kind, story = target), the plots / metrics / fault record / table attached, the table
written to `--tables-dir` for the demo's summary, and its figures in the closing summary.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.experiment import Experiment
from harness.history.series import MetricSeries
from reports.allure.steps import Evidence, ExperimentLabels, apply_labels, attach_evidence
from reports.tables import Table, to_html, to_markdown


@dataclass
class ScenarioReport:
    tables_dir: Path | None
    numbers: MutableMapping[str, str]

    def record(self, scenario: str, experiment: Experiment, *, fault_kind: str, target: str, title: str,
               table: Table | None, table_name: str | None = None, numbers: Mapping[str, str] | None = None,
               metrics: Sequence[MetricSeries] = ()) -> None:
        """`metrics`: more series to plot beside the workload's (an I/O workload's IOPS)."""
        apply_labels(ExperimentLabels(scenario=scenario, fault_kind=fault_kind, target=target))
        resync = [experiment.resync_bytes] if any(p.value > 0 for p in experiment.resync_bytes.points()) else []
        attach_evidence(Evidence(timeline=experiment.timeline, series=experiment.series, metrics=[*resync, *metrics],
                                 table=table, title=title))
        if table is not None and table_name is not None:
            self.keep_table(table, table_name)
        self.numbers.update(numbers or {})

    def keep_table(self, table: Table, name: str) -> None:
        """The scenario table as Markdown, HTML and JSON, for the demo's summary and the change board."""
        if self.tables_dir is None:
            return
        self.tables_dir.mkdir(parents=True, exist_ok=True)
        (self.tables_dir / f"{name}.md").write_text(to_markdown(table))
        (self.tables_dir / f"{name}.html").write_text(to_html(table))
        (self.tables_dir / f"{name}.json").write_text(
            json.dumps({"title": table.title, "rows": table.rows}, default=str, indent=1))
