"""What a long N-1 soak costs the harness: its resident memory and its report's size, per hour of soak.

    .venv/bin/python benchmarks/soak_cost.py [--minutes 2] [--reference-minutes 0.5]

Runs S6's N-1 soak (mail workload and OLTP, the standby's host down throughout) on the embedded
lab twice, a short reference and the measured length, sampling the harness process's resident
memory (VmRSS of the pytest process) every few seconds, and builds each run's report. The cost
per hour is the difference between the two runs over the difference of their lengths (what the
soak adds, not what starting a run costs); the 24-hour figure extrapolates it linearly from the
measured run. Goals: under 500 MB resident and under 20 MB of report for 24 hours. Run it with
`--minutes 30` for a figure worth quoting; the default fits the benchmarks' three minutes.
It also prints the size of the series a synthetic 1-hour and 24-hour run attach (no lab needed),
which shows where the report's growth stops. Ends with: rss_mb_24h=<extrapolated> report_mb_24h=<extrapolated>.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reports.build import build_report  # noqa: E402

SOAK_TEST = "harness_suites/s6/test_s6_mixed_workloads.py::" \
            "test_the_mail_workload_is_held_for_a_whole_window_with_one_node_lost_and_not_replaced"
SAMPLE_S = 5.0
GOALS = {"rss_mb_24h": 500.0, "report_mb_24h": 20.0}


@dataclass(frozen=True)
class Run:
    soak_s: float
    wall_s: float
    rss_mb: list[tuple[float, float]]  # (seconds since start, resident MB) of the harness process
    report_mb: float  # the summary file the board opens, the Allure single file in it included
    results_mb: float  # the raw results the report is built from

    @property
    def peak_rss_mb(self) -> float:
        return max((mb for _, mb in self.rss_mb), default=0.0)

    def steady_growth_mb_per_h(self) -> float | None:
        """Least-squares slope of resident memory over the middle of the run (from a quarter to nine tenths of
        its wall time): what the soak itself adds, apart from start-up and the end's analysis."""
        middle = [(t, mb) for t, mb in self.rss_mb if 0.25 * self.wall_s <= t <= 0.9 * self.wall_s]
        if len(middle) < 3:
            return None
        mean_t = sum(t for t, _ in middle) / len(middle)
        mean_mb = sum(mb for _, mb in middle) / len(middle)
        spread = sum((t - mean_t) ** 2 for t, _ in middle)
        return 3600 * sum((t - mean_t) * (mb - mean_mb) for t, mb in middle) / spread if spread else None


def resident_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def size_mb(path: Path) -> float:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files) / 2**20


def soak(soak_s: float, workdir: Path, lab: str) -> Run:
    results = workdir / "results"
    command = [sys.executable, "-m", "pytest", SOAK_TEST, "-p", "no:cacheprovider", "--topology", lab,
               "--alluredir", str(results), "--clean-alluredir", "--tables-dir", str(workdir / "tables"),
               "--soak-s", str(soak_s), "--io-rate-iops", "200", "--settle-s", "8", "--quiet-progress", "-q"]
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    samples: list[tuple[float, float]] = []

    def sample() -> None:
        while process.poll() is None:
            mb = resident_mb(process.pid)
            if mb is not None:
                samples.append((time.monotonic() - started, mb))
            time.sleep(SAMPLE_S)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output, _ = process.communicate(timeout=soak_s + 1800)
    sampler.join(SAMPLE_S * 2)
    if process.returncode not in (0, 1):
        raise SystemExit(f"the soak run broke (exit {process.returncode}):\n{output[-3000:]}")
    report = build_report(results, workdir / "report", name="Soak cost")
    return Run(soak_s, time.monotonic() - started, samples, size_mb(report.summary_file), size_mb(results))


def exports_mb(seconds: int) -> float:
    """The size of the series a run of `seconds` attaches (metrics JSON, transactions CSV, sampled metrics CSV),
    for a synthetic run of that length: what the report carries per run, measured without the lab."""
    from harness_kernel.history.series import MetricSeries, TransactionSeries
    from reports.metrics_export import metric_series_csv, metrics_json, transactions_csv

    series, iops = TransactionSeries(), MetricSeries("I/O workload IOPS", "IO/s")
    for second in range(seconds):
        for k in range(20):  # a spread of latencies, so every second's histogram is realistic
            series.record(second + k / 20, 0.002 + 0.0005 * k, ok=True)
        iops.add(second + 0.5, 250.0)
    text = metrics_json(series, [iops]) + transactions_csv(series) + metric_series_csv([iops])
    return len(text.encode()) / 2**20


