"""Faults never compound: not over a fault a crashed run left, not after a failed revert, not from a second
topology file that names the same cluster."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.safety.run import HarnessRun
from harness.safety.runner import RunnerSettings
from harness_kernel.errors import HarnessError, RevertFailedError, TargetBusyError
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.loader import load_topology
from tests.support.victim import Victim, write_topology
from tests.unit.harness.safety.safety_support import FREEZE, ROOT, Unrevertable, child_env, journal_files, run_fault_script

SUITE = textwrap.dedent("""\
    from faults.base import FaultSpec

    def test_freeze(inject):
        with inject(FaultSpec("process-freeze", "process:victim")) as active:
            active.sleep(0.2)
    """)


def run_pytest(suite: Path, topology_file: Path, state: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(suite),
                           "--topology", str(topology_file), "--allow-destructive", "--state-dir", str(state),
                           "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml")],
                          capture_output=True, text=True, cwd=ROOT, timeout=120, env=child_env())


def leave_a_fault_behind(topology_file: Path, state: Path) -> None:
    run = run_fault_script(topology_file, state)
    run.expect("in-effect")
    run.kill_group()


def test_a_run_refuses_to_start_while_the_journal_holds_a_fault_on_its_cluster(tmp_path, topology_file, state, victim):
    leave_a_fault_behind(topology_file, state)
    left = journal_files(state)
    assert len(left) == 1 and victim.frozen()
    suite = tmp_path / "test_suite.py"
    suite.write_text(SUITE)
    result = run_pytest(suite, topology_file, state)
    assert result.returncode == 4, result.stdout + result.stderr
    assert "python -m harness recover" in result.stdout + result.stderr
    assert journal_files(state) == left, "the refused run journaled (and so injected) nothing"
    assert victim.frozen(), "nor did it touch the target"


def test_a_fault_left_on_another_cluster_does_not_block_a_run(tmp_path, topology_file, state, victim: Victim):
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    bystander = subprocess.Popen(["/bin/sh", "-c", "sleep 600 & wait"], start_new_session=True)
    try:
        other = write_topology(other_dir, other_dir / "bystander.pid")
        (other_dir / "bystander.pid").write_text(f"{bystander.pid}\n")
        other.write_text(other.read_text().replace("192.0.2.1", "192.0.2.99"))
        leave_a_fault_behind(other, state)
        suite = tmp_path / "test_suite.py"
        suite.write_text(SUITE)
        result = run_pytest(suite, topology_file, state)
        assert result.returncode == 0, result.stdout + result.stderr
        assert victim.running()
    finally:
        subprocess.run(["kill", "-CONT", "--", f"-{bystander.pid}"], check=False)
        bystander.kill()
        bystander.wait()


def vcenter_topology(path: Path, name: str, address: str) -> Path:
    path.write_text(textwrap.dedent(f"""\
        name: {name}
        sites:
          - name: site-a
            hosts: [{{name: esx-a1, address: 192.0.2.11}}]
        management:
          vcenter: {{address: {address}, cluster: stretched-01,
                     credential: {{username: svc, password: {{env: VC_PW}}}}}}
        """))
    return path


def test_two_topology_files_naming_the_same_vcenter_cluster_share_one_lock(tmp_path, state):
    first = vcenter_topology(tmp_path / "a.yaml", "prod-stretched-01", "vc01.example.com")
    second = vcenter_topology(tmp_path / "b.yaml", "stretched-copy", "VC01.example.com")
    one = HarnessRun(topology=load_topology(first), topology_source=str(first), state_dir=state)
    two = HarnessRun(topology=load_topology(second), topology_source=str(second), state_dir=state)
    one.acquire()
    try:
        with pytest.raises(TargetBusyError, match=r"vc01\.example\.com"):
            two.acquire()
    finally:
        one.release()


def test_after_a_failed_revert_the_session_injects_no_more_faults(topology, topology_file, state, victim: Victim):
    session = HarnessRun(topology=topology, topology_source=str(topology_file), state_dir=state,
                             allow_destructive=True,
                             runner_settings=RunnerSettings(poll_interval_s=0.02, revert_timeout_s=1.0))
    with pytest.raises(RevertFailedError), session.inject(Timeline(), Unrevertable(FREEZE, victim.pidfile, "/bin/sh")):
        pass
    left = journal_files(state)
    with pytest.raises(HarnessError, match="revert failed"), session.inject(Timeline(), FREEZE):
        pytest.fail("no fault may be injected after a failed revert")
    assert journal_files(state) == left
