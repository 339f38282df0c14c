"""A day's run is plotted from at most `MAX_POINTS` points a line, with every commit still counted."""

from __future__ import annotations

from harness_kernel.history.series import MetricSeries, TransactionSeries
from harness_kernel.history.timeline import Timeline
from reports.plots import MAX_POINTS, drawn_points, drawn_samples, latency_timeline_png, tps_timeline_png


def day_long() -> tuple[TransactionSeries, MetricSeries]:
    series, iops = TransactionSeries(), MetricSeries("I/O workload IOPS", "IO/s")
    for second in range(86_400):
        series.record(second + 0.5, 0.002 + (second % 7) * 0.001, ok=True)
        if second % 3600 == 0:
            series.record(second + 0.6, 0.0, ok=False, error_class="40001")
        iops.add(second + 0.5, 250.0 + second % 2)
    return series, iops


def test_a_days_series_is_drawn_from_at_most_max_points_with_every_commit_and_error_kept() -> None:
    series, iops = day_long()
    drawn = drawn_points(series)
    assert len(drawn) <= MAX_POINTS
    assert sum(p.commits for p in drawn) == 86_400 and sum(p.errors for p in drawn) == 24
    assert all(p.tps == 1.0 for p in drawn), "the rate is per second, whatever the point's width"
    samples = drawn_samples(iops)
    assert len(samples) <= MAX_POINTS + 1 and abs(sum(s.value for s in samples) / len(samples) - 250.5) < 0.01
    assert tps_timeline_png(Timeline(), series, [iops]).startswith(b"\x89PNG")
    assert latency_timeline_png(Timeline(), series).startswith(b"\x89PNG")


def test_a_short_run_is_drawn_second_by_second_but_its_last_partial_second() -> None:
    series = TransactionSeries()
    for second in range(600):
        series.record(second + 0.5, 0.003, ok=True)
    series.record(600.1, 0.003, ok=True)  # the workload stopped a tenth into second 600
    assert [(p.t, p.seconds, p.commits) for p in drawn_points(series)] == [(s, 1, 1) for s in range(600)]
