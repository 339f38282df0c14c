"""One embedded lab for the lab tests (prefix 'hlabt', state in a fresh directory), up once, down at the end."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.clusters.lab import LabCluster
from harness.safety.journal import Journal
from harness.safety.runner import FaultRunner, RunnerSettings
from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.models import LabSettings, Topology
from harness_lab.controller import Lab
from harness_lab.layout import LabLayout
from tests.integration.lab.lab_support import FaultBuilder, make_state_dir
from workloads.oltp import DriverConfig, OltpDriver, prepare_schema
from workloads.oltp.schema import Scale

TEST_PREFIX = "hlabt"


def lab_available() -> str | None:
    if os.geteuid() != 0:
        return "needs root"
    if shutil.which("pg_autoctl") is None:
        return "pg_auto_failover is not installed (make setup)"
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    reason = lab_available()
    for item in items:
        if "integration/lab" in str(item.fspath):
            item.add_marker(pytest.mark.lab)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def lab() -> Iterator[Lab]:
    state = make_state_dir(TEST_PREFIX)
    lab = Lab(LabLayout.from_settings(LabSettings(prefix=TEST_PREFIX, state_dir=str(state))))
    took = lab.up()
    print(f"\nlab {TEST_PREFIX} up in {took:.1f} s")
    try:
        yield lab
    finally:
        lab.down()
        shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="session")
def topology(lab: Lab) -> Topology:
    return lab.layout.topology()


@pytest.fixture(scope="session")
def factory() -> FaultBuilder:
    """Builds faults as runs do: through the registry."""
    return FaultBuilder()


@pytest.fixture
def runner(topology: Topology, tmp_path: Path) -> FaultRunner:
    return FaultRunner(topology, "lab:" + TEST_PREFIX, Journal(tmp_path / "journal"), Timeline(), "lab-test",
                       RunnerSettings(settle_timeout_s=60, revert_timeout_s=150))


@pytest.fixture(autouse=True)
def healthy_lab(request: pytest.FixtureRequest) -> None:
    """Every fault test starts from a healthy lab; one that cannot get there is rebuilt (harness broken, not product)."""
    if "lab" not in request.fixturenames:
        return
    lab: Lab = request.getfixturevalue("lab")
    try:
        lab.wait_healthy(60)
        drift = lab.drift()
        if drift:  # an earlier spec's leftover: put back as `up` made it, and said, so the spec starts where it asserts
            print(f"lab {TEST_PREFIX} drifted before {request.node.name}: {'; '.join(drift)}: put back")
            lab.put_back()
            lab.wait_healthy(60)
            assert not lab.drift(), f"lab {TEST_PREFIX} still drifted: {'; '.join(lab.drift())}"
    except Exception:
        lab.rebuild()
        raise


@pytest.fixture
def load(lab: Lab, topology: Topology, runner: FaultRunner) -> Iterator[OltpDriver]:
    """Six users of the OLTP driver against the lab, on the runner's timeline, for the test's duration."""
    dialect, settings = LabCluster(lab, topology).connection()
    prepare_schema(dialect, settings, Scale(), scratch=True)
    driver = OltpDriver(dialect, settings, runner.timeline, TransactionSeries(), DriverConfig(users=6))
    driver.start()
    yield driver
    driver.stop()
