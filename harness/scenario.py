"""A suite's fault, named by the role it strikes rather than by a fixed target.

"The host of the primary" is only known at run time, so a suite parametrises with a
`ScenarioFault`; dry-run plans every target the role could resolve to, and the experiment
resolves it against the live cluster. The suite names an *intent* (`faults.intents`): the
fault kind that realises it follows the target and the topology (a host's power loss is a node
crash in the lab, a BMC's power-off on vSphere).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from faults import intents
from faults.base import FaultSpec
from harness.clusters import Cluster, StoragePlacement
from harness_kernel.errors import ConfigError, HarnessError
from harness_kernel.topology.models import Topology
from harness_kernel.topology.targets import Target, TargetKind


class Role(enum.Enum):
    PRIMARY_HOST = "host of the primary"
    STANDBY_HOST = "host of the standby"
    PRIMARY_SITE = "site of the primary"
    STANDBY_NODE = "standby database node"
    PRIMARY_NODE = "primary database node"
    STANDBY_DISK = "a capacity device holding the standby's data"
    STANDBY_DISK_GROUP = "the disk group holding the standby's data"
    DATABASE = "the database"
    INTER_SITE_LINK = "link between the database sites"
    WITNESS = "the witness"


@dataclass(frozen=True, repr=False)
class ScenarioFault:
    label: str
    role: Role
    intent: str  # faults.intents: what is asked for, whatever platform realises it
    params: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""

    def __post_init__(self) -> None:
        intents.intent(self.intent)  # an unknown intent is an error when the suite is imported, not when run

    def __str__(self) -> str:
        return self.label

    def __repr__(self) -> str:
        """The label: what a report shows as the test's parameter."""
        return self.label

    def applies(self, topology: Topology) -> bool:
        """Some target this fault may strike on `topology` is served by a backend here."""
        return any(intents.realise(self.intent, target, topology, self.params) is not None
                   for target in _candidates(self.role, topology))

    def plan_specs(self, topology: Topology) -> list[FaultSpec]:
        """Every spec this fault may become on `topology` (for dry-run); none if nothing here serves it."""
        if not self.applies(topology):
            return []
        return [intents.described(self.intent, target, topology, self.params)
                for target in _candidates(self.role, topology)]

    def resolve(self, cluster: Cluster, topology: Topology) -> FaultSpec:
        """The spec for the target the role names on the live cluster, realised for it."""
        target = self._target(cluster, topology)
        spec = intents.realise(self.intent, target, topology, self.params)
        if spec is None:
            raise ConfigError(f"{self.label}: nothing in this installation realises {self.intent} on {target} "
                              f"({intents.described(self.intent, target, topology, self.params).kind} is served by "
                              "no platform here)")
        return spec

    def _target(self, cluster: Cluster, topology: Topology) -> str:
        db = topology.databases[0]
        if self.role is Role.PRIMARY_HOST:
            target = str(Target.of(TargetKind.HOST, cluster.host_of(cluster.primary_node())))
        elif self.role is Role.STANDBY_HOST:
            target = str(Target.of(TargetKind.HOST, cluster.host_of(cluster.standby_node())))
        elif self.role is Role.PRIMARY_SITE:
            target = str(Target.of(TargetKind.SITE, cluster.site_of(cluster.primary_node())))
        elif self.role is Role.STANDBY_NODE:
            target = str(Target.of(TargetKind.NODE, db.name, cluster.standby_node()))
        elif self.role is Role.PRIMARY_NODE:
            target = str(Target.of(TargetKind.NODE, db.name, cluster.primary_node()))
        elif self.role is Role.DATABASE:
            target = str(Target.of(TargetKind.DATABASE, db.name))
        elif self.role in (Role.STANDBY_DISK, Role.STANDBY_DISK_GROUP):
            target = self._standby_device(cluster)
        elif self.role is Role.WITNESS:
            witnesses = _candidates(Role.WITNESS, topology)
            if not witnesses:
                raise ConfigError(f"{self.label}: topology {topology.name!r} has no witness to isolate")
            target = witnesses[0]
        else:
            target = _candidates(Role.INTER_SITE_LINK, topology)[0]
        return target

    def _standby_device(self, cluster: Cluster) -> str:
        """The capacity device (or its disk group) holding the standby's data, on the host it runs on if one does."""
        if not isinstance(cluster, StoragePlacement):
            raise ConfigError(f"{self.label}: the device that holds the standby's data is found from the VM's "
                              f"storage objects, which cluster {cluster.name!r} cannot report; it is not guessed")
        node = cluster.standby_node()
        host = cluster.host_of(node)
        capacity = [d for d in cluster.devices_of(node) if d.tier == "capacity"]
        if not capacity:
            raise HarnessError(f"{self.label}: no capacity device holds a component of {node}'s data")
        device = min(capacity, key=lambda d: (d.host != host, d.host, d.group, d.device))
        if self.role is Role.STANDBY_DISK:
            return str(Target.of(TargetKind.DISK, device.host, device.device))
        return str(Target.of(TargetKind.DISK_GROUP, device.host, device.group))


@dataclass(frozen=True)
class Sweep:
    """A fault repeated at each value a run option lists (S1's RTT steps): the dry-run plans every step.

    `option` names the options property with the values (the suite's own options, or the core's); a step of 0
    injects nothing."""

    fault: ScenarioFault
    param: str
    option: str

    def __str__(self) -> str:
        return f"{self.fault.label} at each of --{self.option.removesuffix('_values').replace('_', '-')}"

    def plan_specs(self, topology: Topology) -> list[FaultSpec]:
        """The fault as declared (whether it applies to the topology at all)."""
        return self.fault.plan_specs(topology)

    def plan_steps(self, topology: Topology, values: Sequence[float]) -> list[FaultSpec]:
        return [spec for value in values if value
                for spec in replace(self.fault, params={**self.fault.params, self.param: value}).plan_specs(topology)]


def _candidates(role: Role, topology: Topology) -> list[str]:
    if not topology.databases:
        return []
    db = topology.databases[0]
    hosts = [n.host for n in db.nodes if n.host]
    if role in (Role.PRIMARY_HOST, Role.STANDBY_HOST):
        return [str(Target.of(TargetKind.HOST, h)) for h in hosts]
    if role is Role.PRIMARY_SITE:
        return sorted({str(Target.of(TargetKind.SITE, topology.site_of(h).name)) for h in hosts})
    if role in (Role.STANDBY_NODE, Role.PRIMARY_NODE):
        return [str(Target.of(TargetKind.NODE, db.name, n.name)) for n in db.nodes]
    if role is Role.DATABASE:
        return [str(Target.of(TargetKind.DATABASE, db.name))]
    if role is Role.STANDBY_DISK:
        return [str(Target.of(TargetKind.DISK, h, device)) for h in hosts for group in topology.host(h).disk_groups
                for device in group.capacity]
    if role is Role.STANDBY_DISK_GROUP:
        return [str(Target.of(TargetKind.DISK_GROUP, h, index)) for h in hosts
                for index in range(len(topology.host(h).disk_groups))]
    if role is Role.WITNESS:
        return [str(Target.of(TargetKind.WITNESS, topology.witness.name))] if topology.witness is not None else []
    sites = {topology.site_of(h).name for h in hosts}
    return [str(Target.of(TargetKind.LINK, *link.between)) for router in topology.routers for link in router.links
            if set(link.between) == sites]
