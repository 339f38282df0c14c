"""Watched read-only, the WinRM and ODBC transports send the SQL Server and WSFC checks and refuse their faults.

What `doctor` relies on, through the real payload paths: pywinrm to the WS-Management stand-in (the
model cluster), the T-SQL session to the SQL Server model at the DB-API level.
"""

from __future__ import annotations

import pytest

from faults import registry
from faults.base import FaultSpec
from faults.transports import wire
from harness_platforms.sqlserver.faults import AgFailover
from harness_platforms.sqlserver.wsfc.faults import FciRoleMove
from tests.support.contract_world import WsfcWorld, ag_topology
from tests.support.sqlserver_model import SqlServerModel


def test_an_availability_groups_checks_are_queries_and_its_failover_is_refused_unsent(sql: SqlServerModel) -> None:
    fault = registry.build(FaultSpec("role-move", "database:sql-ag-01"), ag_topology())
    assert isinstance(fault, AgFailover)
    for session in fault.group.sessions.values():
        session.connector = sql.connect
    with wire.watching(read_only=True) as sent:
        fault.preflight()
        with pytest.raises(wire.WriteRefused, match=r"FAILOVER; would change something; refused"):
            fault.inject()
    assert sql.executed == []
    reads = [c for c in sent.calls if c.reads]
    assert reads and {c.transport for c in reads} == {"odbc"} and sent.writes() == [sent.calls[-1]]
    assert all(c.operation.split(": ", 1)[1].upper().startswith(("SELECT", "WITH")) for c in reads), reads


def test_a_failover_cluster_instances_checks_are_get_cmdlets_and_its_move_is_refused_unsent(wsfc: WsfcWorld) -> None:
    fault = registry.build(FaultSpec("role-move", "database:sql-fci-01"), wsfc.topology())
    assert isinstance(fault, FciRoleMove)
    with wire.watching(read_only=True) as sent:
        fault.preflight()
        with pytest.raises(wire.WriteRefused, match="Move-ClusterGroup would change something; refused"):
            fault.inject()
    assert wsfc.model.moves == []
    commands = {cmd for c in sent.calls if c.reads for cmd in c.operation.split(": ", 1)[1].split()}
    assert commands and all(c.startswith(("Get-", "Where-", "Select-", "ForEach-", "Sort-")) for c in commands), commands
    assert [c.transport for c in sent.writes()] == ["winrm"]


@pytest.mark.parametrize(("script", "reads"), [
    ("Get-ClusterGroup -Name 'SQL Server (MSSQLSERVER)' | Select-Object Name, State", True),
    ("Get-WinEvent -LogName 'Microsoft-Windows-FailoverClustering/Operational' -MaxEvents 5", True),
    ("Move-ClusterGroup -Name 'SQL Server (MSSQLSERVER)' -Node fci02 -Wait 120", False),
    ("$g = Get-ClusterGroup -Name 'x'; $g.FailoverThreshold = 3", False),
    ("Remove-Item -LiteralPath 'C:\\\\backup\\\\x.bak'", False),
])
def test_a_powershell_script_reads_only_if_every_cmdlet_does(script: str, reads: bool) -> None:
    assert wire.powershell_reads(script) is reads


@pytest.mark.parametrize(("sql", "reads"), [
    ("SELECT ag.name FROM sys.availability_groups AS ag WHERE ag.name = ?", True),
    ("WITH r AS (SELECT 1 AS x) SELECT x FROM r", True),
    ("ALTER AVAILABILITY GROUP [AG01] FAILOVER;", False),
    ("SELECT * INTO #copy FROM sys.databases", False),
    ("SELECT 1; EXEC sp_configure 'x', 1", False),
    ("BACKUP DATABASE [bench] TO DISK = 'x' WITH COPY_ONLY", False),
])
def test_a_t_sql_query_reads_only_if_it_is_a_select_changing_nothing(sql: str, reads: bool) -> None:
    assert wire.sql_reads(sql) is reads
