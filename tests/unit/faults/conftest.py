"""Fixtures for the router backend's unit tests: a fake router shell, a local stub router, a runner."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.safety.journal import Journal
from harness.safety.runner import FaultRunner, RunnerSettings
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.models import Topology
from tests.unit.faults.backends.fake_router_shell import FakeSshShell
from tests.unit.faults.backends.local_router import LocalRouter


@pytest.fixture
def fake() -> FakeSshShell:
    return FakeSshShell()


@pytest.fixture
def local(tmp_path: Path) -> Iterator[LocalRouter]:
    router = LocalRouter(tmp_path / "router")
    try:
        yield router
    finally:
        router.kill_all()


@pytest.fixture
def runner_for(tmp_path: Path) -> Callable[[Topology], FaultRunner]:
    def make(topology: Topology) -> FaultRunner:
        return FaultRunner(topology, str(tmp_path / "topology.yaml"), Journal(tmp_path / "journal"), Timeline(), "run-1",
                           RunnerSettings(poll_interval_s=0.01, settle_timeout_s=0.5, revert_timeout_s=0.5),
                           allow_destructive=True)
    return make
