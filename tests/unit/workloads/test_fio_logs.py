"""fio log parsing, on files written by a real fio 3.33 run (tests/unit/workloads/data):
a local 'mail' run with numjobs=2 and one client of a client/server 'oltp' run."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_kernel.history.timeline import Timeline
from workloads.fio import PROFILES, FioJob
from workloads.fio_logs import load_series, log_path, parse_log

DATA = Path(__file__).parent / "data"


def test_log_lines_are_unix_ms_window_ends_with_direction():
    samples = parse_log((DATA / "fio_iops.1.log").read_text())
    assert [(s.end_ms, s.direction) for s in samples[:2]] == [(1795430852837, 0), (1795430852837, 1)]
    assert all(s.value > 0 for s in samples)


def test_the_partial_window_fio_flushes_at_exit_is_dropped():
    text = "1000, 10, 0, 0, 0\n2000, 12, 0, 0, 0\n2011, 1, 0, 0, 0\n"
    assert [s.value for s in parse_log(text)] == [10, 12]


def test_a_local_run_gives_per_second_iops_bandwidth_and_latency_per_direction():
    timeline = Timeline(origin_monotonic=0.0, origin_wall=1795430851.5)
    series = load_series(DATA / "fio", "fio", timeline, jobs=2)
    assert set(series.metrics) == {f"{d}_{m}" for d in ("read", "write") for m in ("iops", "bw", "lat")}
    read_iops = series["read_iops"].points()
    assert [round(p.t, 3) for p in read_iops][:2] == [0.337, 1.337]  # window start on the timeline
    job1 = {s.end_ms: s.value for s in parse_log((DATA / "fio_iops.1.log").read_text()) if s.direction == 0}
    job2 = {s.end_ms: s.value for s in parse_log((DATA / "fio_iops.2.log").read_text()) if s.direction == 0}
    assert read_iops[0].value == job1[1795430852837] + job2[min(job2)]  # jobs add up
    assert series["read_lat"].unit == "ms"
    assert 0.01 < series["read_lat"].points()[0].value < 100  # nanoseconds converted to ms
    assert series["read_bw"].points()[0].value == pytest.approx(read_iops[0].value * 32, rel=0.01)  # 32 KiB blocks


def test_client_mode_logs_carry_the_server_address_suffix():
    assert log_path(DATA / "fio-c0", "iops", ".127.0.0.1").name == "fio-c0_iops.1.log.127.0.0.1"
    series = load_series(DATA / "fio-c0", "fio-c0", Timeline(), suffix=".127.0.0.1")
    assert len(series["write_iops"].points()) == 2
    assert series.seconds() == 3  # fio returned the last second only in the latency log


def test_job_file_asks_for_one_second_averages_with_unix_timestamps(tmp_path):
    text = FioJob(PROFILES["mail"], tmp_path, runtime_s=5).text(tmp_path / "m")
    for line in ("rw=randrw", "rwmixread=70", "bs=32k", "runtime=5", "time_based=1", "log_avg_msec=1000", "log_unix_epoch=1",
                 f"write_iops_log={tmp_path / 'm'}"):
        assert line in text.splitlines()
    assert "bs=8k" in FioJob(PROFILES["oltp"], tmp_path).text(tmp_path / "o")
