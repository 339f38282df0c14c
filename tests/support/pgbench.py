"""pgbench against a `LocalPostgres`, with its own per-second progress on the wall clock.

`-P 1 --progress-timestamp` makes pgbench print, each second, the end of that second as a Unix
time and the transactions per second it completed in it: an independent count to check the
harness's measurements against.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from tests.support.localpg import OS_USER, PG_BIN, LocalPostgres

PGBENCH = PG_BIN / "pgbench"
_PROGRESS = re.compile(r"^progress: (\d+(?:\.\d+)?) s, (\d+(?:\.\d+)?) tps", re.MULTILINE)
_PROCESSED = re.compile(r"^number of transactions actually processed: (\d+)", re.MULTILINE)


@dataclass(frozen=True)
class ProgressLine:
    wall_end: float  # Unix time at the end of the second
    tps: float


@dataclass(frozen=True)
class Run:
    progress: list[ProgressLine]
    processed: int  # transactions pgbench completed in the whole run


def _run(server: LocalPostgres, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(PGBENCH), "-h", str(server.base_dir), "-p", str(server.port), "-U", OS_USER, *args],
                          user=OS_USER, cwd=server.base_dir, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"pgbench failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return done


def initialise(server: LocalPostgres, database: str, scale: int = 1) -> None:
    _run(server, "-i", "-q", "-s", str(scale), database, timeout=120)


def run(server: LocalPostgres, database: str, seconds: int, clients: int = 2, threads: int = 1,
        rate: int | None = None) -> Run:
    """Run TPC-B for `seconds` (at `rate` transactions per second if given: a steady load)."""
    throttle = ["-R", str(rate)] if rate else []
    done = _run(server, "-c", str(clients), "-j", str(threads), "-T", str(seconds), *throttle, "-P", "1",
                "--progress-timestamp", database, timeout=seconds + 60)
    processed = _PROCESSED.search(done.stdout)
    if processed is None:
        raise RuntimeError(f"pgbench printed no transaction count: {done.stdout[-2000:]}")
    return Run([ProgressLine(float(end), float(tps)) for end, tps in _PROGRESS.findall(done.stderr)], int(processed[1]))
