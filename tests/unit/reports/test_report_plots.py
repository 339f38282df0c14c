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
from reports.plots import (
    FLOOR_COLOUR,
    RISK_COLOUR,
    Threshold,
    event_rows,
    latency_timeline_png,
    readable_unit,
    tps_timeline_png,
)
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


def _pixels_near(png: bytes, colour: str, tolerance: float = 0.06) -> int:
    image = imread(io.BytesIO(png), format="png")[..., :3]
    target = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    return int((abs(image - target).max(axis=-1) < tolerance).sum())


def test_the_time_at_risk_is_a_band_on_the_plot(recorded_run: RecordedRun) -> None:
    plain = tps_timeline_png(recorded_run.timeline, recorded_run.series)
    recorded_run.timeline.record(EventKind.REDUCED_REDUNDANCY, "cluster", t=1.0, start=1.0, end=4.0, fewest=1,
                                 promised=2, states="node-b wait_primary", restored_states="")
    banded = tps_timeline_png(recorded_run.timeline, recorded_run.series)
    assert _pixels_near(plain, RISK_COLOUR) < 50 < _pixels_near(banded, RISK_COLOUR)


def test_event_labels_take_rows_so_that_none_overlaps() -> None:
    labelled = [(10.0, 20), (10.5, 20), (11.0, 20), (60.0, 20), (60.2, 20), (99.0, 20)]
    rows = event_rows(labelled, (0.0, 100.0))
    assert rows[:3] == [0, 1, 2]  # three labels within a second: three rows
    assert rows[3] == 0 and rows[4] == 1  # the first row is free again 50 s later
    assert rows[5] == 0  # near the right edge the label is drawn leftwards; 99 - 10.4 is past the row's last end


def test_bytes_are_drawn_in_gb_whatever_their_size() -> None:
    assert readable_unit("bytes", [850e3]) == (1e9, "GB") == readable_unit("bytes", [2.05e9])
    assert readable_unit("IOPS", [100.0]) == (1.0, "IOPS")


def test_a_fault_windows_legend_names_the_step_it_shades() -> None:
    timeline = Timeline(origin_monotonic=0.0, origin_wall=0.0)
    timeline.record(EventKind.INJECT, "runner", t=1.0, fault="latency", target="link:a~b", rtt_ms=4, instance="x1")
    (window,) = fault_windows(timeline)
    assert window.legend == "latency @ link:a~b (rtt_ms=4)"


def test_the_revert_takes_from_its_start_to_the_fault_seen_cleared() -> None:
    timeline = Timeline(origin_monotonic=0.0, origin_wall=0.0)
    timeline.record(EventKind.INJECT, "runner", t=1.0, fault="host-crash", target="host:host-a")
    timeline.record(EventKind.REVERT, "runner", t=30.0, fault="host-crash", target="host:host-a")
    timeline.record(EventKind.REVERTED, "runner", t=87.0, fault="host-crash", target="host:host-a")
    (window,) = fault_windows(timeline)
    assert window.revert_s == 57.0


def test_the_tps_floor_is_a_line_on_the_throughput_plot(recorded_run: RecordedRun) -> None:
    plain = tps_timeline_png(recorded_run.timeline, recorded_run.series)
    floored = tps_timeline_png(recorded_run.timeline, recorded_run.series,
                               floor=Threshold("threshold: 80 % of the first baseline's 145 TPS", 116.0))
    assert _pixels_near(plain, FLOOR_COLOUR, 0.15) < 20 < _pixels_near(floored, FLOOR_COLOUR, 0.15)
