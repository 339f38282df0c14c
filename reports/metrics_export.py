"""The measured series as JSON and CSV, so numbers behind every plot can be re-analysed."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from harness.history.series import MetricSeries, TransactionSeries

_TX_FIELDS = ("t", "tps", "errors", "p50_ms", "p95_ms", "p99_ms")


def metrics_json(series: TransactionSeries, metrics: Sequence[MetricSeries] = ()) -> str:
    return json.dumps({"transactions": {"name": series.name, "points": [p.to_dict() for p in series.points()]},
                       "metrics": [m.to_dict() for m in metrics]}, indent=1)


def transactions_csv(series: TransactionSeries) -> str:
    """One row per second; error classes are flattened as `class=count;...`."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*_TX_FIELDS, "error_classes"])
    for p in series.points():
        row = p.to_dict()
        classes = ";".join(f"{k}={v}" for k, v in sorted(p.error_classes.items()))
        writer.writerow([*("" if row[f] is None else row[f] for f in _TX_FIELDS), classes])
    return out.getvalue()


def metric_series_csv(metrics: Sequence[MetricSeries]) -> str:
    """Long format (series, unit, t, value): any number of sampled metrics in one file."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["series", "unit", "t", "value"])
    for m in metrics:
        for point in m.points():
            writer.writerow([m.name, m.unit, point.t, point.value])
    return out.getvalue()
