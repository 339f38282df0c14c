"""`python -m harness demo`: the main job against the embedded lab, start to report.

Brings the lab up (through the suites' fixtures), runs S1-S4 with short windows, builds the
Allure report (site + single file, trend kept in OUT), prints the scenario tables and ends
with `report: <single-file path>`. Windows are options, so a nightly run lengthens them.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class DemoWindows:
    baseline_s: float
    observe_s: float
    settle_s: float
    step_s: float
    warmup_s: float
    rtt_steps: str
    steady_window_s: int


DEMO = DemoWindows(baseline_s=12, observe_s=15, settle_s=10, step_s=12, warmup_s=3, rtt_steps="0,2,4,8",
                   steady_window_s=8)
SMOKE = DemoWindows(baseline_s=5, observe_s=6, settle_s=4, step_s=4, warmup_s=1, rtt_steps="0,4", steady_window_s=3)


def add_demo_parser(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "demo", help="run the S1-S4 suites against the embedded lab and build the report")
    parser.add_argument("--out", type=Path, default=REPO / "out", help="results, tables and report go here")
    parser.add_argument("--lab", default="lab", help="lab topology: 'lab' or 'lab:PREFIX'")
    parser.add_argument("--smoke", action="store_true", help="minimal windows: checks the path, not the product")
    parser.add_argument("--keep-lab", action="store_true", help="leave the lab running afterwards")
    parser.add_argument("--state-dir", default=None)
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (e.g. -k S4, --observe-s 60)")
    parser.set_defaults(func=run_demo)


def pytest_command(args: argparse.Namespace, results: Path, tables: Path) -> list[str]:
    w = SMOKE if args.smoke else DEMO
    command = [sys.executable, "-m", "pytest", str(REPO / "tests" / "resiliency"), "-p", "no:cacheprovider",
               "--topology", args.lab, "--alluredir", str(results), "--clean-alluredir", "--tables-dir", str(tables),
               "--baseline-s", str(w.baseline_s), "--observe-s", str(w.observe_s), "--settle-s", str(w.settle_s),
               "--step-s", str(w.step_s), "--warmup-s", str(w.warmup_s), "--rtt-steps", w.rtt_steps,
               "--steady-window-s", str(w.steady_window_s), "-q", "-rA"]
    if args.keep_lab:
        command.append("--keep-lab")
    if args.state_dir:
        command += ["--state-dir", args.state_dir]
    if os.environ.get("CI") or args.smoke:
        command.append("--quiet-progress")
    return command + list(args.pytest_args)


def run_demo(args: argparse.Namespace) -> int:
    from reports.allure.generate import generate_report

    out: Path = args.out.resolve()
    results, tables = out / "allure-results", out / "tables"
    for stale in tables.glob("*") if tables.exists() else []:
        stale.unlink()
    started = time.monotonic()
    returncode, signals = run_to_end(pytest_command(args, results, tables), REPO)
    if signals:
        print(f"demo interrupted ({', '.join(signal.Signals(s).name for s in signals)}): pytest exit {returncode}; "
              "no report built", file=sys.stderr)
        return returncode or 128 + signals[0]
    report = generate_report(results, out / "report", name="Resilience demo (embedded lab)")
    print("\nscenario tables (measured in this run)\n")
    for table in sorted(tables.glob("*.md")):
        print(table.read_text().rstrip() + "\n")
    print(f"demo wall time: {time.monotonic() - started:.0f} s; pytest exit {returncode}")
    print(f"report site: {report.site_dir / 'index.html'}")
    print(f"report: {report.single_file}")
    return returncode


FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def run_to_end(command: Sequence[str], cwd: Path) -> tuple[int, list[int]]:
    """Run `command` and wait for it to end, however often we are signalled; returns (exit code, signals).

    The child reverts its faults, releases its lock and scrubs its results when interrupted; all
    that takes seconds. subprocess.run would SIGKILL it 0.25 s after a Ctrl-C, so instead the
    child has its own process group (a terminal's Ctrl-C reaches it once, through us) and every
    SIGINT, SIGTERM and SIGHUP we get is passed on while we keep waiting, without a timeout.
    """
    received: list[int] = []
    children: list[subprocess.Popen[bytes]] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signum)

    previous = {signum: signal.signal(signum, forward) for signum in FORWARDED}
    try:
        child = subprocess.Popen(command, cwd=cwd, stdin=subprocess.DEVNULL, process_group=0)
        signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)  # later signals wait until the child is known
        try:
            children.append(child)
            for signum in received:  # arrived while the child was being started
                child.send_signal(signum)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
        return child.wait(), received
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
