"""Process trees on this machine, read from /proc (no external tools), and a process that cannot be
mistaken for another.

A pid alone names whatever process has it now: after a crash and a reboot, or a long uptime,
another process has it. With its start time (clock ticks since boot, from /proc/<pid>/stat),
the boot it started in and the host, it names exactly one process ever.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import socket
import stat
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

PROC = Path("/proc")


def boot_id() -> str | None:
    try:
        return (PROC / "sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat after the command name: [state, ppid, ...]; None if there is no such process."""
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except (OSError, ValueError):
        return None
    return raw[raw.rindex(")") + 2:].split()


def start_ticks(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[19]) if fields and len(fields) > 19 else None  # field 22 of stat(5)


def started_wall(pid: int) -> float | None:
    """When `pid` started, on the wall clock (boot time from /proc/stat plus its start ticks); None if gone."""
    ticks = start_ticks(pid)
    try:
        boot = next(int(line.split()[1]) for line in (PROC / "stat").read_text().splitlines()
                    if line.startswith("btime "))
    except (OSError, StopIteration, ValueError, IndexError):
        return None
    return None if ticks is None else boot + ticks / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ProcessIdentity:
    pid: int
    start_ticks: int | None  # None: no such process when read (or recorded before start times were)
    boot_id: str | None
    hostname: str

    @classmethod
    def of(cls, pid: int) -> ProcessIdentity:
        return cls(pid=pid, start_ticks=start_ticks(pid), boot_id=boot_id(), hostname=socket.gethostname())

    @classmethod
    def current(cls) -> ProcessIdentity:
        return cls.of(os.getpid())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProcessIdentity:
        ticks = data.get("start_ticks")
        return cls(pid=int(data["pid"]), start_ticks=int(ticks) if ticks is not None else None,
                   boot_id=data.get("boot_id"), hostname=str(data["hostname"]))

    def render(self) -> str:
        """A pid file's record on this host: `pid start_ticks boot_id`."""
        return f"{self.pid} {self.start_ticks} {self.boot_id}\n"

    @classmethod
    def parse(cls, text: str) -> ProcessIdentity | None:
        """A pid file's record; None for anything else, such as a bare pid (unverifiable)."""
        fields = text.split()
        if len(fields) != 3 or not fields[0].isdigit() or not fields[1].isdigit():
            return None
        return cls(int(fields[0]), int(fields[1]), fields[2], socket.gethostname())

    @property
    def local(self) -> bool:
        return self.hostname == socket.gethostname()

    def is_running_process(self) -> bool:
        """This very process still exists here (a zombie included: it keeps its pid and start time)."""
        return self.local and self.start_ticks is not None and ProcessIdentity.of(self.pid) == self

    def alive(self) -> bool:
        """True while this very process runs. From another host nothing can be told: treated as alive."""
        if not self.local:
            return True
        if self.boot_id is not None and self.boot_id != boot_id():
            return False
        fields = _stat_fields(self.pid)
        if fields is None or fields[0] in ("Z", "X"):  # gone, or killed and not yet reaped
            return False
        if self.start_ticks is None:  # written before start times were recorded: the pid is all there is
            return True
        return int(fields[19]) == self.start_ticks

    def describe(self) -> str:
        return f"pid {self.pid} on {self.hostname}"


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
    return signal_pids(tree(root), signum)


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
        let_vforked_children_exec(root)
        time.sleep(0.01)


def let_vforked_children_exec(root: int) -> int:
    """SIGCONT each stopped child whose parent sleeps uninterruptibly (state D): a child stopped between vfork and
    exec holds its parent there (in kernel_clone) until it execs, so the parent can never take its own SIGSTOP
    (posix_spawn and dash start programs this way). Once continued the child execs, the parent wakes and stops,
    and the next pass stops the child. Returns how many were continued."""
    states = {pid: _stat(pid) for pid in tree(root)}
    held = [pid for pid, found in states.items()
            if found and found[0] in ("T", "t") and (parent := states.get(found[1])) and parent[0] == "D"]
    return signal_pids(held, signal.SIGCONT)


def signal_pids(pids: list[int], signum: signal.Signals) -> int:
    sent = 0
    for pid in pids:
        try:
            os.kill(pid, signum)
            sent += 1
        except ProcessLookupError:
            pass
    return sent


def stopped_fraction(root: int) -> float | None:
    """Share of the tree in stopped state ('T'); None if the tree is gone. A zombie does not count:
    it no longer runs, and a stopped parent cannot reap a child that exited as it was frozen."""
    alive = [state(pid) for pid in tree(root) if running(pid)]
    if not alive:
        return None
    return sum(1 for s in alive if s in ("T", "t")) / len(alive)


