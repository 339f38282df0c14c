"""The `redfish` platform's descriptor, found through the `resilience_harness.platforms` entry point.

A host's power is cut at its BMC (`ComputerSystem.Reset`), the out-of-band way a host is lost;
before anything is journaled the BMC's system is compared with the host as its cluster manager
knows it (`host_identities`), so a BMC entry pointing at another server is refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from faults.contract import Backend, Condition, Platform, Target, TargetKind, Topology

if TYPE_CHECKING:  # mypy checks each class against the contract; at run time nothing is imported
    from faults.contract import BackendClass
    from harness_platforms.redfish.faults import HostPowerOff, SitePowerOff

    _backends: tuple[BackendClass, ...] = (HostPowerOff, SitePowerOff)


def _host_has_bmc(target: Target, topology: Topology) -> bool:
    return target.kind is TargetKind.HOST and topology.host(target.name).bmc is not None


def _every_host_of_site_has_bmc(target: Target, topology: Topology) -> bool:
    site = next((s for s in topology.sites if s.name == target.name), None)
    return site is not None and all(host.bmc for host in site.hosts)


HOST_HAS_BMC = Condition("the host has a BMC", _host_has_bmc)
SITE_HAS_BMCS = Condition("every host of the site has a BMC", _every_host_of_site_has_bmc)
_FAULTS = "harness_platforms.redfish.faults"

PLATFORM = Platform(
    "redfish",
    (Backend("host-power-off", f"{_FAULTS}:HostPowerOff", HOST_HAS_BMC),
     Backend("site-power-off", f"{_FAULTS}:SitePowerOff", SITE_HAS_BMCS)),
    extra="redfish",
    summary="the hosts' BMCs (Redfish)",
)
