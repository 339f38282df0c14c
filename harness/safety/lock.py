"""One run per target: an exclusive lock per topology name, released even on kill -9."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path
from types import TracebackType

from harness.errors import TargetBusyError


class TopologyLock:
    """`flock` on a file in the state directory; the kernel drops it when the holder dies."""

    def __init__(self, directory: Path, topology_name: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{topology_name}.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self._holder(fd)
            os.close(fd)
            raise TargetBusyError(f"topology {self.path.stem!r} is in use by {holder}; wait for it or stop it") from None
        info = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "command": " ".join(sys.argv)[:300]}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

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
