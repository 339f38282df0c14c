"""The state directory is private to its user, and the run lock never writes through a planted link."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.safety.journal import Journal
from harness.safety.lock import TopologyLock
from harness_kernel.errors import ConfigError, TargetBusyError
from harness_kernel.paths import private_dir, state_dir
from tests.unit.harness.safety.safety_support import ROOT, child_env


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_state_dir_and_its_journal_and_locks_are_private(tmp_path):
    created = state_dir(tmp_path / "fresh" / "state")
    Journal(created / "journal")
    TopologyLock(created / "locks", "prod-stretched-01").acquire()
    assert mode(created) == 0o700
    assert mode(created / "journal") == 0o700
    assert mode(created / "locks") == 0o700
    assert all(mode(p) == 0o600 for p in (created / "locks").iterdir())


@pytest.mark.parametrize("loose", [0o777, 0o770, 0o757], ids=["world-writable", "group-writable", "others-writable"])
def test_a_state_dir_others_can_write_is_refused(tmp_path, loose):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(loose)
    with pytest.raises(ConfigError, match="writable by group or others"):
        Journal(state_dir(shared) / "journal")
    assert not (shared / "journal").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory to another user")
def test_a_state_dir_owned_by_another_user_is_refused(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 65534, 65534)
    with pytest.raises(ConfigError, match="owned by uid 65534"):
        private_dir(theirs)


def test_a_run_and_recover_refuse_a_shared_state_dir_as_bad_input(tmp_path, topology_file):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    suite = tmp_path / "test_suite.py"
    suite.write_text("def test_nothing():\n    pass\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(suite), "--topology",
                          str(topology_file), "--allow-destructive", "--state-dir", str(shared),
                          "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml")],
                         capture_output=True, text=True, cwd=ROOT, timeout=120, env=child_env())
    assert run.returncode == 4, run.stdout + run.stderr
    assert "writable by group or others" in run.stdout + run.stderr
    recovered = subprocess.run([sys.executable, "-m", "harness", "recover", "--state-dir", str(shared)],
                               capture_output=True, text=True, cwd=ROOT, timeout=60, env=child_env())
    assert recovered.returncode == 4, recovered.stdout + recovered.stderr


def test_the_lock_never_writes_through_a_planted_symlink(tmp_path):
    locks = tmp_path / "locks"
    locks.mkdir(mode=0o700)
    precious = tmp_path / "important.conf"
    precious.write_text("precious configuration\n")
    (locks / "prod.lock").symlink_to(precious)
    lock = TopologyLock(locks, "prod")
    with pytest.raises(ConfigError, match=r"symlink|not a regular file"):
        lock.acquire()
    assert precious.read_text() == "precious configuration\n"


def test_the_lock_names_its_holder_without_the_command_line(tmp_path):
    """A token on the command line (--change-url ...?token=) must not land in a readable lock file."""
    lock = TopologyLock(tmp_path, "prod-stretched-01")
    argv = sys.argv
    sys.argv = ["pytest", "--change-url", "https://tickets/?token=s3cr3t-t0ken"]
    try:
        lock.acquire()
    finally:
        sys.argv = argv
    content = "".join(p.read_text() for p in tmp_path.iterdir() if p.is_file())
    assert "s3cr3t-t0ken" not in content
    assert json.loads(content)["pid"] == os.getpid()
    lock.release()


def test_a_second_run_against_the_same_topology_is_refused_naming_the_holder(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""\
            import time
            from pathlib import Path
            from harness.safety.lock import TopologyLock
            lock = TopologyLock(Path({str(tmp_path)!r}), "prod-stretched-01")
            lock.acquire()
            print("held", flush=True)
            time.sleep(60)
            """)], stdout=subprocess.PIPE, text=True, cwd=ROOT, env=child_env())
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(TargetBusyError, match=rf"'prod-stretched-01' is in use by pid {holder.pid} "):
            TopologyLock(tmp_path, "prod-stretched-01").acquire()
    finally:
        holder.kill()
        holder.wait()
    with TopologyLock(tmp_path, "prod-stretched-01"):
        pass  # released by the kernel when the holder died
