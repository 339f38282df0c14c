"""The one module a platform imports: what the harness asks of a platform, and what it hands one.

A platform (in the tree or a plug-in distribution) imports from here and from its own package,
nothing else of the harness: the layers let it (this module sits below everything that loads
platforms, and those load them by `"module:Class"` strings from the catalogue). `mypy --strict`
checks a platform against the protocols here: its descriptor names its classes under
`TYPE_CHECKING` (`_: tuple[BackendClass, ...] = (VmPowerOff, ...)`), so mypy sees each one
against `BackendClass` while the descriptor imports no SDK at run time.

- the descriptor: `Platform`, `Backend`, `Condition` (`on_section`: a condition that reads the
  platform's validated section), `FaultKind` and the params models;
- a fault: `Fault` (plan / inject / check / revert), `FaultSpec`, `FaultPlan`, `FaultState`, the
  optional protocols (`Preflight`, `Checked`, `DeadMansSwitch`, `Operation`, `Evidential`) and
  `BackendClass`, the class contract (`from_spec`);
- the views: `ClusterPart`, `ObserverClass`/`Observer`, `Probe`, the metro vocabulary, and what a
  cluster part reads (`faults.readings`: `ResyncSample`, `FailoverForecast`, `ReplicationState`, ...);
- the topology: `Topology`, `Target`, `TargetKind`, `section`, credentials, and a platform's part of a
  draft topology (`TopologyDrafter`, `Drafter`, `DraftPart`, `SeenVm`: `harness discover`),
  `parse_topology` (a draft loads as it is);
- the history a cluster part writes its server's records into: `ServerEvent`, `EventKind`, `measure_offset`;
- errors, and the clients the harness offers a platform: the HTTP helpers a REST control plane
  uses, T-SQL over ODBC (`TSqlSession`, `Connector`), PowerShell over WinRM (`WinRmSession`,
  `powershell`), vCenter's SOAP API (`VCenterSession`, `sdk`), a BMC's Redfish (`RedfishClient`), a shell
  over SSH (`ssh_shell`, paramiko imported on first use), the role-move helpers a database
  platform's failover shares (`RoleMoveState`), and a host's identity as its manager reads it
  (`host_identities`: a BMC's backend compares it with the BMC's).

A cluster view that returns the workload's connection (a database's part, or a platform's cluster
that wraps one) also names the workload's dialect (`workloads.oltp`: `TSqlDialect`,
`ConnectionSettings`): the workload's own public package, the one other import a platform may have.

Plug-in authors test against the harness's contract kit (`harness.contract_kit`, a pytest
fixture set), which runs the harness itself and so lives above this module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, TypeVar

from pydantic import BaseModel

from faults.assumptions import Assumption, Probed, ProbeResult
from faults.assumptions import Probe as AssumptionProbe
from faults.backends.role_move import RoleMoveState, database_of, other_site_first
from faults.base import (
    Check,
    Checked,
    DeadMansSwitch,
    Evidential,
    Fault,
    FaultPlan,
    FaultSpec,
    FaultState,
    NamedDeadMansSwitch,
    Operation,
    OperationProgress,
    Preflight,
    Uncertain,
    UnknownState,
    run_checks,
)
from faults.drafts import Drafter, DrafterFactory, DraftOptions, DraftPart, SeenVm, TopologyDrafter
from faults.kinds import (
    BackupParams,
    DiskFailureParams,
    FaultKind,
    IopsLimitParams,
    MaintenanceParams,
    MigrationParams,
    NoParams,
    Params,
    RestoreParams,
    RoleMoveParams,
)
from faults.metro import Arbiter, MetroGroup, PeerLink, Rebuild, ReplicaSync, Serving, SiteView
from faults.platform import ALWAYS, Backend, Condition, HostIdentity, Platform, PlatformChecks, database_kind
from faults.readings import (
    ClusterView,
    CopiesSample,
    CountsCopies,
    DataDevice,
    FailoverForecast,
    Forecasting,
    ModelledLimit,
    ModelsDiskLimits,
    Provisioned,
    ReadsReplication,
    ReplicationMode,
    ReplicationState,
    ResyncSample,
    StoragePlacement,
)
from faults.sections import path_of, section
from faults.transports import powershell, wire
from faults.transports.odbc import ADMIN_DATABASE, Connector, SqlServerError, TSqlSession
from faults.transports.redfish import RedfishClient
from faults.transports.redfish import endpoint_named as bmc_named
from faults.transports.rest import NotFoundError, Transient, refused, retrying, tls_context, unreachable
from faults.transports.shell import Shell
from faults.transports.vcenter import (
    VCenterSession,
    VcEvent,
    pinned_context,
    presented_certificate,
    sdk,
    session_for,
)
from faults.transports.winrm import EndpointUnreachable, WinRmSession, winrm_endpoint
from harness_kernel.errors import (
    ConfigError,
    ControlPlaneError,
    CredentialRejectedError,
    HarnessError,
    RevertFailedError,
)
from harness_kernel.history import EventKind
from harness_kernel.history.server import ServerEvent, measure_offset
from harness_kernel.odbc import sqlserver_driver
from harness_kernel.odbc.settings import Endpoint
from harness_kernel.topology.credentials import CredentialRef, resolve_secret
from harness_kernel.topology.loader import parse_topology
from harness_kernel.topology.management import VCenter, WinRmEndpoint
from harness_kernel.topology.models import Database, DatabaseNode, DiskGroup, Host, Topology
from harness_kernel.topology.targets import Target, TargetKind
from harness_kernel.topology.values import ca_file, host_address, matching, shown

__all__ = [
    "ADMIN_DATABASE",
    "ALWAYS",
    "Arbiter",
    "Assumption",
    "AssumptionProbe",
    "Backend",
    "BackendClass",
    "BackupParams",
    "Check",
    "Checked",
    "ClusterPart",
    "ClusterPartClass",
    "ClusterView",
    "Condition",
    "ConfigError",
    "Connector",
    "ControlPlaneError",
    "CopiesSample",
    "CountsCopies",
    "CredentialRef",
    "CredentialRejectedError",
    "DataDevice",
    "Database",
    "DatabaseNode",
    "DeadMansSwitch",
    "DiskFailureParams",
    "DiskGroup",
    "DraftOptions",
    "DraftPart",
    "Drafter",
    "DrafterFactory",
    "Endpoint",
    "EndpointUnreachable",
    "EventKind",
    "Evidential",
    "FailoverForecast",
    "Fault",
    "FaultKind",
    "FaultPlan",
    "FaultSpec",
    "FaultState",
    "Forecasting",
    "HarnessError",
    "Host",
    "HostIdentity",
    "IopsLimitParams",
    "MaintenanceParams",
    "MetroGroup",
    "MigrationParams",
    "ModelledLimit",
    "ModelsDiskLimits",
    "NamedDeadMansSwitch",
    "NoParams",
    "NotFoundError",
    "Observer",
    "ObserverClass",
    "Operation",
    "OperationProgress",
    "Params",
    "PeerLink",
    "Platform",
    "PlatformChecks",
    "Preflight",
    "Probe",
    "ProbeResult",
    "Probed",
    "Provisioned",
    "ReadsReplication",
    "Rebuild",
    "RedfishClient",
    "ReplicaSync",
    "ReplicationMode",
    "ReplicationState",
    "RestoreParams",
    "ResyncSample",
    "RevertFailedError",
    "RoleMoveParams",
    "RoleMoveState",
    "SeenVm",
    "ServerEvent",
    "Serving",
    "Shell",
    "SiteView",
    "SqlServerError",
    "StoragePlacement",
    "TSqlSession",
    "Target",
    "TargetKind",
    "Topology",
    "TopologyDrafter",
    "Transient",
    "Uncertain",
    "UnknownState",
    "VCenter",
    "VCenterSession",
    "VcEvent",
    "WinRmEndpoint",
    "WinRmSession",
    "bmc_named",
    "ca_file",
    "database_kind",
    "database_of",
    "host_address",
    "host_identities",
    "matching",
    "measure_offset",
    "on_section",
    "other_site_first",
    "parse_topology",
    "path_of",
    "pinned_context",
    "powershell",
    "presented_certificate",
    "refused",
    "resolve_secret",
    "retrying",
    "run_checks",
    "sdk",
    "section",
    "session_for",
    "shown",
    "sqlserver_driver",
    "ssh_shell",
    "tls_context",
    "unreachable",
    "winrm_endpoint",
    "wire",
]

SectionModel = TypeVar("SectionModel", bound=BaseModel)


class BackendClass(Protocol):
    """What a `Backend`'s `"module:Class"` names: a class the registry, the guardian and `recover` build a fault
    from, without contacting anything (dry-run plans it). `params` is the kind's validated params model."""

    def from_spec(self, spec: FaultSpec, params: Params, target: Target, topology: Topology, /) -> Fault: ...


