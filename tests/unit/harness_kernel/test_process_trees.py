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


# A shell that starts a program, over and over: dash vforks for each, and the child sets up its redirections before
# it execs, so a SIGSTOP often finds the child between vfork and exec and its parent waiting for that exec.
STARTS_PROGRAMS = "while :; do /bin/true 3</dev/null 4</dev/null 5</dev/null 6</dev/null 7</dev/null 8</dev/null; done"


@pytest.mark.reproducer("Y-vfork-freeze")
def test_a_tree_whose_shell_waits_on_a_vforked_child_freezes_every_time() -> None:
    """A child stopped between vfork and exec holds its parent in uninterruptible sleep (state D, in kernel_clone):
    the parent cannot stop until that child execs, so passes of SIGSTOP alone never freeze the tree. Found as a
    host-hang spec failing once in a fresh `make test` (the tree: its shell in D, the child in T)."""
    frozen = []
    for _ in range(40):
        shell = subprocess.Popen(["sh", "-c", STARTS_PROGRAMS], start_new_session=True)
        try:
            time.sleep(0.03)
            frozen.append(procs.freeze_tree(shell.pid, settle_s=1.0))
        finally:
            procs.signal_tree(shell.pid, signal.SIGCONT)
            procs.signal_tree(shell.pid, signal.SIGKILL)
            shell.wait(timeout=10)
    assert all(frozen), f"{frozen.count(False)} of {len(frozen)} trees were never frozen"
