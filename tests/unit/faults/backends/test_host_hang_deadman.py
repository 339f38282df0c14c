"""The host-hang dead man's switch thaws the node's process tree as it is when the switch fires.

A hung node's tree keeps forking while it is being frozen (the monitor's health check opens a
backend every second, clients reconnect): those children are frozen with it. When the run and
the guardian are both gone, the switch alone must leave no process of the tree stopped, and it
must touch nothing if the tree's root is no longer the same process.

Real processes and a real switch (`sh`, `/proc`, `kill`) on this machine; what stands in for
the lab is only where its node's tree is rooted and a network cut whose undo is a no-op here.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from faults.backends.lab import HostHang
from faults.base import FaultSpec
from faults.transports.shell import LocalShell
from harness_kernel import procs
from tests.support.waiting import eventually

SPAWNER = 'while :; do if [ -e "$1" ]; then rm -f "$1"; sleep 600 & fi; sleep 0.05; done'


@dataclass
class NodeTree:
    """Where the node's processes are rooted, as the lab's controller says."""

    root: int

    def node_pids(self, node: str) -> list[int]:
        return procs.tree(self.root)

    def node_root(self, node: str) -> int | None:
        return self.root


@dataclass
class CutOnThisMachine:
    """The partition's part of the switch: its shell runs here, and healing the network is `true`."""

    marker: str = field(default_factory=lambda: f"hh-test-{uuid.uuid4().hex[:8]}")
    shell: LocalShell = field(default_factory=LocalShell)

    def undo_line(self) -> str:
        return "true"


@pytest.fixture
def node(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    spawn = tmp_path / "spawn"
    process = subprocess.Popen(["sh", "-c", SPAWNER, "spawner", str(spawn)], start_new_session=True)
    yield process, spawn
    procs.signal_tree(process.pid, procs.signal.SIGCONT)
    procs.signal_tree(process.pid, procs.signal.SIGKILL)
    process.wait(timeout=5)


def stopped(root: int) -> list[int]:
    return [pid for pid in procs.tree(root) if procs.state(pid) in ("T", "t")]


@pytest.mark.reproducer("X-2")
def test_the_switch_thaws_a_child_forked_into_the_tree_after_it_was_armed(
        node: tuple[subprocess.Popen[bytes], Path]) -> None:
    process, spawn = node
    hang = HostHang(FaultSpec("host-hang", "host:host-a"), NodeTree(process.pid), "node-a",  # type: ignore[arg-type]
                    CutOnThisMachine())  # type: ignore[arg-type]
    before = len(procs.tree(process.pid))
    hang.arm_deadman(1)
    spawn.touch()  # a health check's backend, forked between arming and the freeze
    assert eventually(lambda: len(procs.tree(process.pid)) > before, 5)
    assert procs.freeze_tree(process.pid)
    assert eventually(lambda: not stopped(process.pid), 10), f"still stopped after the switch fired: {stopped(process.pid)}"


def test_the_switch_touches_nothing_once_the_root_is_another_process(
        node: tuple[subprocess.Popen[bytes], Path]) -> None:
    process, _ = node
    assert procs.freeze_tree(process.pid)
    ticks = procs.start_ticks(process.pid)
    assert ticks is not None
    done = subprocess.run(["sh", "-c", procs.continue_tree_command(process.pid, ticks + 1)], check=False, timeout=30)
    assert done.returncode == 0 and stopped(process.pid) == procs.tree(process.pid), "a reused pid is not thawed"
    subprocess.run(["sh", "-c", procs.continue_tree_command(process.pid, ticks)], check=True, timeout=30)
    assert stopped(process.pid) == []
