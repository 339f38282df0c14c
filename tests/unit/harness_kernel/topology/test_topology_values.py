"""Rule 1: every topology value that reaches a shell, an nft/tc script, a file path or a
connection string is checked at load, and the error names its field path.

Reviews: safety.md #12 (names in the router's shell), #13 (nft script, /0), #15 (node name
as an rmtree path), #17 (connection strings).
"""

from __future__ import annotations

import re

import pytest

from harness.topology_source import load_source
from harness_kernel.errors import ConfigError
from harness_kernel.topology.loader import load_topology, parse_topology
from tests.unit.harness_kernel.topology.topology_docs import EXAMPLE, example, set_at

SHELL = "x$(touch /tmp/harness-pwned)"

# Every string field of the example that reaches a shell, a script, a path or a connection string.
FIELDS = [
    "name",
    "sites[0].name",
    "sites[0].hosts[0].name",
    "sites[0].hosts[0].address",
    "sites[0].hosts[0].bmc",
    "sites[0].hosts[0].disk_groups[0].cache",
    "sites[0].hosts[0].disk_groups[0].capacity[0]",
    "sites[0].subnets[0]",
    "witness.name",
    "witness.address",
    "witness.site",
    "routers[0].name",
    "routers[0].ssh",
    "routers[0].links[0].between[0]",
    "routers[0].links[0].interfaces['site-a']",
    "databases[0].name",
    "databases[0].endpoint",
    "databases[0].database",
    "databases[0].odbc_driver",
    "databases[0].ag_name",
    "databases[0].role_name",
    "databases[0].winrm",
    "databases[0].credential.username",
    "databases[0].credential.password.env",
    "databases[0].nodes[0].name",
    "databases[0].nodes[0].host",
    "databases[0].nodes[0].address",
    "databases[0].nodes[0].replica",
    "databases[0].nodes[0].winrm",
    "management.vcenter.address",
    "management.vcenter.datacenter",
    "management.vcenter.cluster",
    "management.vcenter.tls.ca_file",
    "management.redfish[0].name",
    "management.redfish[0].address",
    "management.redfish[0].system_id",
    "management.winrm[0].name",
    "management.winrm[0].address",
    "management.ssh[0].name",
    "management.ssh[0].address",
    "management.ssh[0].username",
    "management.ssh[0].host_key",
    "processes[0].name",
    "processes[0].pidfile",
    "allow_list[0]",
]


def refused(doc: dict[str, object]) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_topology(doc, "t.yaml")
    return str(caught.value)


@pytest.mark.parametrize("path", FIELDS)
def test_a_value_with_shell_metacharacters_is_refused_naming_its_field(path: str) -> None:
    message = refused(set_at(example(), path, SHELL))
    assert re.search(rf"^t\.yaml: {re.escape(path)}: ", message), message
    assert "\n" not in message


@pytest.mark.parametrize("name", ["a$(touch /tmp/harness-pwned)", "Site A (Madrid)", "a b", "a'b", "-a", "a" * 64, ""])
def test_a_site_name_that_is_not_a_plain_name_is_refused(name: str) -> None:
    doc = example()
    doc["sites"][0]["name"] = name
    assert "t.yaml: sites[0].name: " in refused(doc)


def test_a_subnet_carrying_an_nft_script_is_refused() -> None:
    evil = "192.0.2.0/26 drop\n  }\n}\nflush ruleset\ntable inet harness_x {\n  chain y {\n    ip saddr 192.0.2.0/26"
    message = refused(set_at(example(), "sites[0].subnets[0]", evil))
    assert message.startswith("t.yaml: sites[0].subnets[0]: ") and "\n" not in message


@pytest.mark.parametrize("subnet", ["0.0.0.0/0", "192.0.2.0/0"])
def test_a_zero_prefix_subnet_is_refused(subnet: str) -> None:
    assert "t.yaml: sites[1].subnets[0]: " in refused(set_at(example(), "sites[1].subnets[0]", subnet))


@pytest.mark.parametrize("subnet", ["192.0.2.1/26", "2001:db8::/64", "192.0.2.0/33", "192.0.2.0"])
def test_a_subnet_with_host_bits_or_not_ipv4_is_refused(subnet: str) -> None:
    assert "t.yaml: sites[0].subnets[0]: " in refused(set_at(example(), "sites[0].subnets[0]", subnet))


@pytest.mark.parametrize(("subnet", "endpoint"), [
    ("198.51.100.0/24", "management.ssh[0].address"),
    ("192.0.2.128/25", "management.redfish[0].address"),
])
def test_a_subnet_that_covers_a_management_address_is_refused(subnet: str, endpoint: str) -> None:
    doc = set_at(example(), "management.redfish[0].address", "192.0.2.200")
    message = refused(set_at(doc, "sites[1].subnets[0]", subnet))
    assert "t.yaml: sites[1].subnets[0]: " in message and endpoint in message


