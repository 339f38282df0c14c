"""Contract: the SQL Server restore (S7) against the DB-API model of SQL Server and a WS-Management stand-in.

The model parses RESTORE FILELISTONLY, RESTORE DATABASE ... WITH MOVE, sys.dm_exec_requests,
KILL, sys.databases / sys.master_files, msdb's restore history and DROP DATABASE as Microsoft
documents them (tests/support/sqlserver_restore_model.py, its FACTS table); each node's disk is
answered over WinRM by the stand-in. The fault goes through the registry, as the runner builds it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pyodbc
import pytest

from faults import registry
from faults.base import FaultSpec, FaultState
from harness_kernel.errors import ConfigError, HarnessError
from harness_kernel.topology.loader import parse_topology
from harness_kernel.topology.models import Topology
from harness_platforms.sqlserver.restore import SqlServerRestore
from tests.support import variations
from tests.support.contract_world import ag_topology, example, finish, injected_and_watched
from tests.support.sqlserver_backup_model import BackupRun, ServerFiles
from tests.support.sqlserver_model import SqlServerModel
from tests.support.wsman import running_wsman

INSTANCE = "0123456789ab"
BACKUP = "D:\\Backup\\harness-bench-fedcba987654.bak"
COPY = "bench_restore_test"
DATA = "R:\\Restore\\harness-restore-0123456789ab-1.mdf"
LOG = "R:\\Restore\\harness-restore-0123456789ab-2.ldf"
STATEMENT = (f"RESTORE DATABASE [{COPY}] FROM DISK = N'{BACKUP}' WITH MOVE N'bench' TO N'{DATA}', "
             f"MOVE N'bench_log' TO N'{LOG}', STATS = 10, RECOVERY;")


@dataclass
class World:
    """The model AG with last night's backup of bench on it; each node's WinRM stand-in answers for its own disk."""

    sql: SqlServerModel
    ports: list[int]
    node1: ServerFiles
    node2: ServerFiles

    def restore(self, topology: Topology | None = None, **params: object) -> SqlServerRestore:
        spec = FaultSpec("restore", "database:sql-ag-01",
                         {"backup": BACKUP, "destination": "R:\\Restore", **params}, instance=INSTANCE)
        fault = registry.build(spec, topology or ag_topology(self.ports))
        assert isinstance(fault, SqlServerRestore)
        fault.connector = self.sql.connect
        return fault

    def operators_database(self, name: str = COPY) -> None:
        """A database the harness did not create, under the scratch name."""
        self.sql.backup.states[name] = "ONLINE"
        self.sql.restore.master_files[name] = ["E:\\Data\\reporting.mdf", "E:\\Log\\reporting_log.ldf"]
        self.node1.paths.update(self.sql.restore.master_files[name])


@pytest.fixture
def world(sql: SqlServerModel, winrm_password: str) -> Iterator[World]:
    node1, node2 = ServerFiles(), ServerFiles()
    sql.restore.local_files = {"sql01": node1, "sql02": node2}
    sql.restore.backups[BACKUP] = [("bench", "D:\\Data\\bench.mdf", "data"), ("bench_log", "L:\\Log\\bench_log.ldf", "log")]
    sql.restore.duration_s = 0.3
    with running_wsman(node1, "harness", winrm_password) as first, \
            running_wsman(node2, "harness", winrm_password) as second:
        yield World(sql, [first.port, second.port], node1, node2)



def without_restore_as() -> Topology:
    doc = example("stretched-2plus2.yaml")
    next(d for d in doc["databases"] if d["name"] == "sql-ag-01").pop("restore_as")
    return parse_topology(doc, "contract.yaml")


def test_a_restore_creates_the_scratch_copy_with_every_file_moved_to_a_fault_named_file(world: World) -> None:
    fault = world.restore()
    fault.preflight()
    fault.inject()
    assert fault.check() is FaultState.IN_EFFECT
    done = finish(fault)
    assert done.completed and done.output == COPY
    assert world.sql.restore.statements == [STATEMENT], "one MOVE per file FILELISTONLY lists; never REPLACE"
    assert world.sql.backup.states[COPY] == "ONLINE" and world.node1.paths == {DATA, LOG}
    assert world.sql.restore.master_files["bench"] == ["D:\\Data\\bench.mdf", "L:\\Log\\bench_log.ldf"]
    fault.revert()
    assert world.sql.restore.statements[1:] == [f"ALTER DATABASE [{COPY}] SET SINGLE_USER WITH ROLLBACK IMMEDIATE;",
                                                f"DROP DATABASE [{COPY}];"]
    assert COPY not in world.sql.backup.states and not world.node1.paths
    assert fault.check() is FaultState.CLEARED


@pytest.mark.reproducer("AA-row-order")
def test_the_files_are_moved_by_their_file_id_whatever_order_filelistonly_lists_them(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rowset's order is not guaranteed: the primary data file is the one whose FileId is 1, not the first row."""
    monkeypatch.setenv(variations.ENV, variations.MEMBER_ORDER)
    fault = world.restore()
    fault.inject()
    finish(fault)
    assert world.sql.restore.statements == [STATEMENT], "the data file to ...1.mdf, the log to ...2.ldf, as in file order"
    fault.revert()


