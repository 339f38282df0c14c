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
import multiprocessing
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from tests.support.localpg import PG_BIN
from tests.support.oltp_local import LocalBench as Bench
from tests.support.oltp_local import start_bench
from workloads.oltp import TPCB, TPCE_LIKE, DriverConfig, Mix, OltpDriver
from workloads.oltp.driver import first_free_user_id
from workloads.oltp.mix import TPCB_STEPS
from workloads.oltp.schema import Scale


@dataclass(frozen=True)
class Usage:
    """A client's CPU and context switches over a run (rusage deltas)."""

    user_s: float = 0.0
    system_s: float = 0.0
    voluntary: int = 0  # switches while waiting (a reply from the server, the interpreter lock)
    involuntary: int = 0  # preempted

    @classmethod
    def now(cls, who: int) -> Usage:
        r = resource.getrusage(who)
        return cls(r.ru_utime, r.ru_stime, r.ru_nvcsw, r.ru_nivcsw)

    def __sub__(self, other: Usage) -> Usage:
        return Usage(self.user_s - other.user_s, self.system_s - other.system_s,
                     self.voluntary - other.voluntary, self.involuntary - other.involuntary)

    @property
    def cpu_s(self) -> float:
        return self.user_s + self.system_s


@dataclass(frozen=True)
class Run:
    tps: float
    seconds: float
    usage: Usage

    @property
    def cpu_per_1000_tps(self) -> float:
        return self.usage.cpu_s / self.seconds / self.tps * 1000

    def per_transaction(self) -> str:
        n = self.tps * self.seconds
        return (f"user {1e6 * self.usage.user_s / n:.0f} us, system {1e6 * self.usage.system_s / n:.0f} us, "
                f"{self.usage.voluntary / n:.1f} + {self.usage.involuntary / n:.1f} context switches "
                "(waiting + preempted)")


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
               wait_connected_s: float = 60.0, first_user_id: int | None = None) -> Run:
    """TPS over the measured window and what the client spent in it; the window starts once every user
    has connected."""
    timeline, series = Timeline(), TransactionSeries()
    driver = OltpDriver(bench.dialect, bench.settings, timeline, series,
                        DriverConfig(users=clients, mix=mix, scale=bench.scale, think_time_s=think_time_s,
                                     first_user_id=first_user_id))
    driver.start()
    deadline = time.monotonic() + wait_connected_s
    while sum(u.connects for u in driver.users) < clients and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    commits_before = sum(p.commits for p in series.points())
    t0, usage0 = timeline.now(), Usage.now(resource.RUSAGE_SELF)
    time.sleep(seconds)
    commits_after = sum(p.commits for p in series.points())
    t1, usage1 = timeline.now(), Usage.now(resource.RUSAGE_SELF)
    report = driver.stop(timeout_s=5.0)
    if report.stuck or report.crashed:
        print(f"  warning: stuck={len(report.stuck)} crashed={len(report.crashed)}")
    return Run((commits_after - commits_before) / (t1 - t0), t1 - t0, usage1 - usage0)


def _one_user_process(bench: Bench, seconds: float, user_id: int, start: Any, out: Any) -> None:
    out.send(run_driver(bench, 1, seconds, first_user_id=user_id, wait_connected_s=30.0) if start.wait(60) else None)


def run_driver_processes(bench: Bench, clients: int, seconds: float) -> Run:
    """The same driver with one user per process (forked): no interpreter lock shared between users. Not a
    shape the harness runs (a user per process does not scale to hundreds), but it measures what the lock
    costs: the difference from `run_driver` at the same client count."""
    context = multiprocessing.get_context("fork")
    start, ends = context.Event(), [context.Pipe(duplex=False) for _ in range(clients)]
    base = first_free_user_id(bench.dialect, bench.settings)
    workers = [context.Process(target=_one_user_process, args=(bench, seconds, base + i, start, send))
               for i, (_, send) in enumerate(ends)]
    for worker in workers:
        worker.start()
    start.set()
    runs = [receive.recv() if receive.poll(seconds + 90) else None for receive, _ in ends]
    for worker in workers:
        worker.join(10)
    done = [r for r in runs if r is not None]
    if len(done) < clients:
        raise RuntimeError(f"{clients - len(done)} of {clients} one-user processes did not report")
    usage = Usage(sum(r.usage.user_s for r in done), sum(r.usage.system_s for r in done),
                  sum(r.usage.voluntary for r in done), sum(r.usage.involuntary for r in done))
    return Run(sum(r.tps for r in done), statistics.fmean(r.seconds for r in done), usage)


