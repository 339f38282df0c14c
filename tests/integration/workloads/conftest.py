"""Fixtures for the workloads' integration tests: a real PostgreSQL 15 on 127.0.0.1 (started
in a temporary directory as user postgres), a timeline and a series."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from tests.support.oltp_local import LocalBench, start_bench
from workloads.oltp.schema import Scale


def _require_postgres() -> None:
    if os.geteuid() != 0 or not shutil.which("/usr/lib/postgresql/15/bin/postgres"):
        pytest.skip("needs root and the Debian postgresql-15 package to run a throwaway cluster as user postgres")


@pytest.fixture(scope="session")
def pg() -> Iterator[LocalBench]:
    """One loaded cluster for the tests that leave it as they found it."""
    _require_postgres()
    bench = start_bench(Scale(1))
    yield bench
    bench.server.destroy()


@pytest.fixture
def own_pg() -> Iterator[LocalBench]:
    """A cluster of the test's own, for tests that reconfigure or crash it."""
    _require_postgres()
    bench = start_bench(Scale(1))
    yield bench
    bench.server.destroy()


@pytest.fixture
def timeline() -> Timeline:
    return Timeline()


@pytest.fixture
def series() -> TransactionSeries:
    return TransactionSeries()
