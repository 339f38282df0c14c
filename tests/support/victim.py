"""A real process tree that faults freeze and thaw, and a topology that names it (unit tests of the lifecycle)."""

from __future__ import annotations

import subprocess
import textwrap
from dataclasses import dataclass
from pathlib import Path

from harness_kernel import procs


@dataclass
class Victim:
    """A real process tree (a shell and its child) that faults freeze and thaw."""

    process: subprocess.Popen[bytes]
    pidfile: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def frozen(self) -> bool:
        return procs.stopped_fraction(self.pid) == 1.0

    def running(self) -> bool:
        return procs.stopped_fraction(self.pid) == 0.0


def write_topology(directory: Path, pidfile: Path, allow: bool = True, extra: str = "") -> Path:
    path = directory / "topology.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: unit-{directory.name[-12:].replace('_', '-')}
        sites:
          - name: site-a
            hosts: [{{name: host-a, address: 192.0.2.1}}]
        processes:
          - {{name: victim, pidfile: {pidfile}, executable: /bin/sh}}
        allow_list: [{'process:victim' if allow else ''}]
        """) + extra)
    return path
