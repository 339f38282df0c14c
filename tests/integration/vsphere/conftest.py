"""The simulator for the vSphere integration tests: skipped, saying why, when it is not built."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from faults.transports.vcenter import close_all
from tests.integration.vsphere.simulator import PASSWORD_ENV, Sim, binary, govc_binary, running

MODEL = {"ha_restart_delay_s": 2.0, "resync_rate_mb_s": 200.0, "component_mb": 256, "io_pause_s": 1.0,
         "repair_timer_s": 3600, "migration_s": 1.5}


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    missing = [name for name, path in (("harness-vsim", binary()), ("govc", govc_binary())) if path is None]
    if missing:
        pytest.skip(f"not built: {', '.join(missing)} (make setup builds both from harness/lab/vsim; or set "
                    "HARNESS_VSIM / HARNESS_GOVC)")
    password = secrets.token_urlsafe(16)
    with pytest.MonkeyPatch.context() as env:
        env.setenv(PASSWORD_ENV, password)
        with running(tmp_path_factory.mktemp("vsim"), MODEL, password) as started:
            try:
                yield started
            finally:
                close_all()
