"""Regressions as a moved level, found night by night: one wobbly night is not a regression, a step is."""

from __future__ import annotations

import numpy as np

from reports.changepoints import Detector, alarms, noise_scale, segment


def test_a_clean_step_is_one_change_point_where_the_new_level_begins() -> None:
    values = [10.0, 10.2, 9.9, 10.1, 9.8, 10.0, 13.1, 12.9, 13.2, 13.0, 12.8]
    assert segment(values) == [6]


def test_one_outlier_night_is_not_a_level_of_its_own() -> None:
    values = [10.0, 10.2, 9.9, 10.1, 19.5, 10.0, 9.8, 10.2, 10.1, 9.9]
    assert segment(values) == []
    assert alarms(values, "lower", start=4) == []


def test_the_alarm_comes_the_night_after_the_step_once_and_names_both_levels() -> None:
    values = [10.0, 10.2, 9.9, 10.1, 9.8, 10.0, 10.1, 9.9, 13.1, 12.9, 13.2, 13.0, 12.8, 13.1]
    [alarm] = alarms(values, "lower", floor=1.0)
    assert (alarm.night, alarm.change_at) == (9, 8)  # the second night at the new level
    assert (alarm.before, alarm.after) == (10.0, 13.0)  # the levels as that night saw them


def test_a_step_in_the_better_direction_or_under_the_floor_is_no_regression() -> None:
    better = [10.0, 10.2, 9.9, 10.1, 9.8, 10.0, 10.1, 9.9, 7.1, 6.9, 7.2, 7.0]
    assert alarms(better, "lower", floor=1.0) == []
    assert len(alarms(better, "higher", floor=1.0)) == 1  # a throughput that fell
    small = [10.0, 10.02, 9.99, 10.01, 9.98, 10.0, 10.01, 9.99, 10.5, 10.49, 10.52, 10.5]
    assert alarms(small, "lower", floor=1.0) == []  # 0.5 moved, 1.0 matters


def test_the_noise_scale_is_not_moved_by_a_step() -> None:
    flat = [10.0, 11.0, 10.0, 11.0, 10.0, 11.0, 10.0, 11.0]
    stepped = flat[:4] + [v + 30 for v in flat[4:]]
    assert noise_scale(stepped) == noise_scale(flat)


def test_on_held_out_seeds_a_30_percent_step_is_found_within_3_nights_and_quiet_histories_rarely_alarm() -> None:
    """A small run of benchmarks/changepoint_eval.py's protocol (the benchmark runs 50 seeds)."""
    def history(seed: int, step: bool) -> list[float]:
        rng = np.random.default_rng(seed)
        values = 10.0 + rng.standard_t(3, 40) / np.sqrt(3)
        outliers = rng.random(40) < 0.05
        values[outliers] += rng.choice([-1.0, 1.0], int(outliers.sum())) * 4.0
        if step:
            values[20:] += 3.0
        return list(values)
    delays = []
    for seed in range(3000, 3010):
        found = [a for a in alarms(history(seed, True), "lower", floor=1.0) if a.night >= 20 and a.change_at >= 17]
        delays.append(found[0].night - 20 if found else 99)
    false = sum(len(alarms(history(seed + 1_000_000, False), "lower", floor=1.0)) for seed in range(3000, 3010))
    print(f"\ndelays {delays}; false alarms {false} in {10 * 34} quiet nights")
    assert sum(d <= 3 for d in delays) >= 8 and false <= 6  # the benchmark: 48 of 50, 0.83 per 100 nights
    assert Detector().recent >= 3  # "within 3 nights" needs the alarm window to reach that far
