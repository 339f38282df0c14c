"""The `pdu` platform's descriptor: what the harness reads to plan, inject and revert through a rack PDU.

SDK-free and import-light: the backend and the view are named as strings and imported only
when a topology uses them.
"""

from __future__ import annotations

from faults.platform import Backend, Condition, Platform
from harness_kernel.topology.models import Topology
from harness_kernel.topology.targets import Target, TargetKind
from harness_pdu.section import NAME, PduSection


def _fed_by_an_outlet(target: Target, topology: Topology) -> bool:
    outlets = (topology.management.platforms.get(NAME) or {}).get("outlets")
    return target.kind is TargetKind.HOST and isinstance(outlets, dict) and target.name in outlets


FED_BY_AN_OUTLET = Condition("the host is fed by an outlet of management.platforms.pdu", _fed_by_an_outlet)

PLATFORM = Platform(
    NAME,
    (Backend("host-power-off", "harness_pdu.outlet_fault:OutletPowerOff", FED_BY_AN_OUTLET),),
    section=PduSection,
    cluster_part="harness_pdu.view:PduView",
    probes=("harness_pdu.view:probe",),
    observers=("harness_pdu.view:OutletPower",),
    summary="a rack PDU's switched outlets (Redfish PowerDistribution)",
)
