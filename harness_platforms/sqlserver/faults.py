"""The role move of an availability group through T-SQL (`AgFailover`, role-move on a sqlserver-ag database).

It sends `ALTER AVAILABILITY GROUP [AG] FAILOVER;` to the target secondary's own instance, and only
when that replica is synchronous commit, synchronized and failover-ready for every database
(`harness_platforms.sqlserver.probes`); otherwise it refuses, naming why (SQL Server would refuse
too, error 41142, after the harness had journaled a fault). A forced failover
(`FORCE_FAILOVER_ALLOW_DATA_LOSS`) can lose acknowledged commits: it runs only for params
`mode: forced-allow-data-loss`, and its revert resumes data movement
(`ALTER DATABASE [db] SET HADR RESUME`) on the other replicas, which SQL Server suspends.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from faults.contract import (
    Check,
    ConfigError,
    ControlPlaneError,
    FaultPlan,
    FaultSpec,
    FaultState,
    HarnessError,
    Params,
    RoleMoveParams,
    RoleMoveState,
    SqlServerError,
    Target,
    Topology,
    database_of,
    run_checks,
)
from harness_platforms.sqlserver.probes import AvailabilityGroup, bracketed

log = logging.getLogger(__name__)

BACKEND = "sqlserver"


def failover_statement(ag_name: str, *, forced: bool) -> str:
    return f"ALTER AVAILABILITY GROUP {bracketed(ag_name)} {'FORCE_FAILOVER_ALLOW_DATA_LOSS' if forced else 'FAILOVER'};"


def resume_statement(database: str) -> str:
    return f"ALTER DATABASE {bracketed(database)} SET HADR RESUME;"


def fail_over(group: AvailabilityGroup, to_node: str, *, forced: bool) -> None:
    """Make `to_node`'s replica primary: planned only when it is ready; forced only when asked for."""
    if not forced:
        problems = group.readiness_problems(to_node)
        if problems:
            raise HarnessError(f"not failing {group.ag_name} over to {to_node}: " + "; ".join(problems))
    session = group.sessions[to_node]
    log.info("%s on %s", failover_statement(group.ag_name, forced=forced), session.where)
    session.execute(failover_statement(group.ag_name, forced=forced), what=f"failing {group.ag_name} over")


def resume_data_movement(group: AvailabilityGroup, primary: str) -> list[str]:
    """After a forced failover: SET HADR RESUME for each suspended database on the other replicas."""
    resumed, problems = [], []
    for d in group.databases():
        if d.node == primary or not d.is_suspended:
            continue
        try:
            group.sessions[d.node].execute(resume_statement(d.database), what=f"resuming {d.database}")
            resumed.append(f"{d.database} on {d.node}")
        except ControlPlaneError as exc:
            problems.append(str(exc))
    if problems:
        raise ControlPlaneError("; ".join(problems))
    return resumed

@dataclass
class AgFailover:
    """role-move on an availability group: planned (or, asked for by name, forced) failover with T-SQL."""

    spec: FaultSpec
    group: AvailabilityGroup
    to_node: str | None
    forced: bool
    state: RoleMoveState = field(default_factory=RoleMoveState)

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> AgFailover:
        assert isinstance(params, RoleMoveParams)
        _, database = database_of(spec, params, target, topology)
        return cls(spec, AvailabilityGroup.from_topology(topology, database), params.to_node,
                   params.mode == "forced-allow-data-loss")

    def plan(self) -> FaultPlan:
        statement = failover_statement(self.group.ag_name, forced=self.forced)
        sessions = self.group.sessions
        if self.to_node is not None:
            sends = [f"on {sessions[self.to_node].where}: {statement}"]
        else:  # the primary is known only at inject: each case, as it would be sent
            sends = [f"if {primary.name} is primary: on {sessions[self._planned_target(primary.name)].where}: {statement}"
                     for primary in self.group.database.nodes]
        check = ("" if self.forced else "the target must be SYNCHRONOUS_COMMIT, SYNCHRONIZED and is_failover_ready for "
                 "every database (sys.dm_hadr_database_replica_cluster_states), else refused; ")
        revert = (("ALTER DATABASE [db] SET HADR RESUME; on each other replica's suspended database",)
                  if self.forced else ())
        index = next(i for i, d in enumerate(self.group.topology.databases) if d.name == self.group.database.name)
        return FaultPlan(
            self.spec, BACKEND,
            inject_steps=(f"{check}a synchronous secondary of another site is chosen unless params.to_node names one",
                          *sends, "in effect once another node's replica answers as PRIMARY"),
            revert_steps=(*revert, "nothing else to undo (the role stays where it moved); wait until every replica "
                                   "is connected and healthy and no database is suspended"),
            credentials=(f"databases[{index}].credential.password",))

    def _planned_target(self, primary: str) -> str:
        """Where the role goes from `primary` by the topology alone: a node of another site first."""
        others = self.group.other_site_first(primary, [n.name for n in self.group.database.nodes])
        return others[0] if others else primary

    def checks(self) -> list[Check]:
        login = self.group.database.credential.username if self.group.database.credential else "the login"
        return [Check("the SQL login's permissions on every replica", self.group.permissions,
                      f"GRANT ALTER ON AVAILABILITY GROUP::{bracketed(self.group.ag_name)} TO {bracketed(login)}; "
                      f"GRANT VIEW SERVER STATE TO {bracketed(login)} (on every replica)")]

    def preflight(self) -> None:
        run_checks(self.checks())
        if not self.forced:
            problems = self.group.health_problems()
            if problems:
                raise HarnessError(f"availability group {self.group.ag_name} is not healthy: " + "; ".join(problems))
        primary = self.group.primary()
        target = self.group.failover_target(primary, self.to_node)
        if target == primary:
            raise ConfigError(f"{self.spec.kind}: {target} is already the primary of {self.group.ag_name}")
        if not self.forced:
            problems = self.group.readiness_problems(target)
            if problems:
                raise HarnessError(f"not failing {self.group.ag_name} over to {target}: " + "; ".join(problems))

    def inject(self) -> None:
        self.state.reverted = False
        self.state.before = self.group.primary()
        fail_over(self.group, self.group.failover_target(self.state.before, self.to_node), forced=self.forced)

    def check(self) -> FaultState:
        try:
            if self.state.reverted:
                problems = self.group.health_problems()
                return FaultState.CLEARED if not problems else self.state.unknown.because(self.spec, "; ".join(problems))
            primary = self.group.primary()
        except (HarnessError, SqlServerError) as exc:
            return self.state.unknown.because(self.spec, str(exc))
        if self.state.before is not None and primary != self.state.before:
            return FaultState.IN_EFFECT
        return self.state.unknown.because(self.spec, f"{primary} is still the primary")

    def revert(self) -> None:
        if self.forced and self.state.before is not None:
            resumed = resume_data_movement(self.group, self.group.primary())
            if resumed:
                log.info("resumed data movement: %s", ", ".join(resumed))
        self.state.reverted = True
