"""vSphere faults through vCenter (pyVmomi): host shutdown, maintenance and VM migration.

Faults follow `faults.base.Fault`. Every wait is bounded and its timeout says what it waited
for. `check()` reports what vCenter reports; when vCenter cannot be read it is UNKNOWN, never
CLEARED. What they read of vCenter is `harness_platforms.vsphere.probes`.

- `HostShutdown` (host-power-off on a host without a BMC): `ShutdownHost_Task(force=True)`.
  Refused unless `management.vcenter.allow_host_shutdown` is true: it is a graceful shutdown
  (HA may record a clean power-off and not restart the VMs, unlike a real failure) and nothing
  can power the host on again, so the revert can only wait for a person to do it.
- `HostMaintenance`: `EnterMaintenanceMode_Task` with the asked vSAN evacuation mode; revert exits.
- `VmMigrate`: `RelocateVM_Task` to another host (by default one of another site), timed; revert moves it back.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from faults.contract import (
    Check,
    ConfigError,
    ControlPlaneError,
    DatabaseNode,
    FaultPlan,
    FaultSpec,
    FaultState,
    HarnessError,
    MaintenanceParams,
    MigrationParams,
    Params,
    Target,
    Topology,
    UnknownState,
    VCenterSession,
    sdk,
    session_for,
)
from harness_platforms.vsphere import privileges
from harness_platforms.vsphere.privileges import Need, needs_of
from harness_platforms.vsphere.probes import HOST_PATHS, Discovery, discover, node_vm, verify

log = logging.getLogger(__name__)

BACKEND = "vsphere"
SHUTDOWN_TASK_S = 600.0
RECONNECT_WAIT_S = 900.0
MIGRATION_TIMEOUT_S = 1800.0
EXIT_MAINTENANCE_S = 900.0

# -- faults -----------------------------------------------------------------------------------
@dataclass
class _VsphereFault:
    spec: FaultSpec
    topology: Topology
    session: VCenterSession
    evidence: dict[str, Any] = field(default_factory=dict)
    _unknown: UnknownState = field(default_factory=UnknownState, init=False, repr=False)

    def _plan(self, inject: tuple[str, ...], revert: tuple[str, ...]) -> FaultPlan:
        return FaultPlan(self.spec, f"{BACKEND} {self.session.where}", inject, revert,
                         ("management.vcenter.credential",))

    def preflight(self) -> None:
        """vCenter reachable and trusted, its cluster as the topology describes it, the target ready for the fault,
        and the account allowed every call the fault and its revert make."""
        seen = verify(self.topology, self.session)
        self._ready(seen)
        privileges.check(self.session, self._needs(seen))

    def checks(self) -> list[Check]:
        return [Check("privileges", self.privileges,
                      "grant the account a role holding what it names, on those objects or an ancestor")]

    def privileges(self) -> str:
        return privileges.check(self.session, self._needs(discover(self.session, self.topology)))

    def _ready(self, seen: Discovery) -> None:
        """Raise ControlPlaneError if the target is not in the state the fault starts from."""

    def _needs(self, seen: Discovery) -> list[Need]:
        """The privileges the calls of inject and revert need, on the entities they act on."""
        raise NotImplementedError

    def _host_ready(self, seen: Discovery, name: str) -> None:
        host = seen.hosts[name]
        if not host.usable:
            state = "in maintenance mode" if host.maintenance else f"{host.connection}, {host.power}"
            raise ControlPlaneError(f"{self.session.where}: {self.spec.kind} on {self.spec.target}: host {name} is {state}; "
                                    "it must be connected, powered on and out of maintenance first")

    def check(self) -> FaultState:
        try:
            return self._observe()
        except HarnessError as exc:
            return self._unknown_because(str(exc))

    def _observe(self) -> FaultState:
        raise NotImplementedError

    def _unknown_because(self, reason: str) -> FaultState:
        return self._unknown.because(self.spec, reason)

    def _host(self, name: str) -> Any:
        return self.session.find("HostSystem", name)

    def _host_state(self, name: str) -> dict[str, Any]:
        return self.session.read(self._host(name), HOST_PATHS[:3], f"reading host {name}")


SHUTDOWN_REFUSAL = ("host-power-off on {host} without a BMC would be ShutdownHost_Task(force=True): a graceful "
                    "shutdown (HA may record a clean power-off and not restart its VMs, unlike a real failure) "
                    "after which nothing can power the host on again (revert = a person powers it on); refused "
                    "unless management.vcenter.allow_host_shutdown is true, or give the host a BMC "
                    "(sites[].hosts[].bmc)")


@dataclass
class HostShutdown(_VsphereFault):
    """Graceful host shutdown through vCenter, only with the topology's explicit opt-in (see the module)."""

    host: str = ""
    allowed: bool = False
    reconnect_wait_s: float = RECONNECT_WAIT_S

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> HostShutdown:
        vcenter = topology.management.vcenter
        return cls(spec, topology, session_for(topology), host=target.name,
                   allowed=bool(vcenter and vcenter.allow_host_shutdown))

    def _refuse(self) -> None:
        if not self.allowed:
            raise ConfigError(SHUTDOWN_REFUSAL.format(host=self.host))

    def plan(self) -> FaultPlan:
        if not self.allowed:
            return self._plan((f"refused: {SHUTDOWN_REFUSAL.format(host=self.host)}",), ("nothing: not injected",))
        return self._plan(
            (f"ShutdownHost_Task(force=True) on {self.host} (graceful: HA may not restart its VMs; "
             "nothing can power it on again)",),
            (f"wait at most {self.reconnect_wait_s:g} s for {self.host} to be connected again: a person must "
             "power it on (vCenter cannot)",))

    def preflight(self) -> None:
        self._refuse()
        super().preflight()

    def _ready(self, seen: Discovery) -> None:
        self._host_ready(seen, self.host)

    def _needs(self, seen: Discovery) -> list[Need]:
        return [*needs_of("HostSystem", self.host, "ShutdownHost_Task"),
                *needs_of("HostSystem", self.host, "ReconnectHost_Task")]

    def inject(self) -> None:
        self._refuse()
        host = self._host(self.host)
        task = self.session.call(f"ShutdownHost_Task on {self.host}", lambda: host.ShutdownHost_Task(force=True))
        self.session.wait_task(task, f"host {self.host} to shut down", SHUTDOWN_TASK_S)

    def _observe(self) -> FaultState:
        state = self._host_state(self.host)
        if str(state["runtime.connectionState"]) != "connected" or str(state["runtime.powerState"]) == "poweredOff":
            return FaultState.IN_EFFECT
        if str(state["runtime.powerState"]) == "poweredOn":
            return FaultState.CLEARED
        return self._unknown_because(f"host {self.host} is connected but {state['runtime.powerState']}")

    def revert(self) -> None:
        if not self.allowed or self.check() is FaultState.CLEARED:
            return  # refused: never injected
        log.warning("%s was shut down through vCenter: a person must power it on (the BMC or the power button); "
                    "waiting at most %g s for it to be connected", self.host, self.reconnect_wait_s)
        deadline = time.monotonic() + self.reconnect_wait_s
        host = self._host(self.host)
        try:
            seen = self.session.wait_for(host, ["runtime.connectionState"],
                                         lambda v: str(v["runtime.connectionState"]) in ("connected", "disconnected"),
                                         f"host {self.host} to be powered on and answer again", self.reconnect_wait_s)
            if str(seen["runtime.connectionState"]) == "disconnected":  # vCenter gave up on it: reconnect once
                task = self.session.call(f"ReconnectHost_Task on {self.host}", lambda: host.ReconnectHost_Task())
                self.session.wait_task(task, f"host {self.host} to reconnect", max(1.0, deadline - time.monotonic()))
            self.session.wait_for(host, ["runtime.connectionState"],
                                  lambda v: str(v["runtime.connectionState"]) == "connected",
                                  f"host {self.host} to be connected again", max(1.0, deadline - time.monotonic()))
        except ControlPlaneError as exc:
            raise ControlPlaneError(f"{exc}; {self.host} was shut down through vCenter, which cannot power it on: "
                                    "a person must power it on") from None


