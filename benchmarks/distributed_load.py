"""The cost of spreading the OLTP users over Dask workers, and how exactly their series merge.

Same throwaway PostgreSQL, same users and TPC-B transaction, runs alternating in-process
(the embedded default) and spread over a local Dask cluster of 2 worker processes
(`--load-workers 2`, users split between them). For each run: TPS, client CPU per 1000 TPS
in cores (this process's rusage in-process; spread, the workers' own rusage, asked of them, plus
this process's, which polls and merges), and,
when spread, the merged series against the database's own commit counter (`xact_commit` delta
between idle moments before and after the run). Ends with `ratio=<median spread TPS / median
in-process TPS>`.

    .venv/bin/python benchmarks/distributed_load.py [--users 8] [--seconds 8] [--pairs 2]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from tests.support.oltp_local import LocalBench, start_bench
from workloads.base import Workload
from workloads.load.distributed import DistributedOltp, local_cluster
from workloads.oltp import DriverConfig, OltpDriver
from workloads.oltp.schema import Scale


@dataclass(frozen=True)
class Run:
    mode: str
    tps: float
    cores_per_1000_tps: float
    merge_error_pct: float | None = None


def xact_commit(bench: LocalBench) -> int:
    return int(bench.server.psql("SELECT xact_commit FROM pg_stat_database WHERE datname = 'bench'").strip())


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def workers_cpu(client: Any) -> float:
    def used() -> float:
        import resource as r

        usage = r.getrusage(r.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    return float(sum(client.run(used).values()))


def client_cpu(workload: Workload) -> float:
    """CPU seconds spent by the load so far: this process, and the Dask workers when spread."""
    if isinstance(workload, DistributedOltp):
        return own_cpu() + workers_cpu(workload.client)
    return own_cpu()


def one_run(bench: LocalBench, mode: str, users: int, seconds: float) -> Run:
    series = TransactionSeries()
    config = DriverConfig(users=users, scale=bench.scale)
    workload: Workload
    if mode == "in-process":
        workload = OltpDriver(bench.dialect, bench.settings, Timeline(), series, config)
    else:
        config = DriverConfig(users=users // 2, scale=bench.scale)
        workload = DistributedOltp(bench.dialect, bench.settings, Timeline(), series, config, local_cluster(2),
                                   generators=2, owns_cluster=True)
    time.sleep(1)
    before = xact_commit(bench)
    workload.start()
    cpu_start = client_cpu(workload)
    started = time.monotonic()
    time.sleep(seconds)
    cpu = client_cpu(workload) - cpu_start
    elapsed = time.monotonic() - started
    workload.stop()
    time.sleep(1)
    server = xact_commit(bench) - before
    commits = sum(p.commits for p in series.points())
    points = series.points()
    steady = [p.tps for p in points[1:-1]] or [p.tps for p in points]
    tps = statistics.fmean(steady)
    merge = 100.0 * (commits - server) / server if mode != "in-process" and server else None
    return Run(mode, tps, 1000.0 * cpu / (tps * elapsed) if tps else float("nan"), merge)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--pairs", type=int, default=2)
    args = parser.parse_args()
    bench = start_bench(Scale(args.users), max_connections=100)
    runs: list[Run] = []
    try:
        for _ in range(args.pairs):
            for mode in ("in-process", "dask x2"):
                run = one_run(bench, mode, args.users, args.seconds)
                runs.append(run)
                merge = f", merged vs xact_commit {run.merge_error_pct:+.2f} %" if run.merge_error_pct is not None else ""
                print(f"{run.mode:<11} {run.tps:8.0f} TPS, client CPU {run.cores_per_1000_tps:5.2f} cores per 1000 TPS{merge}",
                      flush=True)
    finally:
        bench.server.destroy()
    inproc = statistics.median(r.tps for r in runs if r.mode == "in-process")
    spread = statistics.median(r.tps for r in runs if r.mode != "in-process")
    worst = max(abs(r.merge_error_pct or 0.0) for r in runs)
    print(f"worst merge error against the server's counter: {worst:.2f} %")
    print(f"ratio={spread / inproc:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
