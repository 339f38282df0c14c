"""S5 live migration across sites: the loaded database VM moves to the other site at each added RTT.

Table per RTT step: TPS before / during / after, the lowest per-second TPS, the migration's
duration (vCenter's task), and the stun the clients saw (their longest commit gap during it).
Production: `RelocateVM_Task` through the vSphere backend, the RTT on the inter-site router.
On the lab bound to its simulator, the simulator migrates the VM and the lab reproduces what
the clients feel: a modelled pre-copy, then a real freeze of the database node; the table's
notes name the model and its parameters. The return migration is the fault's revert.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from faults.base import Evidential, FaultSpec, new_instance
from harness.analysis.intervals import Interval
from harness.analysis.phases import longest_gap_within
from harness.analysis.slo import SloCheck
from harness.experiment import Experiment
from harness.plugin_state import run_options
from harness.safety.run import HarnessRun
from harness.scenario import Role, ScenarioFault, Sweep
from harness.scenario_report import ScenarioReport
from harness_kernel.topology.models import Slo
from harness_suites.evidence import fmt, fmt_lost, fmt_modelled, kept_share, window_ratio, window_stats, within
from harness_suites.plugin import options_of
from harness_suites.s5 import SCENARIO
from harness_suites.s5.options import Options
from harness_suites.s5.table import MigrationStep, s5_migration_table
from harness_suites.steps import options as steps_options
from reports.allure.steps import phase
from workloads.oltp import DriverConfig

MIGRATION = ScenarioFault("live migration to the other site", Role.PRIMARY_NODE, "vm-migrate")
LATENCY = ScenarioFault("inter-site latency", Role.INTER_SITE_LINK, "link-latency", {"rtt_ms": 1.0})
MIGRATION_TIMEOUT_S = 1800.0  # the vSphere backend's bound on one RelocateVM_Task: the journal's deadline


@contextlib.contextmanager
def added_rtt(experiment: Experiment, spec: FaultSpec, rtt_ms: float, seconds: float) -> Iterator[None]:
    """The inter-site link delayed by `rtt_ms` for the block (nothing at 0 ms)."""
    if rtt_ms == 0:
        yield
        return
    delayed = dataclasses.replace(spec, params={**spec.params, "rtt_ms": rtt_ms}, instance=new_instance())
    with experiment.fault(delayed, duration_s=seconds):
        yield


def migration_seconds(evidence: Mapping[str, Any], waited_s: float) -> float:
    """The migration's duration as the platform's task reports it (vCenter: the task's start to complete time);
    else as the harness timed its call; else the time the fault took to come into effect."""
    for key in ("server_migration_s", "migration_s"):
        if isinstance(evidence.get(key), int | float):
            return float(evidence[key])
    return waited_s


def step_figures(step: MigrationStep, slo: Slo, modelled: bool) -> str:
    """One step's key figures, each judged one with its threshold, each modelled one marked."""
    stun = within(fmt_modelled(fmt(step.stun_s, " s", 2), modelled), "<=", slo.non_primary_stall_max_s, " s")
    return (f"{fmt_modelled(fmt(step.migration_s, ' s'), modelled)} migration, stun {stun}, TPS after "
            + kept_share(step.tps_after, step.tps_before, slo.tps_after_min_ratio))


def migrate_once(experiment: Experiment, spec: FaultSpec, rtt_ms: float, step_s: float,
                 users: int) -> tuple[MigrationStep, Interval | None, list[str]]:
    """Before window, the migration (inject), after window on the other site; the revert brings it back. With the
    step, TPS after / before and its 95 % interval, and the findings: a steady window without commits."""
    now = experiment.timeline.now
    before_start = now()
    experiment.measure(f"before, {rtt_ms:g} ms", step_s)
    before = window_stats(experiment, before_start, now(), users)
    guard = experiment.throughput_guard(before.tps or 0.0)
    with experiment.fault(dataclasses.replace(spec, instance=new_instance()), guards=[guard],
                          duration_s=MIGRATION_TIMEOUT_S + step_s) as moved:
        start, end = moved.injected_at, moved.in_effect_at or now()
        experiment.measure(f"after, {rtt_ms:g} ms", step_s)
        after = window_stats(experiment, end, now(), users)
    evidence = moved.fault.evidence if isinstance(moved.fault, Evidential) else {}
    during = window_stats(experiment, start, end, users)
    return MigrationStep(rtt_ms=rtt_ms, tps_before=before.tps or 0.0, tps_during=during.tps, tps_after=after.tps,
                         min_tps=during.min_tps, migration_s=migration_seconds(evidence, end - start),
                         stun_s=longest_gap_within(experiment.timeline, start, end + 1.0),
                         drs=" ".join(str(evidence[k]) for k in ("drs", "moved_back") if evidence.get(k))), \
        window_ratio(after, before), [*before.outage(f"before, {rtt_ms:g} ms"), *after.outage(f"after, {rtt_ms:g} ms")]


@pytest.mark.scenario("S5")
@pytest.mark.faults(MIGRATION, Sweep(LATENCY, "rtt_ms", "migration_rtt_step_values"))
def test_a_live_migration_across_sites_keeps_the_business_running(
        experiment: Experiment, harness_run: HarnessRun, scenario_report: ScenarioReport,
        product_versions: dict[str, str], pytestconfig: pytest.Config) -> None:
    topology = harness_run.topology
    steps = options_of(pytestconfig, Options).migration_rtt_step_values
    measured_steps = options_of(pytestconfig, steps_options.Options)
    warmup_s, step_s = measured_steps.warmup_s, measured_steps.step_s
    users = run_options(pytestconfig).users
    link = LATENCY.resolve(experiment.cluster, topology)
    measured, ratios, found, migration = [], [], [], None
    experiment.baseline()  # a steady state before the first step's own window
    for rtt in steps:
        with phase("observe", f"migration at {rtt:g} ms added RTT"), \
                added_rtt(experiment, link, rtt, warmup_s + 2 * step_s + 2 * MIGRATION_TIMEOUT_S):
            experiment.measure(f"warm-up at {rtt:g} ms", warmup_s)
            migration = MIGRATION.resolve(experiment.cluster, topology)
            step, ratio, outages = migrate_once(experiment, migration, rtt, step_s, users)
            found += outages
            measured.append(step)
            ratios.append(ratio)
    experiment.finish()
    modelled = product_versions.get("modelled")
    notes: tuple[str, ...] = (f"modelled on this platform (the stun column is still measured): {modelled}",) if modelled else ()
    notes += tuple(sorted({f"DRS: {s.drs}" for s in measured if s.drs}))  # it may move the VM back before the window
    table = s5_migration_table(measured, min_tps_after_pct=100 * topology.slo.tps_after_min_ratio,
                               max_stun_s=topology.slo.non_primary_stall_max_s,
                               gap_threshold_s=DriverConfig.gap_threshold_s, notes=notes)
    lost = experiment.ledger.lost_count if experiment.ledger else None
    scenario_report.record(SCENARIO, experiment, fault_kind="vm-migrate",
                           target=migration.target if migration else "node", title="S5 live migration",
                           table=table, table_name="s5-live-migration",
                           numbers={**{f"{s.rtt_ms:g} ms": step_figures(s, topology.slo, bool(modelled)) for s in measured},
                                    "lost": within(fmt_lost(lost), "<=", topology.slo.lost_commits_max)},
                           # the pre-copy is the model's and the freeze lasts the model's stun
                           modelled=("migration_s", "stun_s") if modelled else (), findings=found)
    scenario_report.judge([
        *(SloCheck(f"TPS after / before at {s.rtt_ms:g} ms", s.tps_after / s.tps_before
                  if s.tps_after is not None and s.tps_before else None, ">=", topology.slo.tps_after_min_ratio,
                   interval=ratio)
          for s, ratio in zip(measured, ratios, strict=True)),
        *(SloCheck(f"stun seen by clients at {s.rtt_ms:g} ms", s.stun_s or 0.0, "<=",
                  topology.slo.non_primary_stall_max_s, " s") for s in measured),
        experiment.lost_commits_check(),
    ])
