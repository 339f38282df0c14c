"""The in-tree Nutanix platform keeps the contract every plug-in keeps: the contract kit against the Prism stand-in.

Documentation-derived and unconfirmed (tests/support/prism_model.py). The kit drives the harness as a user does
(pytest with `--topology`, `harness doctor`, SIGTERM, kill -9 and the guardian) and reads a host's maintenance
from the stand-in's own state, never through the platform's client.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from harness.contract_kit import PlatformContract, PlatformUnderTest
from tests.integration.contract.test_nutanix_prism import HOSTS, PASSWORD_ENV, ahv_document
from tests.support.prism_model import PrismModel

pytestmark = pytest.mark.contract(source="documentation-derived, unconfirmed until a capture from a real Prism exists")
HOST = "ahv-a1"


class TestNutanixHostMaintenance(PlatformContract):
    @pytest.fixture
    def platform_under_test(self, tmp_path: Path) -> Iterator[PlatformUnderTest]:
        password = "Nx-" + secrets.token_urlsafe(12)
        model = PrismModel("operator", password)
        for hosts in HOSTS.values():
            for host in hosts:
                model.add_host(host)
        with model.serving() as (central, element):
            topology = tmp_path / "ahv.yaml"
            topology.write_text(yaml.safe_dump(ahv_document(central, element, name="ahv-contract", allow_list=[f"host:{HOST}"],
                                                            task_timeout_s=10, poll_s=0.02)))
            yield PlatformUnderTest(topology=topology, kind="host-maintenance", target=f"host:{HOST}",
                                    platform="nutanix", observe=lambda: model.in_maintenance(HOST),
                                    environment={PASSWORD_ENV: password}, secrets=(password,),
                                    settle_s=20, run_timeout_s=120)
