"""Parse fio's per-interval logs (write_iops_log / write_bw_log / write_lat_log) into series.

With `log_avg_msec=1000` and `log_unix_epoch=1` each line is one averaged second:
`<end of window, unix ms>, <value>, <direction 0=read 1=write 2=trim>, <bs>, <offset>[, <prio>]`.
iops values are I/O per second, bw KiB/s, lat (total latency) nanoseconds. A point is placed at
the start of its window, as the transaction series does with its seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness_kernel.history.series import MetricSeries
from harness_kernel.history.timeline import Timeline

DIRECTIONS = {0: "read", 1: "write"}
# log kind -> (metric, unit, scale from the file's unit)
LOG_KINDS = {"iops": ("iops", "IO/s", 1.0), "bw": ("bw", "KiB/s", 1.0), "lat": ("lat", "ms", 1e-6)}


@dataclass(frozen=True)
class LogSample:
    end_ms: int
    value: float
    direction: int


def parse_log(text: str, window_ms: int = 1000) -> list[LogSample]:
    """Samples in file order, without the partial window fio flushes at exit (it would read
    as one more second of load)."""
    samples: list[LogSample] = []
    last_end: dict[int, int] = {}
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 3 or not fields[0]:
            continue
        sample = LogSample(int(fields[0]), float(fields[1]), int(fields[2]))
        previous = last_end.get(sample.direction)
        if previous is not None and sample.end_ms - previous < window_ms // 2:
            continue
        last_end[sample.direction] = sample.end_ms
        samples.append(sample)
    return samples


def log_path(prefix: Path, kind: str, suffix: str = "", job_index: int = 1) -> Path:
    """fio names logs `<prefix>_<kind>.<job index>.log`; a client run adds `.<server address>`."""
    return prefix.with_name(f"{prefix.name}_{kind}.{job_index}.log{suffix}")


@dataclass
class FioSeries:
    """One fio process's per-second metrics, by name `<direction>_<metric>`, e.g. `write_iops`."""

    name: str
    metrics: dict[str, MetricSeries]

    def __getitem__(self, key: str) -> MetricSeries:
        return self.metrics[key]

    def seconds(self) -> int:
        return max((len(m.points()) for m in self.metrics.values()), default=0)


def load_series(prefix: Path, name: str, timeline: Timeline, suffix: str = "", jobs: int = 1,
                job_indices: Sequence[int] | None = None) -> FioSeries:
    """Read the iops/bw/lat logs of one fio process's jobs (all `jobs`, or those of `job_indices`); jobs'
    samples add up per second (latencies are averaged over jobs)."""
    metrics: dict[str, MetricSeries] = {}
    for kind, (metric, unit, scale) in LOG_KINDS.items():
        per_second: dict[tuple[int, int], list[tuple[int, float]]] = {}
        for job in job_indices or range(1, jobs + 1):
            path = log_path(prefix, kind, suffix, job)
            for sample in parse_log(path.read_text()) if path.exists() else []:
                key = (round(sample.end_ms / 1000.0), sample.direction)
                per_second.setdefault(key, []).append((sample.end_ms, sample.value * scale))
        for direction, label in DIRECTIONS.items():
            series = MetricSeries(f"{name}.{label}_{metric}", unit)
            for (_, d), samples in sorted(per_second.items()):
                if d == direction:
                    values = [v for _, v in samples]
                    value = sum(values) / len(values) if kind == "lat" else sum(values)
                    window_end = sum(ms for ms, _ in samples) / len(samples) / 1000.0
                    series.add(timeline.t_of_wall(window_end - 1.0), value)
            metrics[f"{label}_{metric}"] = series
    return FioSeries(name, metrics)
