"""One run per target: an exclusive lock per cluster identity, released even on kill -9.

The lock is per machine (a `flock` in the state directory): two harness machines do not see
each other's locks. It is keyed by what the target *is* (see `identity.cluster_identity`),
so two topology files naming one cluster cannot run at once on this machine.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import socket
import sys
import time
from pathlib import Path
from types import TracebackType

from harness.safety.journal import open_lock_file
from harness_kernel.errors import TargetBusyError
from harness_kernel.paths import private_dir


def _file_name(key: str) -> str:
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,100}", key):
        return f"{key}.lock"
    return f"cluster-{hashlib.sha256(key.encode()).hexdigest()[:20]}.lock"


class TopologyLock:
    """`flock` on a file in the state directory; the kernel drops it when the holder dies."""

    def __init__(self, directory: Path, key: str) -> None:
        self.directory = directory
        self.key = key
        self.path = directory / _file_name(key)
        self._fd: int | None = None

    def acquire(self) -> None:
        private_dir(self.directory)
        fd = open_lock_file(self.path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self._holder(fd)
            os.close(fd)
            raise TargetBusyError(f"{self.key!r} is in use by {holder}; wait for it or stop it") from None
        # who holds it, for the next run's message; never the command line (it may carry a token)
        info = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "command": os.path.basename(sys.argv[0]) if sys.argv else "", "target": self.key}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    @staticmethod
    def _holder(fd: int) -> str:
        try:
            info = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
        except ValueError:
            return "another run"
        if not info:
            return "another run"
        return f"pid {info.get('pid')} on {info.get('host')} since {info.get('since')} ({info.get('command')})"

    def __enter__(self) -> TopologyLock:
        self.acquire()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()
