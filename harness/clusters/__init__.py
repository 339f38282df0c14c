"""What the suites need to know about a database cluster, whatever runs it.

The suites speak to a `Cluster` (Jepsen's `db`): who is primary, on which host and site, is
it healthy, is a resync running, what did the HA manager do and when. Clusters the harness
brings up itself (the embedded lab) also implement `Provisioned`. Which class observes a
topology is a string map, imported on use, like the fault registry.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from faults.catalogue import installed
from faults.contract import ClusterPart, ClusterPartClass, Observer, ObserverClass, Probe
from faults.platform import Platform
from faults.readings import CopiesSample as CopiesSample
from faults.readings import DataDevice as DataDevice
from faults.readings import FailoverForecast as FailoverForecast
from faults.readings import ModelledLimit as ModelledLimit
from faults.readings import ReplicationMode as ReplicationMode
from faults.readings import ReplicationState as ReplicationState
from faults.readings import ResyncSample as ResyncSample
from faults.registry import named
from harness_kernel.errors import ConfigError
from harness_kernel.history.server import ServerEvent
from harness_kernel.topology.models import Topology
from workloads.oltp import ConnectionSettings, Dialect


class Cluster(Protocol):
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

    def connection(self) -> tuple[Dialect, ConnectionSettings]: ...

    def describe(self) -> Mapping[str, str]:
        """Product versions and settings for the report's environment section."""


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


# topology kind -> "module:Class" with `from_topology(topology)`; imported only when chosen.
CLUSTERS: dict[str, str] = {
    "lab": "harness.clusters.lab:LabCluster",
    "vsphere": "harness.clusters.vsphere:VsphereCluster",
}


# databases[].kind -> "module:Class" with `from_topology(topology)` building its part (its SDK imported only
# when chosen), besides what each platform declares (`Platform.databases`: SQL Server's availability group and
# failover instance). PostgreSQL under vSphere is the embedded lab's, bound to its simulator (`lab up --vsphere`).
BUILT_IN_DATABASE_PARTS: dict[str, str] = {
    "postgres": "harness.clusters.lab:LabCluster",
}


def database_parts() -> dict[str, str]:
    """Each database kind this installation observes, and the part that observes it."""
    declared = {kind: path for p in installed().platforms for kind, path in p.databases}
    return {**BUILT_IN_DATABASE_PARTS, **declared}


def cluster_for(topology: Topology) -> Cluster:
    """The cluster view of `topology`, built without contacting anything. On a platform that hosts clusters (a
    plug-in's `kind`), the database's own view is the cluster, and the platform's part (its `cluster_part`, built
    from its section) judges the platform beside it, in every preflight and recovery."""
    path = CLUSTERS.get(topology.kind)
    host = installed().platform(topology.kind)
    if path is None and host is not None and host.hosts_clusters and topology.databases:
        path = database_parts().get(topology.databases[0].kind)
    if path is None:
        raise ConfigError(f"topology {topology.name!r}: the {topology.kind} cluster backend is not available yet; "
                          "use --dry-run to plan, or --topology lab")
    return load_part(path, topology)


def load_part(path: str, topology: Topology) -> Cluster:
    """The cluster (or cluster part) `path` ("module:Class") builds from `topology`."""
    cluster: Cluster = _named(path).from_topology(topology)
    return cluster


def _named(path: str) -> Any:
    """What a platform's `"module:attr"` names (its contract is the protocol the caller annotates)."""
    return named(path)


def _present(topology: Topology) -> list[Platform]:
    """The platforms this topology has a section for (`management.platforms.<name>`), in catalogue order."""
    return [p for p in installed().platforms if p.name in topology.management.platforms]


def cluster_parts(topology: Topology) -> dict[str, ClusterPart]:
    """Each present platform's cluster part, built without contacting anything."""
    parts: dict[str, ClusterPart] = {}
    for p in _present(topology):
        if p.cluster_part:
            part: ClusterPartClass = _named(p.cluster_part)
            parts[p.name] = part.from_topology(topology)
    return parts


def observers(topology: Topology) -> dict[str, Observer]:
    """Each present platform's observers, by "platform: module:Class", built without contacting anything."""
    found: dict[str, Observer] = {}
    for p in _present(topology):
        for path in p.observers:
            observer: ObserverClass = _named(path)
            found[f"{p.name}: {path}"] = observer.from_topology(topology)
    return found


def probes(topology: Topology) -> dict[str, Callable[[], str]]:
    """Each present platform's read-only probes, by "platform probe module:function", ready to run."""
    found: dict[str, Callable[[], str]] = {}
    for p in _present(topology):
        for path in p.probes:
            probe: Probe = _named(path)
            found[f"{p.name} probe {path}"] = functools.partial(probe, topology)
    return found


def probe(topology: Topology) -> dict[str, str]:
    """Each present platform's probes, run now: what each saw (a probe that fails raises, naming it)."""
    return {name: str(run()) for name, run in probes(topology).items()}
