"""The platforms this package brings, as descriptors (`faults.platform`), in the order they are tried.

Adding an in-tree platform is its backend module(s) and one descriptor here; a platform from
another package declares the same descriptor behind the `resilience_harness.platforms` entry
point (`faults.plugins`). The embedded lab comes first: on the lab everything goes to the lab's
own controls. Every class named here has `from_spec(spec, params, target, topology)`; a unit
test builds and plans each pair.
"""

from __future__ import annotations

from faults.platform import (
    ALWAYS,
    HOST_HAS_BMC,
    ON_THE_LAB,
    PATH_OF_THE_LAB,
    REAL_CLUSTER,
    SITE_HAS_BMCS,
    VCENTER,
    Backend,
    Platform,
    database_kind,
)

_LAB = "faults.backends.lab"
_VSPHERE = "faults.backends.vsphere.faults"

LAB = Platform("lab", (
    Backend("host-crash", f"{_LAB}:HostCrash", ON_THE_LAB),
    Backend("host-hang", f"{_LAB}:HostHang", ON_THE_LAB),
    Backend("site-failure", f"{_LAB}:SiteFailure", ON_THE_LAB),
    Backend("site-isolation", f"{_LAB}:Isolation", ON_THE_LAB),
    Backend("witness-isolation", f"{_LAB}:Isolation", ON_THE_LAB),
    Backend("link-partition", f"{_LAB}:LinkPartition", ON_THE_LAB),
    # the lab delays its inter-site path with the router backend's netem where the kernel has it, with
    # Toxiproxy where it has not; a vSphere topology bound to the lab has the lab's path too
    Backend("latency", f"{_LAB}:Latency", PATH_OF_THE_LAB),
    Backend("role-switchover", f"{_LAB}:RoleSwitchover", ON_THE_LAB),
    Backend("storage-loss", f"{_LAB}:StorageLoss", ON_THE_LAB),
    Backend("replication-async", f"{_LAB}:ReplicationAsync", ON_THE_LAB),
    Backend("backup", "faults.backends.pgbackup:PgBaseBackup", ON_THE_LAB),
    Backend("restore", "faults.backends.pgrestore:PgRestore", ON_THE_LAB),
), summary="the embedded lab's own controls")

PROCESS = Platform("process", (
    Backend("process-freeze", "faults.backends.process:ProcessFreeze", ALWAYS),
), summary="a local process tree, by its pidfile")

ROUTER = Platform("router", (
    Backend("link-partition", "faults.backends.router:RouterPartition", REAL_CLUSTER),
    Backend("witness-isolation", "faults.backends.router:RouterPartition", REAL_CLUSTER),
    Backend("latency", "faults.backends.router:RouterLatency", REAL_CLUSTER),
), extra="router", summary="the Linux L3 router between the sites (nftables, netem), over SSH")

POSTGRES = Platform("postgres", (
    Backend("backup", "faults.backends.pgbackup:PgBaseBackup", database_kind("postgres")),
    Backend("restore", "faults.backends.pgrestore:PgRestore", database_kind("postgres")),
), summary="PostgreSQL's own tools")

REDFISH = Platform("redfish", (
    Backend("host-power-off", "faults.backends.redfish:HostPowerOff", HOST_HAS_BMC),
    Backend("site-power-off", "faults.backends.redfish:SitePowerOff", SITE_HAS_BMCS),
), extra="redfish", summary="the hosts' BMCs (Redfish)")

VSPHERE = Platform("vsphere", (
    # a graceful shutdown, refused unless the topology opts in: only when no BMC can cut the power
    Backend("host-power-off", f"{_VSPHERE}:HostShutdown", VCENTER, fallback=True),
    Backend("host-maintenance", f"{_VSPHERE}:HostMaintenance", VCENTER),
    Backend("vm-migrate", f"{_VSPHERE}:VmMigrate", VCENTER),
    Backend("disk-iops-limit", "faults.backends.vsphere.qos:DiskIopsLimit", VCENTER),
), extra="vsphere", summary="vCenter (pyVmomi)")

VSAN = Platform("vsan", (
    Backend("disk-failure", "faults.backends.vsan.faults:DiskFailure", VCENTER),
    Backend("disk-group-failure", "faults.backends.vsan.faults:DiskGroupFailure", VCENTER),
), extra="vsphere", summary="vSAN (its management API and the hosts' fault-injection script)")

IN_TREE: tuple[Platform, ...] = (LAB, PROCESS, ROUTER, POSTGRES, REDFISH, VSPHERE, VSAN)