@dataclass
class HostMaintenance(_VsphereFault):
    """The host enters maintenance mode with a vSAN evacuation mode; the revert takes it out."""

    host: str = ""
    vsan_mode: str = "ensureObjectAccessibility"
    timeout_s: float = 1800.0

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> HostMaintenance:
        assert isinstance(params, MaintenanceParams)
        return cls(spec, topology, session_for(topology), host=target.name, vsan_mode=params.vsan_mode,
                   timeout_s=params.timeout_s)

    def plan(self) -> FaultPlan:
        return self._plan(
            (f"EnterMaintenanceMode_Task(timeout={int(self.timeout_s)}, evacuatePoweredOffVms=False, "
             f"maintenanceSpec.vsanMode.objectAction={self.vsan_mode}) on {self.host}, waiting at most "
             f"{self.timeout_s:g} s",),
            (f"ExitMaintenanceMode_Task(timeout={int(EXIT_MAINTENANCE_S)}) on {self.host}, waiting at most "
             f"{EXIT_MAINTENANCE_S:g} s",))

    def _ready(self, seen: Discovery) -> None:
        self._host_ready(seen, self.host)

    def _needs(self, seen: Discovery) -> list[Need]:
        return [*needs_of("HostSystem", self.host, "EnterMaintenanceMode_Task"),
                *needs_of("HostSystem", self.host, "ExitMaintenanceMode_Task")]

    def inject(self) -> None:
        s, host = sdk(), self._host(self.host)
        spec = s.vim.host.MaintenanceSpec(vsanMode=s.vim.vsan.host.DecommissionMode(objectAction=self.vsan_mode))
        started = time.monotonic()
        task = self.session.call(f"EnterMaintenanceMode_Task on {self.host}", lambda: host.EnterMaintenanceMode_Task(
            timeout=int(self.timeout_s), evacuatePoweredOffVms=False, maintenanceSpec=spec))
        self.session.wait_task(task, f"host {self.host} to enter maintenance mode ({self.vsan_mode})",
                               self.timeout_s + 60)
        self.evidence.update(host=self.host, vsan_mode=self.vsan_mode, enter_s=round(time.monotonic() - started, 3))

    def _observe(self) -> FaultState:
        state = self._host_state(self.host)
        return FaultState.IN_EFFECT if state["runtime.inMaintenanceMode"] else FaultState.CLEARED

    def revert(self) -> None:
        if self.check() is FaultState.CLEARED:
            return
        host = self._host(self.host)
        started = time.monotonic()
        task = self.session.call(f"ExitMaintenanceMode_Task on {self.host}",
                                 lambda: host.ExitMaintenanceMode_Task(timeout=int(EXIT_MAINTENANCE_S)))
        self.session.wait_task(task, f"host {self.host} to exit maintenance mode", EXIT_MAINTENANCE_S + 60)
        self.evidence.update(exit_s=round(time.monotonic() - started, 3))


