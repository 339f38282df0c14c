"""Load from two "load machines" of the lab (their own namespaces and addresses) through Dask, under S4's failover.

The merged series agrees with the commits the database holds (its ledger rows), the merged ledger loses no
acknowledged commit through an unplanned failover, and the merged commit gaps measure its
client RTO. Nightly: the ready-made S4 suite through `--load-workers 2` measures every phase,
and its total and client RTO are the single-process run's within max(1.5 s, 30 %). Killing one worker mid-run is
*load generator lost*: a harness error naming it, the fault reverted, no failover verdict.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from faults.base import FaultSpec
from harness.analysis.phases import failover_phases
from harness.clusters.lab import LabCluster
from harness.safety.runner import FaultRunner
from harness_kernel.history.series import TransactionSeries
from harness_kernel.topology.models import Topology
from harness_lab.controller import Lab
from tests.integration.lab.lab_support import FaultBuilder
from tests.support.dask_lab import LabDask, dask_on_lab
from workloads.base import Workload
from workloads.load.distributed import DistributedOltp, remote_cluster
from workloads.oltp import DriverConfig, prepare_schema
from workloads.oltp.schema import Scale

pytest.importorskip("distributed")

ROOT = Path(__file__).parents[3]
USERS = 3  # per load machine; the single-process reference runs both machines' users


@pytest.fixture
def dask(lab: Lab, topology: Topology) -> Iterator[LabDask]:
    dialect, settings = LabCluster(lab, topology).connection()
    prepare_schema(dialect, settings, Scale(), scratch=True)
    with dask_on_lab(lab) as cluster:
        yield cluster


def distributed(lab: Lab, topology: Topology, runner: FaultRunner, dask: LabDask) -> DistributedOltp:
    dialect, settings = LabCluster(lab, topology).connection()
    return DistributedOltp(dialect, settings, runner.timeline, TransactionSeries(), DriverConfig(users=USERS),
                           remote_cluster(dask.scheduler), generators=2)


def ledger_rows(lab: Lab) -> int:
    """The workload's commits as the primary holds them: TPC-B's every transaction writes one ledger row in it. (Not
    pg_stat_database.xact_commit: on the lab that counts the HA manager's own queries too, 64 more than the load's
    2688 in 8 s in one make test.)"""
    return int(lab.pg.sql("select count(*) from ledger", node=lab.primary(), database="bench")[0][0])


def crash_the_primary(lab: Lab, topology: Topology, runner: FaultRunner, factory: FaultBuilder,
                      workload: Workload) -> float | None:
    """Steady load, the primary's host crashes, failover, revert; the client RTO the workload's gaps give."""
    workload.start()
    time.sleep(4)
    spec = FaultSpec("host-crash", f"host:{lab.primary().replace('node', 'host')}")
    with runner.inject(factory.build(spec, topology)) as active:
        active.sleep(12)
    lab.wait_healthy(90)
    time.sleep(3)
    workload.stop()
    ledger = workload.verify()
    assert ledger is not None and ledger.lost_count == 0
    return failover_phases(runner.timeline, active.injected_at).client_rto_s


def test_two_load_machines_agree_with_the_database_and_lose_nothing_through_a_failover(
        lab: Lab, topology: Topology, runner: FaultRunner, factory: FaultBuilder, dask: LabDask) -> None:
    steady = distributed(lab, topology, runner, dask)
    time.sleep(1)
    before = ledger_rows(lab)
    steady.start()
    time.sleep(8)
    steady.stop()
    server = ledger_rows(lab) - before
    merged = sum(p.commits for p in steady.series.points())
    print(f"two load machines: merged {merged} commits, {server} ledger rows written")
    assert {g.worker.removeprefix("tcp://").rsplit(":", 1)[0] for g in steady.generators} == set(dask.workers)
    assert abs(merged - server) <= 0.01 * server, f"merged {merged} commits, {server} ledger rows written"
    assert steady.verify().lost_count == 0

    spread_rto = crash_the_primary(lab, topology, runner, factory, distributed(lab, topology, runner, dask))
    print(f"client RTO: two load machines {spread_rto} s")
    assert spread_rto is not None, "the merged commit gaps give the outage"
    # the merged figures against one process's on the same lab: the nightly S4 suite-path spec below


def test_a_load_machine_lost_mid_run_is_a_harness_error_the_fault_reverted_and_no_verdict(
        lab: Lab, dask: LabDask, tmp_path: Path) -> None:
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA",
                            "harness_suites/s4/test_s4_application_failover.py", "-k", "unplanned",
                            "--topology", f"lab:{lab.layout.prefix}", "--keep-lab", "--quiet-progress",
                            "--load-scheduler", dask.scheduler, "--users", str(USERS), "--state-dir", str(tmp_path / "s"),
                            "--baseline-s", "6", "--observe-s", "20", "--settle-s", "2"],
                           cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env={**os.environ, "HARNESS_LAB_DIR": str(lab.layout.state_dir)})
    victim = lab.layout.load_machines[1].address
    deadline = time.monotonic() + 180
    while not list((tmp_path / "s").glob("journal/*.json")) and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(2)  # the fault journaled, then in effect: the failover is under way
    dask.kill(victim)
    out, _ = run.communicate(timeout=600)
    assert run.returncode == 10, out[-4000:]  # harness or infrastructure broken only
    assert f"load generator lost: tcp://{victim}:" in out, out[-4000:]
    summary = out.split("resilience summary")[-1].split("short test summary")[0]
    assert "S4   ERROR (harness or infrastructure broken)" in summary, summary
    assert "PASS" not in summary and "FAIL" not in summary and "1 error" in summary, summary
    assert not list((tmp_path / "s").glob("journal/*.json")), "the fault was reverted"
    lab.wait_healthy(90)


def s4_unplanned(lab: Lab, out: Path, *load: str) -> tuple[int, str, dict[str, object]]:
    """The ready-made S4 suite's unplanned case as a user runs it on this lab; its exit code, output and table row."""
    tables = out / "tables"
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA",
                          "harness_suites/s4/test_s4_application_failover.py", "-k", "unplanned",
                          "--topology", f"lab:{lab.layout.prefix}", "--keep-lab", "--quiet-progress",
                          "--state-dir", str(out / "state"), "--tables-dir", str(tables), *load,
                          "--baseline-s", "8", "--observe-s", "12", "--settle-s", "5"],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900,
                         env={**os.environ, "HARNESS_LAB_DIR": str(lab.layout.state_dir)})
    row = json.loads((tables / "s4-host-crash.json").read_text())["rows"][0]
    return run.returncode, run.stdout, row


PHASES = ("detect_s", "promote_s", "first_commit_s", "total_s", "client_reconnect_s")


@pytest.mark.nightly
@pytest.mark.reproducer("AF-2")
def test_the_s4_suite_with_load_from_two_workers_measures_every_phase_as_one_process_does(
        lab: Lab, tmp_path: Path) -> None:
    code, out, spread = s4_unplanned(lab, tmp_path / "spread", "--load-workers", "2", "--users", str(USERS))
    print("two workers:", {k: spread[k] for k in PHASES})
    assert code == 0, out[-4000:]
    assert all(isinstance(spread[k], int | float) for k in PHASES), spread
    assert "**Verdict: PASS**" in (tmp_path / "spread" / "tables" / "s4-host-crash.md").read_text()
    lab.wait_healthy(90)
    code, out, single = s4_unplanned(lab, tmp_path / "single", "--users", str(2 * USERS))
    print("one process:", {k: single[k] for k in PHASES})
    assert code == 0, out[-4000:]
    for key in ("total_s", "client_reconnect_s"):
        merged, reference = float(spread[key]), float(single[key])  # type: ignore[arg-type]
        assert abs(merged - reference) <= max(1.5, 0.3 * reference), (key, merged, reference)
