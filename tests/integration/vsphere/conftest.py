"""The simulator for the vSphere integration tests: skipped, saying why, when it is not built (failed instead
with HARNESS_REQUIRE_VSIM set)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from faults.transports.vcenter import close_all
from tests.support.vsim import PASSWORD_ENV, Simulator, require, running

MODEL = {"ha_restart_delay_s": 2.0, "resync_rate_mb_s": 200.0, "component_mb": 256, "io_pause_s": 1.0,
         "repair_timer_s": 3600, "migration_s": 1.5}


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Simulator]:
    require(govc=True)
    password = secrets.token_urlsafe(16)
    with pytest.MonkeyPatch.context() as env:
        env.setenv(PASSWORD_ENV, password)
        with running(tmp_path_factory.mktemp("vsim"), MODEL, password=password, username="harness") as started:
            try:
                yield started
            finally:
                close_all()
