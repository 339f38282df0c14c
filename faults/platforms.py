"""The descriptors of what is not a product (`faults.platform`), tried before every platform's.

The embedded lab, a local process, the Linux router between the sites and PostgreSQL's own tools.
Every product platform (vSphere, vSAN, SQL Server, WSFC, Redfish, Nutanix, VPLEX) is a folder of
`harness_platforms/` behind the `resilience_harness.platforms` entry point, found as a third
party's would be (`faults.plugins`). The embedded lab comes first: on the lab everything goes to
the lab's own controls. Every class named here has `from_spec(spec, params, target, topology)`;
a unit test builds and plans each pair.
"""

from __future__ import annotations

from faults.platform import (
    ALWAYS,
    ON_THE_LAB,
    PATH_OF_THE_LAB,
    REAL_CLUSTER,
    Backend,
    Platform,
    database_kind,
)

_LAB = "faults.backends.lab"

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
), databases=(("postgres", "harness.clusters.lab:LabCluster"),),  # the lab's view, bound to vSphere's simulator too
    summary="PostgreSQL's own tools")

IN_TREE: tuple[Platform, ...] = (LAB, PROCESS, ROUTER, POSTGRES)
