"""A pytest run killed in the middle of a site failure leaves a healthy lab behind, without anyone typing a command.

The run is a real `pytest --topology lab:hgd1` holding a site failure on the embedded lab
(site A's node killed, its links cut). Its whole process group is then killed -9 (a CI
timeout, the OOM killer), or hung up (the operator's SSH session drops). The guardian that
the run started, or the run itself on SIGHUP, reverts the fault; the lab is healthy again.
The time from the kill to the fault reverted is printed (target: under 15 s).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from faults import registry
from faults.base import FaultSpec, FaultState
from harness_lab.controller import Lab

ROOT = Path(__file__).resolve().parents[3]
SITE_A = FaultSpec("site-failure", "site:site-a")

SUITE = """\
from faults.base import FaultSpec

def test_site_a_fails(inject):
    with inject(FaultSpec("site-failure", "site:site-a"), duration_s=600) as active:
        print("in-effect", flush=True)
        active.sleep(600)
"""


def start_run(lab: Lab, tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    suite = tmp_path / "test_site_failure_suite.py"
    suite.write_text(SUITE)
    state = tmp_path / "harness-state"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env.update(HARNESS_LAB_DIR=str(lab.layout.state_dir),
               PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", str(suite),
                            "--topology", f"lab:{lab.layout.prefix}", "--state-dir", str(state),
                            "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=env,
                           start_new_session=True)  # its own process group, as a CI job or a login shell's job
    assert run.stdout is not None
    for line in run.stdout:
        if line.strip() == "in-effect":
            return run, state
    run.wait()
    raise AssertionError(f"the run ended before its fault was in effect (exit {run.returncode})")


def wait_reverted(lab: Lab, state: Path, since: float, timeout_s: float = 120.0) -> float:
    """Seconds from `since` until the journal is empty and the site failure checks cleared."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not list((state / "journal").glob("*.json")) and lab.healthy() and not fault_tables(lab):
            return time.monotonic() - since
        time.sleep(0.1)
    logs = [state / "guardian.log", lab.services.logfile("node-a")]
    raise AssertionError(f"not reverted {timeout_s:.0f} s after the kill; roles {lab.roles()}\n" + "\n".join(
        f"--- {log}:\n{log.read_text()[-3000:] if log.exists() else '(none)'}" for log in logs))


def fault_tables(lab: Lab) -> list[str]:
    """nft tables in the lab's router namespace other than the lab's own: what faults made there."""
    return [table for table in lab.firewall.tables() if table != lab.layout.nft_table]


def site_a_failed(lab: Lab, state: Path) -> bool:
    """The run's journaled site failure (its own instance: its own table) is in effect."""
    entries = sorted((state / "journal").glob("*.json"))
    if len(entries) != 1:
        return False
    spec = FaultSpec.from_dict(json.loads(entries[0].read_text())["spec"])
    return spec.kind == SITE_A.kind and registry.build(spec, lab.layout.topology()).check() is FaultState.IN_EFFECT


def in_the_middle_of_the_failover(lab: Lab, state: Path) -> None:
    """Site A down long enough for the monitor to be acting on it (the lab fails over in ~5-8 s)."""
    time.sleep(5)
    assert site_a_failed(lab, state)


def reverted_by(state: Path) -> str:
    log = state / "guardian.log"
    return "the guardian" if log.exists() and "reverted site-failure" in log.read_text() else "the run itself"


def test_kill_9_of_the_whole_run_mid_site_failure_is_reverted_by_the_guardian(lab: Lab, tmp_path: Path) -> None:
    lab.wait_healthy(90)
    run, state = start_run(lab, tmp_path)
    in_the_middle_of_the_failover(lab, state)
    os.killpg(run.pid, signal.SIGKILL)
    killed = time.monotonic()
    run.wait()
    took = wait_reverted(lab, state, killed)
    lab.wait_healthy(120)
    healthy = time.monotonic() - killed
    print(f"\nkill -9 to reverted: {took:.1f} s; to a healthy lab: {healthy:.1f} s")
    assert reverted_by(state) == "the guardian"
    assert took < 30, "target: under 15 s"


def test_a_hangup_of_the_run_mid_site_failure_leaves_a_healthy_lab(lab: Lab, tmp_path: Path) -> None:
    lab.wait_healthy(120)
    run, state = start_run(lab, tmp_path)
    in_the_middle_of_the_failover(lab, state)
    os.killpg(run.pid, signal.SIGHUP)  # the operator's SSH session drops: the terminal's process group hangs up
    hung_up = time.monotonic()
    took = wait_reverted(lab, state, hung_up)
    lab.wait_healthy(120)
    healthy = time.monotonic() - hung_up
    run.wait(timeout=120)
    print(f"\nSIGHUP to reverted (by {reverted_by(state)}): {took:.1f} s; to a healthy lab: {healthy:.1f} s")
    assert run.returncode != 0
    assert took < 30, "target: under 15 s"
