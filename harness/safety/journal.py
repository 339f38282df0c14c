"""The recovery journal: faults injected and not yet reverted, one durable file each.

An entry is written and fsync'ed *before* a fault is injected and removed only after a check
positively showed the fault cleared, so after a crash the guardian and `python -m harness
recover` find everything that may still be broken. An entry carries what a revert needs
without the run: the fault spec, a secret-free snapshot of the topology, the owner (pid,
start time, boot), the deadline and the revert timeout. It holds no credentials.

Exactly one reverter acts on an entry at a time: the run, the guardian and `recover` take the
entry's lock (`flock` on `<id>.lock`, dropped by the kernel if the holder dies) first. Every
write goes through a temporary file of its own (two writers never share one, so neither can
tear the other's), and a status change after the first write is made under the entry's lock
and only while the entry is still there (`update`): an entry another reverter removed is never
written back.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import stat
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faults.base import FaultSpec, deadman_marker
from harness_kernel.errors import ConfigError, HarnessError
from harness_kernel.paths import private_dir
from harness_kernel.procs import ProcessIdentity, boot_id, start_ticks

log = logging.getLogger(__name__)

_OPEN_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


class UnreadableEntry(ValueError):
    """A journal file that is not a valid entry (truncated, hand-edited, wrong types)."""


class EntryBusy(HarnessError):
    """Another reverter (a run, the guardian, `recover`) is acting on this entry now."""

    def __init__(self, entry_id: str, holder: str) -> None:
        super().__init__(f"journal entry {entry_id} is being reverted by {holder}")
        self.holder = holder


def _new_id() -> str:
    return uuid.uuid4().hex[:12]


@dataclass
class JournalEntry:
    spec: FaultSpec
    topology_source: str
    topology_name: str
    run_id: str
    status: str = "injecting"
    id: str = field(default_factory=_new_id)
    pid: int = field(default_factory=os.getpid)
    hostname: str = field(default_factory=socket.gethostname)
    created_wall: float = field(default_factory=time.time)
    pid_start: int | None = field(default_factory=lambda: start_ticks(os.getpid()))
    boot_id: str | None = field(default_factory=boot_id)
    cluster: str | None = None
    topology: dict[str, Any] | None = None
    deadline_wall: float | None = None
    deadline_basis: str = ""
    revert_timeout_s: float | None = None
    deadman_marker: str | None = None
    notes: dict[str, Any] = field(default_factory=dict)
    backend: dict[str, str] = field(default_factory=dict)
    """The platform and backend that injected it, and the plug-in distribution and version if one did:
    the reverter uses the same one, or names what is missing (empty in entries of older releases)."""
    release: str | None = None  # the harness release that wrote the entry

    def __post_init__(self) -> None:
        if self.deadman_marker is None:
            self.deadman_marker = deadman_marker(self.id, self.spec.target)

    @property
    def owner(self) -> ProcessIdentity:
        return ProcessIdentity(pid=self.pid, start_ticks=self.pid_start, boot_id=self.boot_id, hostname=self.hostname)

    def owner_alive(self) -> bool:
        """True while the very process that wrote this entry runs (a reused pid is not it)."""
        return self.owner.alive()

    def overdue(self, now: float | None = None) -> bool:
        return self.deadline_wall is not None and (now if now is not None else time.time()) > self.deadline_wall

    def describe(self) -> str:
        return f"{self.spec.kind} on {self.spec.target}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "run_id": self.run_id, "status": self.status, "pid": self.pid, "pid_start": self.pid_start,
            "boot_id": self.boot_id, "hostname": self.hostname, "created_wall": self.created_wall,
            "cluster": self.cluster, "topology_source": self.topology_source, "topology_name": self.topology_name,
            "spec": self.spec.to_dict(), "deadline_wall": self.deadline_wall, "deadline_basis": self.deadline_basis,
            "revert_timeout_s": self.revert_timeout_s, "deadman_marker": self.deadman_marker,
            "topology": self.topology, "notes": self.notes, "backend": self.backend, "release": self.release,
        }

    @classmethod
    def from_dict(cls, data: Any) -> JournalEntry:
        try:
            if not isinstance(data, dict):
                raise TypeError(f"expected an object, got {type(data).__name__}")
            spec = data["spec"]
            if not isinstance(spec, dict):
                raise TypeError("spec: expected an object")
            entry_id = str(data["id"])
            deadline = data.get("deadline_wall", data.get("deadman_until_wall"))
            timeout = data.get("revert_timeout_s")
            topology = data.get("topology")
            marker = data.get("deadman_marker")
            backend = data.get("backend") or {}
            if not isinstance(backend, dict):
                raise TypeError("backend: expected an object")
            return cls(
                spec=FaultSpec.from_dict(spec), topology_source=str(data["topology_source"]),
                topology_name=str(data["topology_name"]), run_id=str(data["run_id"]), status=str(data["status"]),
                id=entry_id, pid=int(data["pid"]), hostname=str(data["hostname"]),
                created_wall=float(data["created_wall"]),
                pid_start=int(data["pid_start"]) if data.get("pid_start") is not None else None,
                boot_id=str(data["boot_id"]) if data.get("boot_id") is not None else None,
                cluster=str(data["cluster"]) if data.get("cluster") is not None else None,
                topology=topology if isinstance(topology, dict) else None,
                deadline_wall=float(deadline) if deadline is not None else None,
                deadline_basis=str(data.get("deadline_basis", "")),
                revert_timeout_s=float(timeout) if timeout is not None else None,
                deadman_marker=str(marker) if marker is not None else None,
                notes=dict(data.get("notes") or {}),
                backend={str(k): str(v) for k, v in backend.items()},
                release=str(data["release"]) if data.get("release") is not None else None,
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UnreadableEntry(f"{type(exc).__name__}: {exc}") from None


@dataclass(frozen=True)
class JournalScan:
    entries: list[JournalEntry]
    unreadable: list[tuple[Path, str]]


class Journal:
    def __init__(self, directory: Path) -> None:
        private_dir(directory.parent)  # the state directory: whoever can write it can swap the journal
        self.directory = private_dir(directory)

    def _path(self, entry_id: str) -> Path:
        return self.directory / f"{entry_id}.json"

    def lock_path(self, entry_id: str) -> Path:
        return self.directory / f"{entry_id}.lock"

    def write(self, entry: JournalEntry) -> None:
        """Atomically (re)write an entry and make it durable before returning (mode 0600, never through a link)."""
        path = self._path(entry.id)
        fd, tmp = tempfile.mkstemp(prefix=f".{entry.id}.", suffix=".tmp", dir=self.directory)  # 0600, O_EXCL
        try:
            with os.fdopen(fd, "w") as handle:
                json.dump(entry.to_dict(), handle, indent=1)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._sync_dir()

    def rewrite(self, entry: JournalEntry) -> bool:
        """Best effort: a status update that fails (disk full, read-only) is logged; the first write suffices."""
        try:
            self.write(entry)
        except OSError as exc:
            log.warning("journal entry %s: could not record status %r (%s); the entry on disk still holds the fault",
                        entry.id, entry.status, exc)
            return False
        return True

    def update(self, entry: JournalEntry, *, role: str, wait_s: float = 0.0) -> bool:
        """Best effort, under the entry's lock: write `entry`'s status and notes over the entry on disk, only while
        it is still there. False: not written (removed by another reverter, held by one, or the disk refused)."""
        try:
            with self.entry_lock(entry.id, role=role, wait_s=wait_s):
                if self.read(entry.id) is None:
                    return False
                return self.rewrite(entry)
        except (EntryBusy, OSError) as exc:
            log.warning("journal entry %s: status %r not recorded (%s)", entry.id, entry.status, exc)
            return False

    def remove(self, entry: JournalEntry) -> None:
        self._path(entry.id).unlink(missing_ok=True)
        self.lock_path(entry.id).unlink(missing_ok=True)
        self._sync_dir()

    def read(self, entry_id: str) -> JournalEntry | None:
        """The entry as on disk now; None if it is gone (reverted by someone else)."""
        path = self._path(entry_id)
        try:
            return JournalEntry.from_dict(json.loads(path.read_text()))
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise UnreadableEntry(f"{path}: {exc}") from None

    def scan(self) -> JournalScan:
        """Every entry that can be read, and every file that cannot (never one bad file for all)."""
        entries: list[JournalEntry] = []
        unreadable: list[tuple[Path, str]] = []
        for path in sorted(self.directory.glob("*.json")):
            try:
                entries.append(JournalEntry.from_dict(json.loads(path.read_text())))
            except FileNotFoundError:
                continue  # removed while we looked
            except (OSError, ValueError) as exc:
                unreadable.append((path, str(exc)))
        entries.sort(key=lambda e: e.created_wall)
        return JournalScan(entries, unreadable)

    def pending(self) -> list[JournalEntry]:
        return self.scan().entries

    def __iter__(self) -> Iterator[JournalEntry]:
        return iter(self.pending())

    @contextlib.contextmanager
    def entry_lock(self, entry_id: str, *, role: str, wait_s: float = 0.0,
                   waiting: Callable[[str, float], None] | None = None) -> Iterator[None]:
        """Hold the entry's lock: the one reverter acting on it. EntryBusy if another holds it past `wait_s`.

        `waiting(holder, waited_s)` is called about every second while waiting.
        """
        fd = self._acquire(entry_id, role, wait_s, waiting)
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _acquire(self, entry_id: str, role: str, wait_s: float,
                 waiting: Callable[[str, float], None] | None) -> int:
        path = self.lock_path(entry_id)
        started = time.monotonic()
        told = 0.0
        while True:
            fd = open_lock_file(path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(fd)
                os.close(fd)
                waited = time.monotonic() - started
                if waited >= wait_s:
                    raise EntryBusy(entry_id, holder) from None
                if waiting is not None and waited - told >= 1.0:
                    told = waited
                    waiting(holder, waited)
                time.sleep(0.1)
                continue
            if _same_file(fd, path):  # not a lock file someone removed (with its entry) meanwhile
                info = {"pid": os.getpid(), "role": role, "host": socket.gethostname(),
                        "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
                os.ftruncate(fd, 0)
                os.pwrite(fd, json.dumps(info).encode(), 0)
                return fd
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _sync_dir(self) -> None:
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def open_lock_file(path: Path) -> int:
    """Open (creating, 0600) a lock file; never through a symlink, never a file of another user."""
    try:
        fd = os.open(path, _OPEN_FLAGS, 0o600)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: a symlink was planted where the lock file goes
            raise ConfigError(f"{path}: is a symlink; refusing to follow it") from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        os.close(fd)
        raise ConfigError(f"{path}: not a regular file of this user; refusing to use it as a lock")
    return fd


def _same_file(fd: int, path: Path) -> bool:
    try:
        now = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)


def _holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
    except ValueError:
        info = {}
    if not isinstance(info, dict) or not info:
        return "another process"
    return f"{info.get('role', 'a reverter')} (pid {info.get('pid')} on {info.get('host')} since {info.get('since')})"
