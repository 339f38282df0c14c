"""The measured series as JSON and CSV, so numbers behind every plot can be re-analysed.

A series longer than MAX_ROWS points (a soak: 86,400 seconds a day) is exported one point per
`step` seconds, so the report's size stays bounded: counts are summed and latency histograms
merged (percentiles stay exact to a bin), sampled metrics averaged. The plots are drawn from the
full series; the commit ledger's books are exported whole (its totals, and the ranges missing commits).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from harness_kernel.history.series import MetricSeries, TransactionSeries

_TX_FIELDS = ("t", "tps", "errors", "p50_ms", "p95_ms", "p99_ms")
MAX_ROWS = 3600  # per series: an hour of seconds; a longer run is exported coarser


def step_for(seconds: float) -> int:
    """Seconds per exported point for a series spanning `seconds`: 1 up to an hour, then enough to stay under MAX_ROWS."""
    return max(1, math.ceil(seconds / MAX_ROWS))


def _span(metric: MetricSeries) -> float:
    points = metric.points()
    return points[-1].t - points[0].t if points else 0.0


def metrics_json(series: TransactionSeries, metrics: Sequence[MetricSeries] = (),
                 commit_gaps: Sequence[tuple[float, float]] = (), ledger: Mapping[str, Any] | None = None) -> str:
    """The series, the workload's commit gaps (start, end on the timeline; end null: open at the stop) and the
    commit ledger's books (acknowledged, present, lost and the ranges they are missing from: null without a
    ledger), so anyone can count them again."""
    step = step_for(len(series))
    return json.dumps({"transactions": {"name": series.name, "points": [p.to_dict() for p in series.points(step=step)]},
                       "metrics": [m.to_dict(step_for(_span(m))) for m in metrics],
                       "commit_gaps": [{"start": start, "end": None if math.isinf(end) else end}
                                       for start, end in commit_gaps],
                       "ledger": None if ledger is None else dict(ledger)}, indent=1)


def transactions_csv(series: TransactionSeries) -> str:
    """One row per second (per `seconds` of a long run, see MAX_ROWS); error classes are flattened as
    `class=count;...`."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*_TX_FIELDS, "error_classes"])
    for p in series.points(step=step_for(len(series))):
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
        for point in m.resampled(step_for(_span(m))):
            writer.writerow([m.name, m.unit, point.t, point.value])
    return out.getvalue()
