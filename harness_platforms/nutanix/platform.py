"""The `nutanix` platform's descriptor, found through the `resilience_harness.platforms` entry point.

SDK-free and import-light: backends, the cluster part, probes and observers are named as strings and
imported only when a topology uses them. Node power loss is not here: Prism has no host power call,
so `host-power-off` on a Nutanix host goes through its BMC (the harness's Redfish backend), as
Nutanix's own X-Ray powers nodes off out of band.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from faults.contract import Backend, FaultKind, NoParams, Platform, TargetKind, on_section
from harness_platforms.nutanix.assumptions import ASSUMPTIONS
from harness_platforms.nutanix.section import NAME, NutanixSection

if TYPE_CHECKING:  # mypy checks each class against the backend contract; at run time nothing is imported
    from faults.contract import BackendClass, ClusterPartClass, ObserverClass, Probe
    from harness_platforms.nutanix.faults import HostMaintenance, VmGuestShutdown, VmMigrate, VmPowerOff
    from harness_platforms.nutanix.view import NutanixView, Resilience, probe, probe_elements

    _backends: tuple[BackendClass, ...] = (VmPowerOff, VmGuestShutdown, VmMigrate, HostMaintenance)
    _view: tuple[ClusterPartClass, ObserverClass, Probe, Probe] = (NutanixView, Resilience, probe, probe_elements)


ON_NUTANIX = on_section("the topology's kind is nutanix (with management.platforms.nutanix)", NAME, NutanixSection,
                        lambda target, topology, prism: topology.kind == NAME)
_FAULTS = "harness_platforms.nutanix.faults"

KINDS = (
    FaultKind("vm-power-off", TargetKind.NODE, NoParams, False,
              "the node's VM loses power at once (hypervisor power-off), then is powered on"),
    FaultKind("vm-guest-shutdown", TargetKind.NODE, NoParams, False,
              "the node's guest OS shuts down from inside (guest tools), then the VM is powered on"),
)

NOT_OFFERED = (
    ("disk-failure", "no supported interface fails a disk; a planned removal (DELETE .../config/disks/{extId}) "
                     "migrates the data off first: it is not a failure"),
    ("cvm-crash", "no supported interface crashes a Controller VM (the v4 cvms endpoints only read and update)"),
    ("metro-failover", "later: Nutanix DR recovery plans (planned/unplanned failover), behind the metro observer"),
)

PLATFORM = Platform(
    NAME,
    (Backend("vm-power-off", f"{_FAULTS}:VmPowerOff", ON_NUTANIX),
     Backend("vm-guest-shutdown", f"{_FAULTS}:VmGuestShutdown", ON_NUTANIX),
     Backend("vm-migrate", f"{_FAULTS}:VmMigrate", ON_NUTANIX),
     Backend("host-maintenance", f"{_FAULTS}:HostMaintenance", ON_NUTANIX)),
    kinds=KINDS,
    section=NutanixSection,
    cluster_part="harness_platforms.nutanix.view:NutanixView",
    probes=("harness_platforms.nutanix.view:probe", "harness_platforms.nutanix.view:probe_elements"),
    observers=("harness_platforms.nutanix.view:Resilience",),
    hosts_clusters=True,
    summary="Nutanix AHV through Prism Central v4",
    not_offered=NOT_OFFERED,
    assumptions=ASSUMPTIONS,
)
