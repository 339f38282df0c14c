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

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from faults.contract import (
    Check,
    ConfigError,
    ControlPlaneError,
    FaultPlan,
    FaultSpec,
    FaultState,
    Host,
    HostIdentity,
    Params,
    RedfishClient,
    RevertFailedError,
    Target,
    TargetKind,
    Topology,
    Uncertain,
    UnknownState,
    host_identities,
    run_checks,
)
from faults.contract import bmc_named as endpoint_named

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


Identity = HostIdentity  # a server's SMBIOS UUID and serial number, None where unknown


def same_server(bmc: Identity, host: Identity) -> str | None:
    """How the BMC's system and the host are one server (what matched), or None if they are not.

    UUIDs match as written or with their first three fields byte-swapped: SMBIOS 2.6 keeps those
    little-endian ("the PC industry ... has consistently used little-endian byte encoding for the
    first three fields", SMBIOS 2.6 as quoted in qemu commit caad057), and BMCs and hypervisors
    differ in which order they print. Serial numbers decide only where a UUID is missing.
    """
    (bmc_uuid, bmc_serial), (host_uuid, host_serial) = bmc, host
    if bmc_uuid and host_uuid:
        ours, theirs = _uuid(bmc_uuid), _uuid(host_uuid)
        if ours is not None and theirs is not None:
            if ours == theirs:
                return f"UUID {host_uuid}"
            if ours.bytes == theirs.bytes_le:
                return f"UUID {host_uuid} (the BMC prints its first three fields byte-swapped, as SMBIOS 2.6 stores them)"
            return None
    if bmc_serial and host_serial:
        return f"serial number {host_serial}" if bmc_serial.strip().lower() == host_serial.strip().lower() else None
    raise Uncertain("neither a UUID nor a serial number is reported on both sides "
                    f"(BMC: {bmc_uuid or '-'} / {bmc_serial or '-'}; host: {host_uuid or '-'} / {host_serial or '-'})")


def _uuid(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text.strip().strip("{}"))
    except ValueError:
        return None


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
    host_identity: Callable[[str], Identity] | None = None  # the cluster manager's word on a host (None: no manager)
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
            effects=frozenset(str(Target.of(TargetKind.HOST, b.host)) for b in self.bmcs),
        )

    def checks(self) -> list[Check]:
        """Per BMC: it allows both resets, and it powers the host the topology says (not another server)."""
        found: list[Check] = []
        for bmc in self.bmcs:
            found.append(Check(f"BMC of {bmc.host} allows ResetType {FORCE_OFF} and {ON}", self._resets(bmc),
                               "use a BMC account (or firmware) that may reset the system", bmc.client.where))
            found.append(Check(f"BMC of {bmc.host} powers host {bmc.host}", self._belongs(bmc),
                               f"give host {bmc.host} the address (and system_id) of its own BMC: this one would "
                               "power off another server", bmc.client.where))
        return found

    def _resets(self, bmc: Bmc) -> Callable[[], str]:
        def check() -> str:
            allowed = bmc.client.allowed_resets()
            if allowed is None:
                raise Uncertain(f"{bmc.client.where}: the system publishes no allowable ResetType values (neither "
                                "AllowableValues nor ActionInfo): a reset it refuses is found at inject")
            missing = [t for t in (FORCE_OFF, ON) if t not in allowed]
            if missing:
                raise ControlPlaneError(f"{bmc.client.where}: host {bmc.host} does not allow ResetType "
                                        f"{', '.join(missing)} (allowed: {', '.join(allowed) or 'none'})")
            return f"allowed: {', '.join(allowed)}"
        return check

    def _belongs(self, bmc: Bmc) -> Callable[[], str]:
        def check() -> str:
            if self.host_identity is None:
                raise Uncertain(f"host {bmc.host}: no cluster manager in the topology to compare the BMC's system with")
            ours, theirs = bmc.client.identity(), self.host_identity(bmc.host)
            matched = same_server(ours, theirs)
            if matched is None:
                raise ControlPlaneError(
                    f"{bmc.client.where} powers a server with UUID {ours[0] or '-'} (serial {ours[1] or '-'}), but "
                    f"host {bmc.host} is UUID {theirs[0] or '-'} (serial {theirs[1] or '-'}) in vCenter: another server")
            return f"the BMC's system and host {bmc.host} share {matched}"
        return check

    def preflight(self) -> None:
        """Each BMC answers, may reset its system and powers its own host, before anything is journaled."""
        run_checks(self.checks())
        for bmc in self.bmcs:
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
        return cls(spec, (bmc_of(topology, host),), _identities(topology))


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
        return cls(spec, tuple(bmc_of(topology, h) for h in site.hosts), _identities(topology))


def _identities(topology: Topology) -> Callable[[str], Identity] | None:
    """How a host's identity is read: by the cluster manager's platform (vCenter when the topology names one)."""
    return host_identities(topology)
