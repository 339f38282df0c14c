"""A SQL Server cluster's doctor, captured and replayed: T-SQL rows at the DB-API layer, WinRM after decryption.

The capture is made here from the stand-ins (the SQL Server model, the WS-Management stand-in of the
model failover cluster), so it proves the capture and the replay, not the products: the replay
serves the PowerShell outputs from its own WS-Management listener (pywinrm unchanged) and the rows
through `odbc.connecting_with`, and must reach the rows the live doctor reached; an answer taken
away must flip the row that reads it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from faults.transports.odbc import connecting_with
from harness.capture.session import Replayed, capture, replay
from tests.support.contract_world import WsfcWorld, example, pointed_at
from tests.support.sqlserver_model import Replica, SqlServerModel


def cluster_only(name: str, target: str) -> dict[str, Any]:
    """The example without vCenter, BMCs, SSH or routers (their addresses are documentation ranges: never contacted)."""
    doc = example(name)
    for section in ("vcenter", "redfish", "ssh"):
        doc["management"].pop(section, None)
    doc.pop("routers", None)
    for site in doc["sites"]:
        for host in site["hosts"]:
            host.pop("bmc", None)
            host.pop("ssh", None)
    doc["allow_list"] = [target]
    return doc


def captured(tmp_path: Path, wsfc: WsfcWorld, sql: SqlServerModel, name: str, target: str) -> Path:
    doc = cluster_only(name, target)
    topology = pointed_at(doc, [wsfc.first.port, wsfc.second.port], wsfc.site)
    with connecting_with(sql.connect):
        findings = capture(topology, yaml.safe_dump(doc), tmp_path / "capture", resolve=lambda _: [])
    assert findings.exit_code == 0, findings.render()
    return tmp_path / "capture"


def edited(saved: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """The capture with `change` applied to each of its exchange entries, in place."""
    entries = [json.loads(line) for line in (saved / "exchanges.jsonl").read_text().splitlines()]
    for entry in entries:
        change(entry)
    (saved / "exchanges.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    return saved


def judged(result: Replayed) -> list[str]:
    return [f"{r.status} {r.check}" for r in result.findings.rows if r.where in ("sqlserver", "wsfc")]


def test_an_availability_groups_rows_replay_from_its_captured_t_sql(
        tmp_path: Path, wsfc: WsfcWorld, sql: SqlServerModel) -> None:
    saved = captured(tmp_path, wsfc, sql, "stretched-2plus2.yaml", "database:sql-ag-01")
    manifest = json.loads((saved / "manifest.json").read_text())
    assert manifest["calls"] == {"odbc": 15} and manifest["simulator"] is False
    kept = "".join(p.read_text() for p in saved.iterdir())
    assert not [name for name in ("sql01", "SQL01", "AG01", "example.net", sql.username, sql.password) if name in kept]
    result = replay(saved)
    assert (result.differences, result.misses) == ([], [])
    assert judged(result) == ["PASS role-move on database:db-1: the SQL login's permissions on every replica",
                              "PASS role-move on database:db-1: ready", "PASS restore on database:db-1: ready"]


def test_a_permission_taken_away_in_the_captured_rows_fails_the_permissions_row(
        tmp_path: Path, wsfc: WsfcWorld, sql: SqlServerModel) -> None:
    saved = captured(tmp_path, wsfc, sql, "stretched-2plus2.yaml", "database:sql-ag-01")

    def alter_not_held_on_the_second_replica(entry: dict[str, Any]) -> None:
        if "HAS_PERMS_BY_NAME" in entry["request"].get("sql", "") and entry["endpoint"].endswith("server-3:1433"):
            entry["answers"][0]["response"]["rows"] = [[0, 1]]
    edited(saved, alter_not_held_on_the_second_replica)
    result = replay(saved)
    assert result.differences == [
        "sqlserver: role-move on database:db-1: the SQL login's permissions on every replica: live PASS, replay FAIL",
        "sqlserver: role-move on database:db-1: ready: live PASS, replay absent"]
    row = next(r for r in result.findings.rows if r.status == "FAIL")
    assert "lacks node-2: ALTER on availability group ag-1" in row.seen


def test_a_failover_cluster_instances_rows_replay_from_its_captured_powershell(
        tmp_path: Path, wsfc: WsfcWorld, sql: SqlServerModel) -> None:
    sql.replicas = {"fci": Replica("fci", "sqlfci01.example.net", role="PRIMARY")}  # the instance, at its network name
    saved = captured(tmp_path, wsfc, sql, "stretched-fci.yaml", "database:sql-fci-01")
    assert json.loads((saved / "manifest.json").read_text())["calls"] == {"winrm": 9, "odbc": 2}
    result = replay(saved)
    assert (result.differences, result.misses) == ([], [])
    assert judged(result) == ["PASS role-move on database:db-1: WinRM reads the failover cluster",
                              "PASS role-move on database:db-1: ready", "PASS restore on database:db-1: ready"]


def test_a_missing_cluster_module_in_the_captured_output_fails_the_winrm_row(
        tmp_path: Path, wsfc: WsfcWorld, sql: SqlServerModel) -> None:
    sql.replicas = {"fci": Replica("fci", "sqlfci01.example.net", role="PRIMARY")}
    saved = captured(tmp_path, wsfc, sql, "stretched-fci.yaml", "database:sql-fci-01")

    def module_missing(entry: dict[str, Any]) -> None:
        if "Get-ClusterNode |" in entry["request"].get("script", ""):
            entry["answers"] = [{"response": {"status": 1, "stdout": "", "stderr": "Get-ClusterNode : The term "
                                              "'Get-ClusterNode' is not recognized as the name of a cmdlet"},
                                 "at": entry["answers"][0]["at"], "times": 1}]
    edited(saved, module_missing)
    result = replay(saved)
    assert result.differences[0] == ("wsfc: role-move on database:db-1: WinRM reads the failover cluster: live PASS, "
                                     "replay FAIL")
    row = next(r for r in result.findings.rows if r.status == "FAIL")
    assert "the FailoverClusters PowerShell module is not installed" in row.seen
