"""The cases the demo leaves to FULL for time alone, each run to a verdict on the lab at the smoke's windows.

`make test`'s smoke demo runs the demo's cases; S3's witness isolation, S4's standby loss and S7's
restore take paths other specs of `make test` take (the lab's witness isolation and standby host
loss in `tests/integration/lab/test_lab_faults.py`, the restore beside the database in
`test_s5_s7_on_lab.py`), so what is left of them is their suites' own code: run here, nightly.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.demo import FULL_ONLY_CASES, SMOKE

pytestmark = [pytest.mark.nightly, pytest.mark.timeout(1500)]
ROOT = Path(__file__).parents[3]
PREFIX = "hlabf"


def test_the_cases_only_full_runs_each_reach_a_verdict_on_the_lab(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", *FULL_ONLY_CASES,
                          "--topology", f"lab:{PREFIX}", "--alluredir", str(tmp_path / "results"),
                          "--tables-dir", str(tmp_path / "tables"), "--state-dir", str(tmp_path / "state"),
                          "--quiet-progress", *SMOKE.options()],
                         cwd=ROOT, capture_output=True, text=True, timeout=1200, check=False)
    assert run.returncode in (0, 1), run.stdout[-4000:] + run.stderr[-2000:]
    outcome = run.stdout.strip().splitlines()[-1]
    assert "error" not in outcome and sum(int(n) for n in re.findall(r"(\d+) (?:passed|failed)", outcome)) == 3, \
        run.stdout[-4000:]
    assert {p.stem.split("-")[0] for p in (tmp_path / "tables").glob("*.md")} == {"s3", "s4", "s7"}
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30).stdout
    assert f"{PREFIX}-" not in namespaces
