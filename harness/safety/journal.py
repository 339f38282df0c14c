"""The recovery journal: faults injected and not yet reverted, one durable file each.

An entry is written and fsync'ed *before* a fault is injected and removed only after its
revert is confirmed, so after a crash `python -m harness recover` finds everything that may
still be broken. It holds no credentials: the topology source says where to find them again.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faults.base import FaultSpec


@dataclass
class JournalEntry:
    spec: FaultSpec
    topology_source: str
    topology_name: str
    run_id: str
    status: str = "injecting"
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    pid: int = field(default_factory=os.getpid)
    hostname: str = field(default_factory=socket.gethostname)
    created_wall: float = field(default_factory=time.time)
    deadman_until_wall: float | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "run_id": self.run_id, "status": self.status, "pid": self.pid,
            "hostname": self.hostname, "created_wall": self.created_wall,
            "topology_source": self.topology_source, "topology_name": self.topology_name,
            "spec": self.spec.to_dict(), "deadman_until_wall": self.deadman_until_wall, "notes": self.notes,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JournalEntry:
        return cls(
            spec=FaultSpec.from_dict(data["spec"]), topology_source=data["topology_source"],
            topology_name=data["topology_name"], run_id=data["run_id"], status=data["status"],
            id=data["id"], pid=int(data["pid"]), hostname=data["hostname"],
            created_wall=float(data["created_wall"]), deadman_until_wall=data.get("deadman_until_wall"),
            notes=dict(data.get("notes", {})),
        )

    def owner_alive(self) -> bool:
        """True if the run that wrote this entry is still running on this machine."""
        if self.hostname != socket.gethostname() or self.pid == os.getpid():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


class Journal:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)

    def _path(self, entry_id: str) -> Path:
        return self.directory / f"{entry_id}.json"

    def write(self, entry: JournalEntry) -> None:
        """Atomically (re)write an entry and make it durable before returning."""
        path = self._path(entry.id)
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w") as handle:
            json.dump(entry.to_dict(), handle, indent=1)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        self._sync_dir()

    def remove(self, entry: JournalEntry) -> None:
        self._path(entry.id).unlink(missing_ok=True)
        self._sync_dir()

    def pending(self) -> list[JournalEntry]:
        return sorted(self, key=lambda e: e.created_wall)

    def __iter__(self) -> Iterator[JournalEntry]:
        for path in sorted(self.directory.glob("*.json")):
            try:
                yield JournalEntry.from_dict(json.loads(path.read_text()))
            except (ValueError, KeyError) as exc:
                raise ValueError(f"{path}: unreadable journal entry: {exc}") from None

    def _sync_dir(self) -> None:
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
