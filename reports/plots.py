"""Timeline plots: TPS and latency percentiles per second, fault windows shaded, events marked.

Figures are built on `matplotlib.figure.Figure` with the Agg canvas, never through pyplot,
so plotting from a pytest process leaves no global figure state behind and needs no display.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from harness_kernel.history import EventKind
from harness_kernel.history.series import MetricPoint, MetricSeries, SecondPoint, TransactionSeries
from harness_kernel.history.timeline import Timeline
from reports.fault_record import fault_windows
from reports.metro_states import StateSpan, metro_spans, weight

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
class Threshold:
    """A level a scenario is judged against, drawn as a horizontal line with its name in the legend."""

    name: str
    value: float


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


RISK_COLOUR = "#922b21"
FLOOR_COLOUR = "#6c3483"
GAP_EDGE = "#95a5a6"
_RISK_STRIP = 0.06  # the reduced-redundancy band: a strip along the bottom of every panel


def _shade_windows(axes: Sequence[Any], timeline: Timeline, x_end: float) -> list[Any]:
    """Shade each fault window, each commit gap and each span with fewer in-sync copies than promised on every
    panel; their names go to the legend (labels inside the plot would cover each other when windows are close)."""
    handles: list[Any] = []
    for index, window in enumerate(fault_windows(timeline)):
        colour = _WINDOW_COLOURS[index % len(_WINDOW_COLOURS)]
        end = window.end_or(x_end)
        for ax in axes:
            ax.axvspan(window.start, end, color=colour, alpha=0.35, lw=0, zorder=0)
        suffix = "" if window.end is not None else f" ({window.outcome})"
        handles.append(Patch(color=colour, alpha=0.35, label=f"fault: {window.legend}{suffix}"))
    gaps = [(g.attrs.get("start"), g.attrs.get("end")) for g in timeline.events(EventKind.COMMIT_GAP)]
    for gap_start, gap_end in gaps:
        if isinstance(gap_start, int | float):  # a gap still open when the workload stopped runs to the plot's end
            stop = float(gap_end) if isinstance(gap_end, int | float) else x_end
            for ax in axes:
                ax.axvspan(float(gap_start), stop, facecolor="none", hatch="///", edgecolor=GAP_EDGE, lw=0, zorder=0)
    if gaps:
        handles.append(Patch(facecolor="none", hatch="///", edgecolor=GAP_EDGE, lw=0, label="no commit (commit gap)"))
    spans = timeline.events(EventKind.REDUCED_REDUNDANCY)
    for span in spans:
        risk_start, risk_end = span.attrs.get("start"), span.attrs.get("end")
        if isinstance(risk_start, int | float):  # the event's attrs are untyped JSON
            stop = float(risk_end) if isinstance(risk_end, int | float) else x_end
            for ax in axes:
                ax.axvspan(float(risk_start), stop, ymin=0, ymax=_RISK_STRIP, color=RISK_COLOUR, lw=0, zorder=4)
    if spans:
        handles.append(Patch(color=RISK_COLOUR,
                             label="time at risk: fewer in-sync copies than before the fault (the cluster's probe)"))
    return handles


def event_rows(labelled: Sequence[tuple[float, int]], x: tuple[float, float], rows: int = 8) -> list[int]:
    """A row for each event label (time, characters) so that no two labels in a row overlap: each takes the first
    row whose last label ends before it starts. Widths are estimated from the characters (7.5 pt on a 12 in
    plot: about 0.5 % of the axis each)."""
    span = max(x[1] - x[0], 1e-9)
    ends = [-math.inf] * rows
    chosen = []
    for t, chars in labelled:
        width = chars * 0.0052 * span
        left = t - width if _near_right(t, x) else t
        row = next((r for r in range(rows) if ends[r] < left), min(range(rows), key=lambda r: ends[r]))
        ends[row] = left + width
        chosen.append(row)
    return chosen


def _near_right(t: float, x: tuple[float, float]) -> bool:
    """A label this close to the right edge is drawn leftwards, so it stays on the axes."""
    return t > x[0] + 0.72 * (x[1] - x[0])


def _mark_events(axes: Sequence[Any], timeline: Timeline, x: tuple[float, float]) -> None:
    """A vertical line per event, its label in the first row where it overlaps no other label."""
    marked = [e for e in timeline.events() if e.kind in MARKED_EVENTS]
    texts = [f" {event.kind} {event.t:.1f}s " for event in marked]
    rows = event_rows([(e.t, len(text)) for e, text in zip(marked, texts, strict=True)], x)
    for event, text, row in zip(marked, texts, rows, strict=True):
        colour = MARKED_EVENTS[event.kind]
        for ax in axes:
            ax.axvline(event.t, color=colour, lw=1.1, ls="--", alpha=0.9, zorder=3)
        axes[0].text(event.t, 0.97 - 0.085 * row, text, transform=axes[0].get_xaxis_transform(),
                     ha="right" if _near_right(event.t, x) else "left", va="top", fontsize=7.5, color=colour,
                     clip_on=True, bbox={"facecolor": "white", "alpha": 0.75, "lw": 0, "pad": 0.5})


MAX_POINTS = 2400
"""The most points a line draws: a plot some 1,400 pixels wide shows no more, and a day's soak would otherwise
draw 86,400 (a bar each for its errors). A longer series is drawn from coarser points (counts averaged per
second, latency histograms merged), as the exports are; the analysis always reads every second."""


def drawn_points(series: TransactionSeries) -> list[SecondPoint]:
    """The points a plot draws of `series`: every second up to `MAX_POINTS` seconds, but the last (the workload
    stopped somewhere inside it: its few commits would draw a cliff that never was); coarser beyond, where a point
    averages many seconds and keeps every commit."""
    step = max(1, math.ceil(len(series) / MAX_POINTS))
    points = series.points(step=step)
    return points[:-1] if step == 1 and len(points) > 1 else points


def drawn_samples(series: MetricSeries) -> list[MetricPoint]:
    points = series.points()
    span = points[-1].t - points[0].t if points else 0.0
    return series.resampled(span / MAX_POINTS) if len(points) > MAX_POINTS else points


GB = 1e9


def readable_unit(unit: str, values: Sequence[float]) -> tuple[float, str]:
    """Bytes always in GB, as the tables give a resync: one unit per quantity across every plot of a night (an
    850 kB blip in kB beside a 2 GB resync in GB reads as the larger of the two). The divisor and its name."""
    return (GB, "GB") if unit == "bytes" else (1.0, unit)


def _metric_panels(axes: Sequence[Any], metrics: Sequence[MetricSeries]) -> None:
    for ax, series in zip(axes, metrics, strict=True):
        points = drawn_samples(series)
        scale, unit = readable_unit(series.unit, [p.value for p in points])
        ax.plot([p.t for p in points], [p.value / scale for p in points], color="#34495e", lw=1.3, marker=".", ms=3)
        ax.set_ylabel(f"{series.name}\n({unit})", fontsize=8)
        ax.grid(True, alpha=0.3)


METRO_COLOURS = {"good": "#27ae60", "waiting": "#5dade2", "bad": "#c0392b", "unknown": "#bdc3c7"}
METRO_LEGEND = {"good": "in sync / up / serving / reachable", "waiting": "resyncing / partial / standby",
                "bad": "fractured / down / suspended / unreachable", "unknown": "unknown (or a word not mapped)"}


def _metro_panel(ax: Any, spans: Sequence[StateSpan], x_end: float) -> list[Any]:
    """What the storage decided, a row each (replica, link, each site serving and reaching the arbiter), its
    states as coloured spans with their words: read by the metro observer, never scripted."""
    groups = {(s.source, s.group) for s in spans}
    rows = list(dict.fromkeys((s.source, s.group, s.row) for s in spans))
    for index, (source, group, row) in enumerate(rows):
        for span in (s for s in spans if (s.source, s.group, s.row) == (source, group, row)):
            end = span.end if span.end is not None else x_end
            ax.broken_barh([(span.start, end - span.start)], (index - 0.4, 0.8),
                           facecolors=METRO_COLOURS[weight(span.state)], edgecolor="white", lw=0.5, zorder=2)
            ax.text(span.start + 0.2, index, span.state, va="center", ha="left", fontsize=6.5, clip_on=True, zorder=3)
    ax.set_yticks(range(len(rows)),
                  [row if len(groups) == 1 else f"{group}: {row}" for _, group, row in rows], fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_ylabel("storage decided\n(metro observer)", fontsize=8)
    ax.grid(True, axis="x", alpha=0.3)
    shown = dict.fromkeys(weight(s.state) for s in spans)
    return [Patch(color=METRO_COLOURS[w], label=f"storage: {METRO_LEGEND[w]}") for w in METRO_COLOURS if w in shown]


def _finish(figure: Figure, axes: Sequence[Any], timeline: Timeline, title: str, x: tuple[float, float],
            extra: Sequence[Any] = ()) -> bytes:
    handles = [*_shade_windows(axes, timeline, x[1]), *extra]
    _mark_events(axes, timeline, x)
    lines, _ = axes[0].get_legend_handles_labels()
    figure.legend(handles=[*lines, *handles], loc="outside lower center", ncols=min(3, len(lines) + len(handles)),
                  fontsize=8, frameon=False)
    axes[0].set_title(title, fontsize=11, loc="left")
    axes[0].set_xlim(*x)
    axes[-1].set_xlabel("seconds since the run started")
    _utc_axis(axes[0], timeline)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _utc_axis(ax: Any, timeline: Timeline) -> None:
    """Wall-clock time in UTC along the top, to match the cluster's own logs."""
    origin = timeline.origin_wall
    top = ax.secondary_xaxis("top", functions=(lambda t: t + origin, lambda wall: wall - origin))
    top.xaxis.set_major_formatter(FuncFormatter(
        lambda wall, _: datetime.fromtimestamp(wall, tz=UTC).strftime("%H:%M:%S")))
    top.set_xlabel("UTC", fontsize=8)
    top.tick_params(labelsize=8)


