"""Host names resolved by doctor and judged against the site subnets, as loading judges written addresses.

The resolver is given: a test never asks DNS (only `localhost`, from this machine's hosts file).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from harness import doctor, names
from harness.names import resolve_names, system_resolver
from harness_kernel.topology.loader import parse_topology
from harness_kernel.topology.models import Topology


def topology(vcenter: str = "vc.example.net", host: str = "192.0.2.11") -> Topology:
    return parse_topology({
        "name": "named", "allow_list": [],
        "sites": [{"name": "site-a", "subnets": ["198.51.100.0/25"], "hosts": [{"name": "esx-a1", "address": host}]},
                  {"name": "site-b", "subnets": ["198.51.100.128/25"],
                   "hosts": [{"name": "esx-b1", "address": "198.51.100.140"}]}],
        "management": {"vcenter": {"address": vcenter, "cluster": "c1",
                                   "credential": {"username": "u", "password": {"env": "HARNESS_TEST_UNSET"}}}}},
        "named.yaml")


def resolver(table: dict[str, list[str]]) -> Any:
    def resolve(name: str) -> list[str]:
        if name not in table:
            raise OSError(f"[Errno -2] Name or service not known: {name!r}")
        return table[name]
    return resolve


def test_a_management_name_resolving_outside_every_site_subnet_passes() -> None:
    [found] = resolve_names(topology(), resolver({"vc.example.net": ["192.0.2.50"]}))
    assert (found.path, found.addresses, found.problem) == ("management.vcenter.address", ("192.0.2.50",), "")


def test_a_management_name_resolving_into_a_site_subnet_fails_as_a_written_address_would_not_load() -> None:
    [found] = resolve_names(topology(), resolver({"vc.example.net": ["198.51.100.7"]}))
    assert found.problem == ("resolves into site-a's 198.51.100.0/25: a partition of that site would cut the harness "
                             "off from it")


def test_a_name_that_does_not_resolve_fails_naming_the_field() -> None:
    findings = doctor.examine(topology(), resolve=resolver({}))
    [row] = [r for r in findings.rows if r.where == "names"]
    assert (row.check, row.status) == ("management.vcenter.address: vc.example.net", "FAIL")
    assert "does not resolve" in row.seen and row.fix


def test_a_host_resolving_outside_its_sites_subnets_is_a_warning_its_partition_would_not_cut_it() -> None:
    found = list(resolve_names(topology(host="esx-a1.example.net"),
                               resolver({"vc.example.net": ["192.0.2.50"], "esx-a1.example.net": ["198.51.100.200"]})))
    assert found[1].warning and found[1].problem == (
        "resolves outside site site-a's subnets (198.51.100.200): its partition would not cut this host off")


def test_a_resolver_that_hangs_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(names, "RESOLVE_S", 0.2)
    started = time.monotonic()
    [found] = resolve_names(topology(), lambda name: time.sleep(1.0) or [])
    assert found.problem == "not resolved within 0.2 s" and time.monotonic() - started < 1.5


def test_the_system_resolver_reads_this_machines_hosts_file() -> None:
    assert system_resolver("localhost") == ["127.0.0.1"]


def test_addresses_written_as_such_are_not_resolved() -> None:
    assert list(resolve_names(topology(vcenter="192.0.2.10"), resolver({}))) == []
