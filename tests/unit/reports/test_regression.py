"""The nightly regression verdict: worse than the recent median by more than the noise band, once there is history."""

from __future__ import annotations

from pathlib import Path

from reports.regression import (
    FIGURE_DEFINITIONS,
    Night,
    RegressionRule,
    append_night,
    earlier_values,
    judge,
    night_of,
    read_history,
)
from reports.scenario_record import Judged
from reports.tables import Better

FAILOVER = "S4 · unplanned · total (s)"
THROUGHPUT = "S7 · full backup · throughput (MB/s)"


def nights(key: str, values: list[float], better: Better = "lower") -> list[Night]:
    return [Night(f"2026-11-{i + 1:02d}T02:00:00+00:00", {key: v}, {key: better}, run=str(i))
            for i, v in enumerate(values)]


def test_the_documented_example_flags_9_5_s_and_not_7_9_s() -> None:
    history = nights(FAILOVER, [6.5, 6.8, 7.0, 6.9, 6.6])
    slow, = judge({FAILOVER: 9.5}, {FAILOVER: "lower"}, history)
    usual, = judge({FAILOVER: 7.9}, {FAILOVER: "lower"}, history)
    assert slow.regressed and slow.reference == 6.8 and slow.band is not None and round(slow.band, 2) == 1.36
    assert not usual.regressed and usual.judged
    assert "9.5 tonight, regressed (median of 5 nights 6.8, limit 8.16)" in slow.sentence()


def test_a_higher_is_better_figure_regresses_downwards_only() -> None:
    history = nights(THROUGHPUT, [40, 41, 39, 40], better="higher")
    dropped, = judge({THROUGHPUT: 25}, {THROUGHPUT: "higher"}, history)
    faster, = judge({THROUGHPUT: 80}, {THROUGHPUT: "higher"}, history)
    assert dropped.regressed and not faster.regressed


def test_a_noisy_figure_gets_a_wider_band_from_its_median_absolute_deviation() -> None:
    history = nights(FAILOVER, [4.0, 8.0, 5.0, 9.0, 6.0, 10.0, 7.0])
    judged, = judge({FAILOVER: 10.5}, {FAILOVER: "lower"}, history)
    assert judged.reference == 7.0 and judged.band == 6.0, "3 x MAD (2.0) beats 20 % of 7.0"
    assert not judged.regressed


def test_too_short_a_history_is_not_judged_and_only_the_window_counts() -> None:
    short, = judge({FAILOVER: 50.0}, {FAILOVER: "lower"}, nights(FAILOVER, [5.0, 5.0]))
    assert not short.judged and not short.regressed and "not judged: 2 earlier night(s)" in short.sentence()
    rule = RegressionRule(window=3, min_history=3)
    old_slow_nights = nights(FAILOVER, [20.0, 20.0, 20.0, 5.0, 5.0, 5.0])
    judged, = judge({FAILOVER: 9.0}, {FAILOVER: "lower"}, old_slow_nights, rule)
    assert judged.earlier == [5.0, 5.0, 5.0] and judged.regressed


def test_the_history_file_round_trips_and_skips_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "figures.jsonl"
    for night in nights(FAILOVER, [6.0, 7.0]):
        append_night(path, night)
    path.write_text(path.read_text() + '{"at": "2026-11-0')
    read = read_history(path)
    assert [n.figures[FAILOVER] for n in read] == [6.0, 7.0] and read[1].run == "1" and read[0].better[FAILOVER] == "lower"


def test_from_ten_nights_a_moved_level_is_the_regression_and_a_single_bad_night_is_not() -> None:
    steady = [6.8, 7.0, 6.9, 6.7, 7.1, 6.8, 7.0, 6.9, 6.8, 7.0, 6.9]
    first_slow, = judge({FAILOVER: 9.4}, {FAILOVER: "lower"}, nights(FAILOVER, [*steady, 9.5]))
    assert first_slow.regressed and first_slow.moved is not None and first_slow.moved.after > 9
    assert "its level moved from 6.9 to 9.45 (a change point) over 13 nights" in first_slow.sentence()
    once, = judge({FAILOVER: 9.5}, {FAILOVER: "lower"}, nights(FAILOVER, steady))
    assert not once.regressed and once.by_median  # one bad night: the median rule alone would have cried wolf
    assert "no level change over 12 nights; the median rule alone says regressed" in once.sentence()