def tps_timeline_png(timeline: Timeline, series: TransactionSeries, metrics: Sequence[MetricSeries] = (),
                     title: str = "Throughput", style: PlotStyle | None = None, floor: Threshold | None = None) -> bytes:
    """Commits and errors per second, with one extra panel per metric series (resync bytes, IOPS...)."""
    style = style or PlotStyle()
    points = drawn_points(series)
    spans = metro_spans(timeline)
    figure, axes = _new_figure(style, 1 + len(metrics) + (1 if spans else 0))
    ax = axes[0]
    ts = [p.t + p.seconds / 2 for p in points]
    tps, eps = [p.tps for p in points], [p.errors / p.seconds for p in points]
    ax.step(ts, tps, where="mid", color="#1f618d", lw=1.4, label="commits/s (TPS)")
    if any(p.errors for p in points):
        ax.bar(ts, eps, width=0.9 * points[0].seconds, color="#e74c3c", alpha=0.6, label="errors/s")
    if floor is not None:
        ax.axhline(floor.value, color=FLOOR_COLOUR, lw=1.2, ls=(0, (6, 3)), zorder=2, label=floor.name)
    ax.set_ylabel("transactions / s")
    ax.set_ylim(bottom=0, top=max([*tps, *eps, 1]) * 1.35)
    ax.grid(True, alpha=0.3)
    _metric_panels(axes[1:1 + len(metrics)], metrics)
    x = _x_range(timeline, points, metrics)
    metro = _metro_panel(axes[-1], spans, x[1]) if spans else []
    return _finish(figure, axes, timeline, title, x, metro)


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
    return _finish(figure, axes, timeline, title, _x_range(timeline, points, ()))
