"""Topology snapshots written by earlier releases, read by this one.

A journal entry's snapshot is the topology as its run saw it; a later release may have added a
required field since. Such a field is filled in only where this machine can itself show what the
old run acted on; otherwise the entry is named, with what to do by hand, and kept.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from harness.safety.journal import JournalEntry
from harness_kernel import procs
from harness_kernel.errors import ConfigError


def upgraded(entry: JournalEntry) -> dict[str, Any] | None:
    """The entry's snapshot with every field a later release requires, as the old run would have had it."""
    if entry.topology is None:
        return None
    snapshot = copy.deepcopy(entry.topology)
    for process in snapshot.get("processes") or []:
        if isinstance(process, dict) and "executable" not in process:
            process["executable"] = _program_it_froze(entry, process)
    return snapshot


def _program_it_froze(entry: JournalEntry, process: dict[str, Any]) -> str:
    """A process declared before processes named their program (498c377 and earlier).

    The old run froze whatever its pid file named. That process is the same one now only if it
    is still there, in the same boot, and started before the entry was written; then its program
    is the one the old run acted on. Anything else is not proven, and not touched."""
    pidfile = Path(str(process.get("pidfile", "")))
    what = f"journal entry {entry.id} ({entry.spec.kind} on {entry.spec.target})"
    hand = "if it is stopped, thaw it by hand (kill -CONT PID) and remove the entry"
    try:
        pid = procs.read_pidfile(pidfile)
    except procs.NotAPidFile as exc:
        raise ConfigError(f"{what}: written before processes named their program, and {exc}; {hand}") from None
    if pid is None:
        raise ConfigError(f"{what}: written before processes named their program, and {pidfile} names no process; "
                          f"{hand}")
    started = procs.started_wall(pid)
    program = procs.executable(pid)
    if entry.boot_id != procs.boot_id() or started is None or program is None or started >= entry.created_wall:
        raise ConfigError(f"{what}: written before processes named their program, and pid {pid} of {pidfile} is not "
                          "provably the process that run froze (another boot, or started after the entry); " + hand)
    return program
