"""Contract: the SQL Server backup (S7) against the DB-API model of SQL Server and a WS-Management stand-in.

The model parses the BACKUP statement, `@@SPID`, `sys.dm_exec_requests`, `KILL` and msdb's
backup history as Microsoft documents them (tests/support/sqlserver_backup_model.py); the
server's files are answered over WinRM by the stand-in, one per node. The fault goes through
the registry, as the runner builds it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from faults import registry
from faults.base import FaultSpec, FaultState
from harness_kernel.errors import ConfigError, HarnessError
from harness_kernel.topology.loader import parse_topology
from harness_kernel.topology.models import Topology
from harness_platforms.sqlserver.backup import SqlServerBackup
from tests.support.contract_world import (
    SQL_PASSWORD_ENV,
    WINRM_PASSWORD_ENV,
    ag_topology,
    example,
    finish,
    injected_and_watched,
    pointed_at,
)
from tests.support.sqlserver_backup_model import BackupRun, ServerFiles
from tests.support.sqlserver_model import Replica, SqlServerModel
from tests.support.wsman import running_wsman

INSTANCE = "0123456789ab"
FILE = "D:\\Backup\\harness-bench-0123456789ab.bak"
STATEMENT = f"BACKUP DATABASE [bench] TO DISK = N'{FILE}' WITH COPY_ONLY, CHECKSUM, STATS = 10;"
OPERATORS_FILE = "D:\\Backup\\nightly-full.bak"


@dataclass
class World:
    """The model AG; each node's WinRM stand-in answers for its own disk (sql01: node1, sql02: node2)."""

    sql: SqlServerModel
    ports: list[int]
    node1: ServerFiles
    node2: ServerFiles

    def backup(self, topology: Topology | None = None, **params: object) -> SqlServerBackup:
        spec = FaultSpec("backup", "database:sql-ag-01", {"destination": "D:\\Backup", **params}, instance=INSTANCE)
        fault = registry.build(spec, topology or ag_topology(self.ports))
        assert isinstance(fault, SqlServerBackup)
        fault.connector = self.sql.connect
        return fault

    def server_of(self, session_id: int | None) -> str:
        return next(str(c["attributes"]["SERVER"]) for c in self.sql.connections if c["session_id"] == session_id)

    def operators_backup(self, session_id: int, file: str = OPERATORS_FILE) -> BackupRun:
        run = BackupRun(session_id, "bench", file, f"BACKUP DATABASE [bench] TO DISK = N'{file}' WITH INIT;",
                        self.sql.now(), 30.0)
        self.sql.backup.runs.append(run)
        return run


@pytest.fixture
def world(sql: SqlServerModel, winrm_password: str) -> Iterator[World]:
    node1, node2 = ServerFiles(), ServerFiles()
    sql.backup.local_files = {"sql01": node1, "sql02": node2}
    sql.backup.duration_s = 0.2
    with running_wsman(node1, "harness", winrm_password) as first, \
            running_wsman(node2, "harness", winrm_password) as second:
        yield World(sql, [first.port, second.port], node1, node2)


def without_winrm() -> Topology:
    """The AG example with no WinRM endpoint named for the database or its nodes: no access to the server's files."""
    doc = example("stretched-2plus2.yaml")
    database = next(d for d in doc["databases"] if d["name"] == "sql-ag-01")
    database.pop("winrm", None)
    for node in database["nodes"]:
        node.pop("winrm", None)
    return parse_topology(doc, "contract.yaml")



def test_a_backup_is_copy_only_and_written_to_an_instance_named_file(world: World) -> None:
    world.sql.replicas["sql01"].role, world.sql.replicas["sql02"].role = "SECONDARY", "PRIMARY"
    fault = world.backup()
    fault.preflight()
    fault.inject()
    assert fault.check() is FaultState.IN_EFFECT
    assert finish(fault).completed
    assert world.sql.backup.statements == [STATEMENT], "COPY_ONLY: the user's backup chain is not touched"
    assert world.server_of(fault.run.session_id) == "tcp:sql02.example.net,1433", "on the primary's own instance"
    assert FILE in world.node2.paths and not world.node1.paths
    fault.revert()
    assert not world.node2.paths, "removed on the node that holds it"


