"""A scenario's verdicts go into its record before they are judged: a failing test still leaves them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import scenario_report as module
from harness.analysis.intervals import Interval
from harness.analysis.slo import InconclusiveVerdict, SloCheck
from harness.scenario_report import ScenarioReport
from harness_suites.s4.table import S4Row, s4_failover_table
from reports.scenario_record import ScenarioRecord, scenario_record
from reports.tables import CellVerdict

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


def test_a_duration_measured_once_takes_its_interval_from_the_last_nights(monkeypatch: pytest.MonkeyPatch) -> None:
    kept, attached = report(monkeypatch)
    kept.nights = {"S2 · host · time to recover to a steady state": [20.0, 34.0, 22.0, 31.0],
                   "S2 · host · acknowledged commits lost": [0.0, 0.0, 0.0, 0.0]}
    with pytest.warns(InconclusiveVerdict, match="last 4 nights"):
        kept.judge([SloCheck("time to recover to a steady state", 28.0, "<=", 30.0, " s", trial_figure=True),
                    SloCheck.lost_commits(0, 0)])
    recover, lost = attached[0].verdicts
    assert recover.outcome == "INCONCLUSIVE" and recover.interval_from_nights and recover.n == 4
    assert recover.low is not None and recover.high is not None and recover.low < 28.0 < 30.0 < recover.high
    assert lost.low is None and not lost.interval_from_nights


def test_a_figure_with_an_interval_of_its_own_keeps_it_whatever_the_nights(monkeypatch: pytest.MonkeyPatch) -> None:
    kept, attached = report(monkeypatch)
    kept.nights = {"S2 · host · TPS after / before": [0.5, 0.9, 0.95]}
    own = SloCheck("TPS after / before", 0.9, ">=", 0.8, interval=Interval(0.9, 0.86, 0.94, 0.95, 60, 4, 14.0),
                   trial_figure=True)
    kept.judge([own, SloCheck("time to recover to a steady state", 12.0, "<=", 30.0, " s", trial_figure=True)])
    ratio, recover = attached[0].verdicts
    assert (ratio.low, ratio.high, ratio.interval_from_nights) == (0.86, 0.94, False)
    assert recover.low is None and recover.outcome == "PASS"  # no nights of its own yet: judged as measured


@pytest.mark.reproducer("AF-3")
def test_a_failed_tests_table_says_fail_above_cells_that_each_held(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    kept, _ = report(monkeypatch)
    kept.tables_dir = tmp_path
    table = s4_failover_table([S4Row("unplanned", 1.5, 4.2, None, None, None, lost_commits=0)],
                              max_total_s=35, max_lost_commits=0)
    kept.keep_until_judged(table, "s4-host-power-loss")
    assert "Verdict" not in (tmp_path / "s4-host-power-loss.md").read_text(), "no verdict before the test gives one"
    with pytest.raises(AssertionError, match=r"failover duration .* not measured"):
        kept.judge([SloCheck("failover duration (in effect to first commit)", None, "<=", 35, " s"),
                    SloCheck.lost_commits(0, 0)])
    markdown, html = (tmp_path / "s4-host-power-loss.md").read_text(), (tmp_path / "s4-host-power-loss.html").read_text()
    assert "**Verdict: FAIL**" in markdown and "PASS" not in markdown, markdown
    assert "verdict-fail'>FAIL<" in html and "PASS" not in html


def test_a_threshold_whose_value_was_not_measured_is_not_judged_never_passed() -> None:
    table = s4_failover_table([S4Row("unplanned", 1.5, 4.2, None, None, None, lost_commits=0)],
                              max_total_s=35, max_lost_commits=0)
    assert table.row_verdict(table.rows[0]) is CellVerdict.NOT_JUDGED
    assert table.verdict is CellVerdict.NOT_JUDGED and table.verdict_line == "NOT JUDGED"
    measured = s4_failover_table([S4Row("unplanned", 1.5, 4.2, 0.4, 6.1, 5.0, lost_commits=0)],
                                 max_total_s=35, max_lost_commits=0)
    assert measured.verdict is CellVerdict.PASS


def test_a_passing_tests_table_says_pass(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    kept, _ = report(monkeypatch)
    kept.tables_dir = tmp_path
    kept.keep_until_judged(s4_failover_table([S4Row("unplanned", 1.5, 4.2, 0.4, 6.1, 5.0, lost_commits=0)],
                                             max_total_s=35, max_lost_commits=0), "s4")
    kept.judge([SloCheck("failover duration (in effect to first commit)", 6.1, "<=", 35, " s"),
                SloCheck.lost_commits(0, 0)])
    assert "**Verdict: PASS**" in (tmp_path / "s4.md").read_text()
