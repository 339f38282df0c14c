"""Nutanix AHV faults through Prism Central v4: a VM's power, its live migration, a host's maintenance.

Each fault reads before it changes (a VM's read's ETag goes back in `If-Match`; a host's maintenance is
sent without one, as Nutanix's own client sends it: A-prism-maintenance-unguarded), sends every change
with a request id derived from its journaled instance (`api.request_id`), waits for the task the
change answers, bounded, and reads again to say what is so. `check()` says what Prism says; what
it cannot read is UNKNOWN, never CLEARED. `revert()` acts only when Prism shows the fault still in
effect, so `recover` may call it twice.

- `VmPowerOff` (vm-power-off): `power-off`, "equivalent to removing the power cable"; revert `power-on`.
- `VmGuestShutdown` (vm-guest-shutdown): `guest-shutdown`, Nutanix Guest Tools shutting the guest down
  from inside (NGT must run in the guest; ACPI `shutdown` is the other documented way, not offered);
  revert `power-on`.
- `VmMigrate` (vm-migrate): `migrate-to-host` to `to_host` or a host of another site; revert moves it back.
- `HostMaintenance` (host-maintenance): the Planned Outage Manager's `enter-host-maintenance` (a planned
  N-1, not a failed node); refused while Prism lists VMs it cannot migrate off the host, unless the
  topology consents to their shutdown; revert `exit-host-maintenance`.

Prism has no dead man's switch: a fault here is undone by the harness's revert, or by its guardian
process at the fault's deadline, or by `recover`; nothing on the cluster undoes it by itself.
"""

from __future__ import annotations

import json
import time
import uuid
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
    Uncertain,
    UnknownState,
    run_checks,
    section,
)
from harness_platforms.nutanix.api import Paths, request_id
from harness_platforms.nutanix.inventory import Inventory, Vm, host_name, node_of, vm_name
from harness_platforms.nutanix.prism import PrismClient
from harness_platforms.nutanix.section import FIELD, NAME, NutanixSection

ON, OFF, NORMAL = "ON", "OFF", "normal"
EXIT_MAINTENANCE_S = 900
CREDENTIAL = f"{FIELD}.credential.password"
ROLES_UNPROBED = ("unprobed: Prism documents no read-only call that says which operations this account's role may "
                  "perform (assumption A-prism-role-permissions); the calls this fault makes: ")


def _quote_body(body: Any) -> str:
    return "none" if body is None else json.dumps(body, sort_keys=True, separators=(", ", ": "))


@dataclass(frozen=True)
class Call:
    """One request as the plan shows it: method, path, body and headers, the credential masked."""

    method: str
    path: str
    body: Any = None
    operation: str | None = None  # a change's request id is derived from it
    etag_of: str | None = None  # the path whose read's ETag goes in If-Match
    fresh_id: bool = False  # a computation: a new request id each time (a repeated one would answer the old result)

    def render(self, origin: str, instance: str) -> str:
        headers = [f"Authorization: Basic *** ({FIELD}.credential)"]
        if self.etag_of:
            headers.append(f"If-Match: <ETag of GET {self.etag_of}>")
        if self.operation:
            headers.append(f"NTNX-Request-Id: {request_id(instance, self.operation)} ({self.operation})")
        if self.fresh_id:
            headers.append("NTNX-Request-Id: a new UUID each time (it computes, it changes nothing)")
        return f"{self.method} {origin}{self.path} [{'; '.join(headers)}] body {_quote_body(self.body)}"


def _placeholder(what: str) -> str:
    return "{" + what + "}"


