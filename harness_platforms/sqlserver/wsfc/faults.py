"""The FCI role move through PowerShell's FailoverClusters module (`FciRoleMove`, role-move on a sqlserver-fci database).

It runs `Move-ClusterGroup -Name ROLE -Node NODE -Wait SECONDS`: planned, nothing to undo, in effect
once the role is Online on another node. An availability group's role is never moved here: WSFC
does not know whether its secondaries are synchronized (Microsoft: use ALTER AVAILABILITY GROUP),
so a group holding a resource of type 'SQL Server Availability Group' is refused.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from faults.contract import (
    Check,
    ConfigError,
    ControlPlaneError,
    Database,
    FaultPlan,
    FaultSpec,
    FaultState,
    HarnessError,
    Params,
    RoleMoveParams,
    RoleMoveState,
    Target,
    Topology,
    database_of,
    other_site_first,
    powershell,
    run_checks,
)
from harness_platforms.sqlserver.wsfc.probes import AG_RESOURCE_TYPE, JSON, ClusterGroup, FailoverCluster

log = logging.getLogger(__name__)

BACKEND = "wsfc"
MOVE_WAIT_S = 120


def move_script(role: str, node: str, wait_s: int) -> str:
    return (f"Move-ClusterGroup -Name {powershell.literal(role)} -Node {powershell.literal(node)} -Wait {int(wait_s)} | "
            f"ForEach-Object {{ [pscustomobject]@{{Name=$_.Name; OwnerNode=\"$($_.OwnerNode)\"; "
            f"State=\"$($_.State)\"}} }} | {JSON}")


def move_role(cluster: FailoverCluster, role: str, node: str, wait_s: int = MOVE_WAIT_S) -> ClusterGroup:
    """Move an FCI's role and wait for it to come online; an AG's role is refused (T-SQL moves those)."""
    if any(r.resource_type == AG_RESOURCE_TYPE for r in cluster.resources(role)):
        raise ConfigError(f"{role} holds an availability group: it is failed over with ALTER AVAILABILITY GROUP, "
                          "never moved with cluster cmdlets")
    rows = cluster.ask(move_script(role, node, wait_s), f"moving role {role} to {node}", timeout_s=wait_s + 60.0)
    moved = ClusterGroup(str(rows[0]["Name"]), str(rows[0]["OwnerNode"]), str(rows[0]["State"])) if rows else \
        cluster.group(role)
    if moved.state != "Online":
        raise ControlPlaneError(f"{cluster.where}: role {role} is {moved.state} on {moved.owner_node} "
                                f"{wait_s} s after Move-ClusterGroup")
    return moved

@dataclass
class FciRoleMove:
    """role-move on a failover cluster instance: its WSFC role goes to another node, planned."""

    spec: FaultSpec
    topology: Topology
    database: Database
    role: str
    to_node: str | None
    cluster: FailoverCluster
    state: RoleMoveState = field(default_factory=RoleMoveState)

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> FciRoleMove:
        assert isinstance(params, RoleMoveParams)
        index, database = database_of(spec, params, target, topology)
        if params.mode != "planned":
            raise ConfigError(f"{spec.kind} on {spec.target}: mode {params.mode!r}: a failover cluster instance has "
                              "no forced failover (one copy of the data); only a planned role move")
        if database.role_name is None:
            raise ConfigError(f"databases[{index}].role_name: required for kind sqlserver-fci (the WSFC role to move)")
        return cls(spec, topology, database, database.role_name, params.to_node,
                   FailoverCluster.from_topology(topology, database))

    def plan(self) -> FaultPlan:
        endpoints = ", ".join(s.where for s in self.cluster.sessions)
        if self.to_node is not None:
            moves = [f"{move_script(self.role, self.to_node, MOVE_WAIT_S)}"]
        else:  # the owner is known only at inject: each case, as it would be sent
            moves = [f"if {owner.name} owns it: {move_script(self.role, self._planned_target(owner.name), MOVE_WAIT_S)}"
                     for owner in self.database.nodes]
        return FaultPlan(
            self.spec, BACKEND,
            inject_steps=(f"through {endpoints} (the first that answers); the target node must be Up and a possible "
                          "owner of the role's SQL Server and disk resources, the role Online and the quorum held, "
                          "else refused",
                          *moves, f"in effect once {self.role} is Online on a node other than its owner before"),
            revert_steps=("nothing to undo (the role stays where it moved); wait until the role is Online, every "
                          "node Up and the quorum witness Online",),
            credentials=tuple(f"{s.field_path}.credential.password" for s in self.cluster.sessions))

    def _planned_target(self, owner: str) -> str:
        """Where the role goes from `owner` by the topology alone: a node of another site first."""
        others = other_site_first(self.topology, self.database, owner, [n.name for n in self.database.nodes])
        return others[0] if others else owner

    def _target(self, owner: str) -> str:
        up = {n.name.casefold() for n in self.cluster.nodes() if n.state == "Up"}
        owners = {resource: {o.casefold() for o in nodes} for resource, nodes in self.cluster.possible_owners(self.role).items()}
        choices = [self.to_node] if self.to_node is not None else \
            other_site_first(self.topology, self.database, owner, [n.name for n in self.database.nodes])
        why: list[str] = []
        for node in choices:
            if node.casefold() == owner.casefold():
                raise ConfigError(f"{self.spec.kind}: {node} already owns {self.role}")
            barred = sorted(resource for resource, nodes in owners.items() if node.casefold() not in nodes)
            if node.casefold() not in up:
                why.append(f"{node} is not Up")
            elif barred:
                why.append(f"{node} is not a possible owner of {', '.join(barred)}")
            else:
                return node
        raise HarnessError(f"{self.cluster.where}: no node can take {self.role} from {owner}: {'; '.join(why)}")

    def checks(self) -> list[Check]:
        return [Check("WinRM reads the failover cluster", self.cluster.reads_the_cluster,
                      "install the FailoverClusters module (RSAT-Clustering-PowerShell) on the nodes and give the WinRM "
                      "account access to the cluster (Grant-ClusterAccess)")]

    def preflight(self) -> None:
        run_checks(self.checks())
        problems = self.cluster.health_problems(self.role)
        if problems:
            raise HarnessError(f"{self.cluster.where}: not moving {self.role}: " + "; ".join(problems))
        self._target(self.cluster.owner_of(self.role))

    def inject(self) -> None:
        self.state.reverted = False
        self.state.before = self.cluster.owner_of(self.role)
        node = self._target(self.state.before)
        log.info("moving %s from %s to %s", self.role, self.state.before, node)
        move_role(self.cluster, self.role, node)

    def check(self) -> FaultState:
        try:
            if self.state.reverted:
                problems = self.cluster.health_problems(self.role)
                return FaultState.CLEARED if not problems else self.state.unknown.because(self.spec, "; ".join(problems))
            group = self.cluster.group(self.role)
        except (ControlPlaneError, ConfigError) as exc:
            return self.state.unknown.because(self.spec, str(exc))
        moved = self.state.before is not None and group.owner_node.casefold() != self.state.before.casefold()
        if moved and group.state == "Online":
            return FaultState.IN_EFFECT
        return self.state.unknown.because(self.spec, f"{self.role} is {group.state} on {group.owner_node}")

    def revert(self) -> None:
        self.state.reverted = True

