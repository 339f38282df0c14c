"""The contract every platform keeps, as tests a plug-in's author runs against their own stand-in.

A platform (a `resilience_harness.platforms` entry point) is trusted with production clusters only if
what the harness promises holds for it too: its plan sends nothing, its fault is journaled before it
acts, its revert puts back what it found on test end, on SIGTERM and after a kill -9 (the guardian),
a target off the allow-list is refused before anything is sent, and no credential is ever printed.
The kit proves each promise the way a user meets it: `pytest` with the harness's options and
`harness doctor`, in processes of their own, the effect read from the stand-in's own answers
(`observe`), never from the backend under test.

    from harness.contract_kit import PlatformContract, PlatformUnderTest

    class TestMyPlatform(PlatformContract):
        @pytest.fixture
        def platform_under_test(self, tmp_path): ...   # start the stand-in, write a topology, yield

Each run is bounded (`PlatformUnderTest.settle_s`, `run_timeout_s`); nothing here mocks the harness.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

EXPERIMENT = """\
import os, time
import pytest
from faults.base import FaultSpec, FaultState

SPEC = FaultSpec({kind!r}, {target!r}, {params!r})

@pytest.mark.faults(SPEC)
def test_the_platforms_fault(inject):
    with inject(SPEC) as active:
        assert active.fault.check() is FaultState.IN_EFFECT
        print("{marker}", flush=True)
        time.sleep(float(os.environ.get("CONTRACT_KIT_HOLD_S", "0")))
"""
IN_EFFECT = "contract-kit: in effect"


@dataclass(frozen=True)
class PlatformUnderTest:
    """What the kit needs to know of a platform and its stand-in; the author's fixture gives it."""

    topology: Path  # a topology naming the platform's section, with `kind` on `target` in its allow-list
    kind: str  # one fault kind the platform realises on `target` (`host-power-off`)
    target: str  # an allow-list name (`host:esx-b1`)
    platform: str  # the platform's name, as its plan says it (`... via pdu`)
    observe: Callable[[], object]  # the stand-in's own view of what the fault acts on: equal means put back
    environment: Mapping[str, str] = field(default_factory=dict)  # what the topology's references read
    secrets: Sequence[str] = ()  # values that must appear in no output, journal or log
    params: Mapping[str, Any] = field(default_factory=dict)
    settle_s: float = 60.0  # how long an effect or a revert may take to show in `observe`
    run_timeout_s: float = 300.0  # the bound on every run the kit starts


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


class HeldRun:
    """A run in a process group of its own, its output read by a thread: every wait on it is bounded."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put("")  # the end of its output

    @property
    def output(self) -> str:
        return "".join(self.seen)

    def read_until(self, wanted: str | None, timeout_s: float) -> bool:
        """Read lines until one is `wanted` (True) or the output ends or the time is up (False)."""
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                return False
            if not line:
                return False
            self.seen.append(line)
            if wanted is not None and line.strip() == wanted:
                return True
        return False

    def signal(self, signum: signal.Signals) -> None:
        os.killpg(self.process.pid, signum)

    def finish(self, timeout_s: float) -> str:
        """Its whole output, once it has ended (killed if it has not within `timeout_s`)."""
        self.read_until(None, timeout_s)
        self.stop()
        return self.output

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)


class Project:
    """A user's project in a temporary folder: the experiment, its state directory, the runs."""

    def __init__(self, platform: PlatformUnderTest, where: Path) -> None:
        self.platform, self.where = platform, where
        self.state = where / "state"
        self.test_file = where / "test_contract_kit_fault.py"
        self.test_file.write_text(EXPERIMENT.format(kind=platform.kind, target=platform.target,
                                                    params=dict(platform.params), marker=IN_EFFECT))

    def environment(self, **extra: str) -> dict[str, str]:
        return {**os.environ, **self.platform.environment, **extra}

    def pytest_argv(self, topology: Path, *options: str) -> list[str]:
        return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-s", "-q", "--rootdir", str(self.where),
                "--topology", str(topology), "--allow-destructive", "--state-dir", str(self.state), *options,
                str(self.test_file)]

    def run(self, argv: list[str]) -> Run:
        done = subprocess.run(argv, cwd=self.where, capture_output=True, text=True, env=self.environment(),
                              timeout=self.platform.run_timeout_s, check=False)
        return Run(done.returncode, done.stdout, done.stderr)

    def start(self, topology: Path, hold_s: float) -> HeldRun:
        """A run holding its fault: started in a session of its own (as a CI job is), read until the fault is in."""
        process = subprocess.Popen(self.pytest_argv(topology), cwd=self.where, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, start_new_session=True,
                                   env=self.environment(CONTRACT_KIT_HOLD_S=str(hold_s)))
        held = HeldRun(process)
        if not held.read_until(IN_EFFECT, self.platform.run_timeout_s):
            held.stop()
            raise AssertionError(f"the run ended or stalled before its fault was in effect:\n{held.output[-4000:]}")
        return held

    def journal(self) -> list[dict[str, Any]]:
        return [json.loads(p.read_text()) for p in sorted((self.state / "journal").glob("*.json"))]

    def assert_put_back(self, before: object, output: str, when: str) -> None:
        """What the fault acted on is as the stand-in had it before, nothing is left journaled, no secret shown."""
        assert settles(lambda: self.platform.observe() == before, self.platform.settle_s), \
            f"not put back {when}:\n{output[-4000:]}"
        assert self.journal() == [], output[-4000:]
        assert not self.leaks(output)

    def leaks(self, *texts: str) -> list[str]:
        """The secrets found in `texts`, the journal and the guardian's log (by position: never printed)."""
        logs = [p.read_text(errors="replace") for p in (self.state / "journal").glob("*")] if self.state.exists() else []
        guardian = self.state / "guardian.log"
        everything = [*texts, *logs, guardian.read_text(errors="replace") if guardian.exists() else ""]
        return [f"secret #{n}" for n, secret in enumerate(self.platform.secrets, 1)
                if any(secret in text for text in everything)]


