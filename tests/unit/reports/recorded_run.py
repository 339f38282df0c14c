"""Recorded data for the report unit tests: a real run (SQLite ledger under a lock) replayed from JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline

RECORDED = Path(__file__).parent / "data" / "ledger_lock_run.json"


@dataclass(frozen=True)
class RecordedRun:
    timeline: Timeline
    series: TransactionSeries


def load_recorded_run() -> RecordedRun:
    data = json.loads(RECORDED.read_text())
    series = TransactionSeries()
    for t_end, latency_s, ok in data["transactions"]:
        series.record(t_end, latency_s, ok, None if ok else "database-locked")
    return RecordedRun(Timeline.from_dict(data["timeline"]), series)
