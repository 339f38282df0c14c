"""The `pdu` platform's descriptor: what the harness reads to plan, inject and revert through a rack PDU.

SDK-free and import-light: the backend and the view are named as strings and imported only
when a topology uses them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from faults.contract import Backend, Platform, TargetKind, on_section
from harness_pdu.section import NAME, PduSection

if TYPE_CHECKING:  # mypy checks each class against the backend contract; at run time nothing is imported
    from faults.contract import BackendClass, ClusterPartClass, ObserverClass, Probe
    from harness_pdu.outlet_fault import OutletPowerOff
    from harness_pdu.view import OutletPower, PduView, probe

    _backends: tuple[BackendClass, ...] = (OutletPowerOff,)
    _view: tuple[ClusterPartClass, ObserverClass, Probe] = (PduView, OutletPower, probe)

FED_BY_AN_OUTLET = on_section("the host is fed by an outlet of management.platforms.pdu", NAME, PduSection,
                              lambda target, topology, pdu: target.kind is TargetKind.HOST and target.name in pdu.outlets)

PLATFORM = Platform(
    NAME,
    (Backend("host-power-off", "harness_pdu.outlet_fault:OutletPowerOff", FED_BY_AN_OUTLET),),
    section=PduSection,
    cluster_part="harness_pdu.view:PduView",
    probes=("harness_pdu.view:probe",),
    observers=("harness_pdu.view:OutletPower",),
    summary="a rack PDU's switched outlets (Redfish PowerDistribution)",
)
