"""The summary page: verdict first, every scenario with its table, figures and trend, nothing fetched from anywhere."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
import re
from pathlib import Path

from harness_suites.s4.table import S4Row, s4_failover_table
from reports.allure.results_read import RecordedTest
from reports.allure.staging import stage
from reports.regression import RegressionRule, judge, night_of
from reports.scenario_record import Judged, ScenarioRecord, scenario_record
from reports.summary_page import SummaryInput, render, sparkline


def s4_run(uuid: str, total_s: float, status: str = "passed") -> RecordedTest:
    table = s4_failover_table([S4Row("unplanned", 1.6, 3.3, 0.9, total_s, total_s, 0)], max_total_s=35)
    record = scenario_record("S4", "S4 · unplanned on host-a", fault_kind="host-crash", target="host:host-a",
                             mechanism="host-crash via lab", table=table, numbers={"failover": f"{total_s} s"})
    return RecordedTest(uuid=uuid, title=record.title, full_name="harness_suites.test_s4#t", status=status, start=1000,
                   labels={"epic": "S4"}, message="", record=record)


def page(total_s: float, earlier: list[float], allure_html: str | None = "<html>allure</html>") -> str:
    test = s4_run("u1", total_s)
    assert test.record is not None
    history = [night_of([dataclasses.replace(f, value=v) for f in test.record.figures], run=str(i))
               for i, v in enumerate(earlier)]
    tonight = night_of(test.record.figures, run="tonight")
    return render(SummaryInput(name="Nightly", generated_at="2026-11-24 02:00 UTC", tests=[test],
                               environment={"topology": "prod-stretched-01", "product.modelled": "stun_s=1"},
                               judgements=judge(tonight.figures, tonight.better, history), history=history,
                               rule=RegressionRule(), report_ids={"u1": "abc123"}, allure_html=allure_html))


def test_the_first_screen_says_the_verdict_and_every_scenario_with_its_figures() -> None:
    html = page(5.7, [])
    head = html[:html.index("<section")]
    assert "PASS: within every threshold" in head
    assert "S4 · unplanned on host-a" in head and "failover 5.7 s" in head
    assert "openAllure('abc123'); return false" in head, "each test links into the Allure report"
    assert "<table class=scenario-table>" in html and "host-crash via lab" in html
    assert "Modelled rather than done on this platform: stun_s=1" in html


def test_a_regressed_figure_is_flagged_in_the_banner_and_its_trend() -> None:
    html = page(9.5, [6.5, 6.8, 7.0, 6.9, 6.6])
    banner = html[:html.index("<h2>Scenarios")]
    assert "2 figure(s) got worse than their recent nights" in banner
    assert "PASS with findings" in banner and "1 tests: 1 PASS with findings<" in banner, "its test says so too"
    row = banner[banner.index("<tbody>", banner.index("<table class=regressions>")) + 7:].split("</tr>")[0]
    assert row == ("<tr><td class=text>S4 · unplanned · total (s)</td><td>9.5</td><td>6.8 (5)</td><td>8.16</td>"
                   "<td>+2.7 (+40 %)</td><td class=text>median rule</td>"), row
    assert "<span class=regressed>regressed</span>" in html and "<svg class=spark" in html
    calm = page(6.9, [6.5, 6.8, 7.0, 6.9, 6.6])
    assert "No figure got worse" in calm and "regressed</span>" not in calm


def test_the_allure_report_travels_inside_and_nothing_is_fetched() -> None:
    html = page(5.7, [])
    packed = re.search(r"<script type='application/gzip;base64' id='allure-report'>([^<]+)</script>", html)
    assert packed is not None and gzip.decompress(base64.b64decode(packed.group(1))) == b"<html>allure</html>"
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html), "no external resource"
    assert "Open the full Allure report" not in page(5.7, [], allure_html=None)


def test_a_sparkline_ends_with_tonight_in_the_verdicts_colour() -> None:
    assert sparkline([1.0], regressed=False) == ""
    assert "#8a1414" in sparkline([5.0, 6.0, 9.0], regressed=True)
    assert "#13582a" in sparkline([5.0, 6.0, 5.5], regressed=False)


def test_staging_drops_fixture_noise_and_keeps_what_did_something(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "a-result.json").write_text("{}")
    fixtures = [{"name": "pytestconfig", "status": "passed"}, {"name": "cluster", "status": "broken"},
                {"name": "experiment", "status": "passed", "steps": [{"name": "baseline"}]}]
    (results / "c-container.json").write_text(json.dumps({"uuid": "c", "befores": fixtures, "afters": fixtures[:1]}))
    staged = stage(results, tmp_path / "staged")
    container = json.loads((staged / "c-container.json").read_text())
    assert [f["name"] for f in container["befores"]] == ["cluster", "experiment"] and container["afters"] == []
    assert (staged / "a-result.json").read_text() == "{}" and not (staged / "a-result.json").is_symlink()
    assert len(json.loads((results / "c-container.json").read_text())["befores"]) == 3, "the run's results untouched"


def test_a_figure_is_named_by_scenario_row_and_column_and_a_numeric_row_reads_with_its_unit() -> None:
    from harness_suites.s5.table import MigrationStep, s5_migration_table
    from reports.scenario_record import figures_of

    table = s5_migration_table([MigrationStep(4, 3000, 2400, 2950, 900, 63.0, 0.8)])
    keys = [f.key for f in figures_of("S5", table)]
    assert keys == ["S5 · added RTT 4 ms · min TPS (per s)", "S5 · added RTT 4 ms · migration (s)",
                    "S5 · added RTT 4 ms · stun seen by clients (s)"]


def test_a_scenarios_verdicts_show_each_figure_with_its_interval_threshold_and_outcome() -> None:
    test = s4_run("u1", 5.7)
    assert test.record is not None
    verdicts = [Judged("TPS after / before", 0.82, "", ">=", 0.8, "INCONCLUSIVE", 0.77, 0.87, 0.95, 60,
                       "moving-block bootstrap", note="longer windows or repeated trials would settle it"),
                Judged("acknowledged commits lost", 0, "", "<=", 0, "PASS")]
    record = ScenarioRecord.from_json(dataclasses.replace(test.record, verdicts=verdicts).to_json())
    assert record.verdicts == verdicts  # kept in the scenario record attachment, read back whole
    html = render(SummaryInput(name="Nightly", generated_at="2026-11-24 02:00 UTC",
                               tests=[dataclasses.replace(test, record=record)], environment={}, judgements=[],
                               history=[], rule=RegressionRule(), report_ids={}, allure_html=None))
    assert ("<tr><td class=text>TPS after / before</td><td>0.82 [0.77, 0.87]</td><td>&gt;= 0.8</td>"
            "<td class=text>INCONCLUSIVE</td><td class='text how'>longer windows or repeated trials would settle it</td>"
            "</tr>") in html
    assert "<td class=text>acknowledged commits lost</td><td>0.00</td><td>&lt;= 0</td><td class=text>PASS</td>" in html


def test_a_run_with_an_inconclusive_verdict_says_so_on_the_first_screen_not_plain_pass() -> None:
    test = s4_run("u1", 5.7)
    assert test.record is not None
    unsure = Judged("TPS after / before", 0.87, "", ">=", 0.8, "INCONCLUSIVE", 0.65, 1.09, 0.95, 8,
                    "moving-block bootstrap")
    test = dataclasses.replace(test, record=dataclasses.replace(test.record, verdicts=[unsure]))
    html = render(SummaryInput(name="Nightly", generated_at="2026-11-24 02:00 UTC", tests=[test], environment={},
                               judgements=[], history=[], rule=RegressionRule(), report_ids={}, allure_html=None))
    head = html[:html.index("<section")]
    assert "INCONCLUSIVE: no threshold missed, but not every one shown to hold" in head
    assert "within every threshold" not in head and "1 tests: 1 INCONCLUSIVE" in head
    assert "S4 · unplanned on host-a: TPS after / before 0.87 [0.65, 1.09] &gt;= 0.8" in head
    assert "<span class='verdict-amber'>INCONCLUSIVE</span></h2>" in html


def test_a_scenarios_findings_and_its_modelled_figures_are_said_as_such() -> None:
    from harness_suites.s2.table import ComponentFailure, s2_failure_table

    table = s2_failure_table([ComponentFailure("disk", 1000.0, 950.0, 12.0, 0.5, 1.0, 30.0)])
    record = scenario_record("S2", "S2 · disk on esx-b1", fault_kind="disk-failure", target="disk:esx-b1/0",
                             mechanism="disk-failure via vsan", table=table, numbers={},
                             modelled=("resync_gb", "resync_rate", "resync_eta_s"),
                             findings=["before: 2 s without any commit"])
    test = RecordedTest(uuid="u2", title=record.title, full_name="harness_suites.test_s2#t", status="passed",
                        start=1000, labels={"epic": "S2"}, message="", record=ScenarioRecord.from_json(record.to_json()))
    tonight = night_of(test.record.figures if test.record else [], run="tonight")
    html = render(SummaryInput(name="Nightly", generated_at="2026-11-27 02:00 UTC", tests=[test], environment={},
                               judgements=judge(tonight.figures, tonight.better, [], scales=tonight.scales),
                               history=[], rule=RegressionRule(), report_ids={}, allure_html=None))
    section = html[html.index("<section"):]
    assert "<h3>Findings</h3>" in section and "before: 2 s without any commit" in section
    marked = re.findall(r"<td class='modelled'>([^<]*)</td>", section)
    assert len(marked) == 3 and all(cell.endswith(" ◆") for cell in marked), marked
    assert "never judged across nights: disk · resync ETA (s) ◆" \
        in section, "the first night lists the modelled figures that are never judged"


def s1_characterised() -> RecordedTest:
    """A passing S1 whose 4 ms row misses the throughput target: no required RTT set, so the sweep characterises."""
    from harness_suites.s1.table import LatencyStep, s1_latency_table

    table = s1_latency_table([LatencyStep(0, 1400.0, 5.7, 11.0), LatencyStep(4, 735.0, 10.9, 20.0)], min_tps_pct=80)
    record = scenario_record("S1", "S1 · latency sweep on site-a~site-b", fault_kind="latency", target="link:x",
                             mechanism="latency via lab", table=table, numbers={"4 ms": "735 TPS"},
                             findings=["at 4 ms added RTT, TPS is 52.5 % of the baseline's (target 80 %)"])
    return RecordedTest(uuid="s1", title=record.title, full_name="harness_suites.test_s1#t", status="passed",
                        start=900, labels={"epic": "S1"}, message="", record=record)


def test_a_passing_sweep_with_a_step_below_target_reads_pass_with_findings_everywhere_it_is_shown() -> None:
    tests = [s1_characterised(), s4_run("u1", 5.7)]
    html = render(SummaryInput(name="Nightly", generated_at="2026-11-24 02:00 UTC", tests=tests, environment={},
                               judgements=[], history=[], rule=RegressionRule(), report_ids={}, allure_html=None))
    head = html[:html.index("<section")]
    assert "within every threshold" not in html
    assert "PASS with findings: every judged threshold held; read the findings" in head
    assert "2 tests: 1 PASS with findings, 1 PASS" in head
    assert "Findings: S1 · latency sweep on site-a~site-b: at 4 ms added RTT, TPS is 52.5 %" in head
    assert "<td class='text status-amber'>PASS with findings</td>" in head  # the scenario list
    assert "<span class='verdict-amber'>PASS with findings</span></h2>" in html  # the heading
    assert "<span class='verdict-pass'>PASS</span></h2>" in html  # S4, a plain pass


def test_a_teardown_stage_that_never_ran_is_not_shown_as_unknown(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    afters = [{"name": "scenario_report::1", "status": "passed", "start": 1, "stop": 2},
              {"name": "scenario_report::<lambda>", "start": 2},  # pytest's own finalizer (allure-python#918)
              {"name": "cluster::teardown", "status": "broken", "start": 2, "stop": 3}]
    (results / "c-container.json").write_text(json.dumps({"uuid": "c", "befores": [], "afters": afters}))
    container = json.loads((stage(results, tmp_path / "staged") / "c-container.json").read_text())
    assert [f["name"] for f in container["afters"]] == ["cluster::teardown"]



def test_each_scenario_prints_its_throughput_plot_inline() -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
    test = dataclasses.replace(s4_run("u1", 5.7), plot=png)
    html = render(SummaryInput(name="Nightly", generated_at="2026-11-27 02:00 UTC", tests=[test], environment={},
                               judgements=[], history=[], rule=RegressionRule(), report_ids={}, allure_html=None))
    section = html[html.index("<section"):]
    assert f"<img class=plot src='data:image/png;base64,{base64.b64encode(png).decode()}'" in section
    assert "alt='S4 · unplanned on host-a: throughput timeline'" in section


def test_a_scenario_a_guard_halted_says_so_in_its_row_and_heading() -> None:
    test = s4_run("u1", 40.0, status="failed")
    assert test.record is not None
    halted = Judged("trials halted by a guard (host-crash on host:host-a: no commit for 35 s)", 1.0, "", "<=", 0.0,
                    "FAIL")
    test = dataclasses.replace(test, record=dataclasses.replace(test.record, verdicts=[halted]))
    html = render(SummaryInput(name="Nightly", generated_at="2026-11-27 02:00 UTC", tests=[test], environment={},
                               judgements=[], history=[], rule=RegressionRule(), report_ids={}, allure_html=None))
    assert "<td class='text status-fail'>FAIL (halted by a guard)</td>" in html
    assert "<span class='verdict-fail'>FAIL (halted by a guard)</span></h2>" in html


def test_the_ledgers_books_stand_under_the_lost_commit_verdict_so_anyone_can_recount_it() -> None:
    test = s4_run("u1", 5.7)
    assert test.record is not None
    books = {"acknowledged": 5400, "acknowledged_present": 5398, "lost_count": 2, "failed": 4,
             "failed_present_count": 1, "lost": [811, 812], "failed_present": [900], "short_ranges": [[3, 400, 811, 2]]}
    record = ScenarioRecord.from_json(dataclasses.replace(test.record, ledger=books).to_json())
    assert record.ledger == books, "kept in the scenario record attachment, read back whole"
    html = render(SummaryInput(name="Nightly", generated_at="2026-11-27 02:00 UTC",
                               tests=[dataclasses.replace(test, record=record)], environment={}, judgements=[],
                               history=[], rule=RegressionRule(), report_ids={}, allure_html=None))
    assert ("Commit ledger: 5,400 acknowledged, 5,398 of them present after the run, 2 lost (first ids: 811, 812); "
            "missing from client 3 commits 400 to 811 (2 missing); "
            "4 failed or in flight at the fault (outcome unknown to the client), 1 of them committed anyway "
            "(not counted as lost).") in html


def test_a_run_weaker_than_the_replication_policy_says_so_on_the_first_screen_and_under_its_scenario() -> None:
    test = s4_run("u1", 5.7)
    assert test.record is not None
    weaker = ("replication weaker than the policy: the cluster ran asynchronous before the fault (read from node-a: "
              "synchronous_standby_names ''), the topology expects synchronous")
    readings = ["before the fault (+15.2 s): asynchronous, read from node-a: synchronous_standby_names ''",
                "after recovery (+80.1 s): synchronous, read from node-b: synchronous_standby_names 'ANY 1 (...)'"]
    record = ScenarioRecord.from_json(dataclasses.replace(test.record, replication=readings,
                                                          weaker_replication=weaker).to_json())
    html = render(SummaryInput(name="Nightly", generated_at="2026-11-27 02:00 UTC",
                               tests=[dataclasses.replace(test, record=record)], environment={}, judgements=[],
                               history=[], rule=RegressionRule(), report_ids={}, allure_html=None))
    banner = html[:html.index("<section class=scenario>")]
    assert "PASS with findings" in banner, "a pass against a weaker mode is not a plain PASS"
    assert "Replication weaker than the policy" in banner and "ran asynchronous before the fault" in banner
    section = html[html.index("<section class=scenario>"):]
    assert all(r.replace("'", "&#x27;") in section for r in readings), "each reading quoted under its scenario"
