"""What a cluster part reads of its cluster: the values, and the optional questions a cluster answers.

A platform's cluster view (in its folder, below the harness) returns these values and answers these
protocols (`Forecasting`, `CountsCopies`, `ReadsReplication`, `Provisioned`, ...); the harness's
`Cluster` (`harness.clusters`) is the one every view answers. They live here, in the layer a platform
may import, so that a view in `harness_platforms/<name>/` builds the same objects, and asks a
database part it wraps the same questions, as the harness does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from harness_kernel.history.server import ServerEvent


@dataclass(frozen=True)
class ResyncSample:
    bytes_left: float
    bytes_total: float | None = None
    eta_s: float | None = None  # the control plane's own estimate, when it gives one


@dataclass(frozen=True)
class DataDevice:
    """A storage device that holds a component of a node's data, as the storage layer reports it."""

    host: str
    device: str  # canonical name, e.g. naa.5000c500a1a1a101
    group: int  # index of its disk group on the host
    tier: str  # "cache" or "capacity"


@dataclass(frozen=True)
class FailoverForecast:
    """What the cluster's own settings and queues predict for a failover, read before the fault.

    The report prints it next to what was measured: the detection settings beside the measured
    detection time, the redo-queue RTO and log-send-queue RPO estimates beside the measured RTO
    and lost commits.
    """

    detection: str  # the settings as the cluster states them
    detection_s: float | None  # the detection time they imply
    rto_s: float | None  # redo queue / redo rate of the failover target
    rpo_kb: float | None  # log not yet sent to the failover target
    basis: str  # where each figure came from


@dataclass(frozen=True)
class CopiesSample:
    """How many copies of the data a commit reaches right now, as the cluster itself says (never inferred from
    the harness's own events): the HA manager's view and the database's, the smaller one counted.

    `in_sync` is None when nothing confirms any copy (no primary answers): that counts as at risk. `states` is
    what it was read from, quoted in the report beside the time at risk.
    """

    in_sync: int | None
    states: str
    modelled: bool = False  # a platform's model gave it (the bound lab's vSAN objects), not the cluster


ReplicationMode = Literal["synchronous", "asynchronous", "none", "unknown"]  # none: no copy elsewhere


@dataclass(frozen=True)
class ReplicationState:
    """The replication a cluster runs with now, as the cluster says it (never assumed from its design).

    `mode` is what a commit waits for: synchronous when it is acknowledged only once another copy has it,
    asynchronous when another copy follows later, none when there is no other copy to follow.
    `read_from` quotes what it was read from, for the report. `settings` are the cluster's own switches that
    make the mode, by name (`replication-quorum node-b: true`): what a recovery compares and puts back.
    """

    mode: ReplicationMode
    read_from: str
    settings: Mapping[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        return f"{self.mode}, read from {self.read_from}"


@dataclass(frozen=True)
class ModelledLimit:
    """How a platform that cannot limit a disk's IOPS models the limit for an operation writing to that disk."""

    max_rate: str  # the operation's rate cap (pg_basebackup's --max-rate form: "12800k")
    model: str  # the words the report uses for it


@runtime_checkable
class StoragePlacement(Protocol):
    """A cluster whose storage layer can say where a node's data lives (vSAN object placement)."""

    def devices_of(self, node: str) -> list[DataDevice]:
        """The devices holding components of `node`'s data, found on the live cluster, never guessed."""


@runtime_checkable
class Forecasting(Protocol):
    """A cluster that can predict its failover from its settings and replication queues (SQL Server)."""

    def failover_forecast(self) -> FailoverForecast | None: ...


@runtime_checkable
class CountsCopies(Protocol):
    """A cluster that can say how many in-sync copies of the data it holds now (a read-only probe)."""

    def copies(self) -> CopiesSample: ...


@runtime_checkable
class ReadsReplication(Protocol):
    """A cluster that can say how it replicates now (a read-only probe) and put back settings a run changed."""

    def replication(self) -> ReplicationState: ...

    def restore_replication(self, before: ReplicationState) -> list[str]:
        """Set back each of `before.settings` that differs now; one sentence per setting changed (none: nothing
        differed). A setting the harness may not change on this cluster raises HarnessError naming it."""


@runtime_checkable
class ModelsDiskLimits(Protocol):
    """A platform that models a vSAN IOPS limit rather than enforcing it (the bound lab)."""

    def modelled_disk_limit(self, iops: int) -> ModelledLimit | None:
        """The cap an operation writing to a disk limited to `iops` gets; None where the platform enforces it."""


@runtime_checkable
class Provisioned(Protocol):
    """A cluster the harness itself brings up and down (the embedded lab)."""

    def up(self) -> bool:
        """Bring it up unless it is already healthy; True if this call started it."""

    def down(self) -> None: ...

    def rebuild(self) -> None:
        """Start it afresh after it could not heal (a harness problem, reported as such)."""

    def storage_dir(self, node: str) -> Path:
        """The storage `node`'s data lives on, where an I/O workload may write its own files beside it."""


class ClusterView(Protocol):
    """What every cluster view answers (`harness.clusters.Cluster` adds the workload's connection): the roles, where
    they run, health, the HA manager's events and the product's versions."""

    @property
    def name(self) -> str: ...

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

    def describe(self) -> Mapping[str, str]:
        """Product versions and settings for the report's environment section."""
