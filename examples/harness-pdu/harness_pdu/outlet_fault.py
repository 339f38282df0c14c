"""host-power-off through the outlet that feeds the host: Off, then On again at revert.

An outlet the harness did not switch off is never switched on: the preflight refuses an
outlet that is not On (or is locked) before anything is journaled, so the revert only ever
undoes what the inject did.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from faults.contract import (
    ConfigError,
    ControlPlaneError,
    FaultPlan,
    FaultSpec,
    FaultState,
    Params,
    RevertFailedError,
    Target,
    Topology,
    UnknownState,
    section,
)
from harness_pdu.client import FIELD, RackPdu
from harness_pdu.section import NAME, PduSection

ON, OFF = "On", "Off"


@dataclass
class OutletPowerOff:
    spec: FaultSpec
    pdu: RackPdu
    outlet: str
    _unknown: UnknownState = field(default_factory=UnknownState, init=False, repr=False)

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> OutletPowerOff:
        settings = section(topology, NAME, PduSection)
        outlet = settings.outlets.get(target.name)
        if outlet is None:
            raise ConfigError(f"{spec.kind} on {spec.target}: {FIELD}.outlets names no outlet for {target.name}")
        return cls(spec, RackPdu(settings), outlet)

    @property
    def backend(self) -> str:
        return NAME

    def plan(self) -> FaultPlan:
        where = f"outlet {self.outlet} of {self.pdu.path} ({self.pdu.section.base()})"
        bound = f"(up to {self.pdu.section.switch_timeout_s:g} s)"
        return FaultPlan(self.spec, NAME,
                         inject_steps=(f"{where}: Outlet.PowerControl PowerState={OFF}, then wait PowerState {OFF} "
                                       f"{bound}",),
                         revert_steps=(f"{where}: Outlet.PowerControl PowerState={ON}, then wait PowerState {ON} "
                                       f"{bound}",),
                         credentials=(f"{FIELD}.credential.password",))

    def preflight(self) -> None:
        """The PDU answers, the login works, and the outlet is On and not locked: it is ours to switch off."""
        found = self.pdu.outlet(self.outlet)
        if found.get("PowerState") != ON or found.get("PowerStateInTransition"):
            raise ControlPlaneError(f"{self.pdu.where}: outlet {self.outlet} is {found.get('PowerState')}, not On: "
                                    "nothing to switch off, and nothing the harness may switch on")
        if found.get("PowerControlLocked"):
            raise ControlPlaneError(f"{self.pdu.where}: outlet {self.outlet} has PowerControlLocked")

    def inject(self) -> None:
        self.pdu.switch(self.outlet, OFF)
        self.pdu.wait(self.outlet, OFF)

    def check(self) -> FaultState:
        try:
            state, moving = self.pdu.power_state(self.outlet)
        except (ControlPlaneError, ConfigError) as exc:
            return self._unknown.because(self.spec, str(exc))
        if moving:
            return self._unknown.because(self.spec, f"outlet {self.outlet} is switching")
        return {ON: FaultState.CLEARED, OFF: FaultState.IN_EFFECT}.get(state, FaultState.UNKNOWN)

    def revert(self) -> None:
        """On, unless it is On already; then wait for it. Idempotent."""
        try:
            state, moving = self.pdu.power_state(self.outlet)
            if state != ON or moving:
                self.pdu.switch(self.outlet, ON)
            self.pdu.wait(self.outlet, ON)
        except (ControlPlaneError, ConfigError) as exc:
            raise RevertFailedError(f"{self.spec.kind} on {self.spec.target}: outlet {self.outlet} not on again: "
                                    f"{exc}") from exc
