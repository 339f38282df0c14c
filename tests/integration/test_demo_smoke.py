"""The README's main job, with minimal windows: lab up, S1-S7, report, lab down.

It checks the path (every suite runs to a verdict, tables and report are produced, nothing
is left behind), not the product's figures: those need the demo's real windows.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
PREFIX = "hlabs"


def test_demo_runs_every_suite_to_a_verdict_and_ends_with_the_report_path(tmp_path):
    out = tmp_path / "demo"
    run = subprocess.run([sys.executable, "-m", "harness", "demo", "--smoke", "--lab", f"lab:{PREFIX}", "--out", str(out),
                          "--state-dir", str(tmp_path / "state")],
                         capture_output=True, text=True, cwd=ROOT, timeout=1200)
    lines = run.stdout.strip().splitlines()
    assert run.returncode in (0, 1), run.stdout[-4000:] + run.stderr[-4000:]
    assert "ERROR (harness or infrastructure broken)" not in run.stdout, run.stdout[-6000:]
    assert lines[-1].startswith("report: ")
    report = Path(lines[-1].removeprefix("report: "))
    assert report.is_file() and report.stat().st_size > 100_000
    assert (out / "report" / "site" / "index.html").is_file()
    tables = {p.stem.split("-")[0] for p in (out / "tables").glob("*.md")}
    assert tables == {"s1", "s2", "s3", "s4", "s5", "s6", "s7"}
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"{PREFIX}-" not in namespaces
