"""The local guardian: a detached process per state directory that ends faults whose run is gone or late.

It reverts an entry whose owner died (pid *and* start time) or whose deadline passed, so a
kill -9 is undone without anyone typing `recover`; it never acts on an entry another reverter
holds; it survives the terminal going away; it logs to its file only and writes no credential.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.support.victim import Victim
from tests.unit.harness.safety.safety_support import FREEZE, Child, eventually, journal_files, run_fault_script


def guardian_pid(state: Path) -> int | None:
    try:
        info = json.loads((state / "guardian.lock").read_text() or "{}")
    except (FileNotFoundError, ValueError):
        return None
    return info.get("pid")


def alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def test_a_run_killed_with_kill_9_is_reverted_by_the_guardian_without_any_command(topology_file, state, victim: Victim):
    run = run_fault_script(topology_file, state, "--acquire")
    run.expect("in-effect")
    guardian = guardian_pid(state)
    assert alive(guardian), "the run started a guardian for its state directory"
    assert guardian is not None
    assert os.getsid(guardian) != os.getsid(run.pid), "in a session of its own: the run's terminal cannot take it along"
    assert all(os.readlink(f"/proc/{guardian}/fd/{fd}") == "/dev/null" for fd in (0, 1, 2))
    run.kill_group()
    killed = time.monotonic()
    assert eventually(victim.running, timeout_s=15), (state / "guardian.log").read_text()
    print(f"\nkill -9 to reverted: {time.monotonic() - killed:.2f} s")
    assert eventually(lambda: journal_files(state) == [], timeout_s=5)
    # The entry leaves the journal before the guardian writes its "reverted" line.
    assert eventually(lambda: "reverted process-freeze on process:victim" in (state / "guardian.log").read_text(),
                      timeout_s=5), (state / "guardian.log").read_text()
    assert eventually(lambda: not alive(guardian), timeout_s=15), "nothing left to guard: it exits"


def test_the_guardian_ignores_the_hangup_that_ends_the_run_and_the_run_reverts_itself(topology_file, state, victim):
    run = run_fault_script(topology_file, state, "--acquire")
    run.expect("in-effect")
    guardian = guardian_pid(state)
    os.killpg(run.pid, signal.SIGHUP)  # the operator's SSH session drops
    assert guardian is not None
    os.kill(guardian, signal.SIGHUP)
    run.wait()
    assert victim.running(), run.output()
    assert journal_files(state) == []
    assert alive(guardian) or "exiting" in (state / "guardian.log").read_text()


def test_the_guardian_ends_a_fault_past_its_deadline_while_its_run_hangs(topology_file, state, victim: Victim):
    run = run_fault_script(topology_file, state, "--acquire", "--duration", "1", "--settle-timeout", "1",
                           "--margin", "1")
    run.expect("in-effect")
    os.kill(run.pid, signal.SIGSTOP)  # alive, but no longer able to end its own fault
    try:
        assert victim.frozen()
        assert eventually(victim.running, timeout_s=20), (state / "guardian.log").read_text()
        assert eventually(lambda: journal_files(state) == [], timeout_s=5)
        assert "past its deadline" in (state / "guardian.log").read_text()
    finally:
        os.kill(run.pid, signal.SIGCONT)
        run.kill_group()


def test_one_guardian_per_state_directory_staying_while_a_run_is_alive(state):
    from harness.safety.guardian import ensure_guardian, register_owner, unregister_owner

    register_owner(state, "this-test")
    first = ensure_guardian(state)
    second = ensure_guardian(state)
    assert first is not None and alive(first)
    assert second == first
    extra = Child([sys.executable, "-m", "harness.safety.guardian", "--state-dir", str(state)])
    assert extra.wait(timeout_s=15) == 0, extra.output()
    assert guardian_pid(state) == first
    time.sleep(1)
    assert alive(first), "a run is alive: the guardian stays"
    unregister_owner(state, "this-test")
    assert eventually(lambda: not alive(first), timeout_s=10), "nothing left to guard: it exits"


def test_the_guardian_never_reverts_an_entry_another_reverter_holds(topology_file, state, victim: Victim):
    run = run_fault_script(topology_file, state)
    run.expect("in-effect")
    run.kill_group()
    entry_id = json.loads(journal_files(state)[0].read_text())["id"]
    holder = Child([sys.executable, "-c", textwrap.dedent(f"""\
        import time
        from pathlib import Path
        from harness.safety.journal import Journal
        with Journal(Path({str(state / "journal")!r})).entry_lock({entry_id!r}, role="recover"):
            print("held", flush=True)
            time.sleep(60)
        """)])
    holder.expect("held", timeout_s=15)
    from harness.safety.guardian import ensure_guardian

    ensure_guardian(state)
    time.sleep(3)
    assert victim.frozen(), "a revert in progress elsewhere is never doubled"
    holder.kill_group()
    assert eventually(victim.running, timeout_s=15), (state / "guardian.log").read_text()


def test_the_guardian_resolves_credentials_as_the_run_does_and_writes_none(tmp_path, state, victim: Victim):
    secret = "Tr0ub4dor-guardian-secret"
    topology_file = tmp_path / "topology.yaml"
    from tests.support.victim import write_topology

    write_topology(tmp_path, victim.pidfile, extra=(
        "management:\n  ssh:\n    - {name: jump, address: 192.0.2.9, username: h, password: {env: UNIT_JUMP_PW}}\n"))
    from safety_support import SCRIPT, child_env

    run = Child([sys.executable, str(SCRIPT), str(topology_file), str(state), "--acquire"],
                env=child_env(UNIT_JUMP_PW=secret))
    run.expect("in-effect")
    run.kill_group()
    assert eventually(victim.running, timeout_s=15)
    assert eventually(lambda: journal_files(state) == [], timeout_s=5)
    for path in state.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path


@pytest.mark.reproducer("X-7b")
def test_the_guardians_log_masks_a_secret_in_every_spelling_the_kernels_rule_knows(
        tmp_path, state, victim: Victim, monkeypatch: pytest.MonkeyPatch) -> None:
    import base64
    import logging
    from urllib.parse import quote

    from harness.safety.guardian import Guardian, _Masking
    from harness.safety.journal import JournalEntry
    from harness.safety.revert import snapshot
    from harness_kernel.topology.loader import load_topology
    from tests.support.victim import write_topology

    secret = "p@ss w0rd/guardian"
    monkeypatch.setenv("UNIT_JUMP_PW", secret)
    topology = load_topology(write_topology(tmp_path, victim.pidfile, extra=(
        "management:\n  ssh:\n    - {name: jump, address: 192.0.2.9, username: h, password: {env: UNIT_JUMP_PW}}\n")))
    masking = _Masking()
    Guardian(state, masking=masking)._mask_credentials(
        JournalEntry(spec=FREEZE, topology_source="t.yaml", topology_name=topology.name, run_id="r",
                     topology=snapshot(topology)))
    spellings = [secret, quote(secret, safe=""), base64.b64encode(f"h:{secret}".encode()).decode(),
                 secret[:8] + "..."]
    for spelling in spellings:
        record = logging.LogRecord("guardian", logging.ERROR, __file__, 1, "revert failed: %s", (spelling,), None)
        shown = masking.format(record).partition("revert failed: ")[2]
        assert shown.startswith("***") and spelling.strip("'.=") not in shown, (spelling, shown)


@pytest.mark.reproducer("X-5")
def test_a_run_refuses_to_claim_its_cluster_while_no_guardian_can_come_up_unless_told_to_go_without(
        topology_file: Path, state: Path) -> None:
    from harness.safety.run import HarnessRun
    from harness_kernel.errors import HarnessError
    from harness_kernel.topology.loader import load_topology

    (state / "guardian.log").symlink_to(state / "elsewhere.log")  # the guardian refuses to log through a link: it dies
    topology = load_topology(topology_file)
    guarded = HarnessRun(topology=topology, topology_source=str(topology_file), state_dir=state)
    with pytest.raises(HarnessError, match=r"no guardian is running .*--no-guardian"):
        guarded.acquire()
    unguarded = HarnessRun(topology=topology, topology_source=str(topology_file), state_dir=state,
                           start_guardian=False)
    unguarded.acquire()  # the refused run let the cluster go; this one goes on without a guardian, as told
    unguarded.release()
