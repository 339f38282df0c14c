"""The `vsphere` and `vsan` platforms' descriptors, found through the `resilience_harness.platforms` entry point.

One folder, two platforms: vSphere acts through vCenter (a host's graceful shutdown or maintenance
mode, a VM's migration, a disk's IOPS limit), vSAN through its management API and the hosts' fault
injection script (a device or a disk group failed). A `kind: vsphere` topology's cluster is
vSphere's view around the database's own part; `harness discover --vcenter` drafts the topology.
pyVmomi is an extra: everything is named as strings and imported when a topology uses it.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from faults.contract import Backend, Condition, Platform
from harness_platforms.vsphere.assumptions import VSAN_ASSUMPTIONS, VSPHERE_ASSUMPTIONS
from harness_platforms.vsphere.vsan.section import KEY as VSAN_KEY
from harness_platforms.vsphere.vsan.section import VsanSettings

if TYPE_CHECKING:  # mypy checks each class against the contract; at run time nothing is imported
    from faults.contract import BackendClass, DrafterFactory, PlatformChecks
    from harness_platforms.vsphere.discover import drafter
    from harness_platforms.vsphere.faults import HostMaintenance, HostShutdown, VmMigrate
    from harness_platforms.vsphere.qos import DiskIopsLimit
    from harness_platforms.vsphere.vsan.faults import DiskFailure, DiskGroupFailure
    from harness_platforms.vsphere.vsan.probes import host_checks

    _backends: tuple[BackendClass, ...] = (HostShutdown, HostMaintenance, VmMigrate, DiskIopsLimit, DiskFailure,
                                           DiskGroupFailure)
    _hooks: tuple[PlatformChecks, DrafterFactory] = (host_checks, drafter)

_HERE = "harness_platforms.vsphere"


def draft_options(parser: argparse.ArgumentParser) -> None:
    """`harness discover --vcenter`: where vCenter is, who logs in, and how its certificate is trusted."""
    group = parser.add_argument_group("vSphere (the draft starts from vCenter)")
    group.add_argument("--vcenter", metavar="HOST", help="vCenter: its cluster, hosts, VMs, disk groups and rules")
    group.add_argument("--port", type=int, default=443)
    group.add_argument("--user")
    group.add_argument("--password-env", metavar="VAR", help="the environment variable holding the password")
    trust = group.add_mutually_exclusive_group()
    trust.add_argument("--ca", metavar="FILE", help="the CA that signed vCenter's certificate")
    trust.add_argument("--thumbprint", metavar="SHA256", help="vCenter's certificate, pinned by its SHA-256 thumbprint")
    group.add_argument("--datacenter", help="needed when vCenter has more than one")
    group.add_argument("--cluster", help="needed when vCenter has more than one")

VCENTER = Condition("management.vcenter is set", lambda target, topology: topology.management.vcenter is not None)

VSPHERE = Platform(
    "vsphere",
    # a graceful shutdown, refused unless the topology opts in: only when no BMC can cut the power
    (Backend("host-power-off", f"{_HERE}.faults:HostShutdown", VCENTER, fallback=True),
     Backend("host-maintenance", f"{_HERE}.faults:HostMaintenance", VCENTER),
     Backend("vm-migrate", f"{_HERE}.faults:VmMigrate", VCENTER),
     Backend("disk-iops-limit", f"{_HERE}.qos:DiskIopsLimit", VCENTER)),
    hosts_clusters=True,
    cluster=f"{_HERE}.view:VsphereCluster",
    checks=(f"{_HERE}.vsan.probes:host_checks",),
    drafter=f"{_HERE}.discover:drafter",
    drafter_options=f"{_HERE}.platform:draft_options",
    identifies_hosts=f"{_HERE}.probes:identities",
    extra="vsphere",
    summary="vCenter (pyVmomi)",
    assumptions=VSPHERE_ASSUMPTIONS,
)

VSAN = Platform(
    "vsan",
    (Backend("disk-failure", f"{_HERE}.vsan.faults:DiskFailure", VCENTER),
     Backend("disk-group-failure", f"{_HERE}.vsan.faults:DiskGroupFailure", VCENTER)),
    section=VsanSettings,
    section_at=VSAN_KEY,
    extra="vsphere",
    summary="vSAN (its management API and the hosts' fault-injection script)",
    assumptions=VSAN_ASSUMPTIONS,
)
