"""A Dask cluster laid over the embedded lab: the scheduler on the harness's side, one worker per load machine.

The scheduler listens on the root namespace's lab address; each worker runs in one of the
lab's load-machine namespaces (`{prefix}-l1`, `{prefix}-l2`), on its own address, as a user's
`dask worker` on a load VM would. Nothing listens outside the lab's range; everything stops at
the end of the block, however it ends.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
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


def _free_port(address: str) -> int:
    with socket.socket() as sock:
        sock.bind((address, 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def dask_on_lab(lab: Lab, timeout_s: float = 60.0) -> Iterator[LabDask]:
    host = lab.layout.client.address
    port = _free_port(host)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        processes.append(subprocess.Popen([DASK, "scheduler", "--host", host, "--port", str(port), "--no-dashboard"],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        cluster = LabDask(f"tcp://{host}:{port}")
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
