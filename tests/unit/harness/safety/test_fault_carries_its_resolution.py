"""A fault carries what acts: the journal, the INJECT event and every reverter name the object that ran.

A hand-built fault handed to `inject` is journaled as its own class (`module:Class`), not as the
backend the registry would pick for its kind; after a crash `recover` rebuilds that class, and
refuses (naming the entry and the class, the fault left as it is) when the class cannot be
imported here or is no fault. A class no reverter could import (defined in a function, or in
`__main__`) is refused before the journal. The report's mechanism line is read from the history.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from faults import catalogue, registry
from faults.backends.process import ProcessFreeze
from faults.base import FaultSpec
from faults.registry import resolve
from harness.safety.run import HarnessRun
from harness.scenario_report import mechanism
from harness_kernel.errors import ConfigError
from harness_kernel.history import EventKind
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.models import Topology
from tests.support.victim import Victim
from tests.unit.harness.safety.handmade import MarkedFreeze, marker_of
from tests.unit.harness.safety.safety_support import ROOT, Child, child_env, journal_files

FREEZE = FaultSpec(kind="process-freeze", target="process:victim")
HANDMADE = "tests.unit.harness.safety.handmade:MarkedFreeze"


def harness_run(topology: Topology, topology_file: Path, state: Path) -> HarnessRun:
    return HarnessRun(topology=topology, topology_source=str(topology_file), state_dir=state, allow_destructive=True)


def journaled(state: Path) -> dict[str, object]:
    [entry] = journal_files(state)
    return dict(json.loads(entry.read_text()))


def test_a_hand_built_fault_is_journaled_as_its_own_class(topology, topology_file, state, victim: Victim):
    fault = MarkedFreeze(FaultSpec("process-freeze", "process:victim"), victim.pidfile, "/bin/sh")
    with harness_run(topology, topology_file, state).inject(Timeline(), fault):
        backend = journaled(state)["backend"]
    assert backend == {"backend": HANDMADE}, "the registry would pick ProcessFreeze; MarkedFreeze is what acts"
    assert marker_of(victim.pidfile).exists(), "the run reverted with the object it injected"


def test_a_fault_the_registry_built_is_journaled_with_the_platform_that_declares_it(topology, topology_file, state,
                                                                                    victim: Victim):
    with harness_run(topology, topology_file, state).inject(Timeline(), FREEZE):
        backend = journaled(state)["backend"]
    assert backend == {"platform": resolve(FREEZE, topology).platform, "backend": "faults.backends.process:ProcessFreeze"}


def test_the_inject_event_says_what_acted_and_its_plan_line(topology, topology_file, state, victim: Victim):
    timeline = Timeline()
    fault = MarkedFreeze(FaultSpec("process-freeze", "process:victim"), victim.pidfile, "/bin/sh")
    with harness_run(topology, topology_file, state).inject(timeline, fault):
        pass
    [injected] = timeline.events(EventKind.INJECT)
    assert injected.attrs["acting"] == {"backend": HANDMADE, "via": "process",
                                        "plan": "process-freeze on process:victim via process"}
    assert {k: v for k, v in injected.attrs.items() if k != "acting"} == {"fault": "process-freeze",
                                                                         "target": "process:victim"}


def test_a_fault_class_no_reverter_could_import_is_refused_before_the_journal(topology, topology_file, state,
                                                                              victim: Victim):
    class DefinedInATest(ProcessFreeze):
        pass

    fault = DefinedInATest(FaultSpec("process-freeze", "process:victim"), victim.pidfile, "/bin/sh")
    with pytest.raises(ConfigError, match=r"DefinedInATest.*defined inside a function.*no reverter could rebuild it"), \
            harness_run(topology, topology_file, state).inject(Timeline(), fault):
        pytest.fail("a fault that could not be reverted after a crash must not be injected")
    assert journal_files(state) == [] and victim.running()


# The user's test: a fault built by hand, handed to the public `inject` fixture, held until the run is killed.
HELD = textwrap.dedent("""\
    import time
    from pathlib import Path
    from faults.base import FaultSpec
    from tests.unit.harness.safety.handmade import MarkedFreeze

    def test_hold(inject, harness_run):
        pidfile = Path(harness_run.topology.processes[0].pidfile)
        with inject(MarkedFreeze(FaultSpec("process-freeze", "process:victim"), pidfile, "/bin/sh")):
            print("in-effect", flush=True)
            time.sleep(120)
    """)


def recover_cli(state: Path, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", "recover", "--state-dir", str(state)], capture_output=True,
                          text=True, cwd=cwd, timeout=120, env=env)


def test_kill_9_of_a_run_with_a_hand_built_fault_is_recovered_by_that_class_or_refused(tmp_path, topology_file,
                                                                                       state, victim: Victim):
    (tmp_path / "test_held.py").write_text(HELD)
    run = Child([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-s", "-q", str(tmp_path / "test_held.py"),
                 "--rootdir", str(tmp_path), "--topology", str(topology_file), "--state-dir", str(state),
                 "--no-guardian", "--allow-destructive"])
    run.expect("in-effect", timeout_s=60)
    run.kill_group()
    entry_file = journal_files(state)[0]
    entry = json.loads(entry_file.read_text())
    assert entry["backend"] == {"backend": HANDMADE}, "the journal names the class that acted"
    assert victim.frozen()

    elsewhere = {k: v for k, v in child_env().items() if k != "PYTHONPATH"}  # the module is not installed there
    refused = recover_cli(state, elsewhere, cwd=tmp_path)
    said = refused.stdout + refused.stderr
    assert refused.returncode == 10, said
    assert entry["id"] in said and f"the journal names {HANDMADE}, which cannot be imported here" in said, said
    assert victim.frozen() and journal_files(state) == [entry_file], "fail closed: no in-tree class stands in for it"

    for impostor, why in (("tests.unit.harness.safety.handmade:NotAFault", ", which is not a fault class"),
                          ("os:getcwd", ", which is not a fault class"),
                          ("__main__:MarkedFreeze", " defined in __main__")):
        entry_file.write_text(json.dumps({**entry, "backend": {"backend": impostor}}))
        said = (done := recover_cli(state, child_env(), cwd=ROOT)).stdout + done.stderr
        assert done.returncode == 10 and f"the journal names {impostor}{why}" in said, said
        assert victim.frozen()
    entry_file.write_text(json.dumps(entry))

    recovered = recover_cli(state, child_env(), cwd=ROOT)
    assert recovered.returncode == 0, recovered.stdout + recovered.stderr
    assert victim.running() and journal_files(state) == []
    assert marker_of(victim.pidfile).exists(), "reverted by MarkedFreeze itself, not by the in-tree ProcessFreeze"


def test_the_report_names_the_mechanism_from_the_history_alone(topology, topology_file, state, victim: Victim,
                                                               monkeypatch):
    timeline = Timeline()
    fault = MarkedFreeze(FaultSpec("process-freeze", "process:victim"), victim.pidfile, "/bin/sh")
    with harness_run(topology, topology_file, state).inject(timeline, fault):
        pass

    def no_registry(*args: object, **kwargs: object) -> None:
        raise AssertionError("the report asked the fault registry")

    monkeypatch.setattr(catalogue, "installed", no_registry)  # the platform uninstalled after the run
    monkeypatch.setattr(registry, "resolve", no_registry)
    assert mechanism(timeline, "process-freeze", "process:victim") == "process-freeze via process"
    assert mechanism(timeline, "host-power-off", "host:esx-a1") == "host-power-off", "no such fault in this history"
