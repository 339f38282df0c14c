"""What S5 and S7 stand on in the lab: a live migration's stun as the clients feel it, and a backup under load.

The stun is the model's only quantity the clients see directly, so two different modelled
stuns must show up as two different commit gaps. The backup is real `pg_basebackup` from the
lab's primary: rate-limited, it takes as long as its size at that rate; stopped mid-run, it
leaves no process and none of its files behind, and nothing else in its destination is touched.
Its restore beside the database is real too: the copy starts and answers, then leaves nothing;
over a directory that exists it is refused.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from faults.backends.pgbackup import PgBaseBackup
from faults.backends.pgrestore import PgRestore
from faults.base import FaultSpec, FaultState
from harness.analysis.phases import longest_gap_within
from harness.safety.runner import FaultRunner
from harness_kernel.errors import ConfigError, ControlPlaneError
from harness_kernel.topology.models import Topology
from harness_lab.controller import IO_PAUSE_MAX_S, Lab
from harness_lab.vmotion import PreCopyModel, migrate
from tests.integration.lab.lab_support import FaultBuilder
from workloads.oltp import OltpDriver


def stun_seen(lab: Lab, runner: FaultRunner, stun_s: float) -> float | None:
    model = PreCopyModel(memory_mb=200, link_mb_s=1250, window_mb=2, dirty_mb_s=50, stun_s=stun_s)
    start = runner.timeline.now()
    done = migrate(lab, lab.primary(), cross_site=True, model=model)
    assert done.rtt_ms > 0 and done.precopy_s == pytest.approx(model.precopy_s(done.rtt_ms))
    time.sleep(1.5)
    return longest_gap_within(runner.timeline, start, runner.timeline.now())


@pytest.mark.nightly  # its claim is two measured lengths; the stun's path runs in make test's smoke demo (S5)
def test_two_modelled_stuns_are_two_different_stuns_seen_by_the_clients(
        lab: Lab, runner: FaultRunner, load: OltpDriver) -> None:
    time.sleep(3)  # the users have connected and commit steadily
    assert IO_PAUSE_MAX_S >= 1.4, "both stuns are under the lab's I/O pause cap"
    short, long = stun_seen(lab, runner, 0.6), stun_seen(lab, runner, 1.4)
    assert short is not None and long is not None, "each stun is a commit gap over the driver's threshold"
    assert 0.5 <= short <= 1.2, short
    assert 1.3 <= long <= 2.0, long
    assert long - short >= 0.6
    load.stop()
    assert load.verify().lost_count == 0


def backup(factory: FaultBuilder, topology: Topology, destination: Path, **params: object) -> PgBaseBackup:
    fault = factory.build(FaultSpec("backup", "database:bench", {"destination": str(destination), **params}), topology)
    assert isinstance(fault, PgBaseBackup)
    return fault


def test_a_rate_limited_backup_under_load_takes_its_size_at_that_rate_and_leaves_nothing(
        topology: Topology, runner: FaultRunner, factory: FaultBuilder, load: OltpDriver, tmp_path: Path) -> None:
    time.sleep(3)  # the users have connected and commit steadily
    destination = tmp_path / "backups"  # (the runner keeps its journal in tmp_path)
    destination.mkdir()
    (destination / "operator.tar").write_text("not the harness's")
    fault = backup(factory, topology, destination, max_rate="8M", timeout_s=120.0)
    with runner.inject(fault, duration_s=150) as active:
        while fault.progress().running and runner.timeline.now() - active.injected_at < 120:
            active.sleep(0.5)
        done = fault.progress()
        assert fault.check() is FaultState.IN_EFFECT, "its files are there until the revert"
    assert done.completed, done.error
    assert done.bytes_done is not None and done.bytes_done > 10e6
    assert done.started_wall is not None and done.finished_wall is not None
    took = done.finished_wall - done.started_wall
    assert took >= 0.8 * done.bytes_done / (8 * 1024 * 1024), f"{done.bytes_done:.0f} B in {took:.1f} s at 8 MB/s"
    assert fault.check() is FaultState.CLEARED
    assert sorted(p.name for p in destination.iterdir()) == ["operator.tar"]
    load.stop()
    assert load.verify().lost_count == 0


def test_a_backup_stopped_mid_run_leaves_no_process_and_none_of_its_files(
        topology: Topology, runner: FaultRunner, factory: FaultBuilder, tmp_path: Path) -> None:
    destination = tmp_path / "backups"
    fault = backup(factory, topology, destination, max_rate="1M", timeout_s=120.0)
    with runner.inject(fault, duration_s=150):
        time.sleep(2)
        assert fault.progress().running and fault._pids(), "still copying at 1 MB/s"
    assert not fault._pids()
    assert fault.check() is FaultState.CLEARED and list(destination.iterdir()) == []
    assert fault.progress().error is not None, "it ended without completing, and says how"


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A directory the copy's server (the postgres user) can enter: pytest's own are root's alone."""
    path = Path(tempfile.mkdtemp(prefix="hlabt-restore-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def restore(factory: FaultBuilder, topology: Topology, source: Path, destination: Path,
            instance: str | None = None, **params: object) -> PgRestore:
    spec = FaultSpec("restore", "database:bench", {"backup": str(source), "destination": str(destination),
                                                   "timeout_s": 120.0, **params})
    fault = factory.build(FaultSpec(spec.kind, spec.target, spec.params, instance) if instance else spec, topology)
    assert isinstance(fault, PgRestore)
    return fault


def test_a_backup_restored_beside_the_database_under_load_at_its_rate_answers_and_leaves_nothing(
        topology: Topology, runner: FaultRunner, factory: FaultBuilder, load: OltpDriver, scratch: Path) -> None:
    time.sleep(3)  # the users have connected and commit steadily
    taken = backup(factory, topology, scratch / "backups", timeout_s=120.0)
    restores = scratch / "restores"
    restores.mkdir()
    (restores / "operator.sql").write_text("not the harness's")
    with runner.inject(taken, duration_s=300) as holding:
        while taken.progress().running:
            holding.sleep(0.5)
        source = taken.progress().output
        assert taken.progress().completed and source is not None
        backed_up = sorted(str(p.relative_to(source)) for p in Path(source).rglob("*"))
        fault = restore(factory, topology, Path(source), restores, max_rate="16M")
        with runner.inject(fault, duration_s=150) as active:
            while fault.progress().running and runner.timeline.now() - active.injected_at < 120:
                active.sleep(0.5)
            done = fault.progress()
            answered = (fault.directory / "restore.log").read_text()
        assert sorted(str(p.relative_to(source)) for p in Path(source).rglob("*")) == backed_up, "read, not changed"
    assert done.completed, done.error
    assert done.bytes_total is not None and done.bytes_done == done.bytes_total > 10e6, "the whole backup copied"
    assert done.started_wall is not None and done.finished_wall is not None
    took = done.finished_wall - done.started_wall
    assert took >= 0.8 * done.bytes_total / (16 * 1024 * 1024), f"{done.bytes_total:.0f} B in {took:.1f} s at 16 MB/s"
    assert "\nf\n" in answered, "the copy opened read-write: crash recovery replayed the backup's WAL"
    assert fault.check() is FaultState.CLEARED and sorted(p.name for p in restores.iterdir()) == ["operator.sql"]
    assert not fault._pids(), "no server of the copy left"
    load.stop()
    assert load.verify().lost_count == 0


def test_a_restore_over_a_directory_that_exists_is_refused_naming_it_and_nothing_is_touched(
        topology: Topology, factory: FaultBuilder, scratch: Path) -> None:
    source = scratch / "backup"
    source.mkdir()
    (source / "PG_VERSION").write_text("15\n")
    occupied = scratch / "harness-restore-0123456789ab"  # as if somebody had made it: not this fault's
    occupied.mkdir()
    (occupied / "theirs").write_text("keep")
    fault = restore(factory, topology, source, scratch, instance="0123456789ab")
    with pytest.raises(ControlPlaneError, match=f"{occupied} exists already; nothing is written over"):
        fault.preflight()
    assert (occupied / "theirs").read_text() == "keep" and [p.name for p in occupied.iterdir()] == ["theirs"]


def test_a_restore_of_something_that_is_no_base_backup_is_refused_before_anything_is_written(
        topology: Topology, factory: FaultBuilder, scratch: Path) -> None:
    source = scratch / "not-a-backup"
    source.mkdir()
    (source / "notes.txt").write_text("no PG_VERSION here")
    fault = restore(factory, topology, source, scratch / "restores")
    fault.preflight()  # the backup is a run's own, taken after any preflight: it is checked when the restore starts
    with pytest.raises(ConfigError, match="is not a PostgreSQL base backup"):
        fault.inject()
    assert not (scratch / "restores").exists() and fault.check() is FaultState.CLEARED
