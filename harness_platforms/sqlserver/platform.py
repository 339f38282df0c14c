"""The `sqlserver` and `wsfc` platforms' descriptors, found through the `resilience_harness.platforms` entry point.

One folder, two platforms: SQL Server acts through T-SQL (backup, restore, an availability
group's role move), Windows Server Failover Clustering through PowerShell over WinRM (a failover
cluster instance's role is a WSFC role, never moved with T-SQL). An FCI's view reads both, so
they share the folder. The views, backends and the discover step are named as strings and
imported only when a topology uses them (pyodbc and pywinrm are extras).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from faults.contract import Backend, Platform, database_kind
from harness_platforms.sqlserver.assumptions import ASSUMPTIONS

if TYPE_CHECKING:  # mypy checks each class against the contract; at run time nothing is imported
    from faults.contract import BackendClass, ClusterPartClass, DrafterFactory
    from harness_platforms.sqlserver.backup import SqlServerBackup
    from harness_platforms.sqlserver.discover import drafter
    from harness_platforms.sqlserver.faults import AgFailover
    from harness_platforms.sqlserver.restore import SqlServerRestore
    from harness_platforms.sqlserver.view import AvailabilityGroupCluster, FailoverInstanceCluster
    from harness_platforms.sqlserver.wsfc.faults import FciRoleMove

    _backends: tuple[BackendClass, ...] = (SqlServerBackup, SqlServerRestore, AgFailover, FciRoleMove)
    _views: tuple[ClusterPartClass, ...] = (AvailabilityGroupCluster, FailoverInstanceCluster)
    _drafter: DrafterFactory = drafter

_HERE = "harness_platforms.sqlserver"


def draft_options(parser: argparse.ArgumentParser) -> None:
    """`harness discover --winrm` and `--sql`: one failover cluster node and one instance, each with its login."""
    group = parser.add_argument_group("SQL Server and WSFC (their part of the draft)")
    group.add_argument("--winrm", metavar="HOST", help="a failover cluster node: its nodes, roles and quorum")
    group.add_argument("--winrm-port", type=int, default=5986)
    group.add_argument("--winrm-user", metavar="DOMAIN\\USER")
    group.add_argument("--winrm-password-env", metavar="VAR")
    group.add_argument("--winrm-ca", metavar="FILE", help="the CA of the node's WinRM certificate (else the system's)")
    group.add_argument("--winrm-transport", default="ntlm", choices=("ntlm", "kerberos", "credssp"))
    group.add_argument("--sql", metavar="HOST", help="a SQL Server instance: its availability groups (replicas, modes, "
                                                     "listener) or the failover cluster instance it is")
    group.add_argument("--sql-port", type=int, default=1433)
    group.add_argument("--sql-user")
    group.add_argument("--sql-password-env", metavar="VAR")

SQL_SERVER_KINDS = ("sqlserver-ag", "sqlserver-fci")

SQLSERVER = Platform(
    "sqlserver",
    # BACKUP and RESTORE DATABASE are T-SQL on the instance, AG or FCI alike; an AG's role moves with T-SQL too
    (Backend("backup", f"{_HERE}.backup:SqlServerBackup", database_kind(*SQL_SERVER_KINDS)),
     Backend("restore", f"{_HERE}.restore:SqlServerRestore", database_kind(*SQL_SERVER_KINDS)),
     Backend("role-move", f"{_HERE}.faults:AgFailover", database_kind("sqlserver-ag"))),
    databases=(("sqlserver-ag", f"{_HERE}.view:AvailabilityGroupCluster"),
               ("sqlserver-fci", f"{_HERE}.view:FailoverInstanceCluster")),
    drafter=f"{_HERE}.discover:drafter",
    drafter_options=f"{_HERE}.platform:draft_options",
    extra="sqlserver",
    summary="SQL Server, through T-SQL",
)

WSFC = Platform(
    "wsfc",
    # an FCI's role is a WSFC role (Move-ClusterGroup), never moved with T-SQL
    (Backend("role-move", f"{_HERE}.wsfc.faults:FciRoleMove", database_kind("sqlserver-fci")),),
    extra="wsfc",
    summary="Windows Server Failover Clustering, through PowerShell over WinRM",
    assumptions=ASSUMPTIONS,
)
