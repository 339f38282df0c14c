"""A model Windows failover cluster that answers the PowerShell the wsfc backend sends.

It plays `powershell.exe` behind the WS-Management stand-in: each script must start with the
backend's preamble, then the cmdlet and its parameters are parsed (a regex per cmdlet) and
answered from the model's objects. Anything else is an error, so changing what the backend
sends (a missing `-Wait`, another role name, a cmdlet that is not expected) fails a test.
Objects carry the properties Microsoft documents, enums as their names:
- Get-ClusterGroup (Name, OwnerNode, State: Online, Offline, Failed, PartialOnline, Pending):
  https://learn.microsoft.com/en-us/powershell/module/failoverclusters/get-clustergroup
- Get-ClusterNode (Name, State: Up, Down, Paused, Joining):
  https://learn.microsoft.com/en-us/powershell/module/failoverclusters/get-clusternode
- Get-ClusterResource (Name, OwnerGroup, ResourceType, State, OwnerNode):
  https://learn.microsoft.com/en-us/powershell/module/failoverclusters/get-clusterresource
- Get-ClusterQuorum (QuorumType, QuorumResource):
  https://learn.microsoft.com/en-us/powershell/module/failoverclusters/get-clusterquorum
- Get-ClusterOwnerNode (OwnerNodes): for a group, "the order of preference among owner nodes" (its
  preferred owners); for a resource, its possible owners (MicrosoftDocs/windows-powershell-docs,
  failoverclusters/Get-ClusterOwnerNode.md). Every node is a possible owner of a resource unless
  someone removed it; a group has no preferred owners unless someone set them.
- Move-ClusterGroup -Name -Node -Wait: "If the Wait parameter is not specified, then the cmdlet
  waits for completion. If -Wait 0 is specified, then the call is initiated and the cmdlet
  returns without waiting." (MicrosoftDocs/windows-powershell-docs, failoverclusters/Move-ClusterGroup.md)
- Get-Cluster's SameSubnetDelay/Threshold, CrossSubnetDelay/Threshold (Windows Server 2016+
  defaults 1000 ms x 10 and 1000 ms x 20): "Tuning failover cluster network thresholds",
  https://learn.microsoft.com/en-us/windows-server/troubleshoot/iaas-sql-failover-cluster
- the AG resource's LeaseTimeout 20000, HealthCheckTimeout 30000, FailureConditionLevel 3
  (Get-ClusterParameter): "Lease, cluster, and health check timeouts for Always On availability
  groups", https://learn.microsoft.com/en-us/sql/database-engine/availability-groups/windows/availability-group-lease-healthcheck-timeout
- FailoverClustering events 1135, 1177, 1069 and 1205 and their insertion strings: "Failover Clustering
  events from the Windows Server System log (viewable in Event Viewer). These events all share the
  event source of **FailoverClustering**" (MicrosoftDocs/SupportArticles-docs,
  support/windows-server/high-availability/failover-clustering-system-log-events.md): served from
  `System`, by the provider Microsoft-Windows-FailoverClustering (the name its message table is
  listed under). 1641 (role moving) and 1201 (role online) are informational: "Any informational
  cluster events are registered in this log, such as groups moving, going online, or going offline"
  (the Microsoft-Windows-FailoverClustering/Operational channel). Their message templates come from
  a dump of the provider's message table: 1201 "... brought the clustered role '%1' online.", and
  1641 in two forms, "... is moving to cluster node '%2'." and "... is moving from cluster node '%2'
  to cluster node '%3'." (`role_moving_template` picks which the model writes).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from faults.transports.winrm import PREAMBLE
from tests.support.provenance import Fact, Facts
from tests.support.wsman import clixml_error

_PROPS = re.compile(r'(\w+)=(?:\$_\.(\w+)|"\$\(\$_\.(\w+)\)")')
_PARAM = re.compile(r"(?<!\S)-(\w+)\s+('(?:[^']|'')*'|[^\s|]+)")
_PLACEHOLDER = re.compile(r"%(\d+)")
# the names of the model's own nodes, not vendor values
OWN_TOKENS = frozenset({"FCI01", "FCI02"})
_MEANING = (("clustered role '", "role"), ("from cluster node '", "from"), ("to cluster node '", "to"))
"""What a template's insertion string stands for, read from the words just before its %N."""


def _unquote(value: str) -> str:
    return value[1:-1].replace("''", "'") if value.startswith("'") else value


