"""A failover made slower for real: does S4 FAIL every time, and does the nightly report call it a regression?

On the embedded lab (prefix `hslow`): one normal night of S4's unplanned failover, reported into
an output directory whose figure history is then seeded with two more nights like it; then
`--nights` nights (3 by default) with the HA monitor's detection timeout raised
(`pgautofailover.node_considered_unhealthy_timeout`, a test-only knob of the lab's HA manager,
never the reported figure), each reported into the same directory with `--fail-on-regression`.
Prints, per night, the failover total, S4's verdict and the report's exit code and REGRESSION
line, then `fails=<n>/<nights> regressions=<n>/<nights>`. A documented long one: about 2 minutes
a night on the 2-core lab (the fault is held for `--observe-s` so the slowed detection happens
while it holds).

    .venv/bin/python benchmarks/slowed_failover.py [--nights 3] [--timeout-ms 45000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness_kernel.topology.models import LabSettings  # noqa: E402
from harness_lab.controller import Lab  # noqa: E402
from harness_lab.layout import LabLayout  # noqa: E402
from reports.allure.results_read import read_tests  # noqa: E402
from reports.regression import FIGURES_HISTORY  # noqa: E402
from tests.support.seeded_nights import seed_like_last  # noqa: E402

PREFIX = "hslow"
FAILOVER = "S4 · unplanned: the active node's host fails · total (s)"


def night(tmp: Path, n: int, observe_s: int) -> tuple[Path, str]:
    """One S4 unplanned run; its results and its verdict line from the closing summary."""
    results = tmp / f"results-{n}"
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                          "harness_suites/s4/test_s4_application_failover.py", "-k", "unplanned",
                          "--topology", f"lab:{PREFIX}", "--keep-lab", "--alluredir", str(results), "--quiet-progress",
                          "--state-dir", str(tmp / "state"), "--baseline-s", "8", "--observe-s", str(observe_s),
                          "--settle-s", "3", "--steady-window-s", "3", "--recover-timeout-s", "180"],
                         cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    verdict = next((line.strip() for line in run.stdout.splitlines() if line.strip().startswith("S4 ")), "?")
    if run.returncode not in (0, 1):
        raise SystemExit(f"night {n}: pytest exit {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-2000:]}")
    return results, verdict


def report(results: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", "report", str(results), "--out", str(out),
                           "--fail-on-regression"], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=3)
    parser.add_argument("--timeout-ms", type=int, default=45000, help="the monitor's detection timeout when slowed")
    parser.add_argument("--observe-s", type=int, default=70, help="how long each night holds the fault")
    args = parser.parse_args()
    lab = Lab(LabLayout.from_settings(LabSettings(prefix=PREFIX)))
    fails = regressions = 0
    with tempfile.TemporaryDirectory(prefix="slowed-failover-") as scratch:
        tmp, out = Path(scratch), Path(scratch) / "out"
        try:
            results, verdict = night(tmp, 0, args.observe_s)
            first = report(results, out)
            history = out / FIGURES_HISTORY
            normal = seed_like_last(history, FAILOVER)  # two earlier nights like the first
            print(f"normal night: total {normal:.1f} s; {verdict}; report exit {first.returncode}", flush=True)
            lab.pg.sql(f"alter system set pgautofailover.node_considered_unhealthy_timeout to {args.timeout_ms}")
            lab.pg.sql("select pg_reload_conf()")
            try:
                for n in range(1, args.nights + 1):
                    results, verdict = night(tmp, n, args.observe_s)
                    judged = report(results, out)
                    figures = {f.key: f.value for t in read_tests(results) if t.record for f in t.record.figures}
                    line = next((x for x in judged.stderr.splitlines() if x.startswith(f"REGRESSION {FAILOVER}")), "")
                    fails += verdict.split()[1:2] == ["FAIL"]
                    regressions += bool(line)
                    print(f"slowed night {n}: total {figures.get(FAILOVER, float('nan')):.1f} s; {verdict}; report exit "
                          f"{judged.returncode}; {line or 'no REGRESSION line'}", flush=True)
            finally:
                lab.pg.sql("alter system reset pgautofailover.node_considered_unhealthy_timeout")
                lab.pg.sql("select pg_reload_conf()")
        finally:
            subprocess.run([sys.executable, "-m", "harness", "lab", "down", "--prefix", PREFIX], cwd=ROOT, timeout=300,
                           capture_output=True, check=False)
    print(f"fails={fails}/{args.nights} regressions={regressions}/{args.nights}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
