"""`discover --winrm HOST` and `--sql HOST`: the failover cluster and SQL Server part of a draft topology.

The platform's `drafter` (`faults.drafts`): `harness discover` hands it the command's arguments and
the VMs vCenter saw, and prints what it drafts.

With `--winrm`, one cluster node is asked (read-only PowerShell, `harness_platforms.sqlserver.wsfc.probes`)
for the cluster's nodes, roles, resources and quorum; with `--sql`, one instance is asked (read-only
T-SQL, `harness_platforms.sqlserver.probes.instance_seen`) for its availability groups, their
replicas, modes and listener, or the failover cluster instance it is. The draft gets the database
entry (an AG through its listener, or an FCI by its network name), its nodes (the replicas or the
FCI's nodes, each matched to a vSphere VM of the same name where there is one), the winrm endpoint
with its credential as a reference, and comments with the rest. What neither says is marked
`guessed`: a node's address (its name), the database the harness may use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from faults.contract import (
    ADMIN_DATABASE,
    ConfigError,
    Connector,
    Database,
    DraftPart,
    Endpoint,
    SeenVm,
    TSqlSession,
    WinRmEndpoint,
    WinRmSession,
)
from harness_platforms.sqlserver.probes import InstanceSeen, instance_seen
from harness_platforms.sqlserver.wsfc.probes import ClusterGroup, ClusterNode, ClusterReader, ClusterResource, Quorum

WINRM_NAME = "wsfc-node"  # the draft's name for the endpoint discover used
GUESSED_DATABASE = "harness_bench"


@dataclass(frozen=True)
class WinRmTarget:
    address: str
    user: str
    password_env: str
    port: int = 5986
    scheme: str = "https"
    transport: str = "ntlm"
    ca_file: str | None = None

    def endpoint(self) -> WinRmEndpoint:
        return WinRmEndpoint.model_validate({
            "name": WINRM_NAME, "address": self.address, "port": self.port, "scheme": self.scheme,
            "transport": self.transport, "credential": {"username": self.user, "password": {"env": self.password_env}},
            "tls": {"verify": True, **({"ca_file": self.ca_file} if self.ca_file else {})}})


@dataclass(frozen=True)
class SqlTarget:
    address: str
    user: str
    password_env: str
    port: int = 1433
    trust_server_certificate: bool = False

    def login(self) -> Database:
        """The settings a session needs (credential reference, TLS, timeouts), as a database entry would give them."""
        return Database.model_validate({
            "name": "discovered", "kind": "sqlserver-ag", "endpoint": self.address, "port": self.port,
            "database": ADMIN_DATABASE, "trust_server_certificate": self.trust_server_certificate,
            "credential": {"username": self.user, "password": {"env": self.password_env}}})


@dataclass
class WindowsSeen:
    nodes: list[ClusterNode] = field(default_factory=list)
    groups: list[ClusterGroup] = field(default_factory=list)
    resources: list[ClusterResource] = field(default_factory=list)
    quorum: Quorum | None = None
    instance: InstanceSeen | None = None


def read(winrm: WinRmTarget | None, sql: SqlTarget | None, *, connector: Connector | None = None) -> WindowsSeen:
    """What the cluster node and the instance say (the caller watches the wire read-only)."""
    seen = WindowsSeen()
    if winrm is not None:
        cluster = ClusterReader([WinRmSession(winrm.endpoint(), "--winrm")])
        seen.nodes, seen.groups = cluster.nodes(), cluster.groups()
        seen.resources, seen.quorum = cluster.resources(), cluster.quorum()
    if sql is not None:
        session = TSqlSession(f"sql {sql.address}:{sql.port}", Endpoint(sql.address, sql.port), ADMIN_DATABASE,
                              sql.login(), "--sql", connector)
        try:
            seen.instance = instance_seen(session)
        finally:
            session.close()
    return seen


def databases(seen: WindowsSeen, sql: SqlTarget | None, winrm: WinRmTarget | None,
              vms: Sequence[SeenVm]) -> tuple[list[dict[str, Any]], list[str]]:
    """The database entries of the draft, and the comments that say the rest."""
    comments = _cluster_comments(seen)
    instance = seen.instance
    if instance is None or sql is None:
        return [], comments
    credential = {"username": sql.user, "password": {"env": sql.password_env}}
    entries: list[dict[str, Any]] = []
    if instance.groups:
        group = instance.groups[0]
        endpoint, port = group.listener if group.listener else (sql.address, sql.port)
        entries.append({
            "name": _name(group.name), "kind": "sqlserver-ag", "endpoint": endpoint, "port": port or sql.port,
            "database": GUESSED_DATABASE, "ag_name": group.name, "credential": credential,
            **({"winrm": WINRM_NAME} if winrm else {}),
            "nodes": [_node(r.name, vms, winrm, seen) for r in group.replicas]})
        comments += [f"# availability group {g.name}: listener "
                     f"{f'{g.listener[0]}:{g.listener[1]}' if g.listener else '(none: the draft uses the instance)'}"
                     for g in instance.groups]
        comments += [f"#   replica {r.name}: {r.role}, {r.availability_mode}, {r.failover_mode} failover"
                     for g in instance.groups for r in g.replicas]
        comments += [f"# another availability group, not drafted: {g.name}" for g in instance.groups[1:]]
    elif instance.fci_name:
        role = _fci_role(seen)
        entries.append({
            "name": _name(instance.fci_name), "kind": "sqlserver-fci", "endpoint": instance.fci_name.lower(),
            "port": sql.port, "database": GUESSED_DATABASE, **({"role_name": role} if role else {}),
            "credential": credential, **({"winrm": WINRM_NAME} if winrm else {}),
            "nodes": [_node(name, vms, winrm, seen) for name, _, _ in instance.fci_nodes]})
        comments += [f"# failover cluster instance {instance.fci_name}: nodes "
                     + ", ".join(f"{n} {status}{' (owner)' if owner else ''}" for n, status, owner in instance.fci_nodes)]
        if not role:
            comments.append("# role_name: the WSFC role holding the SQL Server resource; discover --winrm reads it")
    else:
        comments.append(f"# {sql.address}: a standalone instance (no availability group, no failover cluster instance)")
    return entries, comments


@dataclass
class WindowsDraft:
    """The SQL Server platform's drafter: what `--winrm` and `--sql` name, read once, drafted against the VMs."""

    winrm: WinRmTarget | None
    sql: SqlTarget | None
    connector: Connector | None = None  # stands in for pyodbc.connect (the contract tests' SQL Server model)
    seen: WindowsSeen = field(default_factory=WindowsSeen)

    def read(self) -> None:
        self.seen = read(self.winrm, self.sql, connector=self.connector)

    def drafted(self, vms: Sequence[SeenVm]) -> DraftPart:
        entries, comments = databases(self.seen, self.sql, self.winrm, vms)
        return DraftPart(entries, {"winrm": winrm_section(self.winrm)} if self.winrm else {}, comments)


