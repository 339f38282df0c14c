"""What the suites need to know about a database cluster, whatever runs it.

The suites speak to a `Cluster` (Jepsen's `db`): who is primary, on which host and site, is
it healthy, is a resync running, what did the HA manager do and when. Clusters the harness
brings up itself (the embedded lab) also implement `Provisioned`. Which class observes a
topology is a string map, imported on use, like the fault registry.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol

from faults.catalogue import installed
from faults.contract import ClusterPart, ClusterPartClass, Observer, ObserverClass, Probe
from faults.platform import Platform
from faults.readings import ClusterView
from faults.readings import CopiesSample as CopiesSample
from faults.readings import CountsCopies as CountsCopies
from faults.readings import DataDevice as DataDevice
from faults.readings import FailoverForecast as FailoverForecast
from faults.readings import Forecasting as Forecasting
from faults.readings import ModelledLimit as ModelledLimit
from faults.readings import ModelsDiskLimits as ModelsDiskLimits
from faults.readings import Provisioned as Provisioned
from faults.readings import ReadsReplication as ReadsReplication
from faults.readings import ReplicationMode as ReplicationMode
from faults.readings import ReplicationState as ReplicationState
from faults.readings import ResyncSample as ResyncSample
from faults.readings import StoragePlacement as StoragePlacement
from faults.registry import named
from harness_kernel.errors import ConfigError
from harness_kernel.topology.models import Topology
from workloads.oltp import ConnectionSettings, Dialect


class Cluster(ClusterView, Protocol):
    """What the suites speak to: a cluster view (`faults.readings.ClusterView`) and the workload's way in."""

    def connection(self) -> tuple[Dialect, ConnectionSettings]: ...


# topology kind -> "module:Class" with `from_topology(topology)`; imported only when chosen. Every other kind is a
# platform's that hosts clusters (`Platform.hosts_clusters`: vSphere, Nutanix).
CLUSTERS: dict[str, str] = {
    "lab": "harness.clusters.lab:LabCluster",
}


def database_parts() -> dict[str, str]:
    """Each database kind this installation observes, and the part that observes it ("module:Class" with
    `from_topology(topology)`, its SDK imported only when chosen), as the platforms declare them (`Platform.databases`:
    PostgreSQL's is the embedded lab's view, bound to vSphere's simulator under `lab up --vsphere`)."""
    return {kind: path for p in installed().platforms for kind, path in p.databases}


def cluster_for(topology: Topology) -> Cluster:
    """The cluster view of `topology`, built without contacting anything. On a platform that hosts clusters, the
    database's own view is the cluster (`databases[0].kind`, through the platform that declares it), wrapped by the
    platform's `cluster` where it has one (vSphere: where each VM runs, vSAN); a platform's part (its
    `cluster_part`, built from its section) judges the platform beside it, in every preflight and recovery."""
    path = CLUSTERS.get(topology.kind)
    if path is not None:
        return load_part(path, topology)
    host = installed().platform(topology.kind)
    if host is None or not host.hosts_clusters:
        raise ConfigError(f"topology {topology.name!r}: the {topology.kind} cluster backend is not available yet; "
                          "use --dry-run to plan, or --topology lab")
    if not topology.databases:
        raise ConfigError(f"topology {topology.name!r}: databases: the suites need one database")
    kind, parts = topology.databases[0].kind, database_parts()
    if kind not in parts:
        raise ConfigError(f"topology {topology.name!r}: databases[0].kind {kind!r} has no {host.name} "
                          f"database part in this installation yet (available: {', '.join(sorted(parts))})")
    if host.cluster is None:
        return load_part(parts[kind], topology)
    hosting = _named(host.cluster).hosting(topology, load_part(parts[kind], topology))
    cluster: Cluster = hosting
    return cluster


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
