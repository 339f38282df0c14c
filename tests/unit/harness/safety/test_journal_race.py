"""The run and the guardian never tear a journal entry or bring one back: every write goes through a temporary file
of its own, and every status change is made under the entry's lock, only while the entry still exists.

A run whose revert is late by more than the guardian's grace (a saturated disk, a stopped or swapped process)
reverts the same entry as the guardian at the same moment. The fault here is real (SIGSTOP of a process tree).
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

import pytest

from faults import registry
from harness.safety import revert as revert_module
from harness.safety import runner as runner_module
from harness.safety.journal import EntryBusy, Journal, JournalEntry
from harness.safety.revert import revert_entry
from harness.safety.runner import FaultRunner, RunnerSettings
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.models import Topology
from tests.support.victim import Victim
from tests.unit.harness.safety.safety_support import FREEZE

FAST = RunnerSettings(poll_interval_s=0.005, revert_timeout_s=5.0, settle_timeout_s=5.0)


@pytest.fixture(autouse=True)
def no_confirmation_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    """CLEARED is believed at once: a hundred rounds in seconds (what is tested is the journal, not the check)."""
    monkeypatch.setattr(revert_module, "CONFIRM_S", 0.0)


def entry_files(journal: Journal) -> list[str]:
    return sorted(p.name for p in journal.directory.iterdir() if not p.name.endswith(".lock"))


@pytest.mark.reproducer("X-1")
def test_two_writers_of_one_entry_never_leave_it_torn(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "state" / "journal")
    entry = JournalEntry(spec=FREEZE, topology_source="t.yaml", topology_name="t", run_id="r")
    journal.write(entry)
    errors: list[BaseException] = []
    unreadable: list[str] = []
    stop = threading.Event()

    def write(status: str) -> None:
        mine = JournalEntry.from_dict({**entry.to_dict(), "status": status})
        try:
            for _ in range(300):
                journal.write(mine)
        except BaseException as exc:  # a writer that fails (the other renamed its temporary file away) is a defect
            errors.append(exc)

    def read() -> None:
        while not stop.is_set():
            unreadable.extend(str(path) for path, _ in journal.scan().unreadable)

    reader = threading.Thread(target=read)
    writers = [threading.Thread(target=write, args=(status,)) for status in ("reverting", "in-effect")]
    reader.start()
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    stop.set()
    reader.join()
    assert errors == [] and unreadable == []
    assert entry_files(journal) == [f"{entry.id}.json"], "no temporary file left behind"


def guardian_reverts(journal: Journal, entry: JournalEntry) -> None:
    """As the guardian does: an entry another reverter holds is left to it."""
    with contextlib.suppress(EntryBusy):
        revert_entry(journal, entry, role="guardian", poll_s=0.005)


@pytest.mark.reproducer("X-1")
def test_a_late_run_and_the_guardian_reverting_one_entry_leave_it_readable_and_then_gone(
        topology: Topology, topology_file: Path, state: Path, victim: Victim) -> None:
    journal = Journal(state / "journal")
    for _ in range(100):
        runner = FaultRunner(topology, str(topology_file), journal, Timeline(), "run", FAST, allow_destructive=True)
        unreadable: list[str] = []
        with runner.inject(registry.build(FREEZE, topology)) as active:
            guardian = threading.Thread(target=guardian_reverts, args=(journal, active.entry))
            guardian.start()
            unreadable += [str(path) for path, _ in journal.scan().unreadable]
        guardian.join()
        unreadable += [str(path) for path, _ in journal.scan().unreadable]
        assert unreadable == [] and journal.pending() == [] and entry_files(journal) == []
        assert victim.running()


@pytest.mark.reproducer("X-1")
def test_a_run_stopped_right_after_the_guardian_removed_its_entry_does_not_write_it_back(
        topology: Topology, topology_file: Path, state: Path, victim: Victim, monkeypatch: pytest.MonkeyPatch) -> None:
    journal = Journal(state / "journal")
    runner = FaultRunner(topology, str(topology_file), journal, Timeline(), "run", FAST, allow_destructive=True)

    class Killed(BaseException):
        """The run's process stopped for good here (kill -9): nothing after this line runs."""

    with contextlib.suppress(Killed), runner.inject(registry.build(FREEZE, topology)) as active:
        revert_entry(journal, active.entry, role="guardian", poll_s=0.005)  # the run was late: the guardian reverted
        assert journal.pending() == []

        def killed(*args: object, **kwargs: object) -> None:
            raise Killed()

        monkeypatch.setattr(revert_module, "revert_until_cleared", killed)
        monkeypatch.setattr(runner_module, "revert_until_cleared", killed, raising=False)  # where main called it
        monkeypatch.setattr(Journal, "remove", killed)
    assert journal.pending() == [], "an entry the guardian removed stays removed"
    assert victim.running()
