"""Who owns a fault and what it was done to: a process that cannot be mistaken for another, a cluster by its address.

A pid alone is not an owner: after a crash and a reboot, or a long uptime, another process
has it. A process is identified by its pid, its start time (clock ticks since boot, from
/proc/<pid>/stat) and the boot it started in. A cluster is identified by where it is
managed (vCenter address and cluster), not by the name a topology file gives it.
"""

from __future__ import annotations

import hashlib
import os
import socket
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness_kernel.topology.models import Topology

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


@dataclass(frozen=True)
class ProcessIdentity:
    pid: int
    start_ticks: int | None
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

    @property
    def local(self) -> bool:
        return self.hostname == socket.gethostname()

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


def cluster_identity(topology: Topology) -> str:
    """What a run's lock and the journal call the target, whatever the topology file names it.

    vSphere: the vCenter address and the cluster (two files for one cluster are one target);
    the embedded lab: its prefix; otherwise the set of host addresses.
    """
    if topology.kind == "lab" and topology.lab is not None:
        return f"lab:{topology.lab.prefix}"
    vcenter = topology.management.vcenter
    if vcenter is not None:
        return f"vcenter:{vcenter.address.lower()}:{vcenter.port}/{vcenter.cluster}"
    addresses = sorted({h.address.lower() for h in topology.hosts()})
    digest = hashlib.sha256(",".join(addresses).encode()).hexdigest()[:16]
    return f"hosts:{digest} ({', '.join(addresses[:3])}{', ...' if len(addresses) > 3 else ''})"
