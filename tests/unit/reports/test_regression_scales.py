"""What counts as a change of a figure across nights: points for a percentage, a floor in the figure's unit, never
a figure the platform's model gave; and the report's exit code, an SLO failure first whatever the history."""

from __future__ import annotations

import pytest

from harness_suites.columns import SECONDS_FLOOR
from harness_suites.s2.table import ComponentFailure, s2_failure_table
from reports.outcome import Verdict, exit_code
from reports.regression import Night, Scale, judge, night_of
from reports.scenario_record import figures_of
from reports.tables import Better

TPS_CHANGE = "S6 · all nodes · TPS change %"
IOPS_CHANGE = "S6 · N-1 · IOPS change %"
DETECT = "S4 · planned · detect (s)"


def history(key: str, values: list[float], better: Better) -> list[Night]:
    return [Night(f"2026-11-{i + 1:02d}T02:00:00+00:00", {key: v}, {key: better}, run=str(i))
            for i, v in enumerate(values)]


def test_a_percentage_moves_in_points_not_as_a_share_of_itself() -> None:
    earlier = history(TPS_CHANGE, [-3.0, -3.2, -2.9], "higher")
    points = {TPS_CHANGE: Scale(points=True)}
    wobble, = judge({TPS_CHANGE: -7.88}, {TPS_CHANGE: "higher"}, earlier, scales=points)
    fell, = judge({TPS_CHANGE: -9.0}, {TPS_CHANGE: "higher"}, earlier, scales=points)
    as_share, = judge({TPS_CHANGE: -7.88}, {TPS_CHANGE: "higher"}, earlier)
    assert as_share.regressed and as_share.band is not None and as_share.band < 1, "20 % of -3 % is 0.6 points"
    assert not wobble.regressed and wobble.band == 5.0
    assert fell.regressed


def test_a_figure_whose_median_is_zero_is_not_flagged_by_noise() -> None:
    flat, = judge({IOPS_CHANGE: -0.07}, {IOPS_CHANGE: "higher"}, history(IOPS_CHANGE, [0.0, 0.0, 0.0], "higher"),
                  scales={IOPS_CHANGE: Scale(points=True)})
    assert flat.judged and not flat.regressed


def test_a_change_below_the_figures_floor_is_no_regression() -> None:
    earlier = history(DETECT, [0.07, 0.07, 0.07], "lower")
    floor = {DETECT: Scale(floor=SECONDS_FLOOR)}
    milliseconds, = judge({DETECT: 0.094}, {DETECT: "lower"}, earlier, scales=floor)
    slower, = judge({DETECT: 0.4}, {DETECT: "lower"}, earlier, scales=floor)
    assert not milliseconds.regressed and milliseconds.band == SECONDS_FLOOR
    assert slower.regressed


def test_the_floor_holds_for_the_change_point_rule_too() -> None:
    steady = [0.070, 0.072, 0.069, 0.071, 0.070, 0.068, 0.071, 0.070, 0.072, 0.069, 0.070, 0.071]
    earlier = history(DETECT, [*steady, 0.12], "lower")
    moved, = judge({DETECT: 0.121}, {DETECT: "lower"}, earlier)
    floored, = judge({DETECT: 0.121}, {DETECT: "lower"}, earlier, scales={DETECT: Scale(floor=SECONDS_FLOOR)})
    assert moved.by_median is not None and moved.regressed and moved.moved is not None, "a level 50 ms higher"
    assert not floored.regressed


def test_figures_the_model_gave_are_neither_kept_nor_judged() -> None:
    table = s2_failure_table([ComponentFailure("disk", 1000.0, 950.0, 12.0, 0.5, 1.0, 30.0)])
    figures = figures_of("S2", table, modelled=("resync_gb", "resync_rate", "resync_eta_s"))
    eta = next(f for f in figures if f.column == "resync ETA (s)")
    drop = next(f for f in figures if f.column == "drop %")
    assert eta.provenance == "modelled" and drop.provenance == "measured" and drop.points
    night = night_of(figures)
    assert eta.key not in night.figures and drop.key in night.figures
    assert night.scales[drop.key] == Scale(points=True)


@pytest.mark.parametrize(("verdict", "regressed", "fail_on_regression", "code"), [
    ("FAIL", False, True, 1),
    ("FAIL", True, True, 1),
    ("ERROR", True, True, 10),
    ("PASS with findings", True, True, 6),
    ("PASS with findings", True, False, 0),
    ("PASS", False, True, 0),
    ("INCONCLUSIVE", False, True, 0),
])
def test_the_reports_exit_code_puts_a_failed_slo_before_the_history(
        verdict: Verdict, regressed: bool, fail_on_regression: bool, code: int) -> None:
    assert exit_code(verdict, regressed=regressed, fail_on_regression=fail_on_regression) == code


def test_a_verdicts_key_in_the_history_is_its_case_not_the_node_the_fault_found() -> None:
    from reports.scenario_record import Judged, scenario_record

    keys = set()
    for host in ("host-a", "host-b"):  # the primary alternates between nights
        record = scenario_record("S4", f"S4 · unplanned: the active node's host fails on {host}",
                                 fault_kind="host-power-loss", target=f"host:{host}", mechanism="", table=None,
                                 numbers={})
        verdict = Judged("failover duration", 6.0, "s", "<=", 35.0, "PASS", 5.5, 6.5, 0.95, 3)
        keys |= set(night_of([], verdicts=[(record.case, verdict)]).figures)
    assert keys == {"S4 · unplanned: the active node's host fails · failover duration"}
