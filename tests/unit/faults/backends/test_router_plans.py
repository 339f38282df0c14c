"""The router backend's plans from the example topology: what a user's router would receive, contacting nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from faults import registry
from faults.backends import router
from faults.base import FaultSpec
from harness_kernel.errors import ConfigError
from harness_kernel.topology.loader import load_topology

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "stretched-2plus2.yaml"


@pytest.fixture(scope="module")
def topology():
    return load_topology(EXAMPLE)


def test_a_link_partition_drops_both_directions_between_the_sites_subnets(topology) -> None:
    fault = registry.build(FaultSpec("link-partition", "link:site-a~site-b"), topology)
    assert isinstance(fault, router.RouterPartition)
    assert [r.render() for r in fault.rules] == ["ip saddr 192.0.2.0/26 ip daddr 192.0.2.64/26 drop",
                                                 "ip saddr 192.0.2.64/26 ip daddr 192.0.2.0/26 drop"]
    plan = fault.plan()
    assert plan.backend.startswith("router rtr-01 over ssh rtr-01-ssh")
    assert plan.credentials == ("management.ssh[0].key_file",)
    instance = fault.spec.instance
    assert plan.revert_steps == (f"nft delete table inet harness_{instance}_link_3asite-a_7esite-b",)
    assert plan.inject_steps[0].startswith(f"nft table inet harness_{instance}_link_3asite-a_7esite-b: ")


def test_one_direction_cuts_only_that_way(topology) -> None:
    fault = router.build_partition(FaultSpec("link-partition", "link:site-a~site-b", {"direction": "reverse"}), topology)
    assert [r.render() for r in fault.rules] == ["ip saddr 192.0.2.64/26 ip daddr 192.0.2.0/26 drop"]
    with pytest.raises(ConfigError, match=r"params\.direction: Input should be 'both', 'forward' or 'reverse'"):
        router.build_partition(FaultSpec("link-partition", "link:site-a~site-b", {"direction": "sideways"}), topology)


def test_witness_isolation_cuts_both_links_to_the_witness_site_only(topology) -> None:
    fault = router.build_partition(FaultSpec("witness-isolation", "witness:vsan-witness-01"), topology)
    rendered = [r.render() for r in fault.rules]
    assert len(rendered) == 4 and all("198.51.100.10/32" in r for r in rendered)
    assert not any("192.0.2.0/26 ip daddr 192.0.2.64/26" in r for r in rendered)


def test_latency_splits_the_rtt_over_the_two_ports_and_selects_by_the_far_sites_subnets(topology) -> None:
    fault = router.build_latency(FaultSpec("latency", "link:site-a~site-b", {"rtt_ms": 10, "jitter_ms": 2}), topology)
    steps, tag = fault.plan().inject_steps, f"{fault.tag:x}"
    assert "tc qdisc add dev ens224 parent 7a31:4 handle 7a34: netem delay 5ms 1ms" in steps
    assert "tc filter add dev ens224 parent 7a31: protocol ip u32 match ip src 192.0.2.0/26 flowid 7a31:4" in steps
    assert "tc filter add dev ens192 parent 7a31: protocol ip u32 match ip src 192.0.2.64/26 flowid 7a31:4" in steps
    assert f"tc qdisc add dev ens224 root handle 7a31: htb default {tag}" in steps
    assert f"tc class add dev ens224 parent 7a31: classid 7a31:{tag} htb rate 400gbit" in steps
    assert fault.plan().revert_steps == tuple(
        f"tc qdisc del dev {dev} root handle 7a31:  (only if its root is this fault's: htb 7a31: default {tag})"
        for dev in ("ens224", "ens192"))


def test_each_spec_is_a_new_instance_and_a_journaled_spec_rebuilds_the_same_one(topology) -> None:
    first, second = (router.build_partition(FaultSpec("link-partition", "link:site-a~site-b"), topology)
                     for _ in range(2))
    assert first.spec.instance != second.spec.instance
    assert first.table != second.table
    journaled = FaultSpec.from_dict(first.spec.to_dict())
    assert router.build_partition(journaled, topology).table == first.table
    with pytest.raises(ConfigError, match=r"instance must be 12 hex digits"):
        FaultSpec("link-partition", "link:site-a~site-b", instance="x; reboot")


def test_bad_latency_parameters_and_targets_are_refused_before_anything_is_contacted(topology) -> None:
    with pytest.raises(ConfigError, match=r"params\.loss_pct: Input should be less than or equal to 100"):
        router.build_latency(FaultSpec("latency", "link:site-a~site-b", {"rtt_ms": 4, "loss_pct": 150}), topology)
    with pytest.raises(ConfigError, match="target must be one link"):
        router.build_latency(FaultSpec("latency", "witness:vsan-witness-01", {"rtt_ms": 4}), topology)


def test_a_site_without_subnets_is_named_in_the_error(topology) -> None:
    bare = topology.model_copy(update={"sites": [topology.sites[0].model_copy(update={"subnets": []}), topology.sites[1]]})
    with pytest.raises(ConfigError, match=r"sites\[0\].subnets: site 'site-a' needs its subnets"):
        router.build_partition(FaultSpec("link-partition", "link:site-a~site-b"), bare)
