"""Which backend serves a fault kind on a target: a string map, imported on use.

As testinfra's `BACKENDS`: `(fault kind, platform) -> "module:Class"`, so adding a backend is
one module and one line per kind, no backend imports this file, and an SDK a user does not
need is never imported. The platform is chosen by the target: a link goes to the router, a
disk to vSAN, a database role to WSFC for an FCI and to T-SQL for an AG; on the embedded lab
everything goes to the lab's own controls. Every class named here has
`from_spec(spec, params, target, topology)`; a unit test builds and plans each pair.

The journal stores specs, so `recover` rebuilds the very same fault after a crash.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from faults import allowlist
from faults.base import Fault, FaultPlan, FaultSpec
from faults.kinds import FaultKind, Params, fault_kind
from harness_kernel.errors import ConfigError, TargetNotAllowedError
from harness_kernel.topology.models import Topology
from harness_kernel.topology.targets import Target, TargetKind

BACKENDS: dict[tuple[str, str], str] = {
    ("host-crash", "lab"): "faults.backends.lab:HostCrash",
    ("host-hang", "lab"): "faults.backends.lab:HostHang",
    ("site-failure", "lab"): "faults.backends.lab:SiteFailure",
    ("site-isolation", "lab"): "faults.backends.lab:Isolation",
    ("witness-isolation", "lab"): "faults.backends.lab:Isolation",
    ("link-partition", "lab"): "faults.backends.lab:LinkPartition",
    ("latency", "lab"): "faults.backends.lab:Latency",
    ("role-switchover", "lab"): "faults.backends.lab:RoleSwitchover",
    ("storage-loss", "lab"): "faults.backends.lab:StorageLoss",
    ("backup", "lab"): "faults.backends.pgbackup:PgBaseBackup",
    ("backup", "postgres"): "faults.backends.pgbackup:PgBaseBackup",
    ("backup", "sqlserver"): "faults.backends.sqlserver_backup:SqlServerBackup",
    ("process-freeze", "process"): "faults.backends.process:ProcessFreeze",
    ("link-partition", "router"): "faults.backends.router:RouterPartition",
    ("witness-isolation", "router"): "faults.backends.router:RouterPartition",
    ("latency", "router"): "faults.backends.router:RouterLatency",
    ("host-power-off", "redfish"): "faults.backends.redfish:HostPowerOff",
    ("site-power-off", "redfish"): "faults.backends.redfish:SitePowerOff",
    ("host-power-off", "vsphere"): "faults.backends.vsphere.faults:HostShutdown",
    ("host-maintenance", "vsphere"): "faults.backends.vsphere.faults:HostMaintenance",
    ("vm-migrate", "vsphere"): "faults.backends.vsphere.faults:VmMigrate",
    ("disk-failure", "vsan"): "faults.backends.vsan.faults:DiskFailure",
    ("disk-group-failure", "vsan"): "faults.backends.vsan.faults:DiskGroupFailure",
    ("role-move", "sqlserver"): "faults.backends.sqlserver.faults:AgFailover",
    ("role-move", "wsfc"): "faults.backends.wsfc.faults:FciRoleMove",
}

# The optional extra that brings a platform's SDK, named when its import fails.
EXTRAS = {"router": "router", "vsphere": "vsphere", "vsan": "vsphere", "redfish": "redfish", "wsfc": "wsfc",
          "sqlserver": "sqlserver"}


class NoBackendError(ConfigError):
    """The fault kind is known but nothing in this installation serves it on that target."""


@dataclass(frozen=True)
class Resolved:
    """A spec checked against the kind table and the topology: what the backend is built from."""

    spec: FaultSpec
    kind: FaultKind
    target: Target
    params: Params
    platform: str


def platform_of(kind: FaultKind, target: Target, topology: Topology) -> str:
    """The control plane that acts on `target` for this topology."""
    if target.kind is TargetKind.PROCESS:
        return "process"
    if topology.kind == "lab":
        return "lab"
    if kind.name == "latency" and topology.lab is not None:
        # A topology bound to the embedded lab: its inter-site path is the lab's, which delays it with the
        # router backend's netem where the kernel has it and with Toxiproxy where it has not.
        return "lab"
    if target.kind in (TargetKind.LINK, TargetKind.WITNESS):
        return "router"
    if target.kind in (TargetKind.DISK, TargetKind.DISK_GROUP):
        return "vsan"
    if kind.name == "vm-migrate":
        return "vsphere"
    if target.kind in (TargetKind.DATABASE, TargetKind.NODE):
        kinds = {d.name: d.kind for d in topology.databases}
        database_kind = kinds.get(target.parts[0], "")
        if kind.name == "backup" and database_kind.startswith("sqlserver"):
            return "sqlserver"  # BACKUP DATABASE is T-SQL on the instance, AG or FCI alike
        return {"sqlserver-ag": "sqlserver", "sqlserver-fci": "wsfc"}.get(database_kind, database_kind)
    if kind.name == "host-power-off" and target.kind is TargetKind.HOST and topology.host(target.name).bmc:
        return "redfish"
    if kind.name == "site-power-off" and target.kind is TargetKind.SITE:
        site = next(s for s in topology.sites if s.name == target.name)
        return "redfish" if all(host.bmc for host in site.hosts) else "vsphere"
    return "vsphere"


def resolve(spec: FaultSpec, topology: Topology) -> Resolved:
    """Kind, target and params validated (errors name the field), and the platform chosen; contacts nothing."""
    kind = fault_kind(spec.kind)
    target = Target.parse(spec.target)
    if target.kind is not kind.target:
        raise ConfigError(f"{spec.kind}: target {spec.target!r} is a {target.kind}; this fault acts on a {kind.target}")
    if str(target) not in topology.targets():
        raise ConfigError(f"{spec.kind}: target {spec.target!r} is not in topology {topology.name!r}")
    return Resolved(spec, kind, target, kind.parse_params(spec.params), platform_of(kind, target, topology))


def supports(spec: FaultSpec, topology: Topology) -> bool:
    """A backend is registered for this spec's kind on its target's platform."""
    resolved = resolve(spec, topology)
    return (resolved.kind.name, resolved.platform) in BACKENDS


def build(spec: FaultSpec, topology: Topology) -> Fault:
    """The fault object for `spec`, constructed without contacting anything (dry-run relies on it)."""
    resolved = resolve(spec, topology)
    path = BACKENDS.get((resolved.kind.name, resolved.platform))
    if path is None:
        raise NoBackendError(f"{spec.kind} on {spec.target}: no {resolved.platform} backend for this fault kind "
                             "in this installation yet")
    backend: Any = _load(path, resolved.platform)
    fault: Fault = backend.from_spec(spec, resolved.params, resolved.target, topology)
    return fault


class EffectNotAllowedError(TargetNotAllowedError):
    """The target is allowed, but the fault would cut or power off something the allow-list does not cover."""

    def __init__(self, spec: FaultSpec, uncovered: list[str]) -> None:
        self.uncovered = uncovered
        super().__init__(f"{spec.kind} on {spec.target}: it cuts or powers off {', '.join(uncovered)}, which no "
                         "allow_list entry covers")


def permit(plan: FaultPlan, topology: Topology, *, allow_destructive: bool) -> None:
    """The one allow-list rule, for the runner, `--dry-run` and `plan` alike.

    Every fault kind is destructive: its target must be on the topology's allow-list, so must
    everything its plan says it cuts off or powers off (`faults.allowlist`), and a topology
    other than the embedded lab also needs the run's explicit `--allow-destructive`.
    """
    spec = plan.spec
    if spec.target not in topology.allow_list:
        raise TargetNotAllowedError(f"{spec.kind}: target {spec.target!r} is not in the allow_list of topology "
                                    f"{topology.name!r}")
    beyond = allowlist.uncovered(plan.effect_set, topology)
    if beyond:
        raise EffectNotAllowedError(spec, beyond)
    if topology.kind != "lab" and not allow_destructive:
        raise TargetNotAllowedError(f"{spec.kind} on {spec.target}: destructive faults on topology {topology.name!r} "
                                    "need --allow-destructive")


def not_allowed(plan: FaultPlan, topology: Topology) -> str | None:
    """Why the allow-list refuses this plan, in the words dry-run and `plan` print; None if it does not."""
    try:
        permit(plan, topology, allow_destructive=True)
    except EffectNotAllowedError as exc:
        return f"it cuts or powers off {', '.join(exc.uncovered)}, which no allow_list entry covers"
    except TargetNotAllowedError:
        return "target is not in the allow_list"
    return None


def _load(path: str, platform: str) -> Any:
    module_name, _, attribute = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        extra = EXTRAS.get(platform)
        hint = f"; install it with: pip install 'resilience-harness[{extra}]'" if extra else ""
        raise ConfigError(f"the {platform} backend needs {exc.name or 'a missing package'}{hint}") from None
    return getattr(module, attribute)
