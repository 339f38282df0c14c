"""What the harness leaves behind on the lab when its own steps go wrong: never a stale primary, never a weaker
replication.

- A node rebuilt after a storage loss gets the lab's keeper settings back before the loss counts as cleared;
  hung while it is the primary (replication asynchronous), its revert heals the network only once it takes no
  write: a client that connects to it right after the revert gets no acknowledgement (a commit it acknowledged
  then would be discarded by the rewind that follows: a loss made by the harness, counted as the product's).
- Replication made asynchronous is a journaled fault: a run killed -9 while it holds leaves it to the guardian,
  or (a run without one) to `python -m harness recover`; either puts the quorum back, as read from the cluster.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from faults.base import FaultSpec
from harness.safety.runner import FaultRunner
from harness_kernel.errors import ControlPlaneError
from harness_kernel.topology.models import Topology
from harness_lab.controller import Lab
from tests.integration.lab.conftest import TEST_PREFIX
from tests.integration.lab.lab_support import FaultBuilder
from tests.support.waiting import eventually

ROOT = Path(__file__).resolve().parents[3]
ASYNC = FaultSpec("replication-async", "database:bench")


def host_of(node: str) -> str:
    return node.replace("node", "host")


def late_client_write(lab: Lab, node: str) -> bool:
    """A client that connects to `node` right after the revert and commits a row: True if `node` acknowledged it."""
    marker = -random.randint(1, 2**62)  # no virtual user's ledger id is negative
    try:
        rows = lab.pg.sql(f"insert into ledger values ({marker}) returning id", node=node, database="bench", timeout=8)
    except ControlPlaneError:
        return False  # refused: its server is down, or it runs in recovery
    return rows == [[str(marker)]]


def quorum(lab: Lab) -> dict[str, bool]:
    return {n.name: n.replication_quorum for n in lab.nodes()}


@pytest.mark.reproducer("X-3")
def test_a_rebuilt_node_hung_as_an_asynchronous_primary_acknowledges_nothing_after_its_revert(
        lab: Lab, topology: Topology, runner: FaultRunner, factory: FaultBuilder) -> None:
    standby = next(n.name for n in lab.nodes() if n.reportedstate == "secondary")
    with runner.inject(factory.build(FaultSpec("storage-loss", f"node:bench/{standby}", {"max_rate": "100M"}),
                                     topology)):
        pass  # reverted once rebuilt: a settled secondary again
    assert lab.keeper_configured(standby), "the rebuilt node runs with the lab's keeper settings again"
    lab.wait_healthy(60)
    lab.switchover(lab.primary())
    lab.wait_healthy(60)
    assert lab.primary() == standby
    with runner.inject(factory.build(ASYNC, topology)):
        with runner.inject(factory.build(FaultSpec("host-hang", f"host:{host_of(standby)}"), topology)) as hung:
            hung.sleep(8)  # the other node is promoted meanwhile
        acknowledged = late_client_write(lab, standby)
    assert not acknowledged, f"{standby} acknowledged a commit after its revert: a stale primary was reachable"
    lab.wait_healthy(90)
    assert all(quorum(lab).values())


def run_holding_async(lab: Lab, tmp_path: Path, *options: str) -> subprocess.Popen[str]:
    """A pytest run of its own holding replication-async on the lab, until it is killed."""
    suite = tmp_path / "test_hold_async.py"
    suite.write_text("from faults.base import FaultSpec\n\n"
                     "def test_hold(inject):\n"
                     "    with inject(FaultSpec('replication-async', 'database:bench'), duration_s=600) as active:\n"
                     "        print('in-effect', flush=True)\n"
                     "        active.sleep(600)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env.update(HARNESS_LAB_DIR=str(lab.layout.state_dir),
               PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", str(suite),
                            "--topology", f"lab:{TEST_PREFIX}", "--keep-lab", "--state-dir", str(tmp_path / "state"),
                            "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"), *options],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=env,
                           start_new_session=True)
    assert run.stdout is not None
    deadline = time.monotonic() + 120
    for line in run.stdout:
        if "in-effect" in line or time.monotonic() > deadline:
            break
    assert not all(quorum(lab).values()), "the run holds the standby out of the write quorum"
    return run


def kill_group(run: subprocess.Popen[str]) -> None:
    os.killpg(run.pid, signal.SIGKILL)
    run.wait(timeout=30)


@pytest.mark.reproducer("X-4")
def test_a_run_killed_while_replication_is_asynchronous_leaves_it_to_the_guardian(lab: Lab, tmp_path: Path) -> None:
    run = run_holding_async(lab, tmp_path)
    kill_group(run)
    assert eventually(lambda: all(quorum(lab).values()), 60), quorum(lab)
    assert eventually(lambda: not list((tmp_path / "state" / "journal").glob("*.json")), 30)
    lab.wait_healthy(60)


@pytest.mark.reproducer("X-4")
def test_a_run_without_a_guardian_killed_while_replication_is_asynchronous_leaves_it_to_recover(
        lab: Lab, tmp_path: Path) -> None:
    run = run_holding_async(lab, tmp_path, "--no-guardian")
    kill_group(run)
    time.sleep(2)
    assert not all(quorum(lab).values()), "nothing put it back by itself: no guardian ran"
    done = subprocess.run([sys.executable, "-m", "harness", "recover", "--state-dir", str(tmp_path / "state")],
                          capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "HARNESS_LAB_DIR": str(lab.layout.state_dir)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(quorum(lab).values()), quorum(lab)
    lab.wait_healthy(60)


def test_a_lab_left_asynchronous_with_a_keepers_settings_changed_names_both_as_drift_until_put_back(
        lab: Lab, topology: Topology) -> None:
    """What the lab fixture asserts before every spec: `healthy()` alone passes both (one primary, one streaming
    secondary), so an earlier spec's leftover would decide a later spec's figures."""
    assert lab.drift() == []
    standby = next(n.name for n in lab.nodes() if n.reportedstate == "secondary")
    lab.pg.set_replication_quorum(standby, False)
    lab.pg.set_keeper_setting(standby, "timeout.network_partition_timeout", "20")  # pg_autoctl's default
    try:
        assert eventually(lambda: len(lab.drift()) == 2, 20, 0.5), lab.drift()
        found = lab.drift()
        assert found[0].startswith("replication is not synchronous") and "async" in found[0], found
        assert found[1].startswith(f"{standby}'s keeper runs without the lab's settings"), found
        assert lab.healthy(), "healthy() alone sees neither"
    finally:
        lab.put_back()
    assert eventually(lambda: lab.drift() == [], 30, 0.5), lab.drift()
