"""A suite is a slice: its folder holds its name, its table and its options; the report knows no suite by name."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from reports.allure.steps import ExperimentLabels
from reports.scenario_record import Scenario

ROOT = Path(__file__).resolve().parents[3]
SUITES = sorted(p.name for p in (ROOT / "harness_suites").glob("s[0-9]") if p.is_dir())


@pytest.mark.parametrize("suite", SUITES)
def test_a_suite_folder_names_its_scenario_and_builds_its_own_table(suite: str) -> None:
    scenario = importlib.import_module(f"harness_suites.{suite}").SCENARIO
    assert isinstance(scenario, Scenario) and scenario.code == suite.upper() and scenario.name
    assert (ROOT / "harness_suites" / suite / "table.py").is_file()
    assert any(name.endswith("_table") for name in vars(importlib.import_module(f"harness_suites.{suite}.table")))


def test_the_allure_tree_shows_the_code_then_the_name_the_suite_gives() -> None:
    labels = ExperimentLabels(scenario=Scenario("S4", "application failover"), fault_kind="role-move", target="x")
    assert labels.scenario.epic == "S4 application failover"
    assert Scenario("S9").epic == "S9", "a scenario without a name is shown by its code"


def test_the_report_holds_no_suites_names_or_tables() -> None:
    text = "\n".join(p.read_text() for p in (ROOT / "reports").rglob("*.py"))
    assert "inter-site latency sweep" not in text and "def s1_latency_table" not in text
    assert not (ROOT / "reports" / "published_tables.py").exists()