class ClusterPart(Protocol):
    """What a platform adds to the cluster view: read-only, like the view itself."""

    def preflight(self) -> None:
        """Raise HarnessError naming the reason if an experiment must not start now."""

    def describe(self) -> Mapping[str, str]:
        """Versions and settings for the report's environment section."""


class ClusterPartClass(Protocol):
    """What `Platform.cluster_part` names: built from the topology without contacting anything."""

    def from_topology(self, topology: Topology, /) -> ClusterPart: ...


class Observer(Protocol):
    """A read-only sampler a platform brings (a metro array's replica sync, say): each call bounded by itself."""

    def sample(self) -> Mapping[str, float]:
        """The figures now, by name (the unit in the name: `replica lag s`)."""


class ObserverClass(Protocol):
    """What each of `Platform.observers` names: built from the topology without contacting anything."""

    def from_topology(self, topology: Topology, /) -> Observer: ...


Probe = Callable[[Topology], str]
"""What each of `Platform.probes` names: a read-only check that returns what it saw, or raises naming what is
wrong (`Uncertain` when it cannot tell)."""


def on_section(says: str, name: str, model: type[SectionModel],
               test: Callable[[Target, Topology, SectionModel], bool]) -> Condition:
    """A condition that sees the platform's validated section (`management.platforms.<name>` read by `model`),
    not the raw mapping; it does not hold where the topology has no such section."""

    def holds(target: Target, topology: Topology) -> bool:
        return name in topology.management.platforms and test(target, topology, section(topology, name, model))

    return Condition(says, holds)


def ssh_shell(topology: Topology, name: str, *, command_timeout_s: float) -> Shell:
    """A shell on the endpoint `name` of `management.ssh` (host key pinned). paramiko is an extra (router,
    vsphere): it is imported here, when a platform first runs a command, never when the contract is."""
    from faults.transports.ssh import SshShell, endpoint_named

    index, endpoint = endpoint_named(topology, name)
    return SshShell(endpoint, f"management.ssh[{index}]", command_timeout_s=command_timeout_s)


def host_identities(topology: Topology) -> Callable[[str], HostIdentity] | None:
    """How this topology's cluster manager reads a host's identity (vCenter's `hardware.systemInfo`): the first
    platform that declares `identifies_hosts` and answers for the topology; None when none does."""
    from faults.catalogue import installed, named

    for platform in installed().platforms:
        if platform.identifies_hosts:
            identities: Callable[[Topology], Callable[[str], HostIdentity] | None] = named(platform.identifies_hosts)
            found = identities(topology)
            if found is not None:
                return found
    return None
