"""Contract: the SQL Server backup (S7) against the DB-API model of SQL Server and a WS-Management stand-in.

The model parses the BACKUP statement, `@@SPID`, `sys.dm_exec_requests`, `KILL` and msdb's
backup history as Microsoft documents them (tests/support/sqlserver_backup_model.py); the
server's files are answered over WinRM by the stand-in. The fault goes through the registry.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from faults import registry
from faults.backends.sqlserver_backup import SqlServerBackup
from faults.base import FaultSpec, FaultState, OperationProgress
from harness.errors import ConfigError, HarnessError
from tests.integration.contract.conftest import ag_topology
from tests.support.sqlserver_backup_model import BackupRun
from tests.support.sqlserver_model import SqlServerModel
from tests.support.wsman import running_wsman

INSTANCE = "0123456789ab"
FILE = "D:\\Backup\\harness-bench-0123456789ab.bak"
STATEMENT = f"BACKUP DATABASE [bench] TO DISK = N'{FILE}' WITH COPY_ONLY, CHECKSUM, STATS = 10;"


@dataclass
class World:
    sql: SqlServerModel
    ports: list[int]

    def backup(self, **params: object) -> SqlServerBackup:
        spec = FaultSpec("backup", "database:sql-ag-01", {"destination": "D:\\Backup", **params}, instance=INSTANCE)
        fault = registry.build(spec, ag_topology(self.ports))
        assert isinstance(fault, SqlServerBackup)
        fault.connector = self.sql.connect
        return fault

    def server_of(self, run: BackupRun) -> str:
        return next(str(c["attributes"]["SERVER"]) for c in self.sql.connections if c["session_id"] == run.session_id)


@pytest.fixture
def world(sql: SqlServerModel, winrm_password: str) -> Iterator[World]:
    with running_wsman(sql.backup.files, "harness", winrm_password) as first, \
            running_wsman(sql.backup.files, "harness", winrm_password) as second:
        yield World(sql, [first.port, second.port])


def finish(fault: SqlServerBackup, timeout_s: float = 10.0) -> OperationProgress:
    deadline = time.monotonic() + timeout_s
    while (progress := fault.progress()).running and time.monotonic() < deadline:
        time.sleep(0.05)
    return progress


def test_a_copy_only_backup_runs_on_the_primary_into_an_instance_named_file(world: World) -> None:
    world.sql.replicas["sql01"].role, world.sql.replicas["sql02"].role = "SECONDARY", "PRIMARY"
    fault = world.backup()
    fault.preflight()
    fault.inject()
    assert fault.check() is FaultState.IN_EFFECT
    finish(fault)
    assert world.sql.backup.statements == [STATEMENT], "COPY_ONLY: the user's backup chain is not touched"
    assert world.server_of(world.sql.backup.runs[0]) == "tcp:sql02.example.net,1433"
    fault.revert()


def test_progress_is_the_servers_percent_then_size_and_duration_from_msdb(world: World) -> None:
    world.sql.backup.duration_s = 0.8
    fault = world.backup()
    fault.inject()
    running = fault.progress()
    assert running.running and running.percent is not None and 0 <= running.percent < 100
    done = finish(fault)
    assert done.completed and done.bytes_done == world.sql.backup.size_bytes
    assert done.started_wall is not None and done.finished_wall is not None
    assert 0.7 <= done.finished_wall - done.started_wall <= 1.5, "msdb's start and finish, not the poll's"
    fault.revert()


def test_revert_removes_its_own_file_over_winrm_and_nothing_else(world: World) -> None:
    world.sql.backup.files.paths.add("D:\\Backup\\nightly-full.bak")
    fault = world.backup()
    fault.inject()
    finish(fault)
    assert fault.check() is FaultState.IN_EFFECT, "its file is there until the revert"
    fault.revert()
    assert world.sql.backup.files.paths == {"D:\\Backup\\nightly-full.bak"}
    assert fault.check() is FaultState.CLEARED
    removals = [s for s in world.sql.backup.files.scripts if "Remove-Item" in s]
    assert removals and all(f"Remove-Item -LiteralPath '{FILE}' -ErrorAction Stop" in s for s in removals)


def test_revert_mid_backup_kills_only_the_session_running_its_file(world: World) -> None:
    world.sql.backup.duration_s = 30.0
    operators = BackupRun(99, "bench", "D:\\Backup\\nightly-full.bak", "BACKUP DATABASE [bench] TO DISK = "
                          "N'D:\\Backup\\nightly-full.bak' WITH INIT;", time.time(), 30.0)
    fault = world.backup()
    fault.inject()
    world.sql.backup.runs.append(operators)
    started = time.monotonic()
    fault.revert()
    assert time.monotonic() - started < 5
    assert [r.session_id for r in world.sql.backup.running()] == [99], "the operator's backup still runs"
    progress = fault.progress()
    assert not progress.running and not progress.completed and "Communication link failure" in (progress.error or "")
    assert fault.check() is FaultState.CLEARED and FILE not in world.sql.backup.files.paths


def test_a_backup_already_running_or_a_database_not_online_is_refused_at_preflight(world: World) -> None:
    world.sql.backup.runs.append(BackupRun(77, "bench", "D:\\x.bak", "BACKUP DATABASE [bench] TO DISK = N'D:\\x.bak';",
                                           time.time(), 60.0))
    with pytest.raises(HarnessError, match=r"a backup of bench already runs on sql sql01 .*session 77"):
        world.backup().preflight()
    world.sql.backup.runs.clear()
    world.sql.backup.states["bench"] = "RESTORING"
    with pytest.raises(HarnessError, match=r"database bench on sql sql01 .* is RESTORING; a backup needs it ONLINE"):
        world.backup().preflight()
    assert world.sql.backup.statements == []


def test_a_device_that_cannot_be_opened_is_the_backups_error_not_a_success(world: World) -> None:
    world.sql.backup.fail_with = "5(Access is denied.)"
    fault = world.backup()
    fault.inject()
    progress = finish(fault)
    assert not progress.completed and "3201" in (progress.error or "") and "Cannot open backup device" in str(progress.error)
    assert world.sql.password not in str(progress.error)
    fault.revert()
    assert fault.check() is FaultState.CLEARED


def test_bad_params_are_refused_by_name_before_anything_is_contacted(world: World) -> None:
    with pytest.raises(ConfigError, match=r"params\.max_rate: SQL Server's BACKUP has no rate limit"):
        world.backup(max_rate="4M")
    with pytest.raises(ConfigError, match=r"params\.destination: required for SQL Server"):
        registry.build(FaultSpec("backup", "database:sql-ag-01", {}), ag_topology(world.ports))
    assert world.sql.connections == []


def test_the_plan_says_the_exact_statement_and_what_is_left_for_a_url(world: World) -> None:
    plan = world.backup().plan().render()
    assert STATEMENT in plan and f"Remove-Item -LiteralPath '{FILE}'" in plan
    to_url = world.backup(destination="https://backups.example.net/sql").plan().render()
    assert ("TO URL = N'https://backups.example.net/sql/harness-bench-0123456789ab.bak' WITH COPY_ONLY" in to_url
            and "left at https://backups.example.net/sql/harness-bench-0123456789ab.bak" in to_url)
    assert world.sql.connections == []
