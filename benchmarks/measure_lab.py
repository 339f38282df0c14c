"""Measure the lab's headline figures (run as root from the repo root; takes ~5 minutes).

    .venv/bin/python benchmarks/measure_lab.py [--crashes 5]

Setup time, unplanned failover over N primary crashes (client write outage and the
monitor's failure-to-promotion time), switchover write outage, A-B-only cut outage with and
without the quorum watchdog, and a storage-loss rebuild (duration, bytes).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from faults.backends import lab as backend
from faults.base import Fault, FaultSpec, FaultState
from harness_kernel.topology.models import LabSettings, Topology
from harness_lab import haevents
from harness_lab.controller import Lab
from harness_lab.layout import LabLayout
from tests.integration.lab.lab_support import make_state_dir
from tests.integration.lab.lab_writers import WriteLoad


def wait(fault: Fault, state: FaultState, timeout_s: float = 150) -> None:
    deadline = time.monotonic() + timeout_s
    while fault.check() is not state:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{fault.spec.kind}: not {state.value} in {timeout_s} s")
        time.sleep(0.2)


def outage_of(lab: Lab, topology: Topology, spec: FaultSpec, hold_s: float) -> tuple[float, float | None]:
    """(client write outage, monitor: first 'failure'/'demote' event -> new primary reported)."""
    fault = backend.BUILDERS[spec.kind](spec, topology)
    with WriteLoad(lab.odbc_connection_string()) as load:
        load.wait_commits(20, time.monotonic(), 20)
        since_wall = time.time() + lab.clock_offset()
        start = time.monotonic()
        fault.inject()
        wait(fault, FaultState.IN_EFFECT)
        time.sleep(hold_s)
        fault.revert()
        load.wait_commits(20, time.monotonic(), 30)
        outage = load.outage(start, time.monotonic())
    wait(fault, FaultState.CLEARED)
    lab.wait_healthy(90)
    events = lab.ha_events(since_wall)
    detected = haevents.failure_detected(events)
    new_primary = haevents.promoted([e for e in events if detected and e.wall >= detected.wall])
    ha = new_primary.wall - detected.wall if detected and new_primary else None
    return outage, ha


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--crashes", type=int, default=5)
    parser.add_argument("--prefix", default="hlabm")
    args = parser.parse_args()
    state = make_state_dir(args.prefix)
    lab = Lab(LabLayout.from_settings(LabSettings(prefix=args.prefix, state_dir=str(state))))
    topology = lab.layout.topology()
    try:
        setup = lab.up()
        print(f"setup: {setup:.1f} s")
        crash = []
        for _ in range(args.crashes):
            target = f"host:{lab.primary().replace('node', 'host')}"
            crash.append(outage_of(lab, topology, FaultSpec("host-crash", target), hold_s=10))
            print(f"  crash {target}: write outage {crash[-1][0]:.1f} s, monitor unhealthy -> promoted "
                  f"{crash[-1][1] if crash[-1][1] is None else round(crash[-1][1], 1)} s")
        outs = [c[0] for c in crash]
        print(f"failover write outage over {len(outs)} crashes: min {min(outs):.1f} median {statistics.median(outs):.1f} "
              f"max {max(outs):.1f} s")
        sw = [outage_of(lab, topology, FaultSpec("role-switchover", "database:bench"), hold_s=0)[0] for _ in range(3)]
        print(f"switchover write outage (3): {', '.join(f'{x:.1f}' for x in sw)} s")
        for params in ({}, {"sync_timeout_s": 2.0}):
            out, _ = outage_of(lab, topology, FaultSpec("link-partition", "link:site-a~site-b", params), hold_s=15)
            print(f"A-B cut 15 s {params or 'no watchdog'}: write outage {out:.1f} s")
        replica = "node-b" if lab.primary() == "node-a" else "node-a"
        fault = backend.BUILDERS["storage-loss"](FaultSpec("storage-loss", f"node:bench/{replica}", {"max_rate": "1M"}),
                                                 topology)
        start = time.monotonic()
        fault.inject()
        last = None
        while fault.check() is FaultState.IN_EFFECT and time.monotonic() - start < 200:
            last = lab.resync_progress() or last
            time.sleep(1)
        print(f"storage-loss rebuild: {time.monotonic() - start:.1f} s to a settled secondary; "
              f"base backup {last.bytes_done if last else '?'} of {last.bytes_total if last else '?'} bytes")
        fault.revert()
        lab.wait_healthy(90)
    finally:
        lab.down()
        shutil.rmtree(state, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
