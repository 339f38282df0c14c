"""A night whose failover got slower is flagged, and `--fail-on-regression` fails the run with its own code.

`make test` runs one real S4 night on the lab and reports it twice: once alone (too short a history to judge),
then after three earlier, faster nights are seeded before it, so the rule flags the measured figure
and the report exits with the regression code. The nightly tier runs two real nights, each of two
trials (`--repeat 2`: the verdict carries the interval across them): a normal night, then a night
whose failover is made slower for real (the monitor's `node_considered_unhealthy_timeout`, a
test-only knob on the lab's HA manager, never the reported figure).
"""

from __future__ import annotations

import hashlib
import html
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_kernel.topology.models import LabSettings
from harness_lab.controller import Lab
from harness_lab.layout import LabLayout
from reports.allure.results_read import read_tests
from reports.regression import FIGURES_HISTORY, REGRESSION_EXIT_CODE
from tests.support.seeded_nights import seed_like_last

pytestmark = pytest.mark.timeout(1500)  # its module fixture runs whole nights of the suites

ROOT = Path(__file__).parents[3]
PREFIX = "hlabr"
FAILOVER = "S4 · unplanned: the active node's host fails (median of 2 trials) · total (s)"
# the fault held longer than the slowed detection (12 s), so the slowed night fails over in every trial
WINDOWS = ["--baseline-s", "5", "--observe-s", "16", "--settle-s", "3", "--steady-window-s", "3",
           "--recover-timeout-s", "120", "--repeat", "2"]
ONE_TRIAL = ["--baseline-s", "4", "--observe-s", "10", "--settle-s", "3", "--steady-window-s", "3",
             "--recover-timeout-s", "120"]


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    yield Lab(LabLayout.from_settings(LabSettings(prefix=PREFIX)))
    subprocess.run([sys.executable, "-m", "harness", "lab", "down", "--prefix", PREFIX], cwd=ROOT, timeout=300,
                   capture_output=True, check=False)


def night(tmp: Path, n: int, windows: list[str] = WINDOWS) -> Path:
    results = tmp / f"results-{n}"
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                          "harness_suites/s4/test_s4_application_failover.py", "-k", "unplanned",
                          "--topology", f"lab:{PREFIX}", "--keep-lab", "--alluredir", str(results), "--quiet-progress",
                          "--state-dir", str(tmp / "state"), *windows],
                         cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    assert run.returncode in (0, 1), run.stdout[-4000:] + run.stderr[-2000:]
    return results


def report(results: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", "report", str(results), "--out", str(out),
                           "--fail-on-regression", *extra], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          check=False)


def test_a_measured_failover_slower_than_its_earlier_nights_fails_the_report_with_the_regression_code(
        lab: Lab, tmp_path: Path) -> None:
    out = tmp_path / "out"
    results = night(tmp_path, 1, ONE_TRIAL)
    alone = report(results, out)
    assert alone.returncode == 0, alone.stderr[-2000:]
    history = out / FIGURES_HISTORY
    key, = [k for k in json.loads(history.read_text().splitlines()[-1])["figures"]
            if k.startswith("S4 · unplanned") and k.endswith("· total (s)")]
    tonight = seed_like_last(history, key, factors=(0.5, 0.55, 0.45))  # three earlier nights, each about half as long
    again = report(results, out)
    assert again.returncode == REGRESSION_EXIT_CODE, again.stderr[-3000:]
    assert f"REGRESSION {key}: {tonight:g} tonight, regressed" in again.stderr
    assert len(history.read_text().splitlines()) == 4, "a run reported twice is one night"
    summary = Path(again.stdout.strip().splitlines()[-1]).read_text()
    assert f"<tr><td class=text>{html.escape(key)}</td><td>{tonight:.3g}</td>" in summary
    as_json = report(results, out, "--json")  # what automation reads: the same judgement, one document
    document = json.loads(as_json.stdout)
    assert (as_json.returncode, document["schema"], document["exit_code"]) == (
        REGRESSION_EXIT_CODE, "harness-report/1", REGRESSION_EXIT_CODE)
    assert [s for s in document["regressions"] if s.startswith(f"{key}: {tonight:g} tonight, regressed")]
    assert document["evidence_sha256"] == hashlib.sha256(Path(document["evidence"]).read_bytes()).hexdigest()
    assert [t["verdict"] for t in document["tests"]] == ["PASS with findings"], "passed, with a regressed figure"


@pytest.mark.nightly
def test_a_slower_failover_is_flagged_and_fails_the_run_with_the_regression_code(lab: Lab, tmp_path: Path) -> None:
    out = tmp_path / "out"
    normal_night = night(tmp_path, 1)
    first = report(normal_night, out)
    assert first.returncode == 0, first.stderr[-2000:]
    record, = [t.record for t in read_tests(normal_night) if t.record is not None]
    verdict = next(v for v in record.verdicts if v.name.startswith("failover duration"))
    assert verdict.n == 2 and verdict.low is not None and verdict.high is not None, "two trials, one interval"
    assert verdict.low <= verdict.value <= verdict.high and "repeats" in verdict.method
    history = out / FIGURES_HISTORY
    normal = seed_like_last(history, FAILOVER)  # two earlier nights like the first

    lab.pg.sql("alter system set pgautofailover.node_considered_unhealthy_timeout to 12000")
    lab.pg.sql("select pg_reload_conf()")
    try:
        slowed = report(night(tmp_path, 2), out)
    finally:
        lab.pg.sql("alter system reset pgautofailover.node_considered_unhealthy_timeout")
        lab.pg.sql("select pg_reload_conf()")

    tonight = json.loads(history.read_text().splitlines()[-1])["figures"][FAILOVER]
    print(f"failover total: {normal:.1f} s on a normal night, {tonight:.1f} s with the slowed detection")
    assert tonight > normal * 1.2 + 2, f"the knob did not slow the failover: {normal:.1f} s -> {tonight:.1f} s"
    assert slowed.returncode == REGRESSION_EXIT_CODE, slowed.stderr[-3000:]
    assert f"REGRESSION {FAILOVER}: {tonight:g} tonight, regressed" in slowed.stderr
    summary = Path(slowed.stdout.strip().splitlines()[-1]).read_text()
    assert "figure(s) got worse than their recent nights" in summary
    assert f"<tr><td class=text>{html.escape(FAILOVER)}</td><td>{tonight:.3g}</td>" in summary  # the regressions table
