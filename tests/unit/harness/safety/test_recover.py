"""`python -m harness recover` finishes what a dead run left, and nothing else.

It goes past an unreadable entry, sees through a reused pid, leaves a live run's fault and a
revert in progress alone, waits as long as the run would have, disarms dead man's switches,
needs no topology file, and exits 0 (all reverted or nothing to do), 10 (a revert failed) or
4 (bad input).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from faults.base import FaultSpec
from harness.safety.journal import Journal
from harness.safety.recover import recover
from harness_kernel.topology.models import Topology
from tests.support.victim import Victim
from tests.unit.harness.safety.safety_support import (
    ROOT,
    Child,
    LocalDeadman,
    child_env,
    deadman_running,
    hold_in_tracing_stop,
    journal_files,
    run_fault_script,
)


def recover_cli(state: Path, *extra: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", "recover", "--state-dir", str(state), *extra],
                          capture_output=True, text=True, cwd=ROOT, timeout=timeout, env=child_env())


def crashed_run(topology_file: Path, state: Path, *options: str) -> Path:
    """A run killed -9 with its fault in effect: what recover exists for. Returns its journal entry."""
    run = run_fault_script(topology_file, state, *options)
    run.expect("in-effect")
    run.kill_group()
    entries = journal_files(state)
    assert len(entries) == 1
    return entries[0]


def test_kill_9_leaves_the_journal_and_recover_reverts_it_once(topology_file, state, victim: Victim):
    crashed_run(topology_file, state)
    assert victim.frozen(), "kill -9 gives the run no chance to revert"
    recovered = recover_cli(state)
    assert recovered.returncode == 0, recovered.stdout + recovered.stderr
    assert "reverted  process-freeze on process:victim" in recovered.stdout
    assert victim.running()
    assert journal_files(state) == []
    again = recover_cli(state)
    assert again.returncode == 0 and "nothing to recover" in again.stdout


def test_recover_goes_past_unreadable_entries_reports_them_and_exits_4(topology_file, state, victim: Victim):
    good = crashed_run(topology_file, state)
    (state / "journal" / "000corrupt.json").write_text('{"id": "x", "spec": ')
    wrong_type = json.loads(good.read_text()) | {"id": "y", "pid": None}
    (state / "journal" / "001wrongtype.json").write_text(json.dumps(wrong_type))
    recovered = recover_cli(state)
    assert recovered.returncode == 4, recovered.stdout + recovered.stderr
    assert "000corrupt.json" in recovered.stdout and "001wrongtype.json" in recovered.stdout
    assert "reverted  process-freeze on process:victim" in recovered.stdout
    assert victim.running()


def test_recover_json_is_one_document_naming_each_entry_and_what_was_done(topology_file, state, victim: Victim):
    crashed_run(topology_file, state)
    (state / "journal" / "000corrupt.json").write_text('{"id": "x", "spec": ')
    recovered = recover_cli(state, "--json")
    assert recovered.returncode == 4, recovered.stdout + recovered.stderr
    document = json.loads(recovered.stdout)
    assert (document["schema"], document["exit_code"]) == ("harness-recover/1", 4)
    [entry] = document["entries"]
    assert (entry["kind"], entry["target"], entry["action"]) == ("process-freeze", "process:victim", "reverted")
    assert [Path(u["path"]).name for u in document["unreadable"]] == ["000corrupt.json"]
    assert victim.running()


def test_an_entry_whose_pid_now_belongs_to_another_process_is_reverted(topology_file, state, victim: Victim):
    entry = crashed_run(topology_file, state)
    data = json.loads(entry.read_text())
    entry.write_text(json.dumps(data | {"pid": 1}))  # after a reboot, a boot-time daemon got the crashed run's pid
    recovered = recover_cli(state)
    assert recovered.returncode == 0, recovered.stdout + recovered.stderr
    assert "reverted" in recovered.stdout
    assert victim.running()


def test_a_live_runs_fault_is_left_alone_unless_forced(topology_file, state, victim: Victim):
    run = run_fault_script(topology_file, state)
    run.expect("in-effect")
    try:
        left = recover_cli(state)
        assert left.returncode == 0, left.stdout + left.stderr
        assert "skipped" in left.stdout and f"pid {run.pid}" in left.stdout
        assert victim.frozen()
        forced = recover_cli(state, "--force")
        assert "reverted" in forced.stdout, forced.stdout + forced.stderr
        assert victim.running()
    finally:
        run.kill_group()


def test_a_fault_another_reverter_is_working_on_is_never_reverted_twice(topology_file, state, victim: Victim):
    entry = crashed_run(topology_file, state)
    entry_id = json.loads(entry.read_text())["id"]
    holder = Child([sys.executable, "-c", textwrap.dedent(f"""\
        import time
        from pathlib import Path
        from harness.safety.journal import Journal
        with Journal(Path({str(state / "journal")!r})).entry_lock({entry_id!r}, role="guardian"):
            print("held", flush=True)
            time.sleep(60)
        """)])
    try:
        holder.expect("held", timeout_s=15)
        busy = recover_cli(state, "--force")
        assert "skipped" in busy.stdout and f"pid {holder.pid}" in busy.stdout, busy.stdout + busy.stderr
        assert victim.frozen()
    finally:
        holder.kill_group()
    assert recover_cli(state).returncode == 0
    assert victim.running()


def test_a_revert_that_cannot_finish_exits_10_keeps_the_entry_and_waits_only_the_runs_revert_timeout(
        topology_file, state, victim: Victim):
    crashed_run(topology_file, state, "--revert-timeout", "2")
    holder = hold_in_tracing_stop(victim.pid)  # SIGCONT no longer ends the freeze
    try:
        started = time.monotonic()
        failed = recover_cli(state)
        took = time.monotonic() - started
    finally:
        holder.kill_group()
    assert failed.returncode == 10, failed.stdout + failed.stderr
    assert "failed" in failed.stdout
    assert took < 30, f"recover waited {took:.0f} s for a run whose revert timeout was 2 s"
    assert len(journal_files(state)) == 1


def test_recover_needs_no_topology_file_the_entry_keeps_what_it_needs(topology_file, state, victim: Victim):
    crashed_run(topology_file, state)
    topology_file.unlink()  # moved, edited or deleted since the crash
    recovered = recover_cli(state)
    assert recovered.returncode == 0, recovered.stdout + recovered.stderr
    assert victim.running()


def test_an_entry_without_a_topology_snapshot_is_named_and_kept_never_rebuilt_from_todays_file(
        topology_file, state, victim: Victim):
    entry = crashed_run(topology_file, state)
    written = entry.read_text()
    data = json.loads(written)
    data.pop("topology")  # as a journal written before the snapshots would read
    entry.write_text(json.dumps(data))
    recovered = recover_cli(state)
    assert recovered.returncode != 0
    said = recovered.stdout + recovered.stderr
    assert f"journal entry {data['id']} (process-freeze on process:victim) has no topology snapshot" in said
    assert journal_files(state) == [entry], "what it could not revert stays for a person"
    assert victim.frozen(), "nothing guessed: the fault is left as the crash left it"
    entry.write_text(written)
    assert recover_cli(state).returncode == 0 and victim.running()


class DeadmanFactory:
    """Builds the crashed run's fault as one with a dead man's switch on this machine."""

    def __init__(self, victim: Victim) -> None:
        self.victim = victim
        self.built: list[LocalDeadman] = []

    def build(self, spec: FaultSpec, topology: Topology) -> LocalDeadman:
        fault = LocalDeadman(spec, self.victim.pidfile, "/bin/sh")
        self.built.append(fault)
        return fault


def test_recover_disarms_the_dead_man_of_every_entry_it_clears(topology_file, state, victim: Victim):
    entry = json.loads(crashed_run(topology_file, state).read_text())
    armed = LocalDeadman(FaultSpec(**{k: entry["spec"][k] for k in ("kind", "target")}), victim.pidfile, "/bin/sh",
                         deadman_marker=entry.get("deadman_marker"))
    armed.arm_deadman(120)  # what the crashed run armed on the target
    assert deadman_running(armed.marker)
    factory = DeadmanFactory(victim)
    outcomes = recover(Journal(state / "journal"), factory)  # type: ignore[arg-type]
    assert [o.action for o in outcomes] == ["reverted"]
    assert victim.running()
    time.sleep(0.2)
    assert not deadman_running(armed.marker), "a dead man left armed would re-break the target later"