@pytest.mark.reproducer("AA-R4")
def test_progress_reports_percent_then_the_backup_size_and_the_end_the_statement_returned(world: World) -> None:
    """msdb's restore_date is the start of the restore ("Date and time of the start of the restore operation"): the
    end is when the statement returned; msdb's row only proves that this restore happened."""
    world.sql.clock_offset_s = -7200.0  # the server two hours behind: ages, not absolute times
    world.sql.restore.duration_s = 0.6
    fault = world.restore()
    injected_and_watched(fault)
    done = finish(fault)
    assert done.completed and done.bytes_done == done.bytes_total == world.sql.restore.backup_size
    assert done.finished_wall is not None and abs(done.finished_wall - time.time()) < 0.5, "ended when it returned"
    assert done.started_wall is not None and 0.55 <= done.finished_wall - done.started_wall <= 0.9
    fault.revert()


def test_an_existing_database_under_the_scratch_name_is_refused_naming_it_and_never_touched(world: World) -> None:
    world.operators_database()
    with pytest.raises(HarnessError, match=r"databases\[0\]\.restore_as: database bench_restore_test exists on sql "
                                           r"sql01 .*\(ONLINE\) and this restore did not create it"):
        world.restore().preflight()
    fault = world.restore()
    with pytest.raises(HarnessError, match=r"restore_as: database bench_restore_test exists"):
        fault.inject()  # checked again just before the statement
    assert world.sql.restore.statements == [], "no RESTORE was sent"
    assert fault.check() is FaultState.CLEARED, "the operator's database is not this fault's"
    fault.revert()
    assert world.sql.backup.states[COPY] == "ONLINE"
    assert world.sql.restore.statements == [], "no DROP, no ALTER"
    assert world.node1.paths == {"E:\\Data\\reporting.mdf", "E:\\Log\\reporting_log.ldf"}


def test_a_stopped_restore_is_killed_its_restoring_copy_dropped_and_its_files_removed(world: World) -> None:
    world.sql.restore.duration_s = 30.0
    fault = world.restore()
    fault.inject()
    assert world.sql.backup.states[COPY] == "RESTORING"
    started = time.monotonic()
    fault.revert()
    assert time.monotonic() - started < 5
    assert world.sql.restore.runs[0].killed
    assert world.sql.restore.statements[1:] == [f"DROP DATABASE [{COPY}];"], "no SINGLE_USER on a RESTORING copy"
    assert COPY not in world.sql.backup.states
    assert not world.node1.paths, "DROP left the files of a database that was not online; WinRM removed them"
    progress = fault.progress()
    assert not progress.running and not progress.completed and "Communication link failure" in (progress.error or "")
    assert fault.check() is FaultState.CLEARED


def test_a_fault_rebuilt_after_a_crash_finds_kills_and_drops_its_copy_and_only_its_copy(world: World) -> None:
    world.sql.restore.duration_s = 30.0
    crashed = world.restore()
    crashed.inject()
    operators = BackupRun(88, "reporting", "E:\\nightly.bak", "RESTORE DATABASE [reporting] FROM DISK = N'E:\\nightly.bak' WITH "
                                            "MOVE N'r' TO N'E:\\Data\\r.mdf', RECOVERY;", world.sql.now(), 30.0)
    world.sql.restore.runs.append(operators)
    rebuilt = world.restore()  # what recover builds from the journal: the spec only
    assert rebuilt.check() is FaultState.IN_EFFECT
    progress = rebuilt.progress()
    assert progress.running and progress.percent is not None
    rebuilt.revert()
    assert world.sql.restore.runs[0].killed and not operators.killed, "only a statement naming our files"
    assert COPY not in world.sql.backup.states and not world.node1.paths
    assert rebuilt.check() is FaultState.CLEARED