def run_pgbench(bench: Bench, script: Path, clients: int, seconds: float) -> Run:
    password = bench.settings.credentials.password
    env = {**os.environ, "PGPASSWORD": password.reveal() if password else ""}
    usage0 = Usage.now(resource.RUSAGE_CHILDREN)
    done = subprocess.run([str(PG_BIN / "pgbench"), "-h", bench.server.host, "-p", str(bench.server.port), "-U", "postgres",
                           "-n", "-c", str(clients), "-j", str(min(clients, os.cpu_count() or 1)), "-T", str(int(seconds)),
                           "-f", str(script), bench.settings.database],
                          capture_output=True, text=True, env=env, check=True, timeout=seconds + 60)
    usage = Usage.now(resource.RUSAGE_CHILDREN) - usage0
    match = re.search(r"tps = ([\d.]+) \(without initial connection time\)", done.stdout)
    if not match:
        raise RuntimeError(f"pgbench printed no tps:\n{done.stdout}\n{done.stderr}")
    return Run(float(match.group(1)), seconds, usage)


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
        run = run_driver(bench, users, seconds, mix=TPCE_LIKE, think_time_s=think_time_s)
        tps, cpu = run.tps, run.usage.cpu_s / run.seconds
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
    driver: list[Run]
    pgbench: list[Run]
    driver_processes: list[Run]

    @property
    def driver_tps(self) -> float:
        return statistics.median(r.tps for r in self.driver)

    @property
    def pgbench_tps(self) -> float:
        return statistics.median(r.tps for r in self.pgbench)

    @property
    def ratio(self) -> float:
        return self.driver_tps / self.pgbench_tps

    def print(self) -> None:
        print(f"  median driver tps={self.driver_tps:.1f}  median pgbench tps={self.pgbench_tps:.1f}  "
              f"ratio={self.ratio:.3f}")
        print(f"  client cpu per 1000 tps: driver {median_run(self.driver).cpu_per_1000_tps:.2f} cores, "
              f"pgbench {median_run(self.pgbench).cpu_per_1000_tps:.2f} cores")
        print(f"  client per transaction: driver {median_run(self.driver).per_transaction()}")
        print(f"                          pgbench {median_run(self.pgbench).per_transaction()}")
        if self.driver_processes:
            alone = median_run(self.driver_processes)
            print(f"  driver with one user per process (no shared interpreter lock): tps={alone.tps:.1f} "
                  f"ratio={alone.tps / self.pgbench_tps:.3f}; per transaction {alone.per_transaction()}")


def median_run(runs: list[Run]) -> Run:
    return sorted(runs, key=lambda r: r.tps)[len(runs) // 2]


def compare(bench: Bench, script: Path, clients: int, seconds: float, pairs: int, *, processes: bool) -> Comparison:
    """Alternating runs, driver first (then, with `processes`, the driver with a process per user); medians."""
    driver, pgbench, driver_processes = [], [], []
    for pair in range(pairs):
        driver.append(run_driver(bench, clients, seconds))
        print(f"  run {pair + 1}: driver  tps={driver[-1].tps:.1f}")
        pgbench.append(run_pgbench(bench, script, clients, seconds))
        print(f"  run {pair + 1}: pgbench tps={pgbench[-1].tps:.1f}")
        if processes:
            driver_processes.append(run_driver_processes(bench, clients, seconds))
            print(f"  run {pair + 1}: driver, a process per user tps={driver_processes[-1].tps:.1f}")
    return Comparison(driver, pgbench, driver_processes)


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
                result = results[placement.name] = compare(bench, script, args.clients, args.seconds, args.pairs,
                                                           processes=placement.name == "shared cores")
                result.print()
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