@dataclass
class _PrismFault:
    spec: FaultSpec
    topology: Topology
    inventory: Inventory
    evidence: dict[str, Any] = field(default_factory=dict)
    _unknown: UnknownState = field(default_factory=UnknownState, init=False, repr=False)

    @property
    def backend(self) -> str:
        return NAME

    @property
    def client(self) -> PrismClient:
        return self.inventory.client

    @property
    def settings(self) -> NutanixSection:
        return self.client.section

    @property
    def paths(self) -> Paths:
        return self.client.paths

    def rid(self, operation: str) -> str:
        return request_id(self.spec.instance, operation)

    def _plan(self, inject: list[Call], revert: list[Call], waits: tuple[str, str]) -> FaultPlan:
        origin, instance = self.settings.endpoint, self.spec.instance
        task = Call("GET", self.paths.task(_placeholder("extId of the task")))
        poll = f"poll {task.render(origin, instance)} every {self.settings.poll_s:g} s until SUCCEEDED"
        return FaultPlan(self.spec, f"{NAME} {self.client.where()}",
                         (*(c.render(origin, instance) for c in inject), f"{poll} (at most {waits[0]})"),
                         (*(c.render(origin, instance) for c in revert), f"{poll} (at most {waits[1]})"),
                         (CREDENTIAL,))

    def _calls(self) -> str:
        raise NotImplementedError

    def checks(self) -> list[Check]:
        return [Check("permissions", self.permissions, "grant the account a role allowing the calls it names "
                                                       "(Nutanix names Cluster Admin, Prism Admin or Super Admin)")]

    def permissions(self) -> str:
        raise Uncertain(ROLES_UNPROBED + self._calls())

    def _act(self, read_path: str | None, action_path: str, body: Any, operation: str, what: str,
             timeout_s: float | None = None) -> float:
        """One change, then its task waited for: seconds it took. The request id and task go into the evidence."""
        started = time.monotonic()
        task = self.client.change(read_path, "POST", action_path, body, self.rid(operation))
        ended = self.client.wait_task(task, what, timeout_s)
        self.evidence.setdefault("requests", {})[operation] = {"NTNX-Request-Id": self.rid(operation),
                                                               "task": ended.get("extId")}
        return round(time.monotonic() - started, 3)

    def check(self) -> FaultState:
        try:
            return self._observe()
        except HarnessError as exc:
            return self._unknown.because(self.spec, str(exc))

    def _observe(self) -> FaultState:
        raise NotImplementedError


def _inventory(topology: Topology) -> Inventory:
    return Inventory(PrismClient(section(topology, NAME, NutanixSection)))


# -- a VM's power ------------------------------------------------------------------------------------

@dataclass
class _VmPower(_PrismFault):
    node: DatabaseNode | None = None
    vm: str = ""
    action: str = ""
    body: Any = None

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> _VmPower:
        inventory = _inventory(topology)
        node = node_of(topology, *target.parts)
        return cls(spec, topology, inventory, node=node, vm=vm_name(inventory.section, node))

    def _calls(self) -> str:
        return f"POST .../vms/{{extId}}/$actions/{self.action}, POST .../vms/{{extId}}/$actions/power-on"

    def plan(self) -> FaultPlan:
        vm = self.paths.vm(_placeholder(f"extId of VM {self.vm}"))
        find = Call("GET", self.paths.vms_named(self.vm))
        bound = f"{self.settings.task_timeout_s:g} s"
        return self._plan(
            [find, Call("GET", vm), Call("POST", f"{vm}/$actions/{self.action}", self.body, f"inject {self.action}", vm)],
            [find, Call("GET", vm), Call("POST", f"{vm}/$actions/power-on", None, "revert power-on", vm)],
            (bound, bound))

    def preflight(self) -> None:
        """Prism answers, the VM is there and running: the fault starts from a VM the harness may power on again."""
        run_checks(self.checks())
        vm = self.inventory.vm(self.vm)
        if vm.power != ON:
            raise ControlPlaneError(f"{self.client.where()}: {self.spec.kind}: VM {self.vm} is {vm.power}, not ON: "
                                    "nothing to power off, and nothing the harness may power on")

    def inject(self) -> None:
        vm = self.inventory.vm(self.vm)
        self.evidence.update(vm=self.vm, vm_ext_id=vm.ext_id)
        if vm.power == OFF:
            raise ControlPlaneError(f"{self.client.where()}: VM {self.vm} is OFF already: not the harness's to "
                                    "power on")
        path = self.paths.vm(vm.ext_id)
        self.evidence["inject_s"] = self._act(path, self.paths.vm_action(vm.ext_id, self.action), self.body,
                                              f"inject {self.action}", f"VM {self.vm} {self.action}")

    def _observe(self) -> FaultState:
        power = self.inventory.vm(self.vm).power
        if power in (ON, OFF):
            return FaultState.IN_EFFECT if power == OFF else FaultState.CLEARED
        return self._unknown.because(self.spec, f"VM {self.vm} is {power}")

    def revert(self) -> None:
        """Power on, unless Prism shows it on: idempotent, and the same request id however often it is retried."""
        vm = self.inventory.vm(self.vm)
        if vm.power == ON:
            return
        path = self.paths.vm(vm.ext_id)
        self.evidence["revert_s"] = self._act(path, self.paths.vm_action(vm.ext_id, "power-on"), None,
                                              "revert power-on", f"VM {self.vm} power-on")