@dataclass
class VmMigrate(_VsphereFault):
    """vMotion of a database node's VM to another host (`to_host`, or a usable host of another site), timed."""

    vm: str = ""
    node: DatabaseNode | None = None
    to_host: str | None = None
    origin: str | None = None
    drs: str | None = None  # how DRS may move the VM back after the migration (None: it will not)
    reverting: bool = False  # the harness itself moves the VM back from here on
    timeout_s: float = MIGRATION_TIMEOUT_S

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> VmMigrate:
        assert isinstance(params, MigrationParams)
        database, node_name = target.parts
        node = next(n for d in topology.databases if d.name == database for n in d.nodes if n.name == node_name)
        if params.to_host is not None and params.to_host not in {h.name for h in topology.hosts()}:
            raise ConfigError(f"vm-migrate: params.to_host: {params.to_host!r} is not a host of topology {topology.name!r}")
        return cls(spec, topology, session_for(topology), vm=node_vm(node), node=node, to_host=params.to_host)

    def plan(self) -> FaultPlan:
        where = self.to_host or "a connected host of another site, not in maintenance (chosen at inject)"
        home = f"the host it ran on at inject (else {self.node.host})" if self.node and self.node.host else \
            "the host it ran on at inject"
        return self._plan((f"RelocateVM_Task of VM {self.vm} to {where}, timed, waiting at most {self.timeout_s:g} s",),
                          (f"RelocateVM_Task of VM {self.vm} back to {home}, waiting at most {self.timeout_s:g} s",))

    def _ready(self, seen: Discovery) -> None:
        vm = seen.vms.get(self.vm)
        if vm is None or vm.power != "poweredOn" or vm.host is None:
            raise ControlPlaneError(f"{self.session.where}: vm-migrate: VM {self.vm} is "
                                    f"{'not on the cluster' if vm is None else vm.power}; vMotion needs it running")
        to = self.destination(seen, vm.host)
        if to == vm.host:
            raise ConfigError(f"vm-migrate: VM {self.vm} already runs on {to}")
        self._host_ready(seen, to)

    def _needs(self, seen: Discovery) -> list[Need]:
        vm = seen.vms.get(self.vm)
        running = vm is not None and vm.power == "poweredOn"  # vMotion: the reference's condition (privileges.py)
        return needs_of("VirtualMachine", self.vm, "RelocateVM_Task", *([privileges.HOT_MIGRATE] if running else []))

    def _vm_host(self) -> str | None:
        seen = self.session.read(self.session.find("VirtualMachine", self.vm), ["runtime.host"], f"reading VM {self.vm}")
        host = seen["runtime.host"]
        return None if host is None else str(self.session.read(host, ["name"], "reading a host's name")["name"])

    def destination(self, seen: Discovery, current: str) -> str:
        """`to_host`, or the first usable host of a site other than the one `current` is in."""
        if self.to_host is not None:
            return self.to_host
        site = seen.hosts[current].site if current in seen.hosts else ""
        choices = sorted(h.name for h in seen.hosts.values() if h.site != site and h.usable)
        if not choices:
            raise ControlPlaneError(f"{self.session.where}: no connected host outside site {site!r} to move VM "
                                    f"{self.vm} to")
        return choices[0]

    def _relocate(self, to: str, what: str) -> dict[str, Any]:
        s = sdk()
        vm, host = self.session.find("VirtualMachine", self.vm), self._host(to)
        started = time.monotonic()
        task = self.session.call(f"RelocateVM_Task of {self.vm} to {to}",
                                 lambda: vm.RelocateVM_Task(spec=s.vim.vm.RelocateSpec(host=host),
                                                            priority="defaultPriority"))
        self.session.wait_task(task, what, self.timeout_s)
        elapsed = time.monotonic() - started
        info = self.session.read(task, ["info.startTime", "info.completeTime"], f"reading the migration of {self.vm}")
        begun, ended = info["info.startTime"], info["info.completeTime"]
        server_s = (ended - begun).total_seconds() if begun is not None and ended is not None else None
        return {"migration_s": round(elapsed, 3), "server_migration_s": server_s}

    def inject(self) -> None:
        current = self._vm_host()
        if current is None:
            raise ControlPlaneError(f"{self.session.where}: VM {self.vm} runs on no host")
        seen = discover(self.session, self.topology)
        to = self.destination(seen, current)
        if to == current:
            raise ConfigError(f"vm-migrate: VM {self.vm} already runs on {to}")
        self.origin = current
        self.evidence.update(vm=self.vm, from_host=current, to_host=to)
        self.drs = drs_can_move_back(seen, self.vm, current, self.topology)
        if self.drs:
            self.evidence["drs"] = self.drs
        self.to_host = to
        self.evidence.update(self._relocate(to, f"VM {self.vm} to move from {current} to {to}"))

    def _home(self) -> str | None:
        return self.origin or (self.node.host if self.node else None)

    def _observe(self) -> FaultState:
        current = self._vm_host()
        home = self._home()
        if current is not None and home is not None and self.drs and not self.reverting and current != self.to_host \
                and _same_site(self.topology, current, home):
            self.evidence.setdefault("moved_back", f"VM {self.vm} is back in {self.topology.site_of(home).name} on "
                                                   f"{current}, not moved by the harness: by DRS ({self.drs})")
            return FaultState.CLEARED
        if current is not None and current == home:
            return FaultState.CLEARED
        if current is not None and self.to_host is not None and current == self.to_host:
            return FaultState.IN_EFFECT
        if current is not None and home is not None and self.origin is None and \
                _same_site(self.topology, current, home):
            return FaultState.CLEARED  # not injected by this process (recover): back in its own site
        return self._unknown_because(f"VM {self.vm} runs on {current}, neither its home {home} nor {self.to_host}")

    def revert(self) -> None:
        home = self._home()
        if home is None:
            raise ControlPlaneError(f"vm-migrate: cannot tell where VM {self.vm} belongs; set the node's host "
                                    "(databases[].nodes[].host)")
        current = self._vm_host()
        if current == home or (self.origin is None and current is not None and _same_site(self.topology, current, home)):
            return
        self.reverting = True
        self.evidence.update({f"back_{k}": v for k, v in
                              self._relocate(home, f"VM {self.vm} to move back to {home}").items()})


def drs_can_move_back(seen: Discovery, vm: str, home: str, topology: Topology) -> str | None:
    """Whether fully automated DRS may move `vm` back home after a migration: an enabled, preferential ("should")
    rule keeps it on hosts of its site; "preferential rules can be violated" (vSphere Resource Management), and
    when "the existing cluster configuration violates the rule, the Server attempts to correct the situation"
    (vSphere API, ClusterRuleInfo)."""
    if not seen.drs_enabled or seen.drs_behavior != "fullyAutomated":
        return None
    rules = [r for r in seen.rules if r.enabled and not r.mandatory and r.affine and vm in r.vms and home in r.hosts]
    if not rules:
        return None
    site = topology.site_of(home).name if home in {h.name for h in topology.hosts()} else "its hosts"
    return f"{seen.drs_behavior}; should rule {', '.join(repr(r.name) for r in rules)} can move VM {vm} back to {site}"


def _same_site(topology: Topology, a: str, b: str) -> bool:
    try:
        return topology.site_of(a).name == topology.site_of(b).name
    except KeyError:
        return False