def test_on_a_failover_cluster_instance_the_backup_goes_to_its_network_name(world: World) -> None:
    world.sql.replicas = {"fci": Replica("fci", "sqlfci01.example.net", role="PRIMARY")}
    world.sql.backup.local_files = {"fci": world.node1}  # the clustered disk, on whichever node owns the role
    spec = FaultSpec("backup", "database:sql-fci-01", {"destination": "E:\\Backup"}, instance=INSTANCE)
    fault = registry.build(spec, pointed_at(example("stretched-fci.yaml"), world.ports))
    assert isinstance(fault, SqlServerBackup)
    fault.connector = world.sql.connect
    fault.preflight()
    fault.inject()
    assert finish(fault).completed
    assert world.server_of(fault.run.session_id) == "tcp:sqlfci01.example.net,1433"
    assert world.node1.paths == {"E:\\Backup\\harness-bench-0123456789ab.bak"}
    fault.revert()
    assert not world.node1.paths and fault.check() is FaultState.CLEARED


def test_progress_reports_percent_then_size_and_duration_from_msdb(world: World) -> None:
    world.sql.clock_offset_s = 3600.0  # the server's clock an hour off the harness's: ages, not absolute times
    world.sql.backup.duration_s = 0.6
    fault = world.backup()
    injected_and_watched(fault)
    done = finish(fault)
    assert done.completed and done.bytes_done == done.bytes_total == world.sql.backup.size_bytes
    assert done.started_wall is not None and done.finished_wall is not None
    assert abs(done.finished_wall - time.time()) < 0.5, "on the harness's clock, not the server's"
    assert 0.55 <= done.finished_wall - done.started_wall <= 0.8, "msdb's start and finish, not the poll's"
    fault.revert()


def test_revert_kills_only_our_running_backup_and_removes_only_our_file(world: World) -> None:
    world.sql.backup.duration_s = 30.0
    world.node1.paths.add(OPERATORS_FILE)
    fault = world.backup()
    fault.inject()
    operators = world.operators_backup(99)
    started = time.monotonic()
    fault.revert()
    assert time.monotonic() - started < 5
    assert [r.session_id for r in world.sql.backup.running()] == [99] and not operators.killed
    assert world.node1.paths == {OPERATORS_FILE}, "the operator's file stays; ours (left by the KILL) is gone"
    progress = fault.progress()
    assert not progress.running and not progress.completed and "Communication link failure" in (progress.error or "")
    assert fault.check() is FaultState.CLEARED
    fault.revert()  # idempotent: nothing of ours left to stop or remove
    assert not operators.killed and world.node1.paths == {OPERATORS_FILE}


def test_a_session_id_reused_after_our_backup_ended_is_never_killed(world: World) -> None:
    fault = world.backup()
    fault.inject()
    assert finish(fault).completed
    assert fault.run.session_id is not None
    reused = world.operators_backup(fault.run.session_id)  # SQL Server reuses an ended session's id
    assert fault.check() is FaultState.IN_EFFECT, "our file is there"
    fault.revert()
    assert not reused.killed, "its statement does not name our file"
    assert fault.check() is FaultState.CLEARED


def test_a_fault_rebuilt_from_its_spec_after_a_crash_finds_stops_and_removes_its_backup(world: World) -> None:
    world.sql.backup.duration_s = 30.0
    crashed = world.backup()
    crashed.inject()
    rebuilt = world.backup()  # what recover builds from the journal: the spec only, no thread, no session id
    assert rebuilt.check() is FaultState.IN_EFFECT
    progress = rebuilt.progress()
    assert progress.running and progress.percent is not None and progress.started_wall is not None
    rebuilt.revert()
    assert world.sql.backup.running() == [] and world.sql.backup.runs[0].killed
    assert rebuilt.check() is FaultState.CLEARED and not world.node1.paths


def test_without_winrm_msdb_is_the_record_and_the_file_is_left_in_place(world: World) -> None:
    topology = without_winrm()
    plan = world.backup(topology).plan().render()
    assert f"left at {FILE}: the harness has no file access to the server" in plan and "Remove-Item" not in plan
    fault = world.backup(topology)
    fault.inject()
    assert finish(fault).completed
    assert world.backup(topology).check() is FaultState.IN_EFFECT, "rebuilt after a crash: msdb records the backup"
    fault.revert()
    assert fault.check() is FaultState.CLEARED
    assert world.node1.paths == {FILE}, "left where it is, as the plan said"


