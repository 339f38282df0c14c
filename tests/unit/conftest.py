"""Fixtures for the harness's own unit tests: a real victim process and a topology naming it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness import procs
from harness.topology.loader import load_topology
from harness.topology.models import Topology


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


@pytest.fixture
def victim(tmp_path: Path) -> Iterator[Victim]:
    process = subprocess.Popen(["/bin/sh", "-c", "sleep 600 & wait"], start_new_session=True)
    pidfile = tmp_path / "victim.pid"
    pidfile.write_text(f"{process.pid}\n")
    yield Victim(process, pidfile)
    procs.signal_tree(process.pid, procs.signal.SIGCONT)
    procs.signal_tree(process.pid, procs.signal.SIGKILL)
    process.wait(timeout=5)


def write_topology(directory: Path, pidfile: Path, allow: bool = True, extra: str = "") -> Path:
    path = directory / "topology.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: unit-{directory.name[-12:].replace('_', '-')}
        sites:
          - name: site-a
            hosts: [{{name: host-a, address: 192.0.2.1}}]
        processes:
          - {{name: victim, pidfile: {pidfile}}}
        allow_list: [{'process:victim' if allow else ''}]
        """) + extra)
    return path


@pytest.fixture
def topology_file(tmp_path: Path, victim: Victim) -> Path:
    return write_topology(tmp_path, victim.pidfile)


@pytest.fixture
def topology(topology_file: Path) -> Topology:
    return load_topology(topology_file)


@pytest.fixture
def state(tmp_path: Path) -> Path:
    directory = tmp_path / "state"
    directory.mkdir()
    return directory


PYTHON = sys.executable