def settles(probe: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not probe():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def without_target(topology: Path, target: str, where: Path) -> Path:
    """The same topology with `target` taken off its allow-list (whatever else the list names stays)."""
    doc = yaml.safe_load(topology.read_text())
    doc["allow_list"] = [name for name in doc.get("allow_list", []) if name != target]
    path = where / f"without-{topology.name}"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


class PlatformContract:
    """The contract's clauses; a subclass named `Test...` gives `platform_under_test` and runs them all."""

    @pytest.fixture
    def platform_under_test(self) -> PlatformUnderTest:
        raise NotImplementedError("give a `platform_under_test` fixture: the platform, its stand-in and topology")

    @pytest.fixture
    def project(self, platform_under_test: PlatformUnderTest, tmp_path: Path) -> Iterator[Project]:
        yield Project(platform_under_test, tmp_path)

    def test_its_plan_names_the_platform_and_sends_nothing(
            self, platform_under_test: PlatformUnderTest, project: Project) -> None:
        p = platform_under_test
        before = p.observe()
        planned = project.run(project.pytest_argv(p.topology, "--dry-run"))
        assert planned.returncode == 0, planned.output[-4000:]
        assert f"{p.kind} on {p.target} via {p.platform}" in planned.output, planned.output[-4000:]
        assert p.observe() == before, "a dry-run changed what the fault acts on"
        assert project.journal() == []
        assert not project.leaks(planned.output)

    def test_doctor_finds_the_fault_ready_and_changes_nothing(
            self, platform_under_test: PlatformUnderTest, project: Project) -> None:
        p = platform_under_test
        before = p.observe()
        checked = project.run([sys.executable, "-m", "harness", "doctor", "--topology", str(p.topology), "--json"])
        assert checked.returncode == 0, checked.output[-4000:]
        report = json.loads(checked.stdout)
        ready = [(row["where"], row["status"]) for row in report["rows"] if row["check"] == f"{p.kind} on {p.target}: ready"]
        assert ready and all(where.startswith(p.platform) and status == "PASS" for where, status in ready), report["rows"]
        assert p.observe() == before, "doctor changed what the fault acts on"
        assert not project.leaks(checked.output)

    def test_the_fault_is_journaled_before_it_acts_and_sigterm_puts_back_what_it_found(
            self, platform_under_test: PlatformUnderTest, project: Project) -> None:
        p = platform_under_test
        before = p.observe()
        held = project.start(p.topology, hold_s=p.run_timeout_s)
        try:
            [entry] = project.journal()
            assert entry["backend"]["platform"] == p.platform, entry
            assert settles(lambda: p.observe() != before, p.settle_s), "the fault said in effect; the stand-in disagrees"
            held.signal(signal.SIGTERM)
            output = held.finish(p.run_timeout_s)
        finally:
            held.stop()
        project.assert_put_back(before, output, "after SIGTERM")

    def test_a_run_that_ends_puts_back_what_it_found(
            self, platform_under_test: PlatformUnderTest, project: Project) -> None:
        p = platform_under_test
        before = p.observe()
        done = project.run(project.pytest_argv(p.topology))
        assert done.returncode == 0 and IN_EFFECT in done.output, done.output[-4000:]
        project.assert_put_back(before, done.output, "at test end")

    def test_a_run_killed_mid_fault_is_put_back_by_the_guardian(
            self, platform_under_test: PlatformUnderTest, project: Project) -> None:
        p = platform_under_test
        before = p.observe()
        held = project.start(p.topology, hold_s=p.run_timeout_s)
        held.stop()  # kill -9 of the whole run: no revert, no cleanup
        assert settles(lambda: not project.journal() and p.observe() == before, p.settle_s + 60), \
            f"the guardian did not put it back: {project.journal()}"
        guardian = (project.state / "guardian.log").read_text()
        assert f"reverted {p.kind} on {p.target}" in guardian, guardian[-4000:]
        assert not project.leaks(held.output)

    def test_a_target_off_the_allow_list_is_refused_before_anything_is_sent(
            self, platform_under_test: PlatformUnderTest, project: Project) -> None:
        p = platform_under_test
        before = p.observe()
        refused = project.run(project.pytest_argv(without_target(p.topology, p.target, project.where)))
        assert refused.returncode != 0 and IN_EFFECT not in refused.output, refused.output[-4000:]
        assert p.target in refused.output and "allow" in refused.output.lower(), refused.output[-4000:]
        assert p.observe() == before and project.journal() == []
        assert not project.leaks(refused.output)


__all__ = ["PlatformContract", "PlatformUnderTest"]
