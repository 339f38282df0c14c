"""A long run's series are exported coarser so the report stays small; counts and percentiles stay true."""

from __future__ import annotations

import csv
import dataclasses
import io
import json

import pytest

from harness_kernel.history.series import MetricSeries, TransactionSeries
from reports.metrics_export import MAX_ROWS, metric_series_csv, metrics_json, step_for, transactions_csv
from workloads.base import LedgerReport

DAY = 86_400


def day_of_transactions() -> TransactionSeries:
    series = TransactionSeries()
    for second in range(DAY):
        series.record(second + 0.5, 0.004 if second % 100 else 0.400, ok=True)  # one slow commit in a hundred
        series.record(second + 0.6, 0.004, ok=True)
    return series


def test_an_hour_is_exported_second_by_second_and_a_day_in_at_most_an_hours_rows() -> None:
    assert step_for(3600) == 1 and step_for(3601) == 2 and step_for(DAY) == 24
    rows = list(csv.DictReader(io.StringIO(transactions_csv(day_of_transactions()))))
    assert len(rows) == DAY // 24 <= MAX_ROWS


def test_coarser_points_keep_every_commit_and_merge_the_latency_histograms() -> None:
    points = json.loads(metrics_json(day_of_transactions()))["transactions"]["points"]
    assert sum(p["tps"] * p["seconds"] for p in points) == pytest.approx(2 * DAY)
    assert {p["tps"] for p in points} == {2.0}
    first = points[0]  # seconds 0-23: 48 commits, one of them the 400 ms one
    assert first["p50_ms"] == pytest.approx(4.0, rel=0.05) and first["p99_ms"] == pytest.approx(400.0, rel=0.05)


def test_a_short_run_is_exported_exactly_as_before() -> None:
    series = TransactionSeries()
    for second in range(60):
        series.record(second + 0.5, 0.004, ok=True)
    points = json.loads(metrics_json(series))["transactions"]["points"]
    assert len(points) == 60 and "seconds" not in points[0] and points[0]["tps"] == 1


def test_sampled_metrics_are_averaged_over_the_same_step() -> None:
    iops = MetricSeries("I/O workload IOPS", "IO/s")
    iops.extend((t + 0.25, 100.0 + t % 2) for t in range(DAY))
    rows = list(csv.DictReader(io.StringIO(metric_series_csv([iops]))))
    assert len(rows) <= MAX_ROWS + 1
    assert {float(r["value"]) for r in rows} == {100.5}


def test_the_ledgers_books_are_exported_whole_beside_the_series() -> None:
    books = dataclasses.asdict(LedgerReport(acknowledged=120, acknowledged_present=115, lost_count=5, failed=2,
                                            failed_present_count=1, lost=[7, 8, 9, 10, 11], failed_present=[40],
                                            short_ranges=[(0, 0, 11, 5)]))
    exported = json.loads(metrics_json(TransactionSeries(), ledger=books))["ledger"]
    assert exported["acknowledged"] == exported["acknowledged_present"] + exported["lost_count"]
    assert exported["short_ranges"] == [[0, 0, 11, 5]] and exported["lost"] == [7, 8, 9, 10, 11]
    assert json.loads(metrics_json(TransactionSeries()))["ledger"] is None, "no ledger: said, not omitted"
