"""A harness run in a child process: freeze process:victim, announce it, wait. Tests signal or kill it.

usage: fault_script.py TOPOLOGY STATE [options]; prints `injecting`, `in-effect`, `revert-start`
and `revert-done` as the lifecycle goes, flushed, so a test can time its signals.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from faults.base import FaultSpec
from harness.safety.run import HarnessRun
from harness.safety.runner import RunnerSettings
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.loader import load_topology
from tests.unit.harness.safety.scripted_freeze import ScriptedFreeze, say


class SlowGuard:
    """A health probe making a network call: each evaluation takes a second."""

    name = "slow-probe"

    def evaluate(self) -> str | None:
        time.sleep(1.0)
        return None


class TripsAtOnce:
    name = "health-probe"

    def evaluate(self) -> str | None:
        return "probe failed"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("topology")
    parser.add_argument("state", type=Path)
    parser.add_argument("--guard", choices=["none", "slow", "trip"], default="none")
    parser.add_argument("--inject-s", type=float, default=0.0)
    parser.add_argument("--revert-s", type=float, default=0.0)
    parser.add_argument("--clear-after-s", type=float, default=0.0)
    parser.add_argument("--body-s", type=float, default=60.0, help="how long the body waits with the fault in effect")
    parser.add_argument("--duration", type=float, default=None)
    parser.add_argument("--revert-timeout", type=float, default=120.0)
    parser.add_argument("--settle-timeout", type=float, default=30.0)
    parser.add_argument("--margin", type=float, default=60.0, help="dead man's margin past the fault's duration")
    parser.add_argument("--acquire", action="store_true", help="claim the cluster as a pytest run does")
    args = parser.parse_args()
    # a background job (nohup, CI runners) inherits SIGINT ignored; a terminal's Ctrl-C is not
    signal.signal(signal.SIGINT, signal.default_int_handler)
    topology = load_topology(args.topology)
    session = HarnessRun(topology=topology, topology_source=args.topology, state_dir=args.state,
                             allow_destructive=True,
                             runner_settings=RunnerSettings(revert_timeout_s=args.revert_timeout, poll_interval_s=0.05,
                                                           settle_timeout_s=args.settle_timeout,
                                                           deadman_margin_s=args.margin))
    if args.acquire:
        session.acquire()
    spec = FaultSpec("process-freeze", "process:victim")
    pidfile = Path(next(p.pidfile for p in topology.processes if p.name == "victim"))
    fault = ScriptedFreeze(spec, pidfile, "/bin/sh", announce=True, inject_s=args.inject_s, revert_s=args.revert_s,
                           clear_after_s=args.clear_after_s)
    guards = {"none": [], "slow": [SlowGuard()], "trip": [TripsAtOnce()]}[args.guard]
    try:
        with session.inject(Timeline(), fault, guards=guards, duration_s=args.duration) as active:
            say("in-effect")
            active.sleep(args.body_s)
    finally:
        if args.acquire:
            session.release()
    say("ended")
    sys.exit(0)


if __name__ == "__main__":
    main()