def test_a_backup_that_cannot_be_opened_fails_at_inject_before_any_restore(world: World) -> None:
    fault = world.restore(backup="D:\\Backup\\missing.bak")
    with pytest.raises(HarnessError, match=r"3201.*Cannot open backup device 'D:\\Backup\\missing\.bak'"):
        fault.inject()
    assert world.sql.restore.statements == [] and fault.check() is FaultState.CLEARED


def test_the_scratch_name_max_rate_and_destination_are_refused_before_contact(world: World) -> None:
    with pytest.raises(ConfigError, match=r"databases\[0\]\.restore_as: required for SQL Server"):
        world.restore(without_restore_as())
    with pytest.raises(ConfigError, match=r"params\.max_rate: SQL Server's RESTORE has no rate limit"):
        world.restore(max_rate="4M")
    with pytest.raises(ConfigError, match=r"params\.destination: required for SQL Server"):
        registry.build(FaultSpec("restore", "database:sql-ag-01", {"backup": BACKUP}), ag_topology(world.ports))
    assert world.sql.connections == []


def test_the_plan_shows_the_exact_statement_and_the_drop_and_contacts_nothing(world: World) -> None:
    plan = world.restore().plan()
    text = plan.render()
    assert f"RESTORE FILELISTONLY FROM DISK = N'{BACKUP}';" in text
    assert (f"RESTORE DATABASE [{COPY}] FROM DISK = N'{BACKUP}' WITH MOVE N'<LogicalName of file 1 (D)>' TO "
            f"N'{DATA}', MOVE N'<LogicalName of file 2 (L)>' TO N'{LOG}', STATS = 10, RECOVERY;") in text
    assert f"DROP DATABASE [{COPY}]; a database of that name with other files is never touched" in text
    assert plan.credentials == ("databases[0].credential.password", "management.winrm[0].credential.password",
                                "management.winrm[1].credential.password")
    assert world.sql.connections == [] and world.node1.scripts == world.node2.scripts == []


def test_a_name_taken_between_the_check_and_the_restore_is_refused_by_sql_server_and_never_dropped(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    fault = world.restore()
    checked = fault._refuse_existing

    def then_taken(session: object) -> None:  # a race no check closes: an operator restores under the name at once
        checked(session)  # type: ignore[arg-type]
        world.operators_database()

    monkeypatch.setattr(fault, "_refuse_existing", then_taken)
    fault.inject()
    progress = finish(fault)
    assert not progress.completed and "(3154)" in (progress.error or "")
    fault.revert()
    assert world.sql.backup.states[COPY] == "ONLINE" and world.sql.restore.statements == [STATEMENT]
    assert world.node1.paths == {"E:\\Data\\reporting.mdf", "E:\\Log\\reporting_log.ldf"}


def test_the_model_refuses_what_sql_server_refuses(world: World) -> None:
    """Its own refusals, as Microsoft documents them: the backend above never meets them."""
    cursor = world.sql.connect("SERVER=tcp:sql01.example.net,1433;UID=harness_sql;PWD=" + world.sql.password,
                               autocommit=True, timeout=5).cursor()

    def refusal(sql: str) -> str:
        with pytest.raises(pyodbc.Error) as refused:
            cursor.execute(sql)
        return str(refused.value.args[1])

    without_move = refusal(f"RESTORE DATABASE [copy] FROM DISK = N'{BACKUP}' WITH STATS = 10, RECOVERY;")
    assert "The file 'D:\\Data\\bench.mdf' cannot be overwritten. It is being used by database 'bench'." in without_move
    assert without_move.endswith("(1834) (SQLExecDirectW)")
    world.operators_database("reporting")
    over = refusal(f"RESTORE DATABASE [reporting] FROM DISK = N'{BACKUP}' WITH MOVE N'bench' TO N'E:\\x.mdf', "
                   "MOVE N'bench_log' TO N'E:\\x.ldf', RECOVERY;")
    assert "other than the existing 'reporting' database" in over and over.endswith("(3154) (SQLExecDirectW)")
    world.sql.restore.runs.append(BackupRun(90, "reporting", BACKUP, "RESTORE ...", world.sql.now(), 30.0))
    in_use = refusal("DROP DATABASE [reporting];")
    assert in_use.endswith("(You cannot drop a database currently being used.) (3702) (SQLExecDirectW)")
