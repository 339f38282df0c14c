"""A process tree is frozen when every process that still runs is stopped; a zombie no longer runs."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from harness_kernel import procs

PARENT_OF_A_ZOMBIE = "import os, time\nif os.fork() == 0:\n    os._exit(0)\ntime.sleep(60)\n"


@pytest.fixture
def parent_of_a_zombie() -> Iterator[int]:
    """A process whose child has exited and is never reaped, as a backend of a frozen postmaster."""
    process = subprocess.Popen([sys.executable, "-c", PARENT_OF_A_ZOMBIE])
    deadline = time.monotonic() + 10
    while "Z" not in [procs.state(p) for p in procs.tree(process.pid)] and time.monotonic() < deadline:
        time.sleep(0.02)
    yield process.pid
    process.kill()
    process.wait()


def test_a_tree_with_a_zombie_freezes(parent_of_a_zombie: int) -> None:
    assert "Z" in [procs.state(p) for p in procs.tree(parent_of_a_zombie)]
    assert procs.freeze_tree(parent_of_a_zombie)
    assert procs.stopped_fraction(parent_of_a_zombie) == 1.0


def test_a_thawed_tree_with_a_zombie_is_not_stopped_at_all(parent_of_a_zombie: int) -> None:
    assert procs.freeze_tree(parent_of_a_zombie)
    procs.signal_tree(parent_of_a_zombie, signal.SIGCONT)
    deadline = time.monotonic() + 5
    while procs.stopped_fraction(parent_of_a_zombie) != 0.0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert procs.stopped_fraction(parent_of_a_zombie) == 0.0
