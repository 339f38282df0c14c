"""Our OLTP driver against pgbench: same server, same TPC-B transaction, same client count.

Runs alternate (driver, pgbench, driver, pgbench ...) so machine noise cancels in the medians;
the pgbench script is rendered from the driver's own TPC-B steps, ledger insert included.
The headline ratio runs the server and the clients on separate CPUs, as in production where
the load generator has its own VM; the same comparison on shared CPUs is printed before it.
Also reports client CPU per 1000 TPS, the memory of one hour of per-second samples, and the
most virtual users one client process sustains. Ends with `ratio=<driver / pgbench>`.

    .venv/bin/python benchmarks/oltp_vs_pgbench.py [--clients 8] [--seconds 8] [--pairs 3]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from tests.support.localpg import PG_BIN
from tests.support.oltp_local import LocalBench as Bench
from tests.support.oltp_local import start_bench
from workloads.oltp import TPCB, TPCE_LIKE, DriverConfig, Mix, OltpDriver
from workloads.oltp.mix import TPCB_STEPS
from workloads.oltp.schema import Scale


def cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def pgbench_script(bench: Bench) -> str:
    """The driver's TPC-B steps with `?` replaced by pgbench variables; ledger ids are negative
    so they never collide with the driver's (user << 40 | seq) ids."""
    scale = bench.scale
    lines = [f"\\set aid random(1, {scale.accounts})", f"\\set bid random(1, {scale.branches})",
             f"\\set tid random(1, {scale.tellers})", "\\set delta random(-5000, 5000)",
             "\\set ledger_id random(-4000000000000000000, -1)", "BEGIN;"]
    for statement, names in TPCB_STEPS:
        sql = getattr(bench.dialect.statements, statement)
        for name in names:
            sql = sql.replace("?", f":{name}", 1)
        lines.append(sql + ";")
    return "\n".join([*lines, "END;", ""])


def run_driver(bench: Bench, clients: int, seconds: float, mix: Mix = TPCB, think_time_s: float = 0.0,
               wait_connected_s: float = 60.0) -> tuple[float, float]:
    """(TPS over the measured window, client CPU seconds per second); the window starts once
    every user has connected."""
    timeline, series = Timeline(), TransactionSeries()
    driver = OltpDriver(bench.dialect, bench.settings, timeline, series,
                        DriverConfig(users=clients, mix=mix, scale=bench.scale, think_time_s=think_time_s))
    driver.start()
    deadline = time.monotonic() + wait_connected_s
    while sum(u.connects for u in driver.users) < clients and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    commits_before = sum(p.commits for p in series.points())
    t0, cpu0 = timeline.now(), cpu_seconds(resource.RUSAGE_SELF)
    time.sleep(seconds)
    commits_after = sum(p.commits for p in series.points())
    t1, cpu1 = timeline.now(), cpu_seconds(resource.RUSAGE_SELF)
    report = driver.stop(timeout_s=5.0)
    if report.stuck or report.crashed:
        print(f"  warning: stuck={len(report.stuck)} crashed={len(report.crashed)}")
    return (commits_after - commits_before) / (t1 - t0), (cpu1 - cpu0) / (t1 - t0)


def run_pgbench(bench: Bench, script: Path, clients: int, seconds: float) -> tuple[float, float]:
    password = bench.settings.credentials.password
    env = {**os.environ, "PGPASSWORD": password.reveal() if password else ""}
    cpu0 = cpu_seconds(resource.RUSAGE_CHILDREN)
    done = subprocess.run([str(PG_BIN / "pgbench"), "-h", bench.server.host, "-p", str(bench.server.port), "-U", "postgres",
                           "-n", "-c", str(clients), "-j", str(min(clients, os.cpu_count() or 1)), "-T", str(int(seconds)),
                           "-f", str(script), bench.settings.database],
                          capture_output=True, text=True, env=env, check=True, timeout=seconds + 60)
    cpu = cpu_seconds(resource.RUSAGE_CHILDREN) - cpu0
    match = re.search(r"tps = ([\d.]+) \(without initial connection time\)", done.stdout)
    if not match:
        raise RuntimeError(f"pgbench printed no tps:\n{done.stdout}\n{done.stderr}")
    return float(match.group(1)), cpu / seconds


def series_memory_one_hour(tps: int = 500, seconds: int = 3600) -> tuple[int, int]:
    """Bytes held by a TransactionSeries after `seconds` of synthetic samples at `tps`."""
    rng = random.Random(7)
    latencies = [rng.lognormvariate(-5.0, 0.6) for _ in range(4096)]
    tracemalloc.start()
    series = TransactionSeries()
    base = tracemalloc.get_traced_memory()[0]
    for second in range(seconds):
        for i in range(tps):
            ok = i % 100 != 0
            series.record(second + i / tps, latencies[(second * tps + i) % 4096], ok, None if ok else "connection-lost")
    size = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return size, seconds * tps


