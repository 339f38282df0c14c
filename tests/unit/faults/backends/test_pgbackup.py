"""The PostgreSQL backup: what it runs and where it writes, decided from the topology alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from faults import registry
from faults.backends.pgbackup import PgBaseBackup
from faults.base import FaultSpec, FaultState
from harness_kernel.errors import ConfigError
from harness_kernel.topology.credentials import SecretRef
from harness_kernel.topology.models import CredentialRef, LabSettings, Topology
from harness_lab.layout import LabLayout


def lab() -> Topology:
    return LabLayout.from_settings(LabSettings(prefix="hunit", state_dir="/nonexistent/hunit")).topology()


def backup(topology: Topology, **params: object) -> PgBaseBackup:
    fault = registry.build(FaultSpec("backup", "database:bench", params, instance="0123456789ab"), topology)
    assert isinstance(fault, PgBaseBackup)
    return fault


def test_on_the_lab_it_writes_an_instance_named_directory_in_the_lab_backup_area() -> None:
    fault = backup(lab())
    assert fault.directory == Path("/nonexistent/hunit/backups/harness-backup-0123456789ab")
    assert fault.log_file == Path("/nonexistent/hunit/backups/harness-backup-0123456789ab.log")


def test_the_tool_is_bounded_in_time_streams_wal_and_checkpoints_at_once() -> None:
    argv = backup(lab(), max_rate="4M", timeout_s=120.0).argv()
    assert argv[:4] == ["timeout", "--kill-after=5", "120", argv[3]] and argv[3].endswith("pg_basebackup")
    assert argv[argv.index("-X"):argv.index("-X") + 2] == ["-X", "stream"]
    assert argv[argv.index("-c"):argv.index("-c") + 2] == ["-c", "fast"]
    assert "--max-rate=4M" in argv
    assert "target_session_attrs=read-write" in argv[argv.index("-d") + 1], "from the primary, wherever it runs"


def test_unthrottled_has_no_rate_and_the_plan_says_so_without_contacting_anything() -> None:
    fault = backup(lab())
    assert not [a for a in fault.argv() if a.startswith("--max-rate")]
    plan = fault.plan().render()
    assert "unthrottled" in plan and "harness-backup-0123456789ab" in plan and "remove" in plan


def test_the_password_reaches_the_tool_in_its_environment_never_in_its_arguments(
        monkeypatch: pytest.MonkeyPatch) -> None:
    topology = lab()
    database = topology.databases[0].model_copy(update={"credential": CredentialRef(
        username="backup", password=SecretRef(env="HARNESS_TEST_PG_PASSWORD"))})
    fault = backup(topology.model_copy(update={"databases": [database]}))
    monkeypatch.setenv("HARNESS_TEST_PG_PASSWORD", "pg-s3cret")
    assert "pg-s3cret" not in " ".join(fault.argv()) and "user=backup" in " ".join(fault.argv())
    assert fault._environment()["PGPASSWORD"] == "pg-s3cret"
    assert "pg-s3cret" not in fault.plan().render()


def test_a_missing_password_is_named_by_its_field(monkeypatch: pytest.MonkeyPatch) -> None:
    topology = lab()
    database = topology.databases[0].model_copy(update={"credential": CredentialRef(
        username="backup", password=SecretRef(env="HARNESS_TEST_PG_ABSENT"))})
    monkeypatch.delenv("HARNESS_TEST_PG_ABSENT", raising=False)
    with pytest.raises(ConfigError, match=r"databases\[0\]\.credential\.password"):
        backup(topology.model_copy(update={"databases": [database]}))._environment()


def test_without_a_backup_area_the_destination_is_required_and_must_be_absolute() -> None:
    lab_topology = lab()
    real = lab_topology.model_copy(update={"lab": None, "databases": [
        lab_topology.databases[0].model_copy(update={"backup_area": None})]})
    with pytest.raises(ConfigError, match=r"params\.destination: required, or databases\[0\]\.backup_area"):
        backup(real)
    with pytest.raises(ConfigError, match=r"params\.destination: 'backups' must be an absolute"):
        backup(real, destination="backups")
    assert backup(real, destination="/srv/backup").directory == Path("/srv/backup/harness-backup-0123456789ab")


def test_nothing_written_and_nothing_running_reads_as_cleared(tmp_path: Path) -> None:
    fault = backup(lab(), destination=str(tmp_path))
    assert fault.check() is FaultState.CLEARED
    fault.directory.mkdir()
    assert fault.check() is FaultState.IN_EFFECT, "its output exists: not reverted yet"
    (tmp_path / "someone-elses.tar").write_text("x")
    fault.revert()
    assert fault.check() is FaultState.CLEARED
    assert (tmp_path / "someone-elses.tar").exists(), "only what the backup wrote is removed"


def test_a_lab_backup_journaled_before_backup_area_existed_is_found_in_the_labs_state_directory() -> None:
    older = lab()
    snapshot = older.model_copy(update={"databases": [older.databases[0].model_copy(update={"backup_area": None})]})
    assert snapshot.lab is not None and snapshot.lab.state_dir == "/nonexistent/hunit"
    assert backup(snapshot).directory == backup(older).directory
