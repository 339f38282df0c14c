"""A local tool an operation runs (pg_basebackup, a restore's script): started in a session of its own, its exit
and its start and end on this machine's clock kept; stopped, after a crash too, by what its arguments name."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness_kernel import procs
from harness_kernel.errors import ControlPlaneError


@dataclass
class ToolRun:
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    started_wall: float | None = None
    finished_wall: float | None = None
    returncode: int | None = None

    def start(self, argv: Sequence[str], log: Path, name: str, env: Mapping[str, str] | None = None) -> None:
        """Run `argv`, its output into `log`; a thread notes when it exits."""
        self.started_wall = time.time()
        with log.open("wb") as out:
            self.process = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                            env=dict(env) if env is not None else None, start_new_session=True)
        threading.Thread(target=self._reap, name=name, daemon=True).start()

    def _reap(self) -> None:
        assert self.process is not None
        self.returncode = self.process.wait()
        self.finished_wall = time.time()

    def running(self, found: Callable[[], list[int]]) -> bool:
        """This run's process still runs; without one (a `recover` after a crash), any process `found` names."""
        if self.process is not None:
            return self.process.poll() is None
        return bool(found())

    def stop(self, found: Callable[[], list[int]], grace_s: float, what: str) -> None:
        """Stop every process `found` names (SIGTERM, then SIGKILL after `grace_s`), and wait for this run's."""
        procs.stop_all(found, grace_s)
        if self.process is not None:
            try:
                self.process.wait(grace_s)
            except subprocess.TimeoutExpired as exc:
                raise ControlPlaneError(f"{what}: its process (pid {self.process.pid}) did not stop") from exc
