"""A scenario's verdicts go into its record before they are judged: a failing test still leaves them."""

from __future__ import annotations

import json

import pytest

from harness import scenario_report as module
from harness.analysis.intervals import Interval
from harness.analysis.slo import InconclusiveVerdict, SloCheck
from harness.scenario_report import ScenarioReport
from reports.scenario_record import ScenarioRecord, scenario_record

UNSURE = SloCheck("TPS after / before", 0.82, ">=", 0.8, interval=Interval(0.82, 0.77, 0.87, 0.95, 60, 4, 14.0))


def report(monkeypatch: pytest.MonkeyPatch) -> tuple[ScenarioReport, list[ScenarioRecord]]:
    attached: list[ScenarioRecord] = []
    monkeypatch.setattr(module, "attach_json", lambda text, name: attached.append(ScenarioRecord.from_json(text)))
    kept = ScenarioReport(None, {})
    kept.pending.append(scenario_record("S2", "S2 · host on esx-a1", fault_kind="host-crash", target="host:esx-a1",
                                       mechanism="host-crash via lab", table=None, numbers={}))
    return kept, attached


def test_an_inconclusive_verdict_is_recorded_with_its_interval_and_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    kept, attached = report(monkeypatch)
    with pytest.warns(InconclusiveVerdict):
        kept.judge([UNSURE, SloCheck.lost_commits(0, 0)])
    verdict, lost = attached[0].verdicts
    assert (verdict.outcome, verdict.low, verdict.high, verdict.n) == ("INCONCLUSIVE", 0.77, 0.87, 60)
    assert "would settle it" in verdict.note and lost.outcome == "PASS" and lost.method == ""
    assert json.loads(attached[0].to_json())["verdicts"][0]["name"] == "TPS after / before"


def test_a_failing_verdict_is_recorded_before_the_test_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    kept, attached = report(monkeypatch)
    with pytest.raises(AssertionError, match="SLO violated: acknowledged commits lost"):
        kept.judge([SloCheck.lost_commits(1, 0)])
    assert [v.outcome for v in attached[0].verdicts] == ["FAIL"] and kept.pending == []


def test_a_trial_a_guard_halted_fails_the_scenario_with_its_record_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    kept, attached = report(monkeypatch)
    kept.halted = ["host-power-loss on host:host-a: throughput-floor: TPS stayed below 161 for 35 s"]
    with pytest.raises(AssertionError, match="trials halted by a guard"):
        kept.judge([SloCheck.lost_commits(0, 0)])
    assert [v.outcome for v in attached[0].verdicts] == ["PASS", "FAIL"]