def continue_tree_command(root: int, ticks: int) -> str:
    """A POSIX shell line that SIGCONTs `root` and every descendant it has *when the line runs*, but only while
    `root` is the same process (its start ticks, stat(5) field 22): a dead man's switch fires minutes later, after
    the tree forked children (a health check's backend, a client's reconnect) that were frozen with it, and a
    pid reused meanwhile by another process must not be touched. Needs only sh and /proc."""
    return (
        f"r={int(root)}; t={int(ticks)}; "
        's=$(cat /proc/$r/stat 2>/dev/null) && { s=${s##*) }; set -- $s; [ "${20}" = "$t" ]; } && { '
        'all=$r; todo=$r; '
        'while [ -n "$todo" ]; do next=; '
        'for f in /proc/[0-9]*/stat; do s=$(cat $f 2>/dev/null) || continue; s=${s##*) }; set -- $s; '
        'for q in $todo; do [ "$2" = "$q" ] && { p=${f#/proc/}; next="$next ${p%/stat}"; }; done; done; '
        'all="$all $next"; todo=$next; done; '
        'kill -CONT $all 2>/dev/null; }; true'
    )


PIDFILE_MAX_BYTES = 4096
"""A pid file holds a pid and perhaps a few lines more (pg_autoctl's does); more is not a pid file."""


class NotAPidFile(ValueError):
    """The path is not a small regular file (a device, a /proc file, a directory, a link): never read it."""


def read_pidfile(path: Path) -> int | None:
    """The pid a pid file names, or None when the file is absent or names none.

    Read with bounds: a regular file of 1 to PIDFILE_MAX_BYTES bytes, opened without following a
    symbolic link and without blocking. `/dev/zero` would read without end and `/proc/1/stat`
    (size 0) would name pid 1: both raise `NotAPidFile`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise NotAPidFile(f"{path}: cannot be opened as a pid file ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not 0 < info.st_size <= PIDFILE_MAX_BYTES:
            raise NotAPidFile(f"{path}: not a pid file (a regular file of 1 to {PIDFILE_MAX_BYTES} bytes)")
        data = os.read(fd, PIDFILE_MAX_BYTES + 1)
    finally:
        os.close(fd)
    words = data.decode("ascii", "replace").split()
    return int(words[0]) if words and words[0].isdigit() and len(words[0]) <= 10 else None


def ancestors(pid: int) -> list[int]:
    """`pid`'s parent, its parent's parent, ... up to pid 1."""
    found: list[int] = []
    current = _stat(pid)
    while current is not None and current[1] > 0 and current[1] not in found:
        found.append(current[1])
        current = _stat(current[1])
    return found


def executable(pid: int) -> str | None:
    """The program `pid` runs (/proc/PID/exe), or None if it is gone or not ours to read."""
    try:
        return os.readlink(PROC / str(pid) / "exe")
    except OSError:
        return None


def why_not_a_target(pid: int, program: str) -> str | None:
    """Why signalling `pid`'s tree could hit what it must not; None when it is the declared program's.

    Never pid 1 (every process), this process or one it runs under, or a member of this process's
    group or session (a Ctrl-C's reach): a freeze of any of them would stop the harness itself."""
    me = os.getpid()
    if pid <= 1:
        return f"pid {pid} is the whole machine's init"
    if pid == me or pid in ancestors(me):
        return f"pid {pid} is the harness or a process it runs under"
    try:
        if os.getpgid(pid) == os.getpgrp() or os.getsid(pid) == os.getsid(0):
            return f"pid {pid} shares the harness's process group or session"
    except ProcessLookupError:
        return f"pid {pid} is not running"
    running_program = executable(pid)
    if running_program is None:
        return f"pid {pid} is not running or its program cannot be read"
    if running_program != os.path.realpath(program):
        return f"pid {pid} runs {running_program}, not {program}"
    return None


def naming(path: Path, programs: tuple[str, ...]) -> list[int]:
    """Processes whose arguments name `path`, run by one of `programs` (within their first four arguments: a tool
    started under `timeout` or `setpriv`), whoever started them: how a revert or `recover` finds a tool it ran."""
    wanted = str(path).encode()
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(wanted in a for a in argv) and any(Path(a.decode(errors="replace")).name in programs
                                                  for a in argv[:4] if a):
            found.append(int(entry.name))
    return found


def stop_all(find: Callable[[], list[int]], grace_s: float) -> None:
    """SIGTERM what `find` returns, SIGKILL what is left after `grace_s`."""
    for pid in find():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while find() and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in find():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def listens_on(pid: int, address: str, port: int) -> bool:
    """Whether `pid` holds a TCP socket listening on `address`:`port` (from /proc/net/tcp or tcp6 and the process's
    fds): something accepting there proves nothing, another process may hold the port."""
    packed = ipaddress.ip_address(address).packed
    words = [packed[i:i + 4][::-1] for i in range(0, len(packed), 4)]  # the kernel prints each 32-bit word as stored
    wanted = f"{b''.join(words).hex().upper()}:{port:04X}"
    try:
        rows = (PROC / "net" / ("tcp" if len(packed) == 4 else "tcp6")).read_text().splitlines()[1:]
    except OSError:
        return False
    inodes = {fields[9] for fields in map(str.split, rows) if fields[1] == wanted and fields[3] == "0A"}  # LISTEN
    with contextlib.suppress(OSError):
        for fd in (PROC / str(pid) / "fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:[") and target[8:-1] in inodes:
                    return True
    return False
