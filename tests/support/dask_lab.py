"""A Dask cluster laid over the embedded lab: the scheduler on the harness's side, one worker per load machine.

The scheduler listens on the root namespace's lab address; each worker runs in one of the
lab's load-machine namespaces (`{prefix}-l1`, `{prefix}-l2`), on its own address, as a user's
`dask worker` on a load VM would. Nothing listens outside the lab's range; everything stops at
the end of the block, however it ends.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_lab.controller import Lab

DASK = str(Path(sys.executable).with_name("dask"))


@dataclass
class LabDask:
    scheduler: str  # tcp://HOST:PORT
    workers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)  # load machine address -> its worker

    def kill(self, address: str) -> None:
        """The load machine dies: its worker process is killed at once."""
        self.workers[address].kill()


@contextlib.contextmanager
def dask_on_lab(lab: Lab, timeout_s: float = 60.0) -> Iterator[LabDask]:
    host = lab.layout.client.address
    processes: list[subprocess.Popen[bytes]] = []
    scratch = Path(tempfile.mkdtemp(prefix="lab-dask-"))
    try:
        # port 0: the scheduler binds a port of its own and writes which in its file (no port freed, then taken)
        scheduler_file = scratch / "scheduler.json"
        processes.append(subprocess.Popen([DASK, "scheduler", "--host", host, "--port", "0", "--no-dashboard",
                                           "--scheduler-file", str(scheduler_file)],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        cluster = LabDask(_scheduler_address(scheduler_file, processes[0], timeout_s))
        for index, machine in enumerate(lab.layout.load_machines, 1):
            assert machine.netns is not None
            worker = subprocess.Popen(["ip", "netns", "exec", machine.netns, DASK, "worker", cluster.scheduler,
                                       "--host", machine.address, "--no-nanny", "--no-dashboard", "--nthreads", "4",
                                       "--name", f"load-{index}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            processes.append(worker)
            cluster.workers[machine.address] = worker
        _wait_for_workers(cluster, len(lab.layout.load_machines), timeout_s)
        yield cluster
    finally:
        # the workers first: a worker whose scheduler went first keeps trying to reach it before it exits
        for process in reversed(processes):
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        shutil.rmtree(scratch, ignore_errors=True)


def _scheduler_address(scheduler_file: Path, scheduler: subprocess.Popen[bytes], timeout_s: float) -> str:
    """The address the scheduler wrote once it listened (`tcp://HOST:PORT`)."""
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(FileNotFoundError, json.JSONDecodeError, KeyError):
            return str(json.loads(scheduler_file.read_text())["address"])
        if scheduler.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"the Dask scheduler wrote no address in {timeout_s:g} s (exit {scheduler.poll()})")
        time.sleep(0.1)


def _wait_for_workers(cluster: LabDask, count: int, timeout_s: float) -> None:
    import distributed

    client_class: Any = distributed.Client
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with client_class(cluster.scheduler, timeout=5) as client:
                client.wait_for_workers(count, timeout=max(1.0, deadline - time.monotonic()))
                return
        except (OSError, TimeoutError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