def drafter(arguments: Mapping[str, Any]) -> WindowsDraft | None:
    """The drafter for `--winrm`/`--sql` as the command parsed them; None when neither was given."""
    winrm = sql = None
    if arguments.get("winrm"):
        if not (arguments.get("winrm_user") and arguments.get("winrm_password_env")):
            raise ConfigError("--winrm needs --winrm-user and --winrm-password-env")
        winrm = WinRmTarget(arguments["winrm"], arguments["winrm_user"], arguments["winrm_password_env"],
                            arguments.get("winrm_port") or 5986, transport=arguments.get("winrm_transport") or "ntlm",
                            ca_file=arguments.get("winrm_ca"))
    if arguments.get("sql"):
        if not (arguments.get("sql_user") and arguments.get("sql_password_env")):
            raise ConfigError("--sql needs --sql-user and --sql-password-env")
        sql = SqlTarget(arguments["sql"], arguments["sql_user"], arguments["sql_password_env"],
                        arguments.get("sql_port") or 1433)
    return WindowsDraft(winrm, sql) if winrm or sql else None


def winrm_section(winrm: WinRmTarget | None) -> list[dict[str, Any]]:
    if winrm is None:
        return []
    section: dict[str, Any] = {"name": WINRM_NAME, "address": winrm.address, "port": winrm.port, "scheme": winrm.scheme,
                               "transport": winrm.transport,
                               "credential": {"username": winrm.user, "password": {"env": winrm.password_env}}}
    if winrm.ca_file:
        section["tls"] = {"verify": True, "ca_file": winrm.ca_file}
    return [section]


def _node(name: str, vms: Sequence[SeenVm], winrm: WinRmTarget | None, seen: WindowsSeen) -> dict[str, Any]:
    """A replica or FCI node: its name as the cluster writes it, the VM of that name and where it runs now."""
    node: dict[str, Any] = {"name": _name(name), "address": name.lower()}
    if _name(name) != name:
        node["replica"] = name
    vm = next((v for v in vms if v.name.casefold() == name.casefold()), None)
    if vm is not None:
        node["vm"] = vm.name
        if vm.host:
            node["host"] = vm.host
    if winrm is not None and name.casefold() == winrm.address.split(".")[0].casefold():
        node["winrm"] = WINRM_NAME
    return node


def _fci_role(seen: WindowsSeen) -> str | None:
    """The role (cluster group) that holds a "SQL Server" resource: what an FCI's role move moves."""
    return next((r.group for r in seen.resources if r.resource_type == "SQL Server"), None)


def _cluster_comments(seen: WindowsSeen) -> list[str]:
    if not seen.nodes:
        return []
    lines = ["# failover cluster nodes: " + ", ".join(f"{n.name} {n.state}" for n in seen.nodes),
             *(f"# role {g.name}: {g.state} on {g.owner_node}" for g in seen.groups)]
    if seen.quorum is not None:
        lines.append(f"# quorum {seen.quorum.quorum_type}"
                     f"{f', witness {seen.quorum.resource}' if seen.quorum.resource else ', no witness'}")
    return lines


def _name(text: str) -> str:
    """A topology name for what the cluster calls `text` (lower case; anything else a name may not hold, '-')."""
    return re.sub(r"[^a-z0-9._-]", "-", text.lower())[:63] or "sql"