@dataclass
class VmPowerOff(_VmPower):
    """The node's VM loses power at once (`power-off`: "equivalent to removing the power cable")."""

    action: str = "power-off"


@dataclass
class VmGuestShutdown(_VmPower):
    """The node's guest shuts down from inside, asked through Nutanix Guest Tools (`guest-shutdown`)."""

    action: str = "guest-shutdown"
    body: Any = field(default_factory=lambda: {"guestPowerStateTransitionConfig": {
        "shouldEnableScriptExec": False, "shouldFailOnScriptFailure": False}})


# -- live migration ------------------------------------------------------------------------------------

@dataclass
class VmMigrate(_PrismFault):
    """The node's VM moves to another host of the cluster (`migrate-to-host`), timed; the revert moves it back."""

    node: DatabaseNode | None = None
    vm: str = ""
    to_host: str | None = None  # a topology host name
    origin: str | None = None  # the topology host it ran on at inject (this process only)
    timeout_s: float = 1800.0

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> VmMigrate:
        assert isinstance(params, MigrationParams)
        if params.to_host is not None and params.to_host not in {h.name for h in topology.hosts()}:
            raise ConfigError(f"vm-migrate: params.to_host: {params.to_host!r} is not a host of topology "
                              f"{topology.name!r}")
        inventory = _inventory(topology)
        node = node_of(topology, *target.parts)
        return cls(spec, topology, inventory, node=node, vm=vm_name(inventory.section, node), to_host=params.to_host,
                   timeout_s=inventory.section.task_timeout_s)

    def _calls(self) -> str:
        return "POST .../vms/{extId}/$actions/migrate-to-host (there and back)"

    def _home(self) -> str | None:
        return self.origin or (self.node.host if self.node else None)

    def plan(self) -> FaultPlan:
        vm = self.paths.vm(_placeholder(f"extId of VM {self.vm}"))
        to = self.to_host or "the host chosen at inject: another site's, out of maintenance"
        home = self._home() or "the host it ran on at inject"
        there = {"host": {"extId": _placeholder(f"extId of host {to}")}}
        back = {"host": {"extId": _placeholder(f"extId of host {home}")}}
        find = Call("GET", self.paths.vms_named(self.vm))
        hosts = Call("GET", self.paths.hosts(_placeholder(f"extId of cluster {self.settings.cluster}")))
        bound = f"{self.timeout_s:g} s"
        return self._plan(
            [find, hosts, Call("GET", vm),
             Call("POST", f"{vm}/$actions/migrate-to-host", there, f"inject migrate-to-host {self.to_host or 'chosen'}",
                  vm)],
            [find, Call("GET", vm), Call("POST", f"{vm}/$actions/migrate-to-host", back, f"revert migrate-to-host {home}",
                                         vm)],
            (bound, bound))

    def _topology_host(self, ext_id: str | None) -> str | None:
        """The topology's name of the Prism host `ext_id` (None: not one the topology lists)."""
        if ext_id is None:
            return None
        by_id = {h.ext_id: name for name, h in self.inventory.hosts().items()}
        prism = by_id.get(ext_id)
        return next((h.name for h in self.topology.hosts() if host_name(self.settings, h.name) == prism), None)

    def _destination(self, current: str) -> str:
        if self.to_host is not None:
            return self.to_host
        site = self.topology.site_of(current).name
        usable = {name for name, h in self.inventory.hosts().items() if h.maintenance == NORMAL}
        choices = sorted(h.name for h in self.topology.hosts() if self.topology.site_of(h.name).name != site
                         and host_name(self.settings, h.name) in usable)
        if not choices:
            raise ControlPlaneError(f"{self.client.where()}: no host outside site {site!r} out of maintenance to "
                                    f"move VM {self.vm} to")
        return choices[0]

    def preflight(self) -> None:
        run_checks(self.checks())
        vm = self.inventory.vm(self.vm)
        current = self._topology_host(vm.host)
        if vm.power != ON or current is None:
            raise ControlPlaneError(f"{self.client.where()}: vm-migrate: VM {self.vm} is {vm.power} on "
                                    f"{current or 'a host the topology does not list'}: a live migration needs it "
                                    "running on a host of the topology")
        if self._destination(current) == current:
            raise ConfigError(f"vm-migrate: VM {self.vm} already runs on {current}")

    def _move(self, vm: Vm, to: str, operation: str, what: str) -> float:
        target = self.inventory.host(host_name(self.settings, to))
        path = self.paths.vm(vm.ext_id)
        return self._act(path, self.paths.vm_action(vm.ext_id, "migrate-to-host"), {"host": {"extId": target.ext_id}},
                         operation, what, self.timeout_s)

    def inject(self) -> None:
        vm = self.inventory.vm(self.vm)
        current = self._topology_host(vm.host)
        if current is None:
            raise ControlPlaneError(f"{self.client.where()}: VM {self.vm} runs on no host of the topology")
        to = self._destination(current)
        self.origin, self.to_host = current, to
        self.evidence.update(vm=self.vm, from_host=current, to_host=to)
        self.evidence["migration_s"] = self._move(vm, to, f"inject migrate-to-host {to}",
                                                  f"VM {self.vm} to move from {current} to {to}")

    def _observe(self) -> FaultState:
        current = self._topology_host(self.inventory.vm(self.vm).host)
        home = self._home()
        if current is not None and current == home:
            return FaultState.CLEARED
        if current is not None and current == self.to_host:
            return FaultState.IN_EFFECT
        if current is not None and home is not None and self.origin is None and \
                self.topology.site_of(current).name == self.topology.site_of(home).name:
            return FaultState.CLEARED  # not injected by this process (recover): back in its own site
        return self._unknown.because(self.spec, f"VM {self.vm} runs on {current}, neither its home {home} nor "
                                                f"{self.to_host}")

    def revert(self) -> None:
        home = self._home()
        if home is None:
            raise ControlPlaneError(f"vm-migrate: cannot tell where VM {self.vm} belongs; set the node's host "
                                    "(databases[].nodes[].host)")
        vm = self.inventory.vm(self.vm)
        current = self._topology_host(vm.host)
        if current == home:
            return
        self.evidence["back_migration_s"] = self._move(vm, home, f"revert migrate-to-host {home}",
                                                       f"VM {self.vm} to move back to {home}")


