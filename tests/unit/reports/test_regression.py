"""The nightly regression verdict: worse than the recent median by more than the noise band, once there is history."""

from __future__ import annotations

from pathlib import Path

from reports.regression import Night, RegressionRule, append_night, judge, read_history
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
