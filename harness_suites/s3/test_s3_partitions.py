"""S3's cuts that move no power: the inter-site link partitioned, the witness isolated.

The VPLEX Metro paper measured a planned failover, a host and a site lost, never these two. What
the business feels from them is what the storage (or the HA manager in its place) decides, so the
metro observer reads it about once a second while the cut holds: which site kept serving, whether
the copies stayed in sync, whether each site reached the arbiter, and when the copies were in sync
again after the revert. On the embedded lab it reads pg_auto_failover (its monitor is the arbiter).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from harness.analysis.slo import SloCheck
from harness.experiment import Experiment, Findings
from harness.plugin_state import plugin_state
from harness.safety.run import HarnessRun
from harness.scenario import Role, ScenarioFault
from harness.scenario_report import ScenarioReport
from harness_kernel.history.series import SecondPoint
from harness_suites.evidence import (
    at_risk_figure,
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
from harness_suites.s3.table import PartitionRow, s3_partition_table
from reports.metro_states import StateSpan, always_served, in_sync_again, metro_spans, serving_sites, states_during

PARTITION = ScenarioFault("inter-site link partitioned", Role.INTER_SITE_LINK, "link-partition")
WITNESS = ScenarioFault("witness isolated", Role.WITNESS, "witness-isolation")
SERVED = "a site served throughout the cut, as the storage said (1 = yes)"
STALL = "longest stop of commits while the cut held"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "cut" not in metafunc.fixturenames:
        return
    run = plugin_state(metafunc.config).run
    cuts = [c for c in (PARTITION, WITNESS) if run is None or c.applies(run.topology)]
    metafunc.parametrize("cut", cuts, ids=[c.intent for c in cuts])


def mean_tps(points: Sequence[SecondPoint]) -> float | None:
    """Commits per second over whole seconds, a stop included (the steady level leaves a stop out)."""
    return sum(p.tps for p in points) / len(points) if points else None


def _said(states: list[str]) -> str:
    return " → ".join(states) or "not read"


def partition_row(label: str, findings: Findings, spans: list[StateSpan], experiment: Experiment) -> PartitionRow:
    """The trial's figures beside the observer's states while the cut held (from in effect to the revert)."""
    start, end = findings.in_effect_t, findings.revert_t
    arbiter = {row.removesuffix(" arbiter"): _said(states_during(spans, row, start, end))
               for row in dict.fromkeys(s.row for s in spans if s.row.endswith(" arbiter"))}
    again = in_sync_again(spans, end)
    recovered = findings.impact.recovered
    return PartitionRow(
        case=label, tps_before=findings.impact.before.mean, tps_during=tps_after(findings),
        mean_tps_during=mean_tps(experiment.series.points(int(start), int(end))),
        tps_after=recovered.mean if recovered else None, outage_s=float(findings.impact.outage_s),
        served_by=", ".join(serving_sites(spans, start, end)) or "no site",
        replica=_said(states_during(spans, "replica", start, end)),
        link=_said(states_during(spans, "link", start, end)),
        arbiter="; ".join(f"{site}: {said}" for site, said in arbiter.items()) or "not read",
        in_sync_after_revert_s=None if again is None else again - end)


def served_check(trials: list[Findings], spans: list[StateSpan], observed: bool) -> SloCheck:
    """Judged on the observer's own states: a cut the observer read nothing of is said, not passed."""
    if not observed:
        return SloCheck(SERVED, None, ">=", 1, not_judged="nothing on this topology reads the storage's states "
                                                          "(a metro platform's section: management.platforms.vplex)")
    served = [always_served(spans, t.in_effect_t, t.revert_t) for t in trials]
    if None in served:
        return SloCheck(SERVED, None, ">=", 1, not_judged="the metro observer read nothing while the cut held")
    return SloCheck(SERVED, float(all(served)), ">=", 1)


@dataclass(frozen=True)
class Stall:
    """Commits stopped while a cut held: from when, for how long inside the cut, and whether only the revert ended
    it (the business's own word beside the storage's)."""

    start_s: float  # from the cut in effect
    seconds: float  # inside the cut
    until_revert: bool
    after_revert_s: float | None = None  # how long it went on after the revert (None: to the end of the run)

    def says(self) -> str:
        if not self.until_revert:
            return f"no commit for {self.seconds:.1f} s from +{self.start_s:.1f} s, then commits again while still cut"
        after = ("to the end of the run" if self.after_revert_s is None else
                 f"{self.after_revert_s:.1f} s after it" if self.after_revert_s > 0 else "")
        return (f"no commit from +{self.start_s:.1f} s to the revert ({self.seconds:.0f} s)" + (f" and {after}"
                if after else "") + ": only the revert ended it")


