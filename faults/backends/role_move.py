"""What every database role move shares, whatever moves it (T-SQL for an AG, WSFC for an FCI).

Which database the target names and whether `params.to_node` is one of its nodes, checked
when the fault is built; and where the role goes when no node is named: a node of another
site than the current owner's first (the cross-site move the suites exist to measure).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from faults.base import FaultSpec, UnknownState
from faults.kinds import RoleMoveParams
from harness_kernel.errors import ConfigError
from harness_kernel.topology.models import Database, Topology
from harness_kernel.topology.targets import Target


def database_of(spec: FaultSpec, params: RoleMoveParams, target: Target, topology: Topology) -> tuple[int, Database]:
    """The targeted database and its index; a `to_node` that is none of its nodes is refused."""
    index, database = next((i, d) for i, d in enumerate(topology.databases) if d.name == target.name)
    if params.to_node is not None and params.to_node not in {n.name for n in database.nodes}:
        raise ConfigError(f"{spec.kind}: params.to_node {params.to_node!r} is not a node of {database.name}")
    return index, database


def site_of_node(topology: Topology, database: Database, node: str) -> str | None:
    """The site of the host the topology places `node` on (None if it names none)."""
    for db_node in database.nodes:
        if db_node.name.casefold() == node.casefold() and db_node.host:
            try:
                return topology.site_of(db_node.host).name
            except KeyError:
                return None
    return None


def other_site_first(topology: Topology, database: Database, owner: str, candidates: Sequence[str]) -> list[str]:
    """`candidates` other than `owner`, those in another site than the owner's first (order kept otherwise)."""
    home = site_of_node(topology, database, owner)
    others = [n for n in candidates if n.casefold() != owner.casefold()]
    return sorted(others, key=lambda n: site_of_node(topology, database, n) == home)


@dataclass
class RoleMoveState:
    """A planned move's progress: the owner before inject, and whether the revert (a wait for health) began."""

    before: str | None = None
    reverted: bool = False
    unknown: UnknownState = field(default_factory=UnknownState)
