"""fio as a workload, for real: a local run and a client/server run with two servers on loopback."""

from __future__ import annotations

import os
import socket

import pytest

from harness_kernel import procs
from harness_kernel.history import EventKind
from harness_kernel.history.timeline import Timeline
from workloads import fio
from workloads.base import Workload
from workloads.fio import PROFILES, FioJob, FioServer, FioWorkload, run_clients, run_local


def test_a_local_mail_run_gives_per_second_iops_bandwidth_and_latency(tmp_path):
    timeline = Timeline()
    result = run_local(FioJob(PROFILES["mail"], tmp_path / "data", runtime_s=3, size="16m"), tmp_path / "out", timeline)
    read_iops = result.series["read_iops"].points()
    assert len(read_iops) >= 2 and all(p.value > 0 for p in read_iops)
    assert all(p.value > 0 for p in result.series["write_lat"].points())
    started, stopped = timeline.events(EventKind.WORKLOAD_START)[0].t, timeline.events(EventKind.WORKLOAD_STOP)[0].t
    assert all(started - 0.5 <= p.t <= stopped for p in read_iops)  # placed on the run's own timeline
    assert result.summary["jobname"] == "mail"


def test_two_fio_servers_driven_by_one_client_each_give_their_own_series(tmp_path):
    timeline = Timeline()
    with FioServer(tmp_path / "s0") as first, FioServer(tmp_path / "s1") as second:
        results = run_clients(FioJob(PROFILES["oltp"], tmp_path / "data", runtime_s=3, size="16m"), [first, second],
                              tmp_path / "out", timeline)
        pids = [first.pid, second.pid]
    assert [r.name for r in results] == ["fio-c0", "fio-c1"]
    for result in results:
        assert len(result.series["write_iops"].points()) >= 2
        assert all(p.value > 0 for p in result.series["read_bw"].points())
    assert all(pid is not None for pid in pids)


def test_a_server_on_a_non_loopback_address_is_refused(tmp_path):
    with pytest.raises(ValueError, match="loopback"):
        FioServer(tmp_path, address="192.0.2.10")


def test_fio_as_a_workload_runs_until_stopped_and_keeps_no_ledger(tmp_path):
    timeline = Timeline()
    workload = FioWorkload(FioJob(PROFILES["oltp"], tmp_path / "data", runtime_s=60, size="16m"), tmp_path / "out", timeline)
    assert isinstance(workload, Workload) and not workload.keeps_ledger
    workload.start()
    assert not workload.wait(3.2)  # still running: the runtime is only an upper bound
    report = workload.stop()
    assert report.clean and report.workload == "fio" and 2 <= report.seconds <= 4
    assert timeline.events(EventKind.WORKLOAD_STOP)[0].t - timeline.events(EventKind.WORKLOAD_START)[0].t < 5
    assert all(p.value > 0 for p in workload.series["read_iops"].points())
    assert workload.summary["jobname"] == "oltp"
    assert workload.verify() is None


@pytest.mark.reproducer("Y-close-then-bind")
def test_a_port_taken_between_its_pick_and_fios_bind_is_picked_again_not_mistaken_for_the_server(
        tmp_path, monkeypatch):
    """The port a server is given by default is picked, closed, then bound by fio: another process can take it in
    between. Its listener answers connections, so 'something accepts' is no proof that fio came up."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    picks, pick = iter([taken.getsockname()[1]]), fio.free_loopback_port
    monkeypatch.setattr(fio, "free_loopback_port", lambda: next(picks, None) or pick())
    with taken, FioServer(tmp_path / "s0", port=fio.ANY_PORT) as server:
        assert server.port != taken.getsockname()[1]
        assert server.pid is not None and procs.listens_on(server.pid, "127.0.0.1", server.port)


def test_a_port_asked_for_and_taken_is_a_clear_error_naming_it(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(RuntimeError, match=f"127.0.0.1,{port}.*in use"):
            FioServer(tmp_path / "s0", port=port).start()


@pytest.mark.reproducer("Y-close-then-bind")
def test_a_listener_of_another_process_is_not_taken_for_fios_own(tmp_path):
    """fio writes its pid file before it binds: for a moment its pid lives while another process's listener answers
    on the port (a first version of the fix took that moment for fio up, one run in three)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert not procs.listens_on(os.getpid() + 10**6, "127.0.0.1", port)  # no such process
        assert procs.listens_on(os.getpid(), "127.0.0.1", port)
    assert not procs.listens_on(os.getpid(), "127.0.0.1", port)
