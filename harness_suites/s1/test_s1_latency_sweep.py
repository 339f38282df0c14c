"""S1 inter-site latency sweep: steady OLTP load at each added round-trip time.

Table: TPS, average transaction time and p95 latency per RTT step, and the largest RTT
that keeps TPS at the threshold share of the 0 ms baseline ("recommended < N ms"). That RTT is
judged against the RTT the design must carry (`slo.required_rtt_ms`); a step beyond it, or any
step when none is set, that misses the target is a finding: the test then passes with findings.
"""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass

import pytest

from faults.base import new_instance
from harness.analysis.slo import SloCheck
from harness.experiment import Experiment
from harness.plugin_state import run_options
from harness.safety.run import HarnessRun
from harness.scenario import Role, ScenarioFault, Sweep
from harness.scenario_report import ScenarioReport
from harness_kernel.history import EventKind
from harness_suites.evidence import kept_share, window_stats
from harness_suites.plugin import options_of
from harness_suites.s1 import SCENARIO
from harness_suites.s1.options import Options
from harness_suites.s1.required_rtt import below_target, kept_rtt_check
from harness_suites.s1.table import LatencyStep, largest_kept_rtt, s1_latency_table
from harness_suites.steps import options as steps_options
from reports.allure.steps import phase

LATENCY = ScenarioFault("inter-site latency", Role.INTER_SITE_LINK, "link-latency",
                        {"rtt_ms": 4.0})


@dataclass(frozen=True)
class StepWindow:
    rtt_ms: float
    start: float
    end: float


def recent_tps(experiment: Experiment, seconds: float) -> float:
    """Mean TPS of the last `seconds` (the level a step's stop condition compares with)."""
    now = experiment.timeline.now()
    points = experiment.series.points(int(now - seconds), int(now))
    return statistics.fmean(p.tps for p in points) if points else 0.0


def measure_step(experiment: Experiment, rtt_ms: float, warmup_s: float, step_s: float) -> StepWindow:
    experiment.measure(f"warm-up at {rtt_ms:g} ms", warmup_s)
    start = experiment.timeline.record(EventKind.STEP_START, "s1", rtt_ms=rtt_ms).t
    experiment.measure(f"sample at {rtt_ms:g} ms", step_s)
    return StepWindow(rtt_ms, start, experiment.timeline.record(EventKind.STEP_END, "s1", rtt_ms=rtt_ms).t)


def summarise(experiment: Experiment, window: StepWindow, users: int) -> LatencyStep:
    points = experiment.series.points(int(window.start) + 1, int(window.end))
    tps = statistics.fmean(p.tps for p in points) if points else 0.0
    p95s = [p.p95_ms for p in points if p.p95_ms is not None]
    # closed loop without think time: mean response time = users / throughput (Little's law)
    return LatencyStep(rtt_ms=window.rtt_ms, tps=tps, avg_txn_ms=1000.0 * users / tps if tps else float("nan"),
                       p95_ms=statistics.median(p95s) if p95s else None)


def step_figure(step: LatencyStep, baseline: LatencyStep, min_ratio: float) -> str:
    """"735 TPS, 41 % of 0 ms (≥ 80 %)": each step against the lowest-RTT step, with the target."""
    if step is baseline:
        return f"{step.tps:.0f} TPS"
    return f"{step.tps:.0f} TPS, " + kept_share(step.tps, baseline.tps, min_ratio).replace(
        " (", f" of {baseline.rtt_ms:g} ms (", 1)


@pytest.mark.scenario("S1")
@pytest.mark.faults(Sweep(LATENCY, "rtt_ms", "rtt_step_values"))
def test_latency_sweep_finds_the_largest_rtt_that_keeps_throughput(
        experiment: Experiment, harness_run: HarnessRun, scenario_report: ScenarioReport,
        pytestconfig: pytest.Config) -> None:
    topology = harness_run.topology
    steps = options_of(pytestconfig, Options).rtt_step_values
    measured_steps = options_of(pytestconfig, steps_options.Options)
    warmup_s, step_s = measured_steps.warmup_s, measured_steps.step_s
    users = run_options(pytestconfig).users
    windows = []
    link = None
    for rtt in steps:
        with phase("observe", f"{rtt:g} ms added RTT"):
            if rtt == 0:
                windows.append(measure_step(experiment, rtt, warmup_s, step_s))
                continue
            spec = LATENCY.resolve(experiment.cluster, topology)
            spec = dataclasses.replace(spec, params={**spec.params, "rtt_ms": rtt}, instance=new_instance())
            link = spec.target
            with experiment.fault(spec, duration_s=warmup_s + step_s,
                                  guards=[experiment.throughput_guard(recent_tps(experiment, step_s))]):
                windows.append(measure_step(experiment, rtt, warmup_s, step_s))
    experiment.finish()
    measured = [summarise(experiment, w, users) for w in windows]
    table = s1_latency_table(measured, min_tps_pct=100 * topology.slo.latency_tps_min_ratio)
    scenario_report.record(SCENARIO, experiment, fault_kind="latency", target=link or "link", title="S1 latency sweep",
                           table=table, table_name="s1-latency",
                           numbers={**{f"{s.rtt_ms:g} ms": step_figure(s, measured[0], topology.slo.latency_tps_min_ratio)
                                       for s in measured},
                                    "verdict": table.extra_lines[0] if table.extra_lines else ""},
                           findings=[*below_target(measured, topology.slo.latency_tps_min_ratio, topology.slo.required_rtt_ms),
                                     *(found for w in windows for found in window_stats(
                                         experiment, w.start, w.end, users).outage(f"{w.rtt_ms:g} ms step"))])
    scenario_report.judge([
        SloCheck(f"throughput measured at {s.rtt_ms:g} ms (TPS)", s.tps, ">", 0) for s in measured
    ] + [kept_rtt_check(largest_kept_rtt(table), topology.slo.latency_tps_min_ratio, topology.slo.required_rtt_ms,
                        max(steps)),
         experiment.lost_commits_check()])

