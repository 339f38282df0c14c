"""Scenario tables: derived columns, verdicts against thresholds, and both renderings agreeing."""

from __future__ import annotations

from harness_suites.s1.table import LatencyStep, s1_latency_table
from harness_suites.s2.table import ComponentFailure, s2_failure_table
from harness_suites.s3.table import S3Row, s3_site_table
from harness_suites.s4.table import S4Row, s4_failover_table
from reports.tables import CellVerdict, to_html, to_markdown

# The published figures of scenarios.md, used as recorded rows.
S1_STEPS = [LatencyStep(0, 4764, 33.1), LatencyStep(2, 4413, 35.7), LatencyStep(4, 4278, 36.8), LatencyStep(8, 3196, 49.7)]
S2_FAILURES = [ComponentFailure("disk", 1813, 1643, 160), ComponentFailure("disk group", 1853, 1659, 430),
               ComponentFailure("host", 1568, 1312, 715, resync_gb=5300, resync_gb_per_min=12.0, resync_eta_s=6420)]


def test_s1_percent_of_baseline_and_recommended_rtt() -> None:
    table = s1_latency_table(S1_STEPS, min_tps_pct=85)
    assert [round(float(r["tps_pct"] or 0), 1) for r in table.rows] == [100.0, 92.6, 89.8, 67.1]
    assert table.extra_lines == ("Recommended max RTT: 4 ms",)
    assert table.verdict is CellVerdict.FAIL
    assert table.failures() == ["8: throughput kept: TPS % of baseline >= 85 (was 67.1)"]


def test_a_sweep_reads_as_its_recommendation_not_as_an_overall_fail() -> None:
    table = s1_latency_table(S1_STEPS, min_tps_pct=85)
    markdown, html = to_markdown(table), to_html(table)
    assert "Verdict:" not in markdown and "Verdict:" not in html
    assert "**Recommended max RTT: 4 ms**" in markdown
    assert markdown.count("| PASS |") == 3 and markdown.count("| FAIL |") == 1, "each step keeps its own verdict"


def test_s2_drop_and_recovery_thresholds() -> None:
    table = s2_failure_table(S2_FAILURES, min_tps_after_pct=85, max_recover_s=600)
    verdicts = [table.row_verdict(r) for r in table.rows]
    assert verdicts == [CellVerdict.PASS, CellVerdict.PASS, CellVerdict.FAIL]  # host: 16.3 % drop and 715 s
    assert round(float(table.rows[2]["drop_pct"] or 0), 1) == 16.3


def test_html_is_self_contained_and_coloured() -> None:
    html = to_html(s2_failure_table(S2_FAILURES, max_recover_s=600))
    assert "<script" not in html and "http" not in html
    assert "class=scenario-table" in html
    assert "td class='fail'>715</td>" in html.replace('"', "'")
    assert "Thresholds: TPS after: drop % &lt;= 20; recovery: time to recover (s) &lt;= 600" in html


def test_markdown_matches_verdicts() -> None:
    md = to_markdown(s4_failover_table([S4Row("planned", 1.0, 0.5, 0.3, 1.8, 2.1, 0),
                                        S4Row("unplanned", 4.0, 15.0, 30.0, 54.0, 55.0, 0)]))
    lines = [line for line in md.splitlines() if line.startswith("| ")]
    assert lines[1].endswith("| PASS |") and lines[2].endswith("| FAIL |")
    assert "**Verdict: FAIL**" in md


def test_missing_measurement_is_not_judged() -> None:
    table = s3_site_table([S3Row("site-a", 7743, None, 20.0, None, None)])
    assert table.verdict is CellVerdict.NOT_JUDGED
    assert "—" in to_markdown(table)


def test_note_column_carries_lab_analog() -> None:
    note = "one lab analog serves disk and disk group"
    table = s2_failure_table([ComponentFailure("disk / disk group", 1760, 1510, 540, note=note)])
    assert note in to_html(table) and note in to_markdown(table)


def test_the_largest_kept_rtt_stops_at_the_first_step_that_loses_throughput_even_if_a_later_one_recovers() -> None:
    from harness_suites.s1.table import largest_kept_rtt

    steps = [LatencyStep(0, 1000, 8.0), LatencyStep(2, 900, 8.9), LatencyStep(4, 700, 11.4), LatencyStep(8, 850, 9.4)]
    assert largest_kept_rtt(s1_latency_table(steps, min_tps_pct=80.0)) == 2.0
    assert largest_kept_rtt(s1_latency_table([LatencyStep(0, 0, float("nan"))])) is None, "no throughput: nothing kept"
