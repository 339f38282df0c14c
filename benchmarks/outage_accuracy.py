"""How precisely the harness measures a write outage: a known outage against the reported one.

The outage is a freeze of the primary's PostgreSQL (postmaster and every backend, SIGSTOP) for
exactly 1.500 s, then SIGCONT. Sessions survive a freeze, so clients see its end at once (a
link cut would not do: TCP retransmission backoff delays the clients' return). The reported
outage is the driver's 'commit-gap' event: last successful commit before, first after.

Against the embedded lab by default (started here unless a lab with that prefix is up, and
taken down again). Automatic failover is disabled during the measurement by giving the standby
candidate priority 0 on the monitor (restored afterwards), so pg_auto_failover cannot turn the
freeze into a failover; each run checks that the primary did not change. `--target local`
measures against a standalone PostgreSQL instead. Five runs; ends with `outage_error_ms=<worst>`.

    .venv/bin/python benchmarks/outage_accuracy.py [--target lab|local] [--runs 5] [--outage 1.5] [--users 8]
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.clusters.lab import LabCluster
from harness.safety.signals import sigterm_raises
from harness_kernel import procs
from harness_kernel.history import EventKind
from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from harness_kernel.odbc.settings import ConnectionSettings
from harness_kernel.topology.models import LabSettings
from harness_lab.controller import Lab
from harness_lab.layout import LabLayout
from tests.support.oltp_local import start_bench
from workloads.oltp import DriverConfig, OltpDriver, prepare_schema
from workloads.oltp.dialect import Dialect
from workloads.oltp.schema import Scale

SCALE = Scale(branches=10, accounts_per_branch=10_000)


class Target(Protocol):
    dialect: Dialect
    settings: ConnectionSettings

    @property
    def description(self) -> str: ...

    def freeze(self, seconds: float) -> tuple[float, float]:
        """Freeze the primary's database for `seconds`; the monotonic (stopped, resumed) times."""
        ...


@dataclass
class LocalTarget:
    description = "standalone local PostgreSQL 15 on 127.0.0.1"
    dialect: Dialect
    settings: ConnectionSettings
    freeze_server: Callable[[float], tuple[float, float]]

    def freeze(self, seconds: float) -> tuple[float, float]:
        return self.freeze_server(seconds)


@dataclass
class LabTarget:
    lab: Lab
    dialect: Dialect
    settings: ConnectionSettings

    @property
    def description(self) -> str:
        return f"embedded lab {self.lab.layout.prefix} (pg_auto_failover, synchronous replication), primary {self.lab.primary()}"

    def freeze(self, seconds: float) -> tuple[float, float]:
        primary = self.lab.primary()
        postmaster = procs.read_pidfile(self.lab.pg.pgdata(primary) / "postmaster.pid")
        if postmaster is None:
            raise RuntimeError(f"{primary}: no postmaster.pid")
        if not procs.freeze_tree(postmaster):
            procs.signal_tree(postmaster, signal.SIGCONT)
            raise RuntimeError(f"{primary}: could not stop every PostgreSQL process")
        stopped = time.monotonic()
        try:
            time.sleep(max(0.0, seconds - (time.monotonic() - stopped)))
        finally:
            resumed = time.monotonic()
            procs.signal_tree(postmaster, signal.SIGCONT)
        return stopped, resumed

    @contextmanager
    def automatic_failover_disabled(self) -> Iterator[None]:
        """Standbys get candidate priority 0 (no failover candidate), then their own back."""
        rows = self.lab.pg.sql("select nodename, candidatepriority from pgautofailover.node "
                               "where reportedstate <> 'primary' order by nodename")
        try:
            for name, _ in rows:
                self._set_priority(name, 0)
            yield
        finally:
            for name, priority in rows:
                self._set_priority(name, int(priority))

    def _set_priority(self, node: str, priority: int) -> None:
        self.lab.pg.sql(f"select pgautofailover.set_node_candidate_priority('default', '{node}', {priority})")


