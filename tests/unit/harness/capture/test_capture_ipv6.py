"""A capture of a topology with IPv6 endpoints carries none of its addresses, as it carries none of its IPv4 ones."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path

import pytest
import yaml

from faults.transports.wire import Exchange
from harness.capture import store
from harness_kernel.topology.loader import parse_topology

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "stretched-2plus2.yaml"
VCENTER, BMC = "2001:db8:10:20::5", "2001:db8:10:20::d3"


@pytest.mark.reproducer("AA-ipv6-capture")
def test_no_ipv6_address_of_the_topology_reaches_the_capture_in_any_spelling(tmp_path: Path) -> None:
    text = EXAMPLE.read_text().replace("vcsa01.example.net", VCENTER).replace("192.0.2.211", BMC)
    topology = parse_topology(yaml.safe_load(text), "ipv6.yaml")
    assert topology.management.vcenter is not None and topology.management.vcenter.address == VCENTER
    full = ipaddress.IPv6Address(VCENTER).exploded
    exchanges = [Exchange("https", f"https://[{VCENTER}]:443", {"method": "GET", "path": "/redfish/v1/Systems/1"},
                          {"status": 200, "content_type": "application/json",
                           "body": f'{{"HostName": "{full}", "Peer": "{BMC.upper()}"}}'})]
    rows = [{"where": f"vCenter {VCENTER}:443", "check": f"BMC at [{BMC}]", "status": "PASS"}]
    store.write(tmp_path, topology, text, rows, exchanges, simulator=False, exit_code=0)
    written = "\n".join(p.read_text() for p in tmp_path.iterdir()).lower()
    for address in (VCENTER, BMC):
        ip = ipaddress.IPv6Address(address)
        for spelling in (ip.compressed, ip.exploded):
            assert spelling not in written, f"{spelling} in the capture"
    assert not re.search(r"2001:0?db8:0{0,2}10:0{0,2}20:", written), "the subnet's prefix is aliased as well"
