"""Aliases stand in for a cluster's names and identifiers, consistently, keeping what the checks compare."""

from __future__ import annotations

import ipaddress

import pytest

from harness.capture.aliases import Aliases, _swapped
from harness_kernel.topology.management import Management
from harness_kernel.topology.models import Topology


def aliases() -> Aliases:
    return Aliases(b"k" * 32)


def test_a_name_gets_one_alias_everywhere_and_a_longer_name_containing_it_its_own() -> None:
    a = aliases()
    a.name("esx-a1", "host")
    a.name("bmc-esx-a1", "endpoint")
    assert a.apply("BMC bmc-esx-a1 of esx-a1 powers host esx-a1; disk:esx-a1/naa.1") == \
        "BMC endpoint-1 of host-1 powers host host-1; disk:host-1/naa.1"
    assert a.apply("esx-a10") == "esx-a10"  # another name, not this one


def test_words_the_harness_uses_and_loopback_stay_as_they_are() -> None:
    a = aliases()
    a.name("witness", "site")
    a.address("127.0.0.1")
    assert a.apply("witness-isolation on witness:w at 127.0.0.1:443") == "witness-isolation on witness:w at 127.0.0.1:443"


def test_a_uuid_keeps_its_shape_and_its_smbios_twin_stays_its_twin() -> None:
    a = aliases()
    uuid = "4c4c4544-0042-3010-8052-b4c04f4d3233"
    a.identifier(uuid)
    alias = a.apply(uuid)
    assert alias != uuid and len(alias) == len(uuid) and [len(p) for p in alias.split("-")] == [8, 4, 4, 4, 12]
    assert a.apply(_swapped(uuid)) == _swapped(alias)


def test_a_device_id_keeps_its_scheme_and_length() -> None:
    a = aliases()
    a.found_in(["devName naa.5000c5000a100 serial <serialNumber>4B2RM33</serialNumber>"])
    device = a.apply("naa.5000c5000a100")
    assert device.startswith("naa.") and len(device) == len("naa.5000c5000a100") and device != "naa.5000c5000a100"
    assert "4B2RM33" not in a.apply("<serialNumber>4B2RM33</serialNumber>")


def test_addresses_keep_their_subnets_and_their_kind_of_range() -> None:
    a = aliases()
    a.network("198.51.100.0/26")
    hosts = [f"198.51.100.{i}" for i in (1, 17, 50)] + ["198.51.100.70", "198.18.83.2"]
    for host in hosts:
        a.address(host)
    subnet = ipaddress.ip_network(a.apply("198.51.100.0/26"))
    assert subnet.prefixlen == 26 and subnet.subnet_of(ipaddress.ip_network("198.51.100.0/24"))
    assert all(ipaddress.ip_address(a.apply(h)) in subnet for h in hosts[:3])
    assert ipaddress.ip_address(a.apply("198.51.100.70")) not in subnet
    assert ipaddress.ip_address(a.apply("198.18.83.2")) in ipaddress.ip_network("198.18.0.0/15")  # the lab's, still
    assert [a.apply(h) for h in hosts] != hosts


def test_two_captures_alias_differently_so_an_alias_reveals_nothing_across_them() -> None:
    one, two = Aliases(b"a" * 32), Aliases(b"b" * 32)
    for a in (one, two):
        a.address("192.0.2.40")
    assert one.apply("192.0.2.40") != two.apply("192.0.2.40")


@pytest.mark.reproducer("AA-ipv6-capture")
def test_an_ipv6_address_of_the_topology_is_aliased_in_every_spelling_and_keeps_its_prefix() -> None:
    """Topologies accept IPv6 endpoints: a capture must not carry one, however a payload writes it."""
    a = aliases()
    text = "vcenter: {address: '2001:db8:10:20::5'}\nwinrm: [{address: 2001:db8:10:20::6}]\nsubnet: 2001:db8:10:20::/64\n"
    a.topology(Topology.model_construct(name="t", sites=[], databases=[], routers=[], witness=None,
                                        management=Management()), text)
    spellings = ["2001:db8:10:20::5", "2001:0db8:0010:0020:0000:0000:0000:0005", "2001:DB8:10:20::5",
                 "https://[2001:db8:10:20::5]:443/sdk", "2001:db8:10:20::6"]
    aliased = [a.apply(s) for s in spellings]
    for original, alias in zip(spellings, aliased, strict=True):
        assert "2001:db8:10:20:" not in alias.lower() and "2001:0db8:0010:0020" not in alias.lower(), (original, alias)
    five, six = (ipaddress.IPv6Address(a.apply(s)) for s in ("2001:db8:10:20::5", "2001:db8:10:20::6"))
    assert a.apply("2001:0db8:0010:0020:0000:0000:0000:0005") == a.apply("2001:DB8:10:20::5") == str(five)
    subnet = ipaddress.IPv6Network(a.apply("2001:db8:10:20::/64"))
    assert subnet.prefixlen == 64 and five in subnet and six in subnet, "prefix-preserving, as for IPv4"
    assert subnet.subnet_of(ipaddress.IPv6Network("2001:db8::/32")), "a documentation address stays one"
    assert a.apply("::1 fe80::1") == "::1 fe80::1", "loopback and link-local stay what they are"
