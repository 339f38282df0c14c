"""What the suites need to know about a database cluster, whatever runs it.

The suites speak to a `Cluster`: who is primary, on which host and site, is it healthy,
is a resync running, what did the HA manager do and when. The embedded lab implements it
today; vSphere + SQL Server (WSFC / AG) implement the same protocol.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from harness.history.server import ServerEvent
from workloads.oltp import ConnectionSettings, Dialect


@dataclass(frozen=True)
class ResyncSample:
    bytes_left: float
    bytes_total: float | None = None
    eta_s: float | None = None  # the control plane's own estimate, when it gives one


class Cluster(Protocol):
    name: str

    def preflight(self) -> None:
        """Raise HarnessError naming the reason if an experiment must not start now."""

    def wait_healthy(self, timeout_s: float) -> None: ...

    def primary_node(self) -> str: ...

    def standby_node(self) -> str: ...

    def host_of(self, node: str) -> str: ...

    def site_of(self, node: str) -> str: ...

    def ha_events(self, since_wall: float, old_primary: str) -> list[ServerEvent]:
        """The HA manager's first detection and first promotion of a node other than `old_primary`
        since `since_wall` (server clock), named `DETECTED` / `PROMOTED` for the failover phases."""

    def clock_offset(self) -> float: ...

    def resync(self) -> ResyncSample | None: ...

    def connection(self) -> tuple[Dialect, ConnectionSettings]: ...

    def describe(self) -> Mapping[str, str]:
        """Product versions and settings for the report's environment section."""