def one_run(target: Target, users: int, outage_s: float) -> tuple[float, float, float]:
    """(true outage, reported outage, start error) in seconds for one freeze."""
    timeline, series = Timeline(), TransactionSeries()
    driver = OltpDriver(target.dialect, target.settings, timeline, series,
                        DriverConfig(users=users, scale=SCALE, gap_threshold_s=0.5))
    driver.start()
    try:
        time.sleep(3.0)
        stopped, resumed = target.freeze(outage_s)
        time.sleep(2.0)
    finally:
        report = driver.stop(timeout_s=5.0)
    truth_start, truth_end = timeline.to_t(stopped), timeline.to_t(resumed)
    gaps = [e for e in timeline.events(EventKind.COMMIT_GAP) if e.attrs["end"] is not None and e.attrs["end"] >= truth_start]
    if len(gaps) != 1 or report.stuck:
        raise RuntimeError(f"expected one commit gap around the freeze, got {[dict(g.attrs) for g in gaps]}, report {report}")
    gap = gaps[0].attrs
    return truth_end - truth_start, float(gap["end"]) - float(gap["start"]), float(gap["start"]) - truth_start


def measure(target: Target, runs: int, users: int, outage_s: float,
            check: Callable[[], None] | None = None) -> list[float]:
    errors = []
    for run in range(1, runs + 1):
        truth, reported, start_error = one_run(target, users, outage_s)
        errors.append(abs(reported - truth))
        print(f"run {run}: true {truth * 1000:.1f} ms, reported {reported * 1000:.1f} ms, "
              f"error {(reported - truth) * 1000:+.1f} ms (gap starts {start_error * 1000:+.1f} ms from the freeze)",
              flush=True)
        if check is not None:
            check()
    return errors


def run_on_lab(args: argparse.Namespace) -> list[float]:
    lab = Lab(LabLayout.from_settings(LabSettings(prefix=args.prefix)))
    started_here = not lab.healthy()
    if started_here:
        print(f"lab {args.prefix}: up in {lab.up():.1f} s")
    try:
        dialect, settings = LabCluster(lab, lab.layout.topology()).connection()
        prepare_schema(dialect, settings, SCALE, scratch=True)
        target = LabTarget(lab, dialect, settings)
        primary = lab.primary()
        print(f"target: {target.description}; automatic failover disabled (standby candidate priority 0)")
        print(f"outage = SIGSTOP of the primary's PostgreSQL for {args.outage:.3f} s; {args.users} users, TPC-B")

        def same_primary() -> None:
            lab.wait_healthy(30)
            if lab.primary() != primary:
                raise RuntimeError(f"the freeze became a failover ({primary} -> {lab.primary()}): the run is void")

        with target.automatic_failover_disabled():
            return measure(target, args.runs, args.users, args.outage, same_primary)
    finally:
        if started_here:
            lab.down()


def run_locally(args: argparse.Namespace) -> list[float]:
    bench = start_bench(SCALE)
    try:
        target = LocalTarget(bench.dialect, bench.settings, bench.server.freeze)
        print(f"target: {target.description}; outage = SIGSTOP of every server process for {args.outage:.3f} s; "
              f"{args.users} users, TPC-B")
        return measure(target, args.runs, args.users, args.outage)
    finally:
        bench.server.destroy()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=("lab", "local"), default="lab")
    parser.add_argument("--prefix", default="hbench", help="lab prefix (a lab already up with it is reused and kept)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--outage", type=float, default=1.5)
    parser.add_argument("--users", type=int, default=8)
    args = parser.parse_args()
    with sigterm_raises():  # SIGTERM unwinds too: candidate priorities restored, a lab started here taken down
        errors = run_on_lab(args) if args.target == "lab" else run_locally(args)
    print(f"outage_error_ms={max(errors) * 1000:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
