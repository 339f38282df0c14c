"""No secret in `python -m harness recover -v`: the CLI masks what it resolved, in logs and in its report."""

from __future__ import annotations

import subprocess
import sys

from faults.base import FaultSpec
from harness.safety.journal import Journal, JournalEntry
from tests.unit.harness.secrets.careless import ROOT, SECRETS, leaks, topology_yaml


def test_no_secret_in_recover_verbose_output(tmp_path):
    secret = SECRETS["long"]
    topology = topology_yaml(tmp_path)
    # a journal entry whose target echoes the secret: recover fails on it and reports why
    Journal(tmp_path / "state" / "journal").write(JournalEntry(
        spec=FaultSpec("process-freeze", f"process:{secret}"), topology_source=str(topology),
        topology_name="careless", run_id="r1"))
    done = subprocess.run([sys.executable, "-m", "harness", "-v", "recover", "--state-dir", str(tmp_path / "state"),
                           "--force"], capture_output=True, text=True, cwd=ROOT, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HARNESS_JUMP_PW": secret})
    assert "failed" in done.stdout, done.stdout + done.stderr
    assert leaks(secret, {"stdout": done.stdout, "stderr": done.stderr}) == []