def params_of(command: str) -> dict[str, str]:
    return {name: _unquote(value) for name, value in _PARAM.findall(command)}


def template_strings(template: str) -> tuple[str, ...]:
    """What each insertion string of a message template stands for (role, from, to), in %N order."""
    found = {int(m.group(1)): next(name for tail, name in _MEANING if template[:m.start()].casefold().endswith(tail))
             for m in _PLACEHOLDER.finditer(template)}
    return tuple(found[n] for n in sorted(found))


def rendered(template: str, values: dict[str, str]) -> tuple[str, list[str]]:
    """The event's message and its insertion strings, as Windows fills the template's %N with the Nth string."""
    strings = [values[name] for name in template_strings(template)]
    return _PLACEHOLDER.sub(lambda m: strings[int(m.group(1)) - 1], template), strings


SYSTEM_LOG_ARTICLE = ("MicrosoftDocs/SupportArticles-docs support/windows-server/high-availability/"
                      "failover-clustering-system-log-events.md")
SYSTEM_LOG_QUOTE = ("Failover Clustering events from the Windows Server System log (viewable in Event Viewer). These "
                    "events all share the event source of **FailoverClustering**")
QUORUM_TYPES = ("PowerShell/xFailOverCluster (Microsoft's DSC resource) DSCResources/MSFT_xClusterQuorum/"
                "MSFT_xClusterQuorum.schema.mof")
QUORUM_TYPES_QUOTE = ('Quorum type to use. Can be set to either NodeMajority, NodeAndDiskMajority, '
                      'NodeAndFileShareMajority or DiskOnly.')
PROVIDER_DUMP = "scheatkode/brain@30e36577 knowledgebase/systems/windows/event-logs/Microsoft-Windows-FailoverClustering.md"
MESSAGE_TABLE = (f"{PROVIDER_DUMP} (a dump of the provider's message table; its HTML writes ' as &#39;): a template's "
                 "%N is the event's Nth insertion string")
FACTS = Facts("wsfc_model", [
    *(Fact(f"event.{event}.log", "System", "documented", SYSTEM_LOG_ARTICLE, SYSTEM_LOG_QUOTE)
      for event in (1135, 1177, 1069, 1205)),
    Fact("event.1641.log", "Operational", "documented", "https://sqldba.blog/?p=803",
         "Cluster role movements are recorded in the FailoverClustering Operational log. Event ID 1641 indicates a "
         "clustered role has moved."),
    Fact("event.1201.log", "Operational", "documented",
         "windowsitpro.com, Troubleshooting Windows Server 2012 failover clusters",
         "Operational. Any informational cluster events are registered in this log, such as groups moving, going "
         "online, or going offline."),
    Fact("error.command_not_found", "is not recognized as the name of a cmdlet", "captured",
         "MicrosoftDocs (PowerShell: a command run without its module, the output it shows)",
         "hidden : The term 'hidden' is not recognized as the name of a cmdlet, function, script, script file, or "
         "operable program."),
    *(Fact(f"quorum.type.{name}", name, "documented", QUORUM_TYPES, QUORUM_TYPES_QUOTE)
      for name in ("NodeMajority", "NodeAndFileShareMajority")),
    Fact("event.1201.message", "The Cluster service successfully brought the clustered role '%1' online.",
         "documented", MESSAGE_TABLE, "The Cluster service successfully brought the clustered role '%1' online."),
    Fact("event.1641.message.to", "Clustered role '%1' is moving to cluster node '%2'.", "documented", MESSAGE_TABLE,
         "Clustered role '%1' is moving to cluster node '%2'."),
    Fact("event.1641.message.from_to", "Clustered role '%1' is moving from cluster node '%2' to cluster node '%3'.",
         "documented", MESSAGE_TABLE, "Clustered role '%1' is moving from cluster node '%2' to cluster node '%3'."),
    Fact("channel.Operational", "Microsoft-Windows-FailoverClustering/Operational", "documented",
         "Microsoft Clustering blog, List of Failover Cluster Events in Windows 2016/2019",
         "Between the System Event and the Microsoft-Windows-FailoverClustering/Operational channel"),
    Fact("event.provider", "FailoverClustering", "documented", SYSTEM_LOG_ARTICLE, SYSTEM_LOG_QUOTE),
    Fact("event.provider.prefix", "Microsoft-Windows-", "documented",
         f"{PROVIDER_DUMP} (the provider's name, in each row of its message table; the article above "
         "names the event source as Event Viewer shows it)",
         "<tr><td>Microsoft-Windows-FailoverClustering</td><td>1641</td>"),
    Fact("move.without_wait", "waits for completion", "documented",
         "MicrosoftDocs/windows-powershell-docs failoverclusters/Move-ClusterGroup.md",
         "If the Wait parameter is not specified, then the cmdlet waits for completion."),
    Fact("move.returns_at_once_with", "-Wait 0", "documented",
         "https://learn.microsoft.com/powershell/module/failoverclusters/move-clustergroup (Example 4)",
         "Move-ClusterGroup -Name MyFileServer -Node node2 -Wait 0 ... Information about MyFileServer is displayed "
         "immediately, while it is in the process of being moved."),
    Fact("owner_node.group", "preference", "documented",
         "MicrosoftDocs/windows-powershell-docs docset/winserver2019-ps/failoverclusters/Get-ClusterOwnerNode.md",
         "the order of preference among owner nodes"),
])
SYSTEM = str(FACTS.value("event.1135.log"))
OPERATIONAL = str(FACTS.value("channel.Operational"))
EVENT_LOG_OF = {event: SYSTEM if FACTS.value(f"event.{event}.log") == "System" else OPERATIONAL
                for event in (1135, 1177, 1069, 1205, 1641, 1201)}
