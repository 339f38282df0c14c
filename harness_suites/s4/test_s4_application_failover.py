"""S4 application failover: planned role move and unplanned loss of the active node.

Reports the failover split into phases (detect / promote / first commit), the client's
reconnect time and lost acknowledged commits (must be 0); a standby's loss must not
interrupt the workload beyond the tolerated stall.
"""

from __future__ import annotations

import pytest

from harness.analysis.slo import SloCheck
from harness.experiment import Experiment
from harness.safety.run import HarnessRun
from harness.scenario import Role, ScenarioFault
from harness.scenario_report import ScenarioReport
from harness_suites.evidence import (
    at_risk_figure,
    duration,
    fmt,
    fmt_lost,
    forecast_beside_measured,
    median_of,
    time_at_risk_check,
    within,
)
from harness_suites.s4 import SCENARIO
from harness_suites.s4.table import S4Row, StandbyLoss, s4_failover_table, s4_standby_table

UNPLANNED = ScenarioFault("unplanned: the active node's host fails", Role.PRIMARY_HOST,
                          "host-power-loss")
PLANNED = ScenarioFault("planned: role moved to the other site", Role.DATABASE,
                        "role-switchover")
STANDBY = ScenarioFault("the standby's host fails", Role.STANDBY_HOST,
                        "host-power-loss")


@pytest.mark.scenario("S4")
@pytest.mark.repeated
@pytest.mark.parametrize("fault", [UNPLANNED, PLANNED], ids=["unplanned", "planned"])
def test_failover_finishes_within_the_slo_and_loses_no_acknowledged_commit(
        fault: ScenarioFault, experiment: Experiment, harness_run: HarnessRun,
        scenario_report: ScenarioReport) -> None:
    topology = harness_run.topology
    trials = experiment.run_failures(lambda cluster: fault.resolve(cluster, topology))
    findings, phases = trials[-1], trials[-1].phases
    every = [t.phases for t in trials]
    total_s, total_interval = duration([p.total_s for p in every])
    lost = experiment.ledger.lost_count if experiment.ledger else None
    limit = topology.slo.planned_failover_max_s if fault is PLANNED else topology.slo.failover_max_s
    table = s4_failover_table([S4Row(
        kind=fault.label + (f" (median of {len(trials)} trials)" if len(trials) > 1 else ""),
        detect_s=median_of([p.detect_s for p in every]), promote_s=median_of([p.promote_s for p in every]),
        first_commit_s=median_of([p.first_commit_after_promote_s for p in every]), total_s=total_s,
        client_reconnect_s=median_of([p.client_rto_s for p in every]), lost_commits=lost,
        databases_online_s=median_of([p.databases_online_s for p in every]),
        listener_s=median_of([p.listener_s for p in every]))],
        max_total_s=topology.slo.failover_max_s, max_lost_commits=topology.slo.lost_commits_max)
    scenario_report.record(SCENARIO, experiment, fault_kind=findings.spec.kind, target=findings.spec.target,
                           title=f"S4 {fault.label}", table=table, table_name=f"s4-{findings.spec.kind}",
                           numbers={"failover": within(fmt(total_s, " s"), "<=", limit, " s"),
                                    "client RTO": fmt(median_of([p.client_rto_s for p in every]), " s"),
                                    "lost": within(fmt_lost(lost), "<=", topology.slo.lost_commits_max),
                                    "new primary": findings.primary_after,
                                    "at risk": at_risk_figure(trials, topology.slo.time_at_risk_max_s),
                                    **forecast_beside_measured(findings.forecast, phases.detect_s, phases.client_rto_s)})
    scenario_report.judge([
        SloCheck("failover duration (in effect to first commit)", total_s, "<=", limit, " s", interval=total_interval,
                 trial_figure=True),
        experiment.lost_commits_check(),
        SloCheck("the role moved (1 = another node is primary)",
                float(all(t.primary_after != t.primary_before for t in trials)), ">=", 1),
        time_at_risk_check(trials, topology.slo.time_at_risk_max_s),
    ])


@pytest.mark.scenario("S4")
@pytest.mark.repeated
@pytest.mark.parametrize("fault", [STANDBY], ids=["standby-loss"])
def test_losing_the_standby_stalls_the_workload_no_longer_than_tolerated(
        fault: ScenarioFault, experiment: Experiment, harness_run: HarnessRun,
        scenario_report: ScenarioReport) -> None:
    topology = harness_run.topology
    trials = experiment.run_failures(lambda cluster: fault.resolve(cluster, topology))
    findings = trials[-1]
    lost = experiment.ledger.lost_count if experiment.ledger else None
    stall, stall_interval = duration([t.phases.client_rto_s or 0.0 for t in trials])  # no commit gap: no stall
    stayed = all(t.primary_after == t.primary_before for t in trials)
    table = s4_standby_table([StandbyLoss(
        fault.label + (f" (median of {len(trials)} trials)" if len(trials) > 1 else ""), stall or 0.0, lost, stayed,
        median_of([t.at_risk_s for t in trials]))], max_stall_s=topology.slo.non_primary_stall_max_s,
        max_lost_commits=topology.slo.lost_commits_max, max_at_risk_s=topology.slo.time_at_risk_max_s)
    scenario_report.record(SCENARIO, experiment, fault_kind=findings.spec.kind, target=findings.spec.target,
                           title=f"S4 {fault.label}", table=table, table_name="s4-standby-loss",
                           numbers={"stall": within(fmt(stall, " s", 2), "<=", topology.slo.non_primary_stall_max_s, " s"),
                                    "lost": within(fmt_lost(lost), "<=", topology.slo.lost_commits_max),
                                    "at risk": at_risk_figure(trials, topology.slo.time_at_risk_max_s)})
    scenario_report.judge([
        SloCheck("write stall while the standby is lost", stall, "<=", topology.slo.non_primary_stall_max_s, " s",
                 interval=stall_interval, trial_figure=True),
        experiment.lost_commits_check(),
        SloCheck("the primary stayed (1 = same node)", float(stayed), ">=", 1),
        time_at_risk_check(trials, topology.slo.time_at_risk_max_s),
    ])
