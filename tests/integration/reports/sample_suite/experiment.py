"""A small real experiment for the report tests: a SQLite ledger under load, and a lock as the fault.

The workload commits signed rows as fast as it can (with a short think time); the fault takes
an exclusive lock from another connection, so commits really stall until the lock is released.
Everything lands on a real `Timeline` and `TransactionSeries`, as the harness's own runs do.
"""

from __future__ import annotations

import hashlib
import hmac
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_kernel.history import EventKind
from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline


@dataclass
class LedgerRun:
    """What one run leaves: the timeline, the series and every transaction (for recorded fixtures)."""

    timeline: Timeline = field(default_factory=Timeline)
    series: TransactionSeries = field(default_factory=TransactionSeries)
    transactions: list[tuple[float, float, bool]] = field(default_factory=list)


class LedgerWorkload:
    """One client thread committing signed rows into `db`; stop() joins it."""

    def __init__(self, db: Path, key: bytes, run: LedgerRun, think_s: float = 0.002) -> None:
        self.db, self.key, self.run, self.think_s = db, key, run, think_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="ledger-client", daemon=True)

    def start(self) -> None:
        with sqlite3.connect(self.db) as conn:
            conn.execute("create table if not exists ledger (id integer primary key, body text, mac text)")
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        conn = sqlite3.connect(self.db, timeout=10, isolation_level=None)
        n = 0
        while not self._stop.is_set():
            n += 1
            body = f"txn-{n}"
            started = time.monotonic()
            ok = True
            try:
                conn.execute("begin immediate")
                conn.execute("insert into ledger (body, mac) values (?, ?)",
                             (body, hmac.new(self.key, body.encode(), hashlib.sha256).hexdigest()))
                conn.execute("commit")
            except sqlite3.OperationalError:
                ok = False
            ended = time.monotonic()
            t_end = self.run.timeline.to_t(ended)
            self.run.series.record(t_end, ended - started, ok, None if ok else "database-locked")
            self.run.transactions.append((round(t_end, 4), round(ended - started, 5), ok))
            time.sleep(self.think_s)
        conn.close()


@contextmanager
def exclusive_lock(db: Path, run: LedgerRun, target: str = "ledger.db") -> Iterator[None]:
    """The fault: another connection holds an exclusive lock; inject/revert are recorded like the runner does."""
    attrs: dict[str, Any] = {"fault": "db-lock", "target": target, "mode": "exclusive"}
    run.timeline.record(EventKind.INJECT, "runner", **attrs)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("begin exclusive")
    run.timeline.record(EventKind.IN_EFFECT, "runner", **attrs)
    try:
        yield
    finally:
        run.timeline.record(EventKind.REVERT, "runner", **attrs)
        conn.execute("rollback")
        conn.close()
        run.timeline.record(EventKind.REVERTED, "runner", **attrs)
