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
from tests.integration.contract.test_nutanix_prism import HOSTS
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
            topology.write_text(yaml.safe_dump({
                "name": "ahv-contract", "kind": "nutanix",
                "sites": [{"name": site, "hosts": [{"name": h, "address": f"192.0.2.{10 + i + 60 * n}"}
                                                   for i, h in enumerate(hosts)]}
                          for n, (site, hosts) in enumerate(HOSTS.items())],
                "management": {"platforms": {"nutanix": {
                    "endpoint": central, "fallback_endpoints": [element], "cluster": "ahv-esrp-cluster",
                    "credential": {"username": "operator", "password": {"env": "HARNESS_PRISM_PASSWORD"}},
                    "timeout_s": 2, "task_timeout_s": 10, "poll_s": 0.02}}},
                "allow_list": [f"host:{HOST}"]}))
            yield PlatformUnderTest(topology=topology, kind="host-maintenance", target=f"host:{HOST}",
                                    platform="nutanix", observe=lambda: model.in_maintenance(HOST),
                                    environment={"HARNESS_PRISM_PASSWORD": password}, secrets=(password,),
                                    settle_s=20, run_timeout_s=120)
