"""Timeline plots: TPS and latency percentiles per second, fault windows shaded, events marked.

Figures are built on `matplotlib.figure.Figure` with the Agg canvas, never through pyplot,
so plotting from a pytest process leaves no global figure state behind and needs no display.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from harness_kernel.history import EventKind
from harness_kernel.history.series import MetricPoint, MetricSeries, SecondPoint, TransactionSeries
from harness_kernel.history.timeline import Timeline
from reports.fault_record import fault_windows

# Events a reader of the plot looks for, with the colour of their vertical line.
MARKED_EVENTS: dict[EventKind, str] = {
    EventKind.INJECT: "#c0392b",
    EventKind.IN_EFFECT: "#e67e22",
    EventKind.DETECTED: "#8e44ad",
    EventKind.PROMOTED: "#2c3e50",
    EventKind.HOST_FAILED: "#d35400",
    EventKind.VM_RESTARTED: "#1abc9c",
    EventKind.FIRST_COMMIT: "#27ae60",
    EventKind.REVERT: "#2980b9",
    EventKind.REVERTED: "#16a085",
    EventKind.REVERT_FAILED: "#7b0000",
    EventKind.RESYNC_DONE: "#7f8c8d",
    EventKind.STOP_CONDITION: "#000000",
}
_WINDOW_COLOURS = ("#f5b7b1", "#fad7a0", "#d2b4de", "#aed6f1")
_PERCENTILES = (("p50_ms", "p50", "#2e86c1"), ("p95_ms", "p95", "#d68910"), ("p99_ms", "p99", "#c0392b"))


@dataclass(frozen=True)
class PlotStyle:
    width_in: float = 12.0
    height_in: float = 4.6
    panel_height_in: float = 1.8
    dpi: int = 100


def _new_figure(style: PlotStyle, panels: int) -> tuple[Figure, list[Any]]:
    height = style.height_in + style.panel_height_in * (panels - 1)
    figure = Figure(figsize=(style.width_in, height), dpi=style.dpi, layout="constrained")
    FigureCanvasAgg(figure)
    ratios = [style.height_in] + [style.panel_height_in] * (panels - 1)
    axes = figure.subplots(panels, 1, sharex=True, squeeze=False, gridspec_kw={"height_ratios": ratios})
    return figure, [row[0] for row in axes]


def _x_range(timeline: Timeline, points: Sequence[SecondPoint], metrics: Sequence[MetricSeries]) -> tuple[float, float]:
    xs = [float(p.t) for p in points] + [float(p.t + p.seconds) for p in points[-1:]]
    xs += [e.t for e in timeline.events()] + [m.t for series in metrics for m in series.points()]
    return (min(xs), max(xs)) if xs else (0.0, 1.0)


def _shade_windows(axes: Sequence[Any], timeline: Timeline, x_end: float) -> None:
    """Shade each fault window on every panel; the label goes on the top panel only."""
    for index, window in enumerate(fault_windows(timeline)):
        colour = _WINDOW_COLOURS[index % len(_WINDOW_COLOURS)]
        end = window.end_or(x_end)
        for ax in axes:
            ax.axvspan(window.start, end, color=colour, alpha=0.35, lw=0, zorder=0)
        suffix = "" if window.end is not None else f" ({window.outcome})"
        axes[0].text((window.start + end) / 2, 0.985, window.label + suffix, transform=axes[0].get_xaxis_transform(),
                     ha="center", va="top", fontsize=8, fontweight="bold", color="#6e2c00", clip_on=True)
    for gap in timeline.events(EventKind.COMMIT_GAP):
        gap_start, gap_end = gap.attrs.get("start"), gap.attrs.get("end")
        if isinstance(gap_start, int | float) and isinstance(gap_end, int | float):
            for ax in axes:
                ax.axvspan(float(gap_start), float(gap_end), facecolor="none", hatch="///", edgecolor="#95a5a6", lw=0, zorder=0)


def _mark_events(axes: Sequence[Any], timeline: Timeline) -> None:
    """A vertical line per event; labels stagger downwards so close events stay readable."""
    marked = [e for e in timeline.events() if e.kind in MARKED_EVENTS]
    for index, event in enumerate(marked):
        colour = MARKED_EVENTS[event.kind]
        for ax in axes:
            ax.axvline(event.t, color=colour, lw=1.1, ls="--", alpha=0.9, zorder=3)
        y = 0.90 - 0.11 * (index % 6)
        axes[0].text(event.t, y, f" {event.kind} {event.t:.1f}s", transform=axes[0].get_xaxis_transform(),
                     rotation=0, ha="left", va="top", fontsize=7.5, color=colour, clip_on=True,
                     bbox={"facecolor": "white", "alpha": 0.75, "lw": 0, "pad": 0.5})


MAX_POINTS = 2400
"""The most points a line draws: a plot some 1,400 pixels wide shows no more, and a day's soak would otherwise
draw 86,400 (a bar each for its errors). A longer series is drawn from coarser points (counts averaged per
second, latency histograms merged), as the exports are; the analysis always reads every second."""


def drawn_points(series: TransactionSeries) -> list[SecondPoint]:
    """The points a plot draws of `series`: every second up to `MAX_POINTS` seconds, coarser beyond."""
    step = max(1, math.ceil(len(series) / MAX_POINTS))
    return series.points(step=step)


def drawn_samples(series: MetricSeries) -> list[MetricPoint]:
    points = series.points()
    span = points[-1].t - points[0].t if points else 0.0
    return series.resampled(span / MAX_POINTS) if len(points) > MAX_POINTS else points


BYTE_UNITS = ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1.0, "bytes"))


def readable_unit(unit: str, values: Sequence[float]) -> tuple[float, str]:
    """Bytes in the unit a person reads at this size (GB, MB, ...): the divisor and its name."""
    if unit != "bytes":
        return 1.0, unit
    peak = max((abs(v) for v in values), default=0.0)
    return next(((size, name) for size, name in BYTE_UNITS if peak >= size), (1.0, "bytes"))


def _metric_panels(axes: Sequence[Any], metrics: Sequence[MetricSeries]) -> None:
    for ax, series in zip(axes, metrics, strict=True):
        points = drawn_samples(series)
        scale, unit = readable_unit(series.unit, [p.value for p in points])
        ax.plot([p.t for p in points], [p.value / scale for p in points], color="#34495e", lw=1.3, marker=".", ms=3)
        ax.set_ylabel(f"{series.name}\n({unit})", fontsize=8)
        ax.grid(True, alpha=0.3)


def _finish(figure: Figure, axes: Sequence[Any], timeline: Timeline, title: str, x: tuple[float, float]) -> bytes:
    _shade_windows(axes, timeline, x[1])
    _mark_events(axes, timeline)
    axes[0].set_title(title, fontsize=11, loc="left")
    axes[0].set_xlim(*x)
    axes[-1].set_xlabel("seconds since run start")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def tps_timeline_png(timeline: Timeline, series: TransactionSeries, metrics: Sequence[MetricSeries] = (),
                     title: str = "Throughput", style: PlotStyle | None = None) -> bytes:
    """Commits and errors per second, with one extra panel per metric series (resync bytes, IOPS...)."""
    style = style or PlotStyle()
    points = drawn_points(series)
    figure, axes = _new_figure(style, 1 + len(metrics))
    ax = axes[0]
    ts = [p.t + p.seconds / 2 for p in points]
    tps, eps = [p.tps for p in points], [p.errors / p.seconds for p in points]
    ax.step(ts, tps, where="mid", color="#1f618d", lw=1.4, label="commits/s (TPS)")
    if any(p.errors for p in points):
        ax.bar(ts, eps, width=0.9 * points[0].seconds, color="#e74c3c", alpha=0.6, label="errors/s")
    ax.set_ylabel("transactions / s")
    ax.set_ylim(bottom=0, top=max([*tps, *eps, 1]) * 1.35)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower left", fontsize=8)
    _metric_panels(axes[1:], metrics)
    return _finish(figure, axes, timeline, title, _x_range(timeline, points, metrics))


def latency_timeline_png(timeline: Timeline, series: TransactionSeries, title: str = "Commit latency percentiles",
                         style: PlotStyle | None = None) -> bytes:
    """p50/p95/p99 per second; log scale when a failover makes the tail orders of magnitude longer."""
    style = style or PlotStyle()
    points = drawn_points(series)
    figure, axes = _new_figure(style, 1)
    ax = axes[0]
    values: list[float] = []
    for attr, name, colour in _PERCENTILES:
        ys = [getattr(p, attr) for p in points]
        ax.plot([p.t + p.seconds / 2 for p in points], [math.nan if y is None else y for y in ys], color=colour, lw=1.3,
                marker=".", ms=3, label=name)
        values += [y for y in ys if y is not None]
    if values and max(values) / max(min(values), 1e-6) > 50:
        ax.set_yscale("log")
    elif values:
        ax.set_ylim(bottom=0, top=max(values) * 1.35)
    ax.set_ylabel("latency (ms)")
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(loc="lower left", fontsize=8)
    return _finish(figure, axes, timeline, title, _x_range(timeline, points, ()))
