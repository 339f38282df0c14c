"""Helpers of the ready-made suites; their fixtures (cluster, schema, experiment) come with the harness plugin.

Run them unchanged against any topology: `pytest tests/resiliency --topology FILE|lab`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reports.allure.steps import ExperimentLabels, apply_labels
from reports.tables import Table, to_html, to_markdown


def label(scenario: str, fault_kind: str, target: str) -> None:
    apply_labels(ExperimentLabels(scenario=scenario, fault_kind=fault_kind, target=target))


def keep_table(pytestconfig: pytest.Config, table: Table, name: str) -> None:
    """Write the scenario table to --tables-dir for the demo's summary and the change board."""
    directory = pytestconfig.getoption("--tables-dir")
    if not directory:
        return
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.md").write_text(to_markdown(table))
    (out / f"{name}.html").write_text(to_html(table))
    (out / f"{name}.json").write_text(json.dumps({"title": table.title, "rows": table.rows}, default=str, indent=1))