END_PHASE = """
import resource, sys
from harness_kernel.history.series import MetricSeries, TransactionSeries
from harness_kernel.history.timeline import Timeline
from harness.analysis.impact import impact
from reports.metrics_export import metric_series_csv, metrics_json, transactions_csv
from reports.plots import latency_timeline_png, tps_timeline_png

seconds = int(sys.argv[1])
series, iops = TransactionSeries(), MetricSeries("I/O workload IOPS", "IO/s")
for second in range(seconds):
    for k in range(20):
        series.record(second + k / 20, 0.002 + 0.0005 * k, ok=True)
    iops.add(second + 0.5, 250.0)
tps_timeline_png(Timeline(), TransactionSeries())  # matplotlib loaded before the baseline
held = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
impact(series.points(), seconds / 2, seconds / 2 + 30, baseline_s=10)
tps_timeline_png(Timeline(), series, [iops]); latency_timeline_png(Timeline(), series)
metrics_json(series, [iops]); transactions_csv(series); metric_series_csv([iops])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{held:.1f} {peak:.1f}")
"""


def end_phase_mb(seconds: int) -> tuple[float, float]:
    """(resident MB holding a synthetic run of `seconds`, what its end adds at peak: the analysis, both plots,
    the exports), in a process of its own so the high-water mark is this run's alone."""
    done = subprocess.run([sys.executable, "-c", END_PHASE, str(seconds)], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, check=True)
    held, peak = (float(x) for x in done.stdout.split())
    return held, peak - held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=2.0, help="the measured soak's length")
    parser.add_argument("--reference-minutes", type=float, default=0.5, help="the reference soak's length")
    parser.add_argument("--lab", default="lab:hsoak", help="the lab to soak (its own prefix: not the demo's)")
    parser.add_argument("--synthetic-only", action="store_true",
                        help="only the synthetic 1-hour and 24-hour figures (no lab)")
    args = parser.parse_args()
    if args.synthetic_only:
        synthetic_figures()
        return
    if args.minutes <= args.reference_minutes:
        raise SystemExit("--minutes must be longer than --reference-minutes")
    with tempfile.TemporaryDirectory(prefix="soak-cost-") as tmp:
        runs = [soak(m * 60, Path(tmp) / f"run-{i}", args.lab) for i, m in enumerate((args.reference_minutes, args.minutes))]
    reference, measured = runs
    hours = (measured.soak_s - reference.soak_s) / 3600
    rss_per_h = (measured.peak_rss_mb - reference.peak_rss_mb) / hours
    report_per_h = (measured.report_mb - reference.report_mb) / hours
    rest_h = 24 - measured.soak_s / 3600
    figures = {"rss_mb_24h": measured.peak_rss_mb + rss_per_h * rest_h,
               "report_mb_24h": measured.report_mb + report_per_h * rest_h}
    for run in runs:
        slope = run.steady_growth_mb_per_h()
        print(f"soak {run.soak_s / 60:g} min (wall {run.wall_s / 60:.1f} min): peak RSS {run.peak_rss_mb:.1f} MB, "
              f"growth while soaking {'n/a' if slope is None else f'{slope:+.1f} MB/h'}, "
              f"report {run.report_mb:.2f} MB, raw results {run.results_mb:.2f} MB, {len(run.rss_mb)} RSS samples")
    print(f"per hour of soak: RSS {rss_per_h:+.1f} MB, report {report_per_h:+.2f} MB")
    for name, value in figures.items():
        print(f"{name}: {value:.1f} (goal under {GOALS[name]:g}: {'met' if value < GOALS[name] else 'MISSED'})")
    day_end = synthetic_figures()
    slope = measured.steady_growth_mb_per_h()
    if slope is not None:
        plateau = min(mb for t, mb in measured.rss_mb if t >= 0.25 * measured.wall_s)
        by_parts = plateau + max(0.0, slope) * 24 + day_end
        print(f"rss_mb_24h by parts: {plateau:.1f} MB soaking + {slope:+.1f} MB/h x 24 h + {day_end:.1f} MB for a day's "
              f"end = {by_parts:.1f} (goal under {GOALS['rss_mb_24h']:g}: "
              f"{'met' if by_parts < GOALS['rss_mb_24h'] else 'MISSED'})")
    print(" ".join(f"{name}={value:.1f}" for name, value in figures.items()))


def synthetic_figures() -> float:
    """The report's and the run's end for a synthetic 1-hour and 24-hour run; returns the 24-hour end's MB."""
    hour, day = exports_mb(3600), exports_mb(86_400)
    print(f"series attached by a 1-hour run: {hour:.2f} MB; by a 24-hour run: {day:.2f} MB (exports are capped at an "
          "hour's rows per series, so the report stops growing with the run's length after an hour)")
    ends = {label: end_phase_mb(seconds) for label, seconds in (("30-minute", 1800), ("1-hour", 3600), ("24-hour", 86_400))}
    for label, (held, end) in ends.items():
        print(f"a {label} run's series held: {held:.1f} MB resident; its end (analysis, plots, exports) adds {end:.1f} MB "
              "at peak")
    return ends["24-hour"][1]


if __name__ == "__main__":
    main()
