"""S5-S7 tables from the published shapes: the computed columns, the verdicts, the notes a reader needs."""

from __future__ import annotations

from harness_suites.s5.table import MigrationStep, s5_migration_table
from harness_suites.s6.table import Interference, s6_interference_table
from harness_suites.s7.table import BackupUnderLoad, s7_backup_table
from reports.tables import CellVerdict, to_markdown


def test_s5_after_share_and_stun_are_judged_per_step() -> None:
    steps = [MigrationStep(4, 3000, 2400, 2950, 900, 63.0, 0.8), MigrationStep(1, 3000, 2800, 3000, 1500, 58.0, None),
             MigrationStep(2, 3000, 2600, 2300, 1100, 60.0, 6.5)]
    table = s5_migration_table(steps, min_tps_after_pct=80, max_stun_s=5, notes=("modelled: stun_s=1",))
    assert [r["rtt_ms"] for r in table.rows] == [1, 2, 4], "steps in RTT order"
    assert [round(float(r["after_pct"] or 0), 1) for r in table.rows] == [100.0, 76.7, 98.3]
    assert [table.row_verdict(r) for r in table.rows] == [CellVerdict.PASS, CellVerdict.FAIL, CellVerdict.PASS]
    assert table.failures() == ["2: TPS after: after % of before >= 80 (was 76.7)",
                                "2: tolerated stall: stun seen by clients (s) <= 5 (was 6.50)"]
    markdown = to_markdown(table)
    assert "none longer than 0.5 s" in markdown and "modelled: stun_s=1" in markdown


def test_s6_reproduces_the_published_interference_line() -> None:
    # published: TPS -3.81 %, mail IOPS -12 %
    table = s6_interference_table([Interference("all nodes", 4764, 4582.5, 33.1, 34.4, 5000, 4400, 2.0, 2.6)])
    row = table.rows[0]
    assert round(float(row["tps_change"] or 0), 2) == -3.81
    assert round(float(row["iops_change"] or 0), 2) == -12.0
    assert table.verdict is CellVerdict.PASS


def test_s6_fails_a_configuration_that_loses_more_tps_than_the_slo_allows() -> None:
    runs = [Interference("all nodes", 1000, 950, 8, 8.4, 400, 400, 0.1, 0.2),
            Interference("N-1: host-b down", 1500, 1100, 5, 7, 400, 390, 0.1, 0.3)]
    table = s6_interference_table(runs, min_tps_kept_pct=80, notes=("lab note",))
    assert [table.row_verdict(r) for r in table.rows] == [CellVerdict.PASS, CellVerdict.FAIL]
    assert "lab note" in to_markdown(table)


def test_s7_throughput_impact_and_an_incomplete_backup() -> None:
    table = s7_backup_table([BackupUnderLoad("full backup", 41.9, 10.3, 1175, 1078, 12.4, 13.9),
                             BackupUnderLoad("full backup at 4MB/s", 20.0, None, 1175, 1100, 12.0, 13.0,
                                             completed=False)])
    done, stopped = table.rows
    assert round(float(done["mb_s"] or 0), 2) == 4.07
    assert round(float(done["tps_change"] or 0), 2) == -8.26
    assert stopped["mb_s"] is None
    assert [table.row_verdict(r) for r in table.rows] == [CellVerdict.PASS, CellVerdict.FAIL]
