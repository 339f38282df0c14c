"""harness-pdu keeps the platform contract: the harness's contract kit run against the stand-in rack PDU.

Run from a virtualenv holding the harness and this plug-in (README, "Its contract"):

    pytest tests/

The stand-in (`rack_pdu.py`, a Redfish service on 127.0.0.1 written from DMTF's schemas) is what the
kit reads the outlet from; the plug-in's own client is only the thing under test.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from harness.contract_kit import PlatformContract, PlatformUnderTest

STAND_IN = Path(__file__).with_name("rack_pdu.py")
PASSWORD = "stand-in-pdu-password"
HOST, OUTLET = "esx-b1", "A3"


@dataclass(frozen=True)
class RackPdu:
    """The stand-in as a process of its own; its outlets read through its own Redfish API."""

    port: int
    log: Path

    def power_state(self, outlet: str) -> object:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/redfish/v1/PowerEquipment/RackPDUs/1/Outlets/{outlet}",
            headers={"Authorization": "Basic " + base64.b64encode(f"admin:{PASSWORD}".encode()).decode()})
        with urllib.request.urlopen(request, timeout=5) as reply:
            return json.loads(reply.read())["PowerState"]

    def switched(self) -> list[str]:
        """Every PowerControl the stand-in accepted, in order."""
        return [json.loads(line)["PowerState"] for line in self.log.read_text().splitlines()] if self.log.exists() else []


@pytest.fixture
def rack_pdu(tmp_path: Path) -> Iterator[RackPdu]:
    ready = tmp_path / "rack-pdu.json"
    process = subprocess.Popen([sys.executable, str(STAND_IN), "--ready-file", str(ready), "--outlets", "A1,A2,A3",
                                "--lifetime-s", "600"], env={**os.environ, "RACK_PDU_PASSWORD": PASSWORD})
    try:
        deadline = time.monotonic() + 20
        while not ready.exists():
            assert process.poll() is None and time.monotonic() < deadline, "the stand-in PDU did not come up"
            time.sleep(0.05)
        yield RackPdu(json.loads(ready.read_text())["port"], ready.with_suffix(".log"))
    finally:
        process.terminate()
        process.wait(timeout=10)


def topology_of(rack_pdu: RackPdu, where: Path) -> Path:
    """A topology with nothing to log in to but the PDU: esx-b1, with no BMC, fed by outlet A3."""
    section = {"address": "127.0.0.1", "port": rack_pdu.port, "scheme": "http", "switch_timeout_s": 20,
               "credential": {"username": "admin", "password": {"env": "PDU_PASSWORD"}}, "outlets": {HOST: OUTLET}}
    doc = {"name": "rack-pdu-only", "management": {"platforms": {"pdu": section}}, "allow_list": [f"host:{HOST}"],
           "sites": [{"name": "site-a", "hosts": [{"name": "esx-a1", "address": "192.0.2.11"}]},
                     {"name": "site-b", "hosts": [{"name": HOST, "address": "192.0.2.21"}]}]}
    path = where / "pdu-only.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


class TestHarnessPdu(PlatformContract):
    @pytest.fixture
    def platform_under_test(self, rack_pdu: RackPdu, tmp_path: Path) -> PlatformUnderTest:
        return PlatformUnderTest(topology=topology_of(rack_pdu, tmp_path), kind="host-power-off", target=f"host:{HOST}",
                                 platform="pdu", observe=lambda: rack_pdu.power_state(OUTLET),
                                 environment={"PDU_PASSWORD": PASSWORD}, secrets=(PASSWORD,), settle_s=20)
