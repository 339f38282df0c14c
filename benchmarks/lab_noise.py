"""The lab's own noise: each demo suite K times at the demo's settings, every figure's spread and the smallest
change a night can tell from it.

Runs `python -m harness demo --no-pdf` K times (with `--suite`, only those suites: `-k` on their
modules), each into its own folder, then reads every run's scenario records from its Allure
results. Prints per key figure and per verdict on an estimate: the K values, median, standard
deviation, coefficient of variation, and the smallest detectable change between two nights,
1.96 x sqrt(2) x the standard deviation (a change smaller than that is within the lab's noise at
these windows); then the verdicts run by run with their interval widths, and whether any differs.
A documented long one (about 10 minutes a run; `--suite S4 --k 3` takes about 4):

    .venv/bin/python benchmarks/lab_noise.py [--k 3] [--suite S4 --suite S6] [--out /tmp/lab-noise]
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reports.allure.results_read import read_tests  # noqa: E402

MODULES = {"S1": "test_s1_latency_sweep", "S2": "test_s2_component_failures", "S3": "test_s3_site_failure",
           "S4": "test_s4_application_failover", "S5": "test_s5_live_migration", "S6": "test_s6_mixed_workloads",
           "S7": "test_s7_backup_under_load"}
SDC = 1.96 * math.sqrt(2)  # two single measurements differ by more than SDC x sd in 5 % of pairs


def run_demo(out: Path, suites: list[str]) -> int:
    selected = ["-k", " or ".join(MODULES[s] for s in suites)] if suites else []
    run = subprocess.run([sys.executable, "-m", "harness", "demo", "--out", str(out), "--no-pdf", *selected],
                         cwd=ROOT, capture_output=True, text=True, timeout=3600, check=False)
    (out / "demo.log").write_text(run.stdout + run.stderr)
    return run.returncode


def collect(out: Path) -> tuple[dict[str, float], dict[str, tuple[str, str]]]:
    """A run's key figures (key -> value) and its verdicts (test · name -> outcome, the estimate with its 95 %
    interval and width)."""
    figures: dict[str, float] = {}
    verdicts: dict[str, tuple[str, str]] = {}
    for test in read_tests(out / "allure-results"):
        if test.record is None:
            continue
        figures.update({f.key: f.value for f in test.record.figures if f.provenance == "measured"})
        for v in test.record.verdicts:
            shown = "" if v.high is None or v.low is None or v.value is None else \
                f" {v.value:.3f} [{v.low:.3f}, {v.high:.3f}] (width {v.high - v.low:.3f})"
            verdicts[f"{test.record.title} · {v.name}"] = (v.outcome, shown)
    return figures, verdicts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=3, help="runs of each suite")
    parser.add_argument("--suite", action="append", choices=sorted(MODULES), default=[], help="only these suites")
    parser.add_argument("--out", type=Path, default=Path("/tmp/lab-noise"))
    parser.add_argument("--runs", type=Path, nargs="+", default=[], metavar="OUT",
                        help="read these demo outputs (`make demo OUT=...`) instead of running the demo")
    args = parser.parse_args()
    values: dict[str, list[float]] = defaultdict(list)
    verdicts: dict[str, list[tuple[str, str]]] = defaultdict(list)
    outs = args.runs or [args.out / f"run-{k + 1}" for k in range(args.k)]
    for k, out in enumerate(outs):
        code = "read" if args.runs else f"exit {run_demo(out, args.suite)}"
        figures, judged = collect(out)
        print(f"run {k + 1} ({out}): demo {code}, {len(figures)} figures, {len(judged)} verdicts", flush=True)
        for key, value in figures.items():
            values[key].append(value)
        for key, verdict in judged.items():
            verdicts[key].append(verdict)
    print("\nfigure | values | median | sd | CV % | smallest detectable change (% of median)")
    for key in sorted(values):
        runs = values[key]
        median = statistics.median(runs)
        sd = statistics.stdev(runs) if len(runs) > 1 else float("nan")
        cv = 100 * sd / abs(median) if median else float("nan")
        change = SDC * sd
        share = 100 * change / abs(median) if median else float("nan")
        print(f"{key} | {', '.join(f'{v:.3g}' for v in runs)} | {median:.3g} | {sd:.3g} | {cv:.1f} | "
              f"{change:.3g} ({share:.0f} %)")
    print("\nverdict | outcome (95 % interval width) per run")
    differ = inconclusive = 0
    for key in sorted(verdicts):
        runs_judged = verdicts[key]
        differ += len({outcome for outcome, _ in runs_judged}) > 1
        inconclusive += sum(outcome == "INCONCLUSIVE" for outcome, _ in runs_judged)
        shown = [outcome + estimate for outcome, estimate in runs_judged]
        print(f"{key} | " + " | ".join(shown))
    print(f"\nverdicts_differing={differ} inconclusive={inconclusive} runs={len(outs)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
