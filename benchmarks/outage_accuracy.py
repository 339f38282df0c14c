"""How precisely the driver measures a write outage: a known outage against the reported one.

The outage is a freeze of every PostgreSQL server process (SIGSTOP) for exactly 1.500 s, then
SIGCONT: sessions survive, so clients see its end at once (a link cut would not do: TCP
retransmission backoff delays the clients' return). The reported outage is the driver's
'commit-gap' event. Five runs; ends with `outage_error_ms=<worst of 5>`.

Against a standalone local PostgreSQL for now (no pg_auto_failover, so nothing can turn the
freeze into a failover); the lab variant freezes the primary's keeper and postgres likewise.

    .venv/bin/python benchmarks/outage_accuracy.py [--runs 5] [--outage 1.5] [--users 8]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.timeline import Timeline
from workloads.oltp import DriverConfig, OltpDriver
from workloads.oltp.local import LocalBench as Bench
from workloads.oltp.local import start_bench
from workloads.oltp.schema import Scale
from workloads.series import TransactionSeries


def one_run(bench: Bench, users: int, outage_s: float) -> tuple[float, float, float]:
    """(true outage, reported outage, start error) in seconds for one freeze."""
    timeline, series = Timeline(), TransactionSeries()
    driver = OltpDriver(bench.dialect, bench.settings, timeline, series,
                        DriverConfig(users=users, scale=bench.scale, gap_threshold_s=0.5))
    driver.start()
    try:
        time.sleep(2.0)
        stopped, resumed = bench.server.freeze(outage_s)
        time.sleep(1.5)
    finally:
        report = driver.stop(timeout_s=5.0)
    truth_start, truth_end = timeline.to_t(stopped), timeline.to_t(resumed)
    gaps = [e for e in timeline.events("commit-gap") if e.attrs["end"] is not None and e.attrs["end"] >= truth_start]
    if len(gaps) != 1 or report.stuck:
        raise RuntimeError(f"expected one commit gap around the freeze, got {[dict(g.attrs) for g in gaps]}, report {report}")
    gap = gaps[0].attrs
    return truth_end - truth_start, float(gap["end"]) - float(gap["start"]), float(gap["start"]) - truth_start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--outage", type=float, default=1.5)
    parser.add_argument("--users", type=int, default=8)
    args = parser.parse_args()
    print(f"target: standalone local PostgreSQL 15 on 127.0.0.1 (not the lab); outage = SIGSTOP of every "
          f"server process for {args.outage:.3f} s; {args.users} users, TPC-B")
    bench = start_bench(Scale(1))
    errors = []
    try:
        for run in range(1, args.runs + 1):
            truth, reported, start_error = one_run(bench, args.users, args.outage)
            errors.append(abs(reported - truth))
            print(f"run {run}: true {truth * 1000:.1f} ms, reported {reported * 1000:.1f} ms, "
                  f"error {(reported - truth) * 1000:+.1f} ms (gap starts {start_error * 1000:+.1f} ms from the freeze)")
    finally:
        bench.server.destroy()
    print(f"outage_error_ms={max(errors) * 1000:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
