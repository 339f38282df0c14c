"""S2 component failure matrix: disk, disk group and host failures under steady OLTP load.

Each failure strikes the component that holds the database (found on the live cluster).
Table: TPS before / after, time to recover to a new steady state, resync bytes, rate, ETA.
In the embedded lab one analog (the standby's storage lost and rebuilt from the primary)
stands for both disk and disk group, so the lab runs it once and says so.
"""

from __future__ import annotations

import pytest

from harness.analysis.slo import SloCheck
from harness.experiment import Experiment
from harness.plugin_state import plugin_state
from harness.safety.run import HarnessRun
from harness.scenario import Role, ScenarioFault
from harness.scenario_report import ScenarioReport
from harness_suites.evidence import (
    at_risk_figure,
    duration,
    fmt,
    fmt_lost,
    fmt_modelled,
    kept_share,
    no_steady_state,
    time_at_risk_check,
    tps_ratio,
    within,
)
from harness_suites.s2 import SCENARIO
from harness_suites.s2.rows import component_rows
from harness_suites.s2.table import s2_failure_table

HOST = ScenarioFault("host", Role.PRIMARY_HOST, "host-power-loss")
LAB_STORAGE = ScenarioFault(
    "disk / disk group", Role.STANDBY_NODE, "storage-loss", {"max_rate": "2M"},
    note="lab analog for both: the standby's storage is lost and rebuilt from the primary")
DISK = ScenarioFault("disk", Role.STANDBY_DISK, "capacity-device-failure")
REPAIR_TIMER_NOTE = ("vSAN rebuilds a lost host's absent components only after its object repair timer "
                     "(vsan_repair_timer_min in the environment): no resync within a shorter run is expected")
DISK_GROUP = ScenarioFault("disk group", Role.STANDBY_DISK_GROUP, "disk-group-failure")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "failure" not in metafunc.fixturenames:
        return
    run = plugin_state(metafunc.config).run
    # the lab's analog stands in for a device failure where no platform here fails a device
    if run is None:
        failures = [DISK, DISK_GROUP, HOST]
    else:
        failures = [f for f in (LAB_STORAGE, DISK, DISK_GROUP, HOST) if f.applies(run.topology)]
    metafunc.parametrize("failure", failures, ids=[f.label.replace(" / ", "-or-").replace(" ", "-") for f in failures])


@pytest.mark.scenario("S2")
@pytest.mark.repeated
def test_the_business_recovers_to_a_steady_state_within_the_slo(
        failure: ScenarioFault, experiment: Experiment, harness_run: HarnessRun,
        scenario_report: ScenarioReport, product_versions: dict[str, str]) -> None:
    topology = harness_run.topology
    slo, modelled = topology.slo, "modelled" in product_versions
    trials = experiment.run_failures(lambda cluster: failure.resolve(cluster, topology))
    findings = trials[-1]
    note = failure.note or (REPAIR_TIMER_NOTE if failure is HOST and topology.kind == "vsphere" else "")
    row = component_rows(failure.label, trials, note)
    table = s2_failure_table([row], min_tps_after_pct=100 * topology.slo.tps_after_min_ratio,
                             max_recover_s=topology.slo.recovery_max_s)
    lost = experiment.ledger.lost_count if experiment.ledger else None
    scenario_report.record(SCENARIO, experiment, fault_kind=findings.spec.kind, target=findings.spec.target,
                           title=f"S2 {failure.label}", table=table, table_name=f"s2-{findings.spec.kind}",
                           numbers={"TPS before": fmt(row.tps_before, "", 0),
                                    "after": kept_share(row.tps_after, row.tps_before, slo.tps_after_min_ratio),
                                    "recover": within(fmt(row.recover_s, " s", 0), "<=", slo.recovery_max_s, " s"),
                                    "resync": fmt_modelled(fmt(row.resync_gb, " GB", 2), modelled),
                                    "resync ETA": fmt_modelled(fmt(row.resync_eta_s, " s", 0), modelled),
                                    "lost": within(fmt_lost(lost), "<=", slo.lost_commits_max),
                                    "at risk": at_risk_figure(trials, slo.time_at_risk_max_s)},
                           # where the platform models vSAN, the resync follows the model's rate, not a cluster's
                           modelled=("resync_gb", "resync_rate", "resync_eta_s") if modelled else (),
                           findings=[f for trial in trials for f in trial.impact.outages])
    ratio, ratio_interval = tps_ratio(trials)
    recover_s, recover_interval = duration([t.impact.time_to_recover_s for t in trials])
    scenario_report.judge([
        SloCheck("TPS after / before", ratio, ">=", topology.slo.tps_after_min_ratio, interval=ratio_interval,
                 not_judged=no_steady_state(trials, experiment.durations.observe_s)),
        SloCheck("time to recover to a steady state", recover_s, "<=", topology.slo.recovery_max_s, " s",
                 interval=recover_interval, trial_figure=True),
        experiment.lost_commits_check(),
        time_at_risk_check(trials, topology.slo.time_at_risk_max_s),
    ])
