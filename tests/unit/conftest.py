"""Fixtures for the harness's own unit tests: a real victim process and a topology naming it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_kernel import procs
from harness_kernel.topology.loader import load_topology
from harness_kernel.topology.models import Topology
from tests.support.victim import Victim, write_topology


@pytest.fixture
def victim(tmp_path: Path) -> Iterator[Victim]:
    process = subprocess.Popen(["/bin/sh", "-c", "sleep 600 & wait"], start_new_session=True)
    pidfile = tmp_path / "victim.pid"
    pidfile.write_text(f"{process.pid}\n")
    yield Victim(process, pidfile)
    procs.signal_tree(process.pid, procs.signal.SIGCONT)
    procs.signal_tree(process.pid, procs.signal.SIGKILL)
    process.wait(timeout=5)


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