def test_a_level_change_alarms_once_not_every_night_after() -> None:
    steady = [6.8, 7.0, 6.9, 6.7, 7.1, 6.8, 7.0, 6.9, 6.8, 7.0, 6.9]
    later, = judge({FAILOVER: 9.5}, {FAILOVER: "lower"}, nights(FAILOVER, [*steady, 9.5, 9.4, 9.6]))
    assert not later.regressed  # alarmed two nights ago, when the level moved


def test_nights_measured_under_other_definitions_are_kept_but_never_compared(tmp_path: Path) -> None:
    path = tmp_path / "figures.jsonl"
    path.write_text("".join(f'{{"at": "2026-10-0{i}T02:00:00+00:00", "run": "old{i}", "figures": {{"{FAILOVER}": 20.0}}, '
                            f'"better": {{"{FAILOVER}": "lower"}}, "definitions": {FIGURE_DEFINITIONS + 1}}}\n'
                            for i in range(1, 5)))
    for night in nights(FAILOVER, [6.0, 6.2]):
        append_night(path, night)
    history = read_history(path)
    assert len(history) == 6 and [n.definitions for n in history[-2:]] == [FIGURE_DEFINITIONS] * 2
    tonight, = judge({FAILOVER: 19.0}, {FAILOVER: "lower"}, history)
    assert not tonight.judged and tonight.earlier == [6.0, 6.2], "four nights of another definition are not history"


def test_a_verdicts_interval_is_kept_as_its_figures_spread_and_a_doubled_spread_is_a_finding(tmp_path: Path) -> None:
    key = "S2 · disk group on esx-b1/0 · TPS after / before"
    def night(run: str, low: float, high: float) -> Night:
        return night_of([], run=run, verdicts=[("S2 · disk group on esx-b1/0",
                                                Judged("TPS after / before", (low + high) / 2, "", ">=", 0.8, "PASS",
                                                       low, high, 0.95, 60, "moving-block bootstrap"))])
    path = tmp_path / "figures.jsonl"
    for i in range(4):
        append_night(path, night(str(i), 0.90, 0.96))
    history = read_history(path)
    assert history[0].better[key] == "higher" and round(history[0].spread[key], 2) == 0.06
    wide = night("tonight", 0.81, 1.05)
    judged, = judge(wide.figures, wide.better, history, spread=wide.spread)
    assert judged.noisier is not None and round(judged.noisier, 1) == 4.0 and not judged.regressed
    assert "noisier: its 95 % interval is 4.0 times as wide as on its last nights" in judged.sentence()
    usual = night("usual", 0.89, 0.97)
    assert judge(usual.figures, usual.better, history, spread=usual.spread)[0].noisier is None


def test_a_duration_measured_once_is_kept_for_the_nights_after_and_a_borrowed_interval_is_no_spread() -> None:
    case = "S3 · site failure"
    once = Judged("failover duration", 6.1, "s", "<=", 30.0, "PASS", trial_figure=True)
    borrowed = Judged("failover duration", 6.1, "s", "<=", 30.0, "PASS", 5.2, 7.0, 0.95, 4,
                      "one trial tonight: the spread of the last nights' values", trial_figure=True,
                      interval_from_nights=True)
    a_flag = Judged("serving from the other site (1 = yes)", 1.0, "", ">=", 1.0, "PASS")
    for verdict in (once, borrowed):
        night = night_of([], verdicts=[(case, verdict), (case, a_flag)])
        assert night.figures == {f"{case} · failover duration": 6.1} and night.spread == {}
        assert night.better == {f"{case} · failover duration": "lower"}
    assert earlier_values([night_of([], verdicts=[(case, once)]), night_of([], verdicts=[(case, borrowed)])]) == \
        {f"{case} · failover duration": [6.1, 6.1]}
