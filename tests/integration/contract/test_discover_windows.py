"""`discover --winrm --sql` drafts the database part from what the cluster and the instance say, only reading.

Through the real payload paths: pywinrm (https, NTLM) to the WS-Management stand-in of the model
failover cluster, the T-SQL session to the SQL Server model at the DB-API level. The part it drafts
joins a vSphere topology and loads.
"""

from __future__ import annotations

from typing import Any

from faults.drafts import SeenVm
from faults.transports import wire
from harness_kernel.topology.loader import parse_topology
from harness_platforms.sqlserver.discover import SqlTarget, WindowsDraft, WinRmTarget, databases, read, winrm_section
from tests.support.contract_world import SQL_PASSWORD_ENV, WINRM_ACCOUNT, WINRM_PASSWORD_ENV, WsfcWorld, example
from tests.support.sqlserver_model import SqlServerModel

VMS = [SeenVm("SQL01", "esx-a1")]  # what vCenter's discovery hands the platform's drafter


def targets(wsfc: WsfcWorld, sql: SqlServerModel) -> tuple[WinRmTarget, SqlTarget]:
    return (WinRmTarget("127.0.0.1", WINRM_ACCOUNT, WINRM_PASSWORD_ENV, wsfc.first.port,
                        ca_file=str(wsfc.site.certificate)),
            SqlTarget("sql01.example.net", sql.username, SQL_PASSWORD_ENV))


def drafted_topology(entries: list[dict[str, Any]], winrm: WinRmTarget) -> None:
    """The drafted part in place of the AG example's own: it must load."""
    doc = example("stretched-2plus2.yaml")
    doc["databases"], doc["management"]["winrm"], doc["allow_list"] = entries, winrm_section(winrm), []
    parse_topology(doc, "the draft")


def test_an_availability_group_is_drafted_through_its_listener_with_its_replicas_and_their_modes(
        wsfc: WsfcWorld, sql: SqlServerModel) -> None:
    wsfc.model.role, wsfc.model.role_type = "AG01", "SQL Server Availability Group"
    wsfc.model.nodes, wsfc.model.owner = {"SQL01": "Up", "SQL02": "Up"}, "SQL01"
    winrm, target = targets(wsfc, sql)
    draft = WindowsDraft(winrm, target, connector=sql.connect)  # the platform's drafter, as `harness discover` runs it
    with wire.watching(read_only=True) as sent:
        draft.read()
    assert sent.calls and not sent.writes() and {c.transport for c in sent.calls} == {"winrm", "odbc"}
    part = draft.drafted(VMS)
    entries, comments = part.databases, part.comments
    assert part.management == {"winrm": winrm_section(winrm)}
    assert entries == [{
        "name": "ag01", "kind": "sqlserver-ag", "endpoint": "sqlag01-listener.example.net", "port": 1433,
        "database": "harness_bench", "ag_name": "AG01",
        "credential": {"username": sql.username, "password": {"env": SQL_PASSWORD_ENV}}, "winrm": "wsfc-node",
        "nodes": [{"name": "sql01", "address": "sql01", "vm": "SQL01", "host": "esx-a1"},
                  {"name": "sql02", "address": "sql02"}]}]
    assert "#   replica sql01: PRIMARY, SYNCHRONOUS_COMMIT, AUTOMATIC failover" in comments
    assert "# failover cluster nodes: SQL01 Up, SQL02 Up" in comments
    assert any(c.startswith("# quorum NodeAndFileShareMajority, witness") for c in comments), comments
    drafted_topology(entries, winrm)
    assert sql.executed == []  # nothing was altered


def test_a_failover_cluster_instance_is_drafted_by_its_network_name_with_the_role_the_cluster_gives(
        wsfc: WsfcWorld, sql: SqlServerModel) -> None:
    sql.fci = "SQLFCI01"
    winrm, target = targets(wsfc, sql)
    seen = read(winrm, target, connector=sql.connect)
    entries, comments = databases(seen, target, winrm, VMS)
    assert [(e["kind"], e["endpoint"], e.get("role_name"), [n["name"] for n in e["nodes"]]) for e in entries] == [
        ("sqlserver-fci", "sqlfci01", "SQL Server (MSSQLSERVER)", ["sql01", "sql02"])]
    assert "# failover cluster instance SQLFCI01: nodes SQL01 up (owner), SQL02 up" in comments
    drafted_topology(entries, winrm)


def test_without_winrm_an_fcis_role_is_left_for_a_person_to_name(sql: SqlServerModel) -> None:
    sql.fci = "SQLFCI01"
    target = SqlTarget("sql01.example.net", sql.username, SQL_PASSWORD_ENV)
    entries, comments = databases(read(None, target, connector=sql.connect), target, None, VMS)
    assert "role_name" not in entries[0] and "winrm" not in entries[0]
    assert "# role_name: the WSFC role holding the SQL Server resource; discover --winrm reads it" in comments
