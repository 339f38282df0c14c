"""No signal escapes the revert: Ctrl-C (once, twice), SIGTERM and SIGHUP, before, during and after inject.

Each run is a real child process freezing a real process tree; the signals are real.
"""

from __future__ import annotations

import signal
import sys
import time

import pytest

from tests.support.victim import Victim
from tests.unit.harness.safety.safety_support import ROOT, Child, eventually, journal_files, journal_statuses, run_fault_script

HANGUPS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
IDS = ["ctrl-c", "sigterm", "sighup"]


@pytest.mark.parametrize("signum", HANGUPS, ids=IDS)
def test_ctrl_c_sigterm_and_sighup_revert_the_fault_without_any_handler_of_the_caller(topology_file, state, victim, signum):
    """The runner itself turns SIGTERM and SIGHUP (the operator's SSH session dropping) into a revert."""
    run = run_fault_script(topology_file, state)
    run.expect("in-effect")
    assert victim.frozen()
    run.signal(signum)
    assert run.wait() != 0
    assert victim.running(), run.output()
    assert journal_files(state) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGHUP], ids=["ctrl-c", "sighup"])
def test_a_signal_while_the_fault_is_being_injected_still_reverts_it(topology_file, state, victim, signum):
    run = run_fault_script(topology_file, state, "--inject-s", "2")
    run.expect("injecting")
    assert eventually(victim.frozen)
    run.signal(signum)
    run.wait()
    assert victim.running(), run.output()
    assert journal_files(state) == []


def test_a_second_ctrl_c_while_a_guard_is_being_evaluated_does_not_skip_the_revert(topology_file, state, victim):
    run = run_fault_script(topology_file, state, "--guard", "slow")
    run.expect("in-effect")
    time.sleep(0.5)
    run.signal(signal.SIGINT)
    time.sleep(0.3)  # the first Ctrl-C is unwinding; the guard is still in its 1 s evaluation
    run.signal(signal.SIGINT)
    run.wait()
    assert victim.running(), f"journal: {journal_statuses(state)}\n{run.output()}"
    assert journal_files(state) == []


def test_ctrl_c_during_a_stop_condition_revert_waits_for_that_revert(topology_file, state, victim):
    run = run_fault_script(topology_file, state, "--guard", "trip", "--revert-s", "3")
    run.expect("in-effect")
    run.expect("revert-start")  # the guard tripped and its revert is under way
    time.sleep(0.5)
    run.signal(signal.SIGINT)
    run.wait()
    assert "revert-done" in run.output()
    assert victim.running(), f"journal: {journal_statuses(state)}\n{run.output()}"
    assert journal_files(state) == []


def test_a_signal_during_a_slow_revert_says_so_and_a_third_aborts_keeping_the_journal(topology_file, state, victim):
    run = run_fault_script(topology_file, state, "--revert-s", "30", "--body-s", "0.5")
    run.expect("revert-start")
    run.signal(signal.SIGINT)
    assert eventually(lambda: "reverting process-freeze on process:victim, up to 120 s; the journal keeps it"
                      in "".join(run.err), timeout_s=5), run.output()
    run.signal(signal.SIGTERM)
    time.sleep(0.2)
    assert run.process.poll() is None, "a second signal does not abort the revert"
    started = time.monotonic()
    run.signal(signal.SIGHUP)
    run.wait(timeout_s=10)
    assert time.monotonic() - started < 5, "the third signal ends the run at once"
    assert "journal kept, run python -m harness recover" in "".join(run.err), run.output()
    assert "revert-done" not in run.output()
    assert journal_statuses(state) == ["reverting"], "the aborted fault stays in the journal for recover"
    assert victim.frozen()


def test_a_revert_that_takes_a_while_shows_its_progress(topology_file, state, victim: Victim):
    run = run_fault_script(topology_file, state, "--body-s", "0.2", "--clear-after-s", "6.5")
    run.wait(timeout_s=30)
    progress = [line for line in run.err if line.startswith("still reverting process-freeze on process:victim")]
    assert progress, run.output()
    assert "up to 120 s" in progress[0]
    assert victim.running()
    assert journal_files(state) == []


PYTEST_SUITE = """\
from faults.base import FaultSpec

def test_freeze(inject):
    with inject(FaultSpec("process-freeze", "process:victim")) as active:
        print("in-effect", flush=True)
        active.sleep(60)
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["sigterm", "sighup"])
def test_a_pytest_run_reverts_on_sigterm_and_on_the_hangup_of_its_terminal(tmp_path, topology_file, state, victim, signum):
    suite = tmp_path / "test_suite.py"
    suite.write_text(PYTEST_SUITE)
    run = Child([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", str(suite),
                 "--topology", str(topology_file), "--allow-destructive", "--state-dir", str(state),
                 "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml")])
    run.expect("in-effect")
    assert victim.frozen()
    run.signal(signum)
    run.wait()
    assert victim.running(), run.output()
    assert journal_files(state) == []
