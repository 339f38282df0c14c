"""A fault is journaled before it is injected and reverted whatever ends the experiment.

The fault here is real: SIGSTOP of a process tree, observed in /proc.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from faults.backends.process import ProcessFreeze
from faults.base import FaultSpec, FaultState
from harness.safety.guards import Deadline, ThroughputFloor
from harness.safety.run import HarnessRun
from harness_kernel.errors import StopConditionTripped, TargetNotAllowedError
from harness_kernel.history import EventKind
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.models import Topology
from tests.support.victim import Victim, write_topology

FREEZE = FaultSpec(kind="process-freeze", target="process:victim")


@dataclass
class Spy(ProcessFreeze):
    """Says when it injects, in the list the test reads."""

    calls: list[str] = field(default_factory=list)

    def inject(self) -> None:
        self.calls.append("inject")
        super().inject()


class HalfInjected(ProcessFreeze):
    def inject(self) -> None:
        super().inject()
        raise RuntimeError("control plane dropped the connection")


def make_session(topology: Topology, source: Path | str, state: Path) -> HarnessRun:
    return HarnessRun(topology=topology, topology_source=str(source), state_dir=state, allow_destructive=True)


def journal_files(state: Path) -> list[Path]:
    return list((state / "journal").glob("*.json"))


def test_fault_is_in_effect_inside_the_block_and_reverted_after(topology, topology_file, state, victim: Victim):
    session = make_session(topology, topology_file, state)
    timeline = Timeline()
    with session.inject(timeline, FREEZE) as active:
        assert victim.frozen()
        assert len(journal_files(state)) == 1
        assert active.in_effect_at is not None
    assert victim.running()
    assert journal_files(state) == []
    assert [e.kind for e in timeline] == ["inject", "in-effect", "revert", "reverted"]


def test_journal_entry_is_durable_before_the_fault_touches_the_target(topology, topology_file, state, victim, monkeypatch):
    """fsync of the entry, then its rename into place, then fsync of the directory: all before inject."""
    calls: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        calls.append("fsync-dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "fsync-file")
        real_fsync(fd)

    def replace(src: str | Path, dst: str | Path) -> None:
        calls.append("rename")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    session = make_session(topology, topology_file, state)
    with session.inject(Timeline(), Spy(FREEZE, victim.pidfile, "/bin/sh", calls)):
        pass
    assert calls[:4] == ["fsync-file", "rename", "fsync-dir", "inject"]


def test_a_fault_that_raises_mid_inject_is_still_reverted(topology, topology_file, state, victim):
    session = make_session(topology, topology_file, state)
    fault = HalfInjected(FREEZE, victim.pidfile, "/bin/sh")
    with pytest.raises(RuntimeError, match="dropped"), session.inject(Timeline(), fault):
        pytest.fail("the body must not run when inject fails")
    assert victim.running()
    assert journal_files(state) == []


def test_a_failing_test_body_still_reverts(topology, topology_file, state, victim):
    session = make_session(topology, topology_file, state)
    with pytest.raises(AssertionError), session.inject(Timeline(), FREEZE):
        assert victim.frozen()
        raise AssertionError("SLO violated")
    assert victim.running()


def test_a_target_outside_the_allow_list_is_refused_before_anything_happens(tmp_path, state, victim):
    topology_file = write_topology(tmp_path, victim.pidfile, allow=False)
    from harness_kernel.topology.loader import load_topology

    session = make_session(load_topology(topology_file), topology_file, state)
    with pytest.raises(TargetNotAllowedError, match="process:victim"), session.inject(Timeline(), FREEZE):
        pass
    assert victim.running()
    assert journal_files(state) == []


def test_destructive_faults_on_a_real_cluster_need_an_explicit_opt_in(topology, topology_file, state, victim):
    session = make_session(topology, topology_file, state)
    assert topology.kind == "vsphere"
    session.allow_destructive = False
    # process faults on the harness machine are destructive too: without the opt-in they are refused
    with pytest.raises(TargetNotAllowedError, match="--allow-destructive"), session.inject(Timeline(), FREEZE):
        pass
    assert victim.running()


def test_a_stop_condition_reverts_at_once_and_fails_the_test_with_its_reason(topology, topology_file, state, victim):
    session = make_session(topology, topology_file, state)
    timeline = Timeline()
    floor = ThroughputFloor(recent_tps=lambda seconds: [0.0] * int(seconds), baseline_tps=500, ratio=0.5,
                            longer_than_s=1)
    started = time.monotonic()
    with pytest.raises(StopConditionTripped, match="TPS stayed below 250"), \
            session.inject(timeline, FREEZE, guards=[floor]) as active:
        assert eventually(victim.running, True, timeout_s=10), "the guard reverted while the body was still busy"
        active.sleep(30)
    assert time.monotonic() - started < 10
    assert [e.attrs["guard"] for e in timeline.events(EventKind.STOP_CONDITION)] == ["throughput-floor"]


def test_a_deadline_guard_ends_a_fault_the_body_forgot_to_end(topology, topology_file, state, victim):
    session = make_session(topology, topology_file, state)
    with pytest.raises(StopConditionTripped, match="deadline"), session.inject(Timeline(), FREEZE, guards=[Deadline(0.5)]):
        time.sleep(1.5)  # the guard reverts while the body is still busy
        assert victim.running()


def test_revert_is_idempotent(topology, victim):
    fault = ProcessFreeze(FREEZE, victim.pidfile, "/bin/sh")
    fault.inject()
    assert eventually(fault.check, FaultState.IN_EFFECT)
    fault.revert()
    fault.revert()
    assert eventually(fault.check, FaultState.CLEARED)


def eventually(probe, wanted, timeout_s: float = 5.0) -> bool:
    """Signals are delivered asynchronously: poll the observed state briefly."""
    deadline = time.monotonic() + timeout_s
    while probe() is not wanted:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
