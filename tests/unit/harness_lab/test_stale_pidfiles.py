"""Lab teardown signals only the processes it started: a stale pid file never gets a bystander killed."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_kernel.topology.models import LabSettings
from harness_lab.layout import LabLayout
from harness_lab.postgres import PgCluster
from harness_lab.services import Services


def _start_time(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2:].split()[19])  # field 22 of proc(5)


def _boot_id() -> str:
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated process that now owns the pid a lab pid file names (after a reboot or pid reuse)."""
    process = subprocess.Popen(["sleep", "60"])
    yield process
    process.kill()
    process.wait()


STALE_RECORDS = {
    "bare pid (no identity)": lambda pid: f"{pid}\n",
    "another start time": lambda pid: f"{pid} {_start_time(pid) + 1} {_boot_id()}\n",
    "another boot": lambda pid: f"{pid} {_start_time(pid)} 00000000-0000-0000-0000-000000000000\n",
}


@pytest.mark.parametrize("record", STALE_RECORDS.values(), ids=STALE_RECORDS.keys())
def test_a_stale_pid_file_never_gets_an_unrelated_process_killed(tmp_path, bystander, record):
    services = Services(tmp_path)
    services.pidfile("node-a").write_text(record(bystander.pid))
    services.kill("node-a", grace_s=0.3)
    time.sleep(0.1)
    assert bystander.poll() is None, f"bystander killed (returncode {bystander.returncode})"
    assert not services.alive("node-a")


def test_a_service_the_lab_started_is_still_stopped(tmp_path):
    services = Services(tmp_path)
    pid = services.start("helper", ["sleep", "60"])
    assert services.alive("helper") and services.pid("helper") == pid
    services.kill("helper")
    assert not services.alive("helper")
    assert not Path(f"/proc/{pid}").exists()


def _keeper_pidfile(cluster: PgCluster, pid: int) -> Path:
    """Where pg_autoctl keeps its own pid file: under the node's XDG runtime directory, by data path."""
    path = cluster.root / "node-a" / "xdg-run" / "pg_autoctl" / str(cluster.pgdata("node-a")).lstrip("/") / "pg_autoctl.pid"
    path.parent.mkdir(parents=True)
    path.write_text(f"{pid}\n{cluster.pgdata('node-a')}\n")
    return path


def _cluster(tmp_path: Path) -> PgCluster:
    layout = LabLayout.from_settings(LabSettings(prefix="hunit", state_dir=str(tmp_path)))
    return PgCluster(layout, Services(tmp_path / "pids"))


def test_a_keeper_killed_from_another_process_can_be_started_again(tmp_path):
    """Its pid is a zombie of the lab's owner until reaped; pg_autoctl would take it for a running keeper."""
    cluster = _cluster(tmp_path)
    keeper = subprocess.Popen(["true"])
    deadline = time.monotonic() + 5
    while Path(f"/proc/{keeper.pid}/stat").read_text().split(") ")[1][0] != "Z" and time.monotonic() < deadline:
        time.sleep(0.01)
    pidfile = _keeper_pidfile(cluster, keeper.pid)
    cluster.clear_dead_keeper_pidfile("node-a")
    keeper.wait()
    assert not pidfile.exists()


def test_a_running_keepers_pid_file_is_left_alone(tmp_path):
    cluster = _cluster(tmp_path)
    running = subprocess.Popen(["sleep", "60"])
    try:
        pidfile = _keeper_pidfile(cluster, running.pid)
        cluster.clear_dead_keeper_pidfile("node-a")
        assert pidfile.exists()
    finally:
        running.kill()
        running.wait()
