"""The lab's session timeout: a standby silent too long leaves the write quorum, and rejoins after heal."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Protocol

from harness_kernel.errors import ControlPlaneError
from harness_lab.postgres import NodeState, PgCluster

log = logging.getLogger(__name__)


class Lab(Protocol):
    """What the watchdog needs of the lab (the controller provides it)."""

    pg: PgCluster

    def primary(self) -> str: ...

    def nodes(self) -> list[NodeState]: ...


@dataclass
class QuorumWatchdog:
    """The lab's session timeout: a standby silent for `timeout_s` leaves the write quorum, and rejoins after heal.

    pg_auto_failover does nothing when only the A-B link is cut (the witness still sees both
    nodes), so synchronous commits would wait for the whole cut; an AG's session timeout
    would drop the replica to asynchronous instead. This is that, observed from the primary:
    the standby answers at least every second (`wal_receiver_status_interval`), so its last
    `reply_time` says how long it has been silent.
    """

    lab: Lab
    timeout_s: float
    dropped: list[str] = field(default_factory=list)
    dropped_at_wall: float | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="lab-quorum-watchdog", daemon=True)
        self._thread.start()

    def _silence_s(self, primary: str) -> float | None:
        """Seconds since the standby last answered the primary (None: no standby connected at all)."""
        rows = self.lab.pg.sql("select extract(epoch from clock_timestamp() - max(reply_time)) from pg_stat_replication "
                               "where state = 'streaming'", node=primary, database="postgres", timeout=5)
        return float(rows[0][0]) if rows and rows[0][0] else None

    def _streaming(self, primary: str) -> bool:
        silence = self._silence_s(primary)
        return silence is not None and silence < 2.0

    def _run(self) -> None:
        gone_since: float | None = None
        while not self._stop.wait(0.2):
            try:
                primary = self.lab.primary()
                silence = self._silence_s(primary)
            except ControlPlaneError:
                continue
            if silence is None:
                gone_since = gone_since or time.monotonic()
                silence = time.monotonic() - gone_since
            else:
                gone_since = None
            if silence < self.timeout_s:
                continue
            try:
                for node in self.lab.nodes():
                    if node.name != primary and node.replication_quorum:
                        self.lab.pg.set_replication_quorum(node.name, False)
                        self.dropped.append(node.name)
            except ControlPlaneError as exc:
                log.warning("quorum watchdog: could not drop the standby from the quorum: %s", exc)
                continue
            self.dropped_at_wall = time.time()
            return

    def stop_and_restore(self, timeout_s: float = 30.0) -> None:
        """Stop watching; put every node back in the quorum once the standby streams again. Idempotent."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        outside = [n.name for n in self.lab.nodes() if not n.replication_quorum]
        if not outside:
            return
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if self._streaming(self.lab.primary()):
                    break
            except ControlPlaneError:
                pass
            time.sleep(0.25)
        for node in outside:
            self.lab.pg.set_replication_quorum(node, True)
        self.dropped.clear()
