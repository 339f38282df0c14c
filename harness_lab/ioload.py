"""A bounded background writer: vSAN resync traffic competing with the database on a site's storage.

`python -m harness_lab.ioload DIRECTORY MB_PER_S SECONDS` writes at that rate into one file of
DIRECTORY, flushed to disk each step (page cache alone would not compete), wrapping at
`MAX_FILE_MB` so the disk never fills, and removes the file when it ends (on SIGTERM too).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

MAX_FILE_MB = 64
STEP_S = 0.1
FILE_PREFIX = "resync-load"


def write_load(directory: Path, mb_per_s: float, seconds: float) -> int:
    """Write `mb_per_s` for `seconds` into `directory`; bytes written."""
    path = directory / f"{FILE_PREFIX}.{os.getpid()}"
    chunk = b"\x5a" * max(4096, int(mb_per_s * 1024 * 1024 * STEP_S))
    limit = MAX_FILE_MB * 1024 * 1024
    written = 0

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < seconds:
            due = mb_per_s * 1024 * 1024 * min(elapsed + STEP_S, seconds)
            if written < due:
                if os.lseek(fd, 0, os.SEEK_CUR) + len(chunk) > limit:
                    os.lseek(fd, 0, os.SEEK_SET)
                written += os.write(fd, chunk)
                os.fdatasync(fd)
            else:
                time.sleep(min(STEP_S, seconds - elapsed))
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    return written


if __name__ == "__main__":
    write_load(Path(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]))
