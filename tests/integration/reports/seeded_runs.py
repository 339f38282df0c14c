"""Seeded result sets for the board page's browser specs: each holds one thing a change board must not misread.

Built with the same table builders and scenario records a run writes, so the page under test is the page a
night produces; only the figures are chosen.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from harness_suites.s1.table import LatencyStep, s1_latency_table
from harness_suites.s2.table import ComponentFailure, s2_failure_table
from harness_suites.s3.table import S3Row, s3_site_table
from harness_suites.s4.table import S4Row, s4_failover_table
from harness_suites.s5.table import MigrationStep, s5_migration_table
from harness_suites.s6.table import Interference, s6_interference_table
from reports.allure.results_read import RecordedTest
from reports.regression import Night, RegressionRule, judge, night_of
from reports.scenario_record import Judged, ScenarioRecord, scenario_record
from reports.summary_page import SummaryInput
from reports.tables import Table

NIGHT_MS = 1_795_741_200_000  # 2026-11-27 02:00 UTC
SIMULATED = {"topology": "lab-vsphere", "product.platform": "the embedded lab bound to its vSphere simulator: vCenter, "
             "vSAN and the BMCs are simulated, the database nodes are real",
             "product.modelled": "ha_restart_delay_s=3, migration_s=2, resync_rate_mb_s=40, stun_s=1"}


def _test(uuid: str, scenario: str, title: str, table: Table, *, modelled: Sequence[str] = (),
          findings: Sequence[str] = (), verdicts: Sequence[Judged] = (), numbers: Mapping[str, str] | None = None,
          status: str = "passed") -> RecordedTest:
    record = scenario_record(scenario, title, fault_kind="fault", target="host:esx-a1", mechanism="fault via lab",
                             table=table, numbers=numbers or {"key": "figure"}, modelled=modelled, findings=findings)
    record = ScenarioRecord.from_json(dataclasses.replace(record, verdicts=list(verdicts)).to_json())
    return RecordedTest(uuid=uuid, title=title, full_name=f"harness_suites.{scenario}#{uuid}", status=status,
                        start=NIGHT_MS + 60_000 * int(scenario[1:]), labels={"epic": scenario}, message="", record=record)


def sweep_with_a_fail_row() -> RecordedTest:
    """A passing S1: its 4 ms row misses the throughput target (no required RTT: the sweep characterises)."""
    table = s1_latency_table([LatencyStep(0, 1400.0, 5.7, 11.0), LatencyStep(4, 735.0, 10.9, 20.0)], min_tps_pct=80)
    return _test("s1", "S1", "S1 · latency sweep on site-a~site-b", table,
                 findings=["at 4 ms added RTT, TPS is 52.5 % of the baseline's (target 80 %)"])


def modelled_resync() -> RecordedTest:
    """S2 on the simulator: its resync size, rate and ETA follow the model's rate."""
    table = s2_failure_table([ComponentFailure("disk group", 1934.0, 1880.0, 12.0, 2.05, 2.4, 51.0,
                                               "the standby's disk group on esx-b1")])
    return _test("s2", "S2", "S2 · disk group on esx-b1/0", table,
                 modelled=("resync_gb", "resync_rate", "resync_eta_s"))


def modelled_migration() -> RecordedTest:
    """S5 on the simulator: the pre-copy and the freeze are the model's."""
    steps = [MigrationStep(4.0, 1500.0, 1400.0, 1490.0, 900.0, 8.2, 1.02)]
    return _test("s5", "S5", "S5 · live migration on pg-node-a", s5_migration_table(steps),
                 modelled=("migration_s", "stun_s"))


def wide_s6() -> RecordedTest:
    """S6 with every column filled and long configuration names: the widest table the suites write."""
    runs = [Interference(f"{name} (mail store on the database's datastore, 100 database IOPS offered)",
                         1246.0, 1190.0, 6.41, 6.72, 100.0, 98.0, 0.25, 1.09) for name in ("all nodes", "N-1")]
    return _test("s6", "S6", "S6 · mixed workloads and N-1 on node:bench/node-b", s6_interference_table(runs))


def regressed_failover(history_values: Sequence[float], tonight_s: float) -> tuple[RecordedTest, list[Night]]:
    """S4 whose failover is tonight well above its last nights' median, and those nights."""
    table = s4_failover_table([S4Row("unplanned", 1.6, 3.3, 0.9, tonight_s, tonight_s, 0)], max_total_s=35)
    test = _test("s4", "S4", "S4 · unplanned on host-a", table)
    assert test.record is not None
    history = [night_of([dataclasses.replace(f, value=v) if f.column == "total (s)" else f for f in test.record.figures],
                        run=str(i)) for i, v in enumerate(history_values)]
    return test, history


def inconclusive_ratio() -> RecordedTest:
    """S3 whose TPS after / before holds the threshold inside its 95 % interval."""
    table = s3_site_table([S3Row("site-a", 1657.0, 1390.0, 9.6, 6.1, 9.0, "node-b on site-b")])
    verdict = Judged("TPS after / before", 0.84, "", ">=", 0.8, "INCONCLUSIVE", 0.76, 0.92, 0.95, 14,
                     "ratio of two window means", note="the threshold lies inside the 95 % interval")
    return _test("s3", "S3", "S3 · site failure on site-a", table, verdicts=[verdict])


def seeded_night() -> SummaryInput:
    """One night holding every case at once, as the board would receive it."""
    s4, history = regressed_failover([6.5, 6.8, 7.0, 6.9, 6.6], 9.5)
    tests = [sweep_with_a_fail_row(), modelled_resync(), inconclusive_ratio(), s4, modelled_migration(), wide_s6()]
    figures = [f for t in tests if t.record is not None for f in t.record.figures]
    tonight = night_of(figures, run="tonight")
    return SummaryInput(name="Seeded night", generated_at="2026-11-27 02:00 UTC", tests=tests, environment=SIMULATED,
                        judgements=judge(tonight.figures, tonight.better, history, scales=tonight.scales),
                        history=history, rule=RegressionRule(), report_ids={}, allure_html=None)
