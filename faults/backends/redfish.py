"""Host and site power loss through the hosts' BMCs (Redfish), as HA sees a real failure.

An out-of-band `ForceOff` is what a power cut looks like to vSphere HA: the host stops
answering, HA restarts its VMs elsewhere. (`ShutdownHost_Task` is graceful and cannot be
undone from vCenter; that path is the vsphere backend's, and refused there by default.)
Revert is `On`, then a bounded wait until the BMC reports `PowerState: On`; the host's return
to vCenter (connected, out of maintenance, resync done) is the recovery check's job.

`from_spec` builds without contacting anything: the plan names every BMC and its system id
(or that it will be discovered from `/redfish/v1/Systems`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from faults.base import FaultPlan, FaultSpec, FaultState, UnknownState
from faults.kinds import Params
from faults.transports.redfish import RedfishClient, endpoint_named
from harness_kernel.errors import ConfigError, ControlPlaneError, RevertFailedError
from harness_kernel.topology.models import Host, Topology
from harness_kernel.topology.targets import Target

BACKEND = "redfish"
FORCE_OFF = "ForceOff"
ON = "On"
POWER_ON_TIMEOUT_S = 300.0
POWER_OFF_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Bmc:
    """A host with the BMC that powers it."""

    host: str
    client: RedfishClient

    @property
    def credential(self) -> str:
        return f"{self.client.field_path}.credential.password"

    def describe(self) -> str:
        system = self.client.endpoint.system_id
        where = f"system {system}" if system else "its only system (discovered from /redfish/v1/Systems)"
        return f"{self.client.where} {where}"


def bmc_of(topology: Topology, host: Host) -> Bmc:
    if host.bmc is None:
        raise ConfigError(f"host {host.name}: no BMC (sites[].hosts[].bmc names a management.redfish endpoint)")
    index, endpoint = endpoint_named(topology, host.bmc)
    return Bmc(host.name, RedfishClient(endpoint, f"management.redfish[{index}]"))


@dataclass
class _PowerOff:
    """Power off every BMC's system; revert powers each on and waits for it. Shared by host and site."""

    spec: FaultSpec
    bmcs: tuple[Bmc, ...]
    power_on_timeout_s: float = POWER_ON_TIMEOUT_S
    power_off_timeout_s: float = POWER_OFF_TIMEOUT_S
    _unknown: UnknownState = field(default_factory=UnknownState, init=False, repr=False)

    @property
    def backend(self) -> str:
        return BACKEND

    def plan(self) -> FaultPlan:
        return FaultPlan(
            spec=self.spec, backend=BACKEND,
            inject_steps=tuple(f"{b.host}: ComputerSystem.Reset ResetType={FORCE_OFF} via {b.describe()}, then wait "
                               f"PowerState Off (up to {self.power_off_timeout_s:g} s)" for b in self.bmcs),
            revert_steps=tuple(f"{b.host}: ComputerSystem.Reset ResetType={ON} via {b.describe()}, then wait "
                               f"PowerState On (up to {self.power_on_timeout_s:g} s)" for b in self.bmcs),
            credentials=tuple(dict.fromkeys(b.credential for b in self.bmcs)),
            effects=frozenset(f"host:{b.host}" for b in self.bmcs),
        )

    def preflight(self) -> None:
        """Each BMC answers, its system is found and it can do both resets, before anything is journaled."""
        for bmc in self.bmcs:
            allowed = bmc.client.allowed_resets()
            missing = [t for t in (FORCE_OFF, ON) if allowed and t not in allowed]
            if missing:
                raise ControlPlaneError(f"{bmc.client.where}: host {bmc.host} does not allow ResetType "
                                        f"{', '.join(missing)} (allowed: {', '.join(allowed)})")
            state = bmc.client.power_state()
            if state != ON:
                raise ControlPlaneError(f"{bmc.client.where}: host {bmc.host} is {state}, not On: nothing to power off")

    def inject(self) -> None:
        for bmc in self.bmcs:
            bmc.client.reset(FORCE_OFF)
        for bmc in self.bmcs:
            bmc.client.wait_power("Off", self.power_off_timeout_s)

    def check(self) -> FaultState:
        """IN_EFFECT while any system is off; CLEARED when all are On; UNKNOWN if a BMC cannot say."""
        states = []
        for bmc in self.bmcs:
            try:
                states.append(bmc.client.power_state())
            except (ControlPlaneError, ConfigError) as exc:
                return self._unknown.because(self.spec, str(exc))
        if all(s == ON for s in states):
            return FaultState.CLEARED
        return FaultState.IN_EFFECT

    def revert(self) -> None:
        """Power on every system that is not On, then wait for all of them. Idempotent."""
        failures = []
        for bmc in self.bmcs:
            try:
                if bmc.client.power_state() != ON:
                    bmc.client.reset(ON)
            except (ControlPlaneError, ConfigError) as exc:
                failures.append(str(exc))
        for bmc in self.bmcs:
            try:
                bmc.client.wait_power(ON, self.power_on_timeout_s)
            except (ControlPlaneError, ConfigError) as exc:
                failures.append(str(exc))
        if failures:
            raise RevertFailedError(f"{self.spec.kind} on {self.spec.target}: not powered on again: " + "; ".join(failures))


class HostPowerOff(_PowerOff):
    """host-power-off on a host with a BMC: ForceOff, and On again at revert."""

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> HostPowerOff:
        try:
            host = topology.host(target.name)
        except KeyError:
            raise ConfigError(f"{spec.kind}: no host named {target.name!r}") from None
        return cls(spec, (bmc_of(topology, host),))


class SitePowerOff(_PowerOff):
    """site-power-off: every host of the site through its BMC; refused if any host has none."""

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> SitePowerOff:
        site = next((s for s in topology.sites if s.name == target.name), None)
        if site is None:
            raise ConfigError(f"{spec.kind}: no site named {target.name!r}")
        lacking = [h.name for h in site.hosts if not h.bmc]
        if lacking:
            raise ConfigError(f"{spec.kind} on {spec.target}: hosts without a BMC: {', '.join(lacking)}; a site loses "
                              "power only if every host does (give each a bmc in sites[].hosts[])")
        return cls(spec, tuple(bmc_of(topology, h) for h in site.hosts))