def capacity(bench: Bench, steps: list[int], seconds: float, think_time_s: float) -> int:
    """Most users with TPS flat or rising (>= 90 % of the best so far) and every user running.

    Users think between transactions, as real ones do: without think time a few hundred users
    saturate this two-core server and the step measures the server, not the client."""
    best, sustained = 0.0, 0
    for users in steps:
        tps, cpu = run_driver(bench, users, seconds, mix=TPCE_LIKE, think_time_s=think_time_s)
        print(f"  users={users:4d} tps={tps:8.1f} (demand <= {users / think_time_s:6.0f}) client_cpu={cpu:.2f} cores")
        if tps < 0.9 * best:
            break
        best, sustained = max(best, tps), users
    return sustained


@dataclass(frozen=True)
class Placement:
    """Which CPUs the server and the client (this process, its threads and pgbench) run on."""

    name: str
    server: set[int]
    client: set[int]

    def apply(self, bench: Bench) -> None:
        """New backends inherit the postmaster's CPUs; threads and children inherit this thread's."""
        for pid in bench.server.server_pids():
            with contextlib.suppress(ProcessLookupError):
                os.sched_setaffinity(pid, self.server)
        os.sched_setaffinity(0, self.client)


def placements() -> list[Placement]:
    """Separate CPUs first (the production shape: the load generator never shares the database's
    cores), then all CPUs shared, where the client's CPU per transaction is taken from the server."""
    cpus = sorted(os.sched_getaffinity(0))
    shared = Placement("shared cores", set(cpus), set(cpus))
    if len(cpus) < 2:
        return [shared]
    half = len(cpus) // 2
    return [Placement("separate cores", set(cpus[:half]), set(cpus[half:])), shared]


@dataclass(frozen=True)
class Comparison:
    driver_tps: float
    pgbench_tps: float
    driver_cpu_per_1000: float
    pgbench_cpu_per_1000: float

    @property
    def ratio(self) -> float:
        return self.driver_tps / self.pgbench_tps


def compare(bench: Bench, script: Path, clients: int, seconds: float, pairs: int) -> Comparison:
    """Alternating runs, driver first; medians of each."""
    driver_tps, pgbench_tps, driver_cpu, pgbench_cpu = [], [], [], []
    for pair in range(pairs):
        tps, cpu = run_driver(bench, clients, seconds)
        driver_tps.append(tps)
        driver_cpu.append(cpu / tps * 1000)
        print(f"  run {2 * pair + 1}: driver  tps={tps:.1f}")
        tps, cpu = run_pgbench(bench, script, clients, seconds)
        pgbench_tps.append(tps)
        pgbench_cpu.append(cpu / tps * 1000)
        print(f"  run {2 * pair + 2}: pgbench tps={tps:.1f}")
    return Comparison(statistics.median(driver_tps), statistics.median(pgbench_tps),
                      statistics.median(driver_cpu), statistics.median(pgbench_cpu))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--scale", type=int, default=10)
    parser.add_argument("--users-steps", default="100,200,400,600,800")
    parser.add_argument("--think", type=float, default=0.5, help="think time per user in the capacity steps (s)")
    args = parser.parse_args()

    print(f"local PostgreSQL 15 on 127.0.0.1, scale {args.scale}, {args.clients} clients, {args.seconds:.0f} s per run")
    steps = [int(s) for s in args.users_steps.split(",")]
    bench = start_bench(Scale(args.scale), max_connections=max(steps) + 20)
    results: dict[str, Comparison] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "tpcb.sql"
            script.write_text(pgbench_script(bench))
            for placement in placements():
                placement.apply(bench)
                print(f"{placement.name}: server on CPUs {sorted(placement.server)}, clients on {sorted(placement.client)}")
                result = results[placement.name] = compare(bench, script, args.clients, args.seconds, args.pairs)
                print(f"  median driver tps={result.driver_tps:.1f}  median pgbench tps={result.pgbench_tps:.1f}  "
                      f"ratio={result.ratio:.3f}")
                print(f"  client cpu per 1000 tps: driver {result.driver_cpu_per_1000:.2f} cores, "
                      f"pgbench {result.pgbench_cpu_per_1000:.2f} cores")
            placements()[-1].apply(bench)
        size, samples = series_memory_one_hour()
        print(f"series memory after 1 h of samples ({samples} transactions): {size / 1e6:.2f} MB")
        print(f"virtual users per client process (TPC-E-like mix, {args.think:.2f} s think time):")
        sustained = capacity(bench, steps, 4.0, args.think)
        print(f"max virtual users sustained: {sustained}")
    finally:
        bench.server.destroy()
    headline = next(iter(results.values()))
    if "shared cores" in results and headline is not results["shared cores"]:
        print(f"ratio_shared_cores={results['shared cores'].ratio:.3f}")
    print(f"ratio={headline.ratio:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
