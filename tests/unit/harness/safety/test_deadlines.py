"""Every fault has a deadline, and every dead man's switch belongs to one journal entry.

The deadline is in the journal entry (the guardian enforces it), the run trips on it itself,
and a target-side dead man's switch is armed for it whether or not the test gave a duration.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from faults.base import FaultSpec
from harness.safety.run import HarnessRun
from harness.safety.runner import RunnerSettings
from harness_kernel.errors import StopConditionTripped
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.loader import load_topology
from tests.support.victim import Victim, write_topology
from tests.unit.harness.safety.safety_support import FREEZE, ArmRecorder, LocalDeadman, deadman_running, eventually, journal_files

SETTINGS = RunnerSettings(poll_interval_s=0.02, settle_timeout_s=5.0, revert_timeout_s=10.0, deadman_margin_s=60.0)


def session_for(topology_file: Path, state: Path, settings: RunnerSettings = SETTINGS) -> HarnessRun:
    return HarnessRun(topology=load_topology(topology_file), topology_source=str(topology_file), state_dir=state,
                          allow_destructive=True, runner_settings=settings)


def test_a_fault_without_a_duration_still_gets_a_bounded_deadline_and_dead_man(topology_file, state, victim: Victim):
    fault = ArmRecorder(FREEZE, victim.pidfile, "/bin/sh")
    before = time.time()
    with session_for(topology_file, state).inject(Timeline(), fault):
        entry = json.loads(journal_files(state)[0].read_text())
    deadline = entry.get("deadline_wall") or entry.get("deadman_until_wall")
    assert deadline is not None, "the journal entry states when the fault must end"
    assert before < deadline <= before + SETTINGS.deadline_cap_s
    assert len(fault.armed) == 1 and 0 < fault.armed[0] <= SETTINGS.deadline_cap_s + SETTINGS.revert_timeout_s + 60
    assert fault.disarmed == 1


def test_a_zero_duration_arms_the_dead_man_past_the_settle_time_not_for_zero_seconds(topology_file, state, victim):
    fault = ArmRecorder(FREEZE, victim.pidfile, "/bin/sh")
    with session_for(topology_file, state).inject(Timeline(), fault, duration_s=0):
        pass
    assert fault.armed and fault.armed[0] >= SETTINGS.settle_timeout_s + SETTINGS.deadman_margin_s


def test_the_run_itself_ends_a_fault_that_reaches_its_deadline(topology_file, state, victim: Victim):
    settings = RunnerSettings(poll_interval_s=0.02, settle_timeout_s=0.5, revert_timeout_s=5.0, deadman_margin_s=0.5)
    timeline = Timeline()
    with pytest.raises(StopConditionTripped, match="deadline"), \
            session_for(topology_file, state, settings).inject(timeline, FREEZE, duration_s=0.5) as active:
        assert victim.frozen()
        assert eventually(victim.running, timeout_s=10), "reverted while the body is still busy"
        active.sleep(5)
    assert journal_files(state) == []


def two_victims_topology(tmp_path: Path, first: Victim, second_pidfile: Path) -> Path:
    path = write_topology(tmp_path, first.pidfile)
    text = path.read_text().replace("allow_list: [process:victim]", "allow_list: [process:victim, 'process:a-b', 'process:a-bc']")
    text = text.replace("processes:\n", f"processes:\n  - {{name: 'a-b', pidfile: {first.pidfile}, executable: /bin/sh}}\n"
                                        f"  - {{name: 'a-bc', pidfile: {second_pidfile}, executable: /bin/sh}}\n")
    path.write_text(text)
    return path


def test_disarming_one_entrys_dead_man_leaves_a_similarly_named_entrys_armed(tmp_path, state, victim: Victim):
    other = subprocess.Popen(["/bin/sh", "-c", "sleep 600 & wait"], start_new_session=True)
    other_pidfile = tmp_path / "other.pid"
    other_pidfile.write_text(f"{other.pid}\n")
    try:
        topology_file = two_victims_topology(tmp_path, victim, other_pidfile)
        session = session_for(topology_file, state)
        outer = LocalDeadman(FaultSpec("process-freeze", "process:a-bc"), other_pidfile, "/bin/sh")
        inner = LocalDeadman(FaultSpec("process-freeze", "process:a-b"), victim.pidfile, "/bin/sh")
        with session.inject(Timeline(), outer, duration_s=60):
            with session.inject(Timeline(), inner, duration_s=60):
                assert eventually(lambda: deadman_running(outer.marker) and deadman_running(inner.marker))
                assert outer.marker != inner.marker
            time.sleep(0.3)
            assert not deadman_running(inner.marker)
            assert deadman_running(outer.marker), "the other entry's dead man's switch was disarmed with it"
        assert not deadman_running(outer.marker)
    finally:
        subprocess.run(["pkill", "-f", "[h]arness-deadman-"], check=False)
        other.kill()
        other.wait()


@pytest.mark.parametrize("target", ["link:a~b", "link:a~bc", "site:Site A (Madrid)", "site:a$(touch /tmp/pwned)", "host:x;y"])
def test_a_dead_man_marker_is_a_shell_literal_unique_to_its_entry(target):
    from faults.base import deadman_marker

    marker = deadman_marker("0123456789ab", target)
    assert subprocess.run(["sh", "-n", "-c", f": {marker}; sleep 1"], capture_output=True).returncode == 0
    assert all(c.isalnum() or c in "-_.:~" for c in marker), marker
    assert "0123456789ab" in marker
    other = deadman_marker("0123456789ac", target)
    assert not other.startswith(marker) and not marker.startswith(other)
    longer = deadman_marker("0123456789ab", target + "c")
    assert not longer.startswith(marker), "a longer target's marker does not extend a shorter one's"


def test_the_revert_timeout_and_the_time_to_heal_are_two_options_and_only_the_revert_extends_the_dead_man(
        topology_file, state, victim: Victim, pytestconfig: pytest.Config):
    from harness.plugin import runner_settings
    from harness.run_options import read_options

    given = {"--revert-timeout-s": 50.0, "--recover-timeout-s": 500.0}
    options = read_options(lambda name: given.get(name, pytestconfig.getoption(name)))  # the rest: defaults
    settings = runner_settings(options)
    assert (settings.revert_timeout_s, options.recover_timeout_s) == (50.0, 500.0)

    fault = ArmRecorder(FREEZE, victim.pidfile, "/bin/sh")
    timed = RunnerSettings(poll_interval_s=0.02, settle_timeout_s=5.0, revert_timeout_s=settings.revert_timeout_s,
                           deadman_margin_s=60.0)
    before = time.time()
    with session_for(topology_file, state, timed).inject(Timeline(), fault, duration_s=20):
        entry = json.loads(journal_files(state)[0].read_text())
    # deadline = 5 s settle + 20 s duration + 60 s margin; the dead man waits the revert's 50 s past it, not 500
    assert before + 85 <= entry["deadline_wall"] <= time.time() + 85
    assert entry["revert_timeout_s"] == 50.0
    [armed] = fault.armed
    assert 85 + 50 - 2 <= armed <= 85 + 50

