"""A small write load for the lab tests: a few pyodbc writers that record every commit's outcome."""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from dataclasses import dataclass, field

import pyodbc


@dataclass
class Attempt:
    started: float
    ended: float
    ok: bool


@dataclass
class WriteLoad:
    """`threads` writers inserting one row per autocommit transaction, reconnecting on failure."""

    dsn: str
    threads: int = 3
    attempts: list[Attempt] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _workers: list[threading.Thread] = field(default_factory=list)

    def __enter__(self) -> WriteLoad:
        conn = pyodbc.connect(self.dsn, autocommit=True, timeout=5)
        conn.execute("create table if not exists lab_writes (id bigserial primary key, writer int, t double precision)")
        conn.close()
        self._workers = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(self.threads)]
        for worker in self._workers:
            worker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for worker in self._workers:
            worker.join(timeout=30)

    def _run(self, writer: int) -> None:
        conn: pyodbc.Connection | None = None
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                if conn is None:
                    conn = pyodbc.connect(self.dsn, autocommit=True, timeout=3)
                conn.execute("insert into lab_writes (writer, t) values (?, ?)", writer, time.time())
                ok = True
            except pyodbc.Error:
                ok = False
                if conn is not None:
                    with contextlib.suppress(pyodbc.Error):
                        conn.close()
                conn = None
            with self._lock:
                self.attempts.append(Attempt(started, time.monotonic(), ok))
            time.sleep(0.02 if ok else 0.2)

    def successes(self, since: float) -> list[float]:
        with self._lock:
            return sorted(a.ended for a in self.attempts if a.ok and a.ended >= since)

    def failures(self, since: float) -> int:
        with self._lock:
            return sum(1 for a in self.attempts if not a.ok and a.ended >= since)

    def wait_commits(self, count: int, since: float, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if len(self.successes(since)) >= count:
                return True
            time.sleep(0.1)
        return False

    def outage(self, since: float, until: float) -> float:
        """Longest time without a completed commit in [since, until] (the client-observed write outage)."""
        marks = [since, *[t for t in self.successes(since) if t <= until], until]
        return max(b - a for a, b in itertools.pairwise(marks))