# -- host maintenance --------------------------------------------------------------------------------

@dataclass
class HostMaintenance(_PrismFault):
    """The host enters maintenance through the Planned Outage Manager, its VMs migrated off; the revert exits."""

    host: str = ""
    timeout_s: float = 1800.0

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> HostMaintenance:
        assert isinstance(params, MaintenanceParams)
        if "vsan_mode" in params.model_fields_set:
            raise ConfigError("host-maintenance: params.vsan_mode is vSAN's; it means nothing on Nutanix (leave it "
                              "out)")
        return cls(spec, topology, _inventory(topology), host=target.name, timeout_s=params.timeout_s)

    def _calls(self) -> str:
        return ("POST .../clusters/{extId}/$actions/compute-non-migratable-vms, POST .../hosts/{extId}/$actions/"
                "enter-host-maintenance, POST .../hosts/{extId}/$actions/exit-host-maintenance")

    def _enter_body(self) -> dict[str, Any]:
        return {"shouldRollbackOnFailure": True,
                "shouldShutdownNonMigratableUvms": self.settings.shutdown_non_migratable_vms,
                "timeoutSeconds": int(self.timeout_s)}

    def plan(self) -> FaultPlan:
        cluster = _placeholder(f"extId of cluster {self.settings.cluster}")
        host = _placeholder(f"extId of host {host_name(self.settings, self.host)}")
        read = self.paths.host(cluster, host)
        compute = Call("POST", self.paths.compute_non_migratable(cluster), {"hosts": [host]}, fresh_id=True)
        refuse = Call("GET", self.paths.non_migratable_result(cluster, _placeholder("extId of the result")))
        return self._plan(
            [Call("GET", self.paths.clusters()), compute, refuse, Call("GET", read),
             Call("POST", self.paths.host_action(cluster, host, "enter-host-maintenance"), self._enter_body(),
                  "inject enter-host-maintenance")],
            [Call("GET", read), Call("POST", self.paths.host_action(cluster, host, "exit-host-maintenance"),
                                     {"timeoutSeconds": EXIT_MAINTENANCE_S}, "revert exit-host-maintenance")],
            (f"{self.timeout_s + 60:g} s; refused before it if Prism lists VMs it cannot migrate off "
             f"{self.host}" + ("" if not self.settings.shutdown_non_migratable_vms else
                               " (here: powered off, as the topology consents)"),
             f"{EXIT_MAINTENANCE_S + 60:g} s"))

    def _host_id(self) -> str:
        return self.inventory.host(host_name(self.settings, self.host)).ext_id

    def non_migratable(self) -> list[str]:
        """The VMs Prism says it cannot migrate off the host (compute-non-migratable-vms, then its result)."""
        cluster, host = self.inventory.cluster_id(), self._host_id()
        task = self.client.compute(self.paths.compute_non_migratable(cluster), {"hosts": [host]},
                                   str(uuid.uuid4()))  # computes only: no change to make idempotent
        ended = self.client.wait_task(task, f"the VMs that cannot leave {self.host}")
        result = next((str(e.get("extId")) for e in ended.get("entitiesAffected") or []
                       if isinstance(e, dict) and "non-migratable" in str(e.get("rel", ""))), None)
        if result is None:
            raise ControlPlaneError(f"{self.client.where()}: the compute-non-migratable-vms task names no result "
                                    "among its entitiesAffected (assumption A-prism-non-migratable-result): "
                                    f"cannot tell which VMs would stop; {self.host} is not put in maintenance")
        found = self.client.get(self.paths.non_migratable_result(cluster, result)).data
        vms = (found or {}).get("vms") if isinstance(found, dict) else None
        return sorted(f"{v.get('vmName')} ({v.get('nonMigratableVmReason', 'no reason given')})"
                      for v in vms or [] if isinstance(v, dict))

    def _refuse_stranded(self) -> None:
        stranded = self.non_migratable()
        if stranded and not self.settings.shutdown_non_migratable_vms:
            raise ControlPlaneError(f"{self.client.where()}: host-maintenance on {self.host}: Prism cannot migrate "
                                    f"{', '.join(stranded)} off it: refused (set {FIELD}.shutdown_non_migratable_vms "
                                    "to let maintenance power them off)")
        if stranded:
            self.evidence["powered_off_for_maintenance"] = stranded

    def preflight(self) -> None:
        run_checks(self.checks())
        host = self.inventory.host(host_name(self.settings, self.host))
        if host.maintenance != NORMAL:
            raise ControlPlaneError(f"{self.client.where()}: host {self.host} is {host.maintenance}, not normal: "
                                    "it must be out of maintenance first")
        self._refuse_stranded()

    def inject(self) -> None:
        self._refuse_stranded()
        cluster, host = self.inventory.cluster_id(), self._host_id()
        self.evidence.update(host=self.host)
        self.evidence["enter_s"] = self._act(
            None, self.paths.host_action(cluster, host, "enter-host-maintenance"),
            self._enter_body(), "inject enter-host-maintenance", f"host {self.host} to enter maintenance",
            self.timeout_s + 60)

    def _observe(self) -> FaultState:
        state = self.inventory.host(host_name(self.settings, self.host)).maintenance
        return FaultState.CLEARED if state == NORMAL else FaultState.IN_EFFECT

    def revert(self) -> None:
        if self.check() is FaultState.CLEARED:
            return
        cluster, host = self.inventory.cluster_id(), self._host_id()
        self.evidence["exit_s"] = self._act(
            None, self.paths.host_action(cluster, host, "exit-host-maintenance"),
            {"timeoutSeconds": EXIT_MAINTENANCE_S}, "revert exit-host-maintenance",
            f"host {self.host} to exit maintenance", EXIT_MAINTENANCE_S + 60)
