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
  draft topology (`Drafter`, `DraftPart`, `SeenVm`: `harness discover`);
- the history a cluster part writes its server's records into: `ServerEvent`, `EventKind`, `measure_offset`;
- errors, and the clients the harness offers a platform: the HTTP helpers a REST control plane
  uses, T-SQL over ODBC (`TSqlSession`, `Connector`), PowerShell over WinRM (`WinRmSession`,
  `powershell`), and the role-move helpers a database platform's failover shares (`RoleMoveState`).

A platform that brings a database part also names the workload's dialect for it
(`workloads.oltp`: `TSqlDialect`, `ConnectionSettings`): the workload's own public package, the
one other import a platform may have.

Plug-in authors test against the harness's contract kit (`harness.contract_kit`, a pytest
fixture set), which runs the harness itself and so lives above this module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, TypeVar

from pydantic import BaseModel

from faults.assumptions import Assumption, Probed, ProbeResult
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
from faults.drafts import Drafter, DrafterFactory, DraftPart, SeenVm
from faults.kinds import (
    BackupParams,
    FaultKind,
    MaintenanceParams,
    MigrationParams,
    NoParams,
    Params,
    RestoreParams,
    RoleMoveParams,
)
from faults.metro import Arbiter, MetroGroup, PeerLink, Rebuild, ReplicaSync, Serving, SiteView
from faults.platform import ALWAYS, Backend, Condition, Platform, database_kind
from faults.readings import (
    CopiesSample,
    DataDevice,
    FailoverForecast,
    ModelledLimit,
    ReplicationMode,
    ReplicationState,
    ResyncSample,
)
from faults.sections import path_of, section
from faults.transports import powershell, wire
from faults.transports.odbc import ADMIN_DATABASE, Connector, SqlServerError, TSqlSession
from faults.transports.rest import NotFoundError, Transient, refused, retrying, tls_context, unreachable
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
from harness_kernel.topology.models import Database, DatabaseNode, Topology, WinRmEndpoint, ca_file, host_address
from harness_kernel.topology.targets import Target, TargetKind

__all__ = [
    "ADMIN_DATABASE",
    "ALWAYS",
    "Arbiter",
    "Assumption",
    "Backend",
    "BackendClass",
    "BackupParams",
    "Check",
    "Checked",
    "ClusterPart",
    "ClusterPartClass",
    "Condition",
    "ConfigError",
    "Connector",
    "ControlPlaneError",
    "CopiesSample",
    "CredentialRef",
    "CredentialRejectedError",
    "DataDevice",
    "Database",
    "DatabaseNode",
    "DeadMansSwitch",
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
    "HarnessError",
    "MaintenanceParams",
    "MetroGroup",
    "MigrationParams",
    "ModelledLimit",
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
    "Preflight",
    "Probe",
    "ProbeResult",
    "Probed",
    "Rebuild",
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
    "SiteView",
    "SqlServerError",
    "TSqlSession",
    "Target",
    "TargetKind",
    "Topology",
    "Transient",
    "Uncertain",
    "UnknownState",
    "WinRmEndpoint",
    "WinRmSession",
    "ca_file",
    "database_kind",
    "database_of",
    "host_address",
    "measure_offset",
    "on_section",
    "other_site_first",
    "path_of",
    "powershell",
    "refused",
    "resolve_secret",
    "retrying",
    "run_checks",
    "section",
    "sqlserver_driver",
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
