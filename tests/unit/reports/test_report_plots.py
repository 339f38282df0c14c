"""Plots from a recorded run: valid PNGs, one shaded window per fault, no pyplot state left behind."""

from __future__ import annotations

import io
import sys

import pytest
from matplotlib.image import imread

from harness_kernel.history import EventKind
from harness_kernel.history.series import MetricSeries
from harness_kernel.history.timeline import Timeline
from reports.fault_record import fault_record, fault_record_html, fault_windows
from reports.plots import latency_timeline_png, tps_timeline_png
from tests.unit.reports.recorded_run import RecordedRun, load_recorded_run

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def recorded_run() -> RecordedRun:
    return load_recorded_run()


def _shape(png: bytes) -> tuple[int, ...]:
    return tuple(imread(io.BytesIO(png), format="png").shape)


def test_tps_plot_with_metric_panel_is_taller(recorded_run: RecordedRun) -> None:
    resync = MetricSeries("resync left", "GB")
    resync.extend([(t, 10.0 - t) for t in range(8)])
    plain = tps_timeline_png(recorded_run.timeline, recorded_run.series)
    paneled = tps_timeline_png(recorded_run.timeline, recorded_run.series, [resync])
    assert plain.startswith(PNG_MAGIC) and paneled.startswith(PNG_MAGIC)
    assert _shape(paneled)[0] > _shape(plain)[0] > 300


def test_latency_plot_renders(recorded_run: RecordedRun) -> None:
    png = latency_timeline_png(recorded_run.timeline, recorded_run.series)
    assert png.startswith(PNG_MAGIC)
    assert _shape(png)[1] == 1200


def test_plotting_leaves_no_pyplot_figures(recorded_run: RecordedRun) -> None:
    tps_timeline_png(recorded_run.timeline, recorded_run.series)
    pyplot = sys.modules.get("matplotlib.pyplot")
    assert pyplot is None or not pyplot.get_fignums()


def test_fault_window_pairs_inject_with_reverted(recorded_run: RecordedRun) -> None:
    (window,) = fault_windows(recorded_run.timeline)
    assert window.label == "db-lock @ ledger.db"
    assert window.end is not None and 2.4 < window.end - window.start < 3.0
    assert window.params == {"mode": "exclusive"}
    (record,) = fault_record(recorded_run.timeline)
    assert record["outcome"] == "reverted" and record["start_wall"] > 1e9


def test_unreverted_fault_stays_open_and_is_flagged() -> None:
    timeline = Timeline(origin_monotonic=0.0, origin_wall=0.0)
    timeline.record(EventKind.INJECT, "runner", t=1.0, fault="link-cut", target="A-B")
    timeline.record(EventKind.REVERT_FAILED, "runner", t=5.0, fault="link-cut", target="A-B", error="router timeout")
    (window,) = fault_windows(timeline)
    assert window.end is None and window.outcome == "revert failed"
    assert "revert failed" in fault_record_html(timeline)
