"""A fault is only forgotten once the target proves it is gone; nothing on the harness side stops the revert.

Fail closed: a check that errors is "unknown", never "cleared"; a revert is retried (bounded)
until a check positively says cleared; only then the dead man's switch is disarmed and the
journal entry removed. A full disk does not stop a revert, and a revert that fails does not
hide the test's own verdict.
"""

from __future__ import annotations

import errno
import json
import time
from pathlib import Path

import pytest

from faults.backends.process import ProcessFreeze
from harness.safety.journal import Journal, JournalEntry
from harness.safety.run import HarnessRun
from harness.safety.runner import FaultRunner, RunnerSettings
from harness_kernel.errors import RevertFailedError
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.models import Topology
from tests.support.victim import Victim
from tests.unit.harness.safety.safety_support import FREEZE, ComesBack, FlakyCheck, FlakyRevert, Unrevertable, journal_files

FAST = RunnerSettings(poll_interval_s=0.02, revert_timeout_s=5.0, settle_timeout_s=5.0)


def make_session(topology: Topology, source: Path, state: Path, settings: RunnerSettings = FAST) -> HarnessRun:
    return HarnessRun(topology=topology, topology_source=str(source), state_dir=state, allow_destructive=True,
                          runner_settings=settings)


def test_a_revert_the_control_plane_refuses_at_first_is_retried_until_the_target_proves_it_clear(
        topology, topology_file, state, victim: Victim):
    fault = FlakyRevert(FREEZE, victim.pidfile, "/bin/sh", failures=2)
    with make_session(topology, topology_file, state).inject(Timeline(), fault):
        assert victim.frozen()
    assert fault.reverts == 3
    assert victim.running()
    assert journal_files(state) == []


def test_a_fault_that_comes_back_after_its_revert_is_reverted_again(topology, topology_file, state, victim: Victim):
    fault = ComesBack(FREEZE, victim.pidfile, "/bin/sh", late_s=0.05)
    with make_session(topology, topology_file, state).inject(Timeline(), fault):
        pass
    time.sleep(0.3)
    assert fault.reverts >= 2
    assert victim.running()
    assert journal_files(state) == []


def test_a_check_that_errors_counts_as_unknown_and_is_asked_again(topology, topology_file, state, victim: Victim):
    fault = FlakyCheck(FREEZE, victim.pidfile, "/bin/sh")
    with make_session(topology, topology_file, state).inject(Timeline(), fault):
        pass
    assert fault.checks_after_revert >= 2, "the check that errored proved nothing: the runner must ask again"
    assert victim.running()
    assert journal_files(state) == []


def test_without_a_positive_cleared_the_fault_stays_journaled_and_its_dead_man_armed(
        topology, topology_file, state, victim: Victim):
    fault = Unrevertable(FREEZE, victim.pidfile, "/bin/sh")
    settings = RunnerSettings(poll_interval_s=0.02, revert_timeout_s=1.5, settle_timeout_s=5.0)
    started = time.monotonic()
    with pytest.raises(RevertFailedError, match="journal keeps it"), \
            make_session(topology, topology_file, state, settings).inject(Timeline(), fault, duration_s=30):
        pass
    assert time.monotonic() - started < 15, "bounded by the revert timeout"
    assert fault.armed and fault.disarmed == 0, "the dead man's switch is the last thing still guarding the target"
    assert [json.loads(p.read_text())["status"] for p in journal_files(state)] == ["reverting"]


class FullDisk(Journal):
    """The first, durable entry is written; every later rewrite hits a full disk."""

    writes = 0

    def write(self, entry: JournalEntry) -> None:
        self.writes += 1
        if self.writes >= 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        super().write(entry)


def test_a_journal_that_cannot_be_rewritten_does_not_stop_the_revert(topology, topology_file, state, victim: Victim):
    journal = FullDisk(state / "journal")
    runner = FaultRunner(topology, str(topology_file), journal, Timeline(), "run1", FAST, allow_destructive=True)
    seen_in_body: list[str] = []
    with runner.inject(ProcessFreeze(FREEZE, victim.pidfile, "/bin/sh")):
        seen_in_body = [json.loads(p.read_text())["status"] for p in journal_files(state)]
        assert victim.frozen()
    assert seen_in_body == ["injecting"], "the first durable entry is what recover needs"
    assert journal.writes >= 2, "the rewrites were attempted and failed"
    assert victim.running()
    assert journal_files(state) == []


def FaultSpecFreeze(victim: Victim) -> FlakyRevert:
    return FlakyRevert(FREEZE, victim.pidfile, "/bin/sh", failures=0)


def test_an_slo_failure_is_kept_when_the_revert_fails_too(topology, topology_file, state, victim: Victim):
    fault = Unrevertable(FREEZE, victim.pidfile, "/bin/sh")
    settings = RunnerSettings(poll_interval_s=0.02, revert_timeout_s=1.0, settle_timeout_s=5.0)
    session = make_session(topology, topology_file, state, settings)
    with pytest.raises(AssertionError, match="TPS after failover 12 % of baseline") as raised, \
            session.inject(Timeline(), fault):
        raise AssertionError("TPS after failover 12 % of baseline")
    assert any("revert failed" in note for note in getattr(raised.value, "__notes__", [])), \
        "the revert failure is reported with the verdict"
    assert len(journal_files(state)) == 1