def stalls(experiment: Experiment, findings: Findings) -> list[Stall]:
    start, end = findings.in_effect_t, findings.revert_t
    return [Stall(max(g0, start) - start, min(g1, end) - max(g0, start), g1 >= end,
                  None if g1 == float("inf") else max(0.0, g1 - end))
            for g0, g1 in experiment.timeline.commit_gaps() if g0 < end and g1 > start]


def stall_check(found: list[Stall], maximum_s: float | None) -> SloCheck:
    """The longest stop of commits inside a cut, against `slo.partition_stall_max_s`: unset, characterised only;
    a stop the revert ended before the allowance ran out cannot be judged either way, and says so."""
    longest = max(found, key=lambda s: s.seconds, default=None)
    measured = longest.seconds if longest else 0.0
    basis = "; ".join(s.says() for s in found) or "commits every second of the cut"
    if maximum_s is None:
        return SloCheck(STALL, measured, "<=", 0, " s", basis=basis,
                        not_judged="no allowed stall (slo.partition_stall_max_s): the partitions characterise")
    if longest is not None and longest.until_revert and measured < maximum_s:
        return SloCheck(STALL, measured, "<=", maximum_s, " s", basis=basis,
                        not_judged=f"the cut was reverted {measured:.0f} s into a stop, before the allowed "
                                   f"{maximum_s:g} s ran out: hold it longer (--observe-s)")
    return SloCheck(STALL, measured, "<=", maximum_s, " s", basis=basis)


@pytest.mark.scenario("S3")
@pytest.mark.repeated
def test_a_site_keeps_serving_while_the_sites_or_the_witness_are_cut_off(
        cut: ScenarioFault, experiment: Experiment, harness_run: HarnessRun,
        scenario_report: ScenarioReport) -> None:
    topology = harness_run.topology
    slo = topology.slo
    observed = experiment.watch_metro()
    trials = experiment.run_failures(lambda cluster: cut.resolve(cluster, topology))
    findings = trials[-1]
    spans = metro_spans(experiment.timeline)
    row = partition_row(cut.label + (f" (last of {len(trials)} trials)" if len(trials) > 1 else ""), findings, spans,
                        experiment)
    table = s3_partition_table([row], min_tps_after_pct=100 * slo.tps_after_min_ratio,
                               max_in_sync_s=slo.time_at_risk_max_s, max_stall_s=slo.partition_stall_max_s)
    found = [stall for t in trials for stall in stalls(experiment, t)]
    lost = experiment.ledger.lost_count if experiment.ledger else None
    scenario_report.record(SCENARIO, experiment, fault_kind=findings.spec.kind, target=findings.spec.target,
                           title=f"S3 {cut.label}", table=table, table_name=f"s3-{findings.spec.kind}",
                           numbers={"TPS before": fmt(row.tps_before, "", 0),
                                    "while cut": kept_share(row.tps_during, row.tps_before, slo.tps_after_min_ratio),
                                    "served by": row.served_by, "replica while cut": row.replica,
                                    "in sync again": fmt(median_of([row.in_sync_after_revert_s]), " s after revert"),
                                    "lost": within(fmt_lost(lost), "<=", slo.lost_commits_max),
                                    "at risk": at_risk_figure(trials, slo.time_at_risk_max_s)},
                           findings=[*(f"{cut.label}: {s.says()}" for s in found if s.until_revert),
                                     *(f for t in trials for f in t.impact.outages)])
    ratio, ratio_interval = tps_ratio(trials)
    scenario_report.judge([
        served_check(trials, spans, observed),
        stall_check(found, slo.partition_stall_max_s),
        SloCheck("TPS while cut / before", ratio, ">=", slo.tps_after_min_ratio, interval=ratio_interval,
                 not_judged=no_steady_state(trials, experiment.durations.observe_s)),
        experiment.lost_commits_check(),
        time_at_risk_check(trials, slo.time_at_risk_max_s),
    ])