def test_a_backup_already_running_is_refused_at_preflight(world: World) -> None:
    world.operators_backup(77, "D:\\x.bak")
    with pytest.raises(HarnessError, match=r"a backup of bench already runs on sql sql01 .*session 77"):
        world.backup().preflight()
    world.sql.backup.runs.clear()
    world.sql.backup.states["bench"] = "RESTORING"
    with pytest.raises(HarnessError, match=r"database bench on sql sql01 .* is RESTORING; a backup needs it ONLINE"):
        world.backup().preflight()
    assert world.sql.backup.statements == []


def test_a_backup_that_cannot_open_its_device_is_its_error_and_cleared_after_revert(world: World) -> None:
    world.sql.backup.fail_with = "5(Access is denied.)"
    fault = world.backup()
    fault.inject()
    progress = finish(fault)
    assert not progress.completed and "3201" in (progress.error or "") and "Cannot open backup device" in str(progress.error)
    fault.revert()
    assert fault.check() is FaultState.CLEARED


def test_max_rate_is_refused_naming_the_field(world: World) -> None:
    with pytest.raises(ConfigError, match=r"params\.max_rate: SQL Server's BACKUP has no rate limit"):
        world.backup(max_rate="4M")
    assert world.sql.connections == []


def test_missing_destination_is_refused_before_contact(world: World) -> None:
    with pytest.raises(ConfigError, match=r"params\.destination: required for SQL Server"):
        registry.build(FaultSpec("backup", "database:sql-ag-01", {}), ag_topology(world.ports))
    assert world.sql.connections == []


def test_the_plan_shows_the_exact_statement_and_contacts_nothing(world: World) -> None:
    plan = world.backup().plan()
    text = plan.render()
    assert STATEMENT in text
    assert (f"if (Test-Path -LiteralPath '{FILE}') {{ Remove-Item -LiteralPath '{FILE}' -ErrorAction Stop }}"
            in text)
    assert plan.credentials == ("databases[0].credential.password", "management.winrm[0].credential.password",
                                "management.winrm[1].credential.password")
    to_url = world.backup(destination="https://backups.example.net/sql").plan().render()
    url = "https://backups.example.net/sql/harness-bench-0123456789ab.bak"
    assert f"TO URL = N'{url}' WITH COPY_ONLY, CHECKSUM, STATS = 10;" in to_url
    assert f"left at {url}: the harness has no file access to the server" in to_url
    assert world.sql.connections == [] and world.node1.scripts == world.node2.scripts == []


def test_a_check_that_cannot_read_the_server_is_unknown_not_cleared(world: World) -> None:
    fault = world.backup()
    fault.inject()
    finish(fault)
    for replica in world.sql.replicas.values():
        replica.error = ("08S01", 10054, "Communication link failure")
    assert fault.check() is FaultState.UNKNOWN and "no node answers as its primary" in fault.run.unknown.reason
    for replica in world.sql.replicas.values():
        replica.error = None
    fault.revert()


def test_the_password_appears_in_no_error(world: World, monkeypatch: pytest.MonkeyPatch,
                                          caplog: pytest.LogCaptureFixture, winrm_password: str) -> None:
    caplog.set_level(logging.DEBUG)
    world.sql.backup.fail_with = "5(Access is denied.)"
    fault = world.backup()
    fault.inject()
    messages = [finish(fault).error or ""]
    monkeypatch.setenv(WINRM_PASSWORD_ENV, "Wrong-winrm-" + winrm_password[::-1])
    assert fault.check() is FaultState.UNKNOWN
    messages.append(fault.run.unknown.reason)
    monkeypatch.setenv(SQL_PASSWORD_ENV, "Wrong-sql-" + world.sql.password[::-1])
    with pytest.raises(HarnessError) as refused:
        world.backup().preflight()
    messages.append(str(refused.value))
    assert "Login failed for user 'harness_sql'" in messages[-1] and messages[1]
    for secret in (world.sql.password, winrm_password, "Wrong-sql-", "Wrong-winrm-"):
        assert not any(secret in m for m in messages) and secret not in caplog.text