def test_subnets_of_two_sites_may_not_overlap() -> None:
    assert "sites[1].subnets[0]: " in refused(set_at(example(), "sites[1].subnets[0]", "192.0.2.0/25"))


@pytest.mark.parametrize("address", ["fe80::1%$(reboot)", "192.0.2.256", "host_name", "a..b", "-a.example", "192.0.2.4.5"])
def test_an_address_must_be_an_ip_address_or_a_dns_hostname(address: str) -> None:
    assert "t.yaml: management.ssh[0].address: " in refused(set_at(example(), "management.ssh[0].address", address))


def test_the_witness_address_is_an_ipv4_address_because_the_router_drops_it_as_a_slash_32() -> None:
    assert "t.yaml: witness.address: " in refused(set_at(example(), "witness.address", "witness.example.net"))


@pytest.mark.parametrize("ifname", ["ens192abcdefghij", 'eth0"', "eth 0", "eth/0", ".", ".."])
def test_an_interface_name_linux_would_refuse_is_refused(ifname: str) -> None:
    path = "routers[0].links[0].interfaces['site-a']"
    assert f"t.yaml: {path}: " in refused(set_at(example(), path, ifname))


def test_an_interface_for_a_site_the_link_does_not_join_is_refused() -> None:
    doc = example()
    doc["routers"][0]["links"][0]["interfaces"]["site-w"] = "ens256"
    assert "t.yaml: routers[0].links[0].interfaces: " in refused(doc)


@pytest.mark.parametrize("name", ["../../../../srv/x", "a/b", ".."])
def test_a_node_name_that_could_be_a_path_is_refused(name: str) -> None:
    assert "t.yaml: databases[0].nodes[0].name: " in refused(set_at(example(), "databases[0].nodes[0].name", name))


def test_a_database_endpoint_with_connection_string_attributes_is_refused() -> None:
    evil = "sqlag01-listener;Encrypt=no;TrustServerCertificate=yes"
    assert "t.yaml: databases[0].endpoint: " in refused(set_at(example(), "databases[0].endpoint", evil))


def test_a_postgres_endpoint_may_list_several_hosts_a_sql_server_one_may_not() -> None:
    doc = set_at(example(), "databases[0].endpoint", "192.0.2.11,192.0.2.71")
    assert "t.yaml: databases[0].endpoint: " in refused(doc)
    doc["databases"][0]["kind"] = "postgres"
    assert parse_topology(doc, "t.yaml").databases[0].endpoint == "192.0.2.11,192.0.2.71"


@pytest.mark.parametrize(("path", "value"), [
    ("management.ssh[0].port", 0), ("management.ssh[0].port", 65536), ("databases[0].port", -1),
    ("management.ssh[0].port", "22"), ("slo.failover_max_s", -1), ("slo.recovery_max_s", float("nan")),
    ("slo.failover_max_s", float("inf")), ("databases[0].database_is_scratch", "yes"),
])
def test_numbers_are_bounded_and_typed(path: str, value: object) -> None:
    assert f"t.yaml: {path}: " in refused(set_at(example(), path, value))


@pytest.mark.parametrize("path", [
    "management.redfish", "management.ssh", "management.winrm", "databases", "routers", "databases[0].nodes", "processes",
])
def test_a_name_listed_twice_is_refused(path: str) -> None:
    doc = example()
    items = doc
    for key in path.replace("]", "").replace("[", ".").split("."):
        items = items[int(key) if key.isdigit() else key]
    items.append(dict(items[0]))
    second = f"{path}[{len(items) - 1}].name"
    assert f"{second}: {items[0]['name']!r} is used twice (first at {path}[0].name)" in refused(doc)


def test_a_link_or_a_device_listed_twice_is_refused() -> None:
    doc = example()
    doc["routers"][0]["links"].append(doc["routers"][0]["links"][0])
    doc["sites"][0]["hosts"][0]["disk_groups"][0]["capacity"].append("naa.5000c500a1a1a100")
    message = refused(doc)
    assert "routers[0].links[3].between: 'site-a~site-b' is used twice (first at routers[0].links[0].between)" in message
    assert "sites[0].hosts[0].disk_groups[0].capacity[2]: 'naa.5000c500a1a1a100' is used twice " \
           "(first at sites[0].hosts[0].disk_groups[0].cache)" in message


def test_the_shipped_example_and_the_lab_stay_valid() -> None:
    assert load_topology(EXAMPLE).name == "prod-stretched-01"
    assert load_source("lab").kind == "lab"
    assert load_source("lab:hx1").name == "lab-hx1"
