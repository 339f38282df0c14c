"""A journal written by the previous release (498c377) is still recovered by this one, or named and kept.

The fixture is an entry as that release wrote it (tests/fixtures/journal-498c377): no record of
the backend that injected it, and its process declared without the program it runs. Where and
when it happened (the boot, the host, the time, the pid file) are this test's own.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

from harness.safety.journal import Journal, JournalEntry
from harness.safety.recover import recover
from harness_kernel import procs
from tests.support.victim import Victim

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "journal-498c377" / "38a1123403fa.json"


def left_here(state: Path, pidfile: Path, *, written_wall: float) -> JournalEntry:
    """The old release's entry, as if its run had died on this machine after writing it at `written_wall`."""
    data: dict[str, Any] = json.loads(FIXTURE.read_text())
    data.update(boot_id=procs.boot_id(), hostname=socket.gethostname(), created_wall=written_wall,
                deadline_wall=written_wall + 600)
    data["topology"]["processes"][0]["pidfile"] = str(pidfile)
    entry = JournalEntry.from_dict(data)
    Journal(state / "journal").write(entry)
    return entry


def test_the_fixture_is_the_old_shape() -> None:
    data = json.loads(FIXTURE.read_text())
    assert "backend" not in data and "release" not in data
    assert "executable" not in data["topology"]["processes"][0]
    assert data["spec"]["kind"] == "process-freeze" and data["status"] == "injected"


def test_a_process_the_old_run_froze_is_thawed_and_the_entry_removed(state: Path, victim: Victim) -> None:
    left_here(state, victim.pidfile, written_wall=time.time() + 1)  # the victim ran before the entry was written
    procs.freeze_tree(victim.pid)  # what the old run did next, before it was killed
    assert victim.frozen()

    report = recover(Journal(state / "journal"))

    assert [(o.action, o.entry.describe()) for o in report] == [("reverted", "process-freeze on process:victim")]
    assert victim.running()
    assert Journal(state / "journal").scan().entries == []


def test_a_process_not_provably_the_one_it_froze_is_named_and_left_alone(state: Path, victim: Victim) -> None:
    procs.freeze_tree(victim.pid)  # stopped by someone, but it started after the entry: not the old run's
    left_here(state, victim.pidfile, written_wall=time.time() - 3600)

    report = recover(Journal(state / "journal"))

    assert [o.action for o in report] == ["failed"]
    assert "written before processes named their program" in report[0].detail
    assert "not provably the process that run froze" in report[0].detail
    assert victim.frozen(), "a process the harness cannot show it froze is not touched"
    assert len(Journal(state / "journal").scan().entries) == 1


def test_an_old_entry_whose_process_is_gone_is_named_with_what_to_do(state: Path, victim: Victim) -> None:
    left_here(state, victim.pidfile.with_name("nothing.pid"), written_wall=time.time())
    report = recover(Journal(state / "journal"))
    assert [o.action for o in report] == ["failed"]
    assert "thaw it by hand" in report[0].detail
