"""Process trees on this machine, read from /proc (no external tools)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

PROC = Path("/proc")


def _stat(pid: int) -> tuple[str, int] | None:
    """(state letter, parent pid), or None if the process is gone."""
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    after_name = raw[raw.rindex(")") + 2:].split()
    return after_name[0], int(after_name[1])


def state(pid: int) -> str | None:
    found = _stat(pid)
    return found[0] if found else None


def running(pid: int) -> bool:
    """The process exists and is not a zombie (one that exited, not yet reaped by its parent)."""
    return state(pid) not in (None, "Z", "X")


def tree(root: int) -> list[int]:
    """`root` and all its descendants that exist now."""
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            found = _stat(int(entry.name))
            if found:
                children.setdefault(found[1], []).append(int(entry.name))
    if _stat(root) is None:
        return []
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def signal_tree(root: int, signum: signal.Signals) -> int:
    """Send `signum` to every process of the tree; returns how many received it."""
    sent = 0
    for pid in tree(root):
        try:
            os.kill(pid, signum)
            sent += 1
        except ProcessLookupError:
            pass
    return sent


def freeze_tree(root: int, settle_s: float = 2.0) -> bool:
    """SIGSTOP the tree until every member is stopped: a child forked during the first pass
    escapes it, so pass again. True when the whole tree is stopped."""
    deadline = time.monotonic() + settle_s
    while True:
        signal_tree(root, signal.SIGSTOP)
        share = stopped_fraction(root)
        if share is None:
            return False
        if share == 1.0:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


def stopped_fraction(root: int) -> float | None:
    """Share of the tree in stopped state ('T'); None if the tree is gone. A zombie does not count:
    it no longer runs, and a stopped parent cannot reap a child that exited as it was frozen."""
    alive = [state(pid) for pid in tree(root) if running(pid)]
    if not alive:
        return None
    return sum(1 for s in alive if s in ("T", "t")) / len(alive)


def read_pidfile(path: Path) -> int | None:
    try:
        first = path.read_text().split()[0]
    except (FileNotFoundError, IndexError):
        return None
    return int(first) if first.isdigit() else None