"""Which log each event is written to, from the facts above."""
PROVIDER = str(FACTS.value("event.provider.prefix")) + str(FACTS.value("event.provider"))


@dataclass
class ModelEvent:
    wall: float
    event_id: int
    machine: str
    message: str
    properties: list[str]

    @property
    def log(self) -> str:
        return EVENT_LOG_OF[self.event_id]


@dataclass
class WsfcModel:
    """Two nodes, one role (an FCI's or an AG's), a file share witness; change it as a test needs."""

    role: str = "SQL Server (MSSQLSERVER)"
    role_type: str = "SQL Server"  # "SQL Server Availability Group" for an AG's role
    nodes: dict[str, str] = field(default_factory=lambda: {"FCI01": "Up", "FCI02": "Up"})
    owner: str = "FCI01"
    state: str = "Online"
    preferred_owners: list[str] = field(default_factory=list)  # the group's order of preference (none by default)
    resource_owners: dict[str, list[str]] = field(default_factory=dict)  # resource -> possible owners (absent: all)
    settle_state: str = "Online"  # what a role becomes after a move (Pending: stuck)
    clock_offset_s: float = 0.0
    events: list[ModelEvent] = field(default_factory=list)
    quorum_type: str = field(default_factory=lambda: str(FACTS.value("quorum.type.NodeAndFileShareMajority")))
    module_installed: bool = True  # the FailoverClusters PowerShell module on the nodes
    witness_state: str = "Online"  # the file share witness's resource state (NodeMajority: there is none)
    cluster: dict[str, int] = field(default_factory=lambda: {"SameSubnetDelay": 1000, "SameSubnetThreshold": 10,
                                                             "CrossSubnetDelay": 1000, "CrossSubnetThreshold": 20})
    parameters: dict[str, int] = field(default_factory=lambda: {"LeaseTimeout": 20000, "HealthCheckTimeout": 30000,
                                                                "FailureConditionLevel": 3})
    moves: list[dict[str, str]] = field(default_factory=list)
    role_online_layout: tuple[str, ...] = field(  # event 1201's insertion strings: role, node, role-upper
        default_factory=lambda: template_strings(str(FACTS.value("event.1201.message"))))
    role_moving_template: str = "from_to"  # which of event 1641's two templates the cluster writes: to, from_to

    def role_online(self, wall: float, node: str, role: str) -> ModelEvent:
        values = {"role": role, "node": node, "role-upper": role.upper()}
        message, _ = rendered(str(FACTS.value("event.1201.message")), values)
        return ModelEvent(wall, 1201, node, message, [values[name] for name in self.role_online_layout])

    # -- objects ------------------------------------------------------------------------
    def groups(self) -> list[dict[str, Any]]:
        return [{"Name": "Cluster Group", "OwnerNode": self.owner, "State": "Online"},
                {"Name": self.role, "OwnerNode": self.owner, "State": self.state}]

    def _witnessed(self) -> bool:
        return self.quorum_type != FACTS.value("quorum.type.NodeMajority")

    def quorum(self) -> list[dict[str, Any]]:
        return [{"QuorumType": self.quorum_type, "QuorumResource": "File Share Witness" if self._witnessed() else ""}]

    def resources(self) -> list[dict[str, Any]]:
        witness = [{"Name": "File Share Witness", "OwnerGroup": "Cluster Group", "ResourceType": "File Share Witness",
                    "State": self.witness_state, "OwnerNode": self.owner}] if self._witnessed() else []
        return [*witness,
                {"Name": f"{self.role} resource", "OwnerGroup": self.role, "ResourceType": self.role_type,
                 "State": self.state, "OwnerNode": self.owner},
                {"Name": "Cluster Disk 1", "OwnerGroup": self.role, "ResourceType": "Physical Disk",
                 "State": self.state, "OwnerNode": self.owner}]

    def now(self) -> float:
        return time.time() + self.clock_offset_s

    # -- powershell.exe -------------------------------------------------------------------
    def __call__(self, script: str) -> tuple[str, str, int]:
        if not script.startswith(PREAMBLE):
            return "", clixml_error("the model expects every script to set its preferences first"), 1
        body = script[len(PREAMBLE):]
        try:
            return self._run(body), "", 0
        except LookupError as exc:
            return "", clixml_error(str(exc.args[0])), 1

    def _run(self, body: str) -> str:
        if not self.module_installed and (cmdlet := re.search(r"\b\w+-Cluster\w*", body)):
            raise LookupError(f"{cmdlet.group(0)} : The term '{cmdlet.group(0)}' "
                              f"{FACTS.value('error.command_not_found')}, function, script file, or operable program.")
        table = re.fullmatch(r"(Get-ClusterGroup|Get-ClusterNode|Get-ClusterResource|Get-ClusterQuorum) \| "
                             r"ForEach-Object \{ \[pscustomobject\]@\{(.*)\} \} \| ConvertTo-Json -Compress -Depth 4",
                             body)
        if table:
            rows = {"Get-ClusterGroup": self.groups, "Get-ClusterResource": self.resources,
                    "Get-ClusterNode": lambda: [{"Name": n, "State": s} for n, s in self.nodes.items()],
                    "Get-ClusterQuorum": self.quorum}[table.group(1)]()
            return self._json(rows, table.group(2))
        if body.startswith("Get-ClusterOwnerNode "):
            group = params_of(body.split("|")[0])["Group"]
            self._group(group)
            return json.dumps([{"Name": n} for n in self.preferred_owners])
        owners = re.fullmatch(r"Get-ClusterResource \| Where-Object \{ \$_\.OwnerGroup\.Name -eq ('(?:[^']|'')*') -and "
                              r"\((.*)\) \} \| ForEach-Object \{ \$r = \$_\.Name; Get-ClusterOwnerNode -Resource \$r \| "
                              r"ForEach-Object \{ \[pscustomobject\]@\{Resource=\$r; OwnerNodes=@\(\$_\.OwnerNodes \| "
                              r"ForEach-Object \{ \"\$\(\$_\.Name\)\" \}\)\} \} \} \| ConvertTo-Json -Compress -Depth 4", body)
        if owners:
            types = set(re.findall(r"\$_\.ResourceType\.Name -eq '([^']+)'", owners.group(2)))
            rows = [{"Resource": r["Name"], "OwnerNodes": self.resource_owners.get(r["Name"], list(self.nodes))}
                    for r in self.resources() if r["OwnerGroup"] == _unquote(owners.group(1)) and r["ResourceType"] in types]
            return json.dumps(rows[0] if len(rows) == 1 else rows)
        if body.startswith("Move-ClusterGroup "):
            return self._move(params_of(body.split("|")[0]), body)
        if body.startswith("$c = Get-Cluster; $p = @{}; Get-ClusterResource | Where-Object"):
            group = re.search(r"\$_\.OwnerGroup\.Name -eq '((?:[^']|'')*)'", body)
            owned = group is not None and _unquote(f"'{group.group(1)}'") == self.role
            values: dict[str, Any] = {**self.cluster, **{k: (v if owned else None) for k, v in self.parameters.items()}}
            return json.dumps(values)
        if body.startswith("try { Get-WinEvent -FilterHashtable "):
            return self._events(body)
        if body == "[DateTimeOffset]::UtcNow.ToUnixTimeMilliseconds()":
            return str(int(self.now() * 1000))
        raise LookupError(f"The term '{body.split()[0]}' is not recognized as the name of a cmdlet (the model "
                          "answers only the scripts the wsfc backend is documented to send)")

    def _json(self, rows: list[dict[str, Any]], props: str) -> str:
        wanted = [(key, plain or text) for key, plain, text in _PROPS.findall(props)]
        shaped = [{key: row.get(source) for key, source in wanted} for row in rows]
        return json.dumps(shaped[0] if len(shaped) == 1 else shaped)

    def _group(self, name: str) -> None:
        if name not in (g["Name"] for g in self.groups()):
            raise LookupError(f"Failed to get the cluster object (group) with the name '{name}'.")

    def _move(self, params: dict[str, str], body: str) -> str:
        name, node = params.get("Name"), params.get("Node")
        if name is None or node is None:
            raise LookupError("Move-ClusterGroup : the model expects -Name and -Node")
        self._group(name)
        node = next((n for n in self.nodes if n.casefold() == node.casefold()), node)
        if node not in self.nodes or self.nodes[node] != "Up":
            raise LookupError(f"Move-ClusterGroup : An error occurred while moving the clustered role '{name}'. "
                              f"The cluster node '{node}' is not available (state {self.nodes.get(node, 'unknown')}).")
        self.moves.append(params)
        before, self.owner = self.owner, node
        waits = FACTS.as_documented("move.without_wait")
        returns_at_once = f"-Wait {params['Wait']}" == FACTS.value("move.returns_at_once_with") if "Wait" in params \
            else not waits
        self.state = "Pending" if returns_at_once else self.settle_state
        wall = self.now()
        message, strings = rendered(str(FACTS.value(f"event.1641.message.{self.role_moving_template}")),
                                    {"role": name, "from": before, "to": node})
        self.events.append(ModelEvent(wall, 1641, before, message, strings))
        if self.state == "Online":
            self.events.append(self.role_online(wall + 0.5, node, name))
        props = re.search(r"@\{(.*)\} \} \| ConvertTo-Json", body)
        group = {"Name": name, "OwnerNode": self.owner, "State": self.state}
        return self._json([group], props.group(1) if props else "")

    def _events(self, body: str) -> str:
        """Get-WinEvent -FilterHashtable: LogName and ProviderName take one name or a list of them."""
        ids = re.search(r"Id=([\d,]+);", body)
        start = re.search(r"StartTime=\(\[DateTime\]::Parse\('([^']+)'\)\.ToUniversalTime\(\)\)", body)
        logs = re.search(r"LogName=((?:'[^']+',?)+);", body)
        provider = re.search(r"ProviderName=((?:'[^']+',?)+);", body)
        if not (ids and start and logs):
            raise LookupError("Get-WinEvent : the model expects LogName, Id and StartTime")
        wanted_logs = set(re.findall(r"'([^']+)'", logs.group(1)))
        providers = set(re.findall(r"'([^']+)'", provider.group(1))) if provider else {PROVIDER}
        unknown = wanted_logs - {SYSTEM, OPERATIONAL}
        if unknown:
            raise LookupError(f"Get-WinEvent : There is not an event log on the localhost computer that matches "
                              f"\"{sorted(unknown)[0]}\".")
        since = datetime.fromisoformat(start.group(1).replace("Z", "+00:00")).timestamp()
        wanted = {int(i) for i in ids.group(1).split(",")}
        rows = [{"Id": e.event_id, "TimeUtc": datetime.fromtimestamp(e.wall, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f0Z"),
                 "Machine": f"{e.machine}.example.net", "Message": e.message, "Properties": e.properties}
                for e in self.events if e.event_id in wanted and e.wall >= since and e.log in wanted_logs
                and PROVIDER in providers]
        if not rows:
            return ""  # the catch of NoMatchingEventsFound: nothing on stdout
        return json.dumps(rows[0] if len(rows) == 1 else rows)

    def fail_node(self, node: str, at: float | None = None) -> None:
        """The node goes down: the survivors log 1135 and the role comes online on another node."""
        wall = self.now() if at is None else at
        self.nodes[node] = "Down"
        survivor = next(n for n, s in self.nodes.items() if s == "Up")
        self.events.append(ModelEvent(wall, 1135, survivor, f"Cluster node '{node}' was removed from the active "
                                                            "failover cluster membership.", [node]))
        if self.owner == node:
            self.owner = survivor
            self.events.append(self.role_online(wall + 8.0, survivor, self.role))
