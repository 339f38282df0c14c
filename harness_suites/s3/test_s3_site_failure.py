"""S3 site failure: every host of the primary's site goes down; the witness keeps quorum.

Reports TPS and latency before / after, the failover duration, where the database runs
afterwards and what the witness saw; then the site comes back and resynchronises.
"""

from __future__ import annotations

import statistics

import pytest

from harness.analysis.slo import SloCheck
from harness.experiment import Experiment
from harness.safety.run import HarnessRun
from harness.scenario import Role, ScenarioFault
from harness.scenario_report import ScenarioReport
from harness_kernel.history import EventKind
from harness_suites.evidence import (
    at_risk_figure,
    duration,
    fmt,
    fmt_lost,
    kept_share,
    median_of,
    no_steady_state,
    time_at_risk_check,
    tps_after,
    tps_ratio,
    within,
)
from harness_suites.s3 import SCENARIO
from harness_suites.s3.table import S3Row, s3_site_table

SITE = ScenarioFault("site of the primary", Role.PRIMARY_SITE, "site-power-loss")


def p95(experiment: Experiment, start: float, end: float) -> float | None:
    values = [p.p95_ms for p in experiment.series.points(int(start), int(end)) if p.p95_ms is not None]
    return statistics.median(values) if values else None


@pytest.mark.scenario("S3")
@pytest.mark.repeated
@pytest.mark.parametrize("fault", [SITE], ids=["primary-site"])
def test_the_surviving_site_takes_over_within_the_slo(
        fault: ScenarioFault, experiment: Experiment, harness_run: HarnessRun,
        scenario_report: ScenarioReport) -> None:
    topology = harness_run.topology
    slo = topology.slo
    cluster = experiment.cluster
    trials = experiment.run_failures(lambda c: fault.resolve(c, topology))
    findings = trials[-1]
    moved = [cluster.site_of(t.primary_after) != t.spec.target.removeprefix("site:") for t in trials]
    site_after = cluster.site_of(findings.primary_after)
    detected = experiment.timeline.events(EventKind.DETECTED)
    failover_s, failover_interval = duration([t.phases.total_s for t in trials])
    row = S3Row(
        site=findings.spec.target.removeprefix("site:"), tps_before=statistics.median(t.impact.before.mean for t in trials),
        tps_after=median_of([tps_after(t) for t in trials]),
        p95_before_ms=median_of([p95(experiment, t.impact.before.start, t.impact.before.end) for t in trials]),
        p95_after_ms=median_of([p95(experiment, t.impact.after.start, t.impact.after.end) if t.impact.after else None
                                for t in trials]),
        failover_s=failover_s,
        restarted=f"{findings.primary_after} on {site_after}; witness saw {len(detected)} failure event(s)"
                  + (f"; median of {len(trials)} trials" if len(trials) > 1 else ""))
    table = s3_site_table([row], min_tps_after_pct=100 * topology.slo.tps_after_min_ratio,
                          max_failover_s=topology.slo.failover_max_s)
    lost = experiment.ledger.lost_count if experiment.ledger else None
    scenario_report.record(SCENARIO, experiment, fault_kind=findings.spec.kind, target=findings.spec.target,
                           title="S3 site failure", table=table, table_name="s3-site-failure",
                           numbers={"failover": within(fmt(row.failover_s, " s"), "<=", slo.failover_max_s, " s"),
                                    "TPS before": fmt(row.tps_before, "", 0),
                                    "after": kept_share(row.tps_after, row.tps_before, slo.tps_after_min_ratio),
                                    "serving": row.restarted.split(";")[0],
                                    "lost": within(fmt_lost(lost), "<=", slo.lost_commits_max),
                                    "at risk": at_risk_figure(trials, slo.time_at_risk_max_s)},
                           findings=[f for t in trials for f in t.impact.outages])
    ratio, ratio_interval = tps_ratio(trials)
    scenario_report.judge([
        SloCheck("failover duration", failover_s, "<=", topology.slo.failover_max_s, " s", interval=failover_interval,
                 trial_figure=True),
        SloCheck("serving from the other site (1 = yes)", float(all(moved)), ">=", 1),
        SloCheck("TPS after / before", ratio, ">=", topology.slo.tps_after_min_ratio, interval=ratio_interval,
                 not_judged=no_steady_state(trials, experiment.durations.observe_s)),
        experiment.lost_commits_check(),
        time_at_risk_check(trials, topology.slo.time_at_risk_max_s),
    ])
