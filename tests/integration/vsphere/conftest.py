"""The simulator for the vSphere integration tests: skipped, saying why, when it is not built (failed instead
with HARNESS_REQUIRE_VSIM set)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from faults.transports.vcenter import close_all
from tests.support.vsim import MODEL, PASSWORD_ENV, Simulator, require, running


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
