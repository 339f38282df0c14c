"""A VPLEX consistency group read as metro storage: REST API v2's words mapped to the one state set (replica, link,
arbiter, which site serves), an unknown word kept and shown, never a crash."""

from __future__ import annotations

from typing import Any

import pytest

from faults.metro import Arbiter, PeerLink, Rebuild, ReplicaSync, Serving
from harness_platforms.vplex.replies import Cluster, ClusterWitness, ConsistencyGroup, DistributedDevice, WanComHealth
from harness_platforms.vplex.states import VplexReading, vplex_group

SITES = {"cluster-1": "site-a", "cluster-2": "site-b"}
WINNER_1 = {"type": "winner", "cluster": "/vplex/v2/clusters/cluster-1", "delay": 5}


def cg(one: tuple[str, list[str]] = ("ok", []), two: tuple[str, list[str]] = ("ok", []), **extra: Any) -> ConsistencyGroup:
    return ConsistencyGroup.model_validate({
        "name": "cg1", "operational_status": [{"cluster": "cluster-1", "summary": one[0], "details": one[1]},
                                              {"cluster": "cluster-2", "summary": two[0], "details": two[1]}],
        "detach_rule": WINNER_1, "virtual_volumes": ["/vplex/v2/distributed_storage/distributed_virtual_volumes/v1"],
        **extra})


def reading(wan: str = "full", connected: tuple[bool, bool] = (True, True), witness: str = "enabled",
            states: tuple[str, str] = ("in-contact", "cluster-in-contact"),
            devices: list[dict[str, Any]] | None = None) -> VplexReading:
    return VplexReading(
        [Cluster(name=n, connected=c) for n, c in zip(SITES, connected, strict=True)],
        WanComHealth(status=wan),
        ClusterWitness.model_validate({"admin_state": witness, "components": [
            {"name": n, "operational_state": s} for n, s in zip(SITES, states, strict=True)]}),
        [DistributedDevice.model_validate(d) for d in devices or []])


def test_a_healthy_group_is_in_sync_with_the_link_up_both_sites_serving_and_the_winner_preferred() -> None:
    seen = vplex_group(cg(), reading(), SITES)
    assert (seen.replica, seen.link, seen.serving_sites, seen.preferred) == (
        ReplicaSync.IN_SYNC, PeerLink.UP, ("site-a", "site-b"), "site-a")
    assert [s.arbiter for s in seen.sites] == [Arbiter.REACHABLE, Arbiter.REACHABLE]
    assert seen.describe() == ("cg1: replica in sync, link up; site-a serving (arbiter reachable), "
                               "site-b serving (arbiter reachable)")


@pytest.mark.parametrize(("wan", "link"), [("full", PeerLink.UP), ("partial", PeerLink.PARTIAL), ("none", PeerLink.DOWN),
                                           ("not-applicable", PeerLink.UNKNOWN), ("FULL", PeerLink.UP),
                                           ("half-open", PeerLink.UNKNOWN)])
def test_the_link_is_wan_coms_status(wan: str, link: PeerLink) -> None:
    seen = vplex_group(cg(), reading(wan=wan), SITES)
    assert seen.link is link and seen.words["wan_com"] == wan


def test_a_partition_fractures_the_copies_the_loser_suspends_and_the_details_are_kept() -> None:
    seen = vplex_group(cg(("ok", ["cluster-departure"]), ("suspended", ["requires_resume_at_loser"])),
                       reading(wan="none"), SITES)
    assert (seen.replica, [s.serving for s in seen.sites]) == (ReplicaSync.FRACTURED,
                                                               [Serving.SERVING, Serving.SUSPENDED])
    assert seen.words["cluster-2 cg summary"] == "suspended [requires_resume_at_loser]"


def test_a_cluster_departure_fractures_even_while_wan_com_still_says_partial() -> None:
    seen = vplex_group(cg(("degraded", ["cluster_departure"])), reading(wan="partial"), SITES)
    assert seen.replica is ReplicaSync.FRACTURED and seen.sites[0].serving is Serving.SERVING


def test_a_cluster_out_of_this_servers_sight_is_unknown_never_down() -> None:
    """From one side a partition and a lost cluster look alike; the other side may be serving."""
    seen = vplex_group(cg(two=("ok", [])), reading(connected=(True, False)), SITES)
    assert seen.sites[1].serving is Serving.UNKNOWN and seen.words["cluster-2 cluster"].startswith("connected false")
    assert seen.replica is ReplicaSync.IN_SYNC, "the group's own statuses say ok with WAN-COM full"


def test_a_rebuild_of_one_of_the_groups_devices_is_resyncing_with_the_slowest_percent_and_longest_eta() -> None:
    devices = [{"name": "d1", "virtual_volume": "v1", "health_indications": ["rebuilding"], "rebuild_progress": 40,
                "rebuild_eta": 600},
               {"name": "other", "virtual_volume": "not-in-cg1", "health_indications": ["rebuilding"],
                "rebuild_progress": 5, "rebuild_eta": 9000}]
    seen = vplex_group(cg(), reading(devices=devices), SITES)
    assert seen.replica is ReplicaSync.RESYNCING
    assert seen.rebuild is not None and (seen.rebuild.percent_done, seen.rebuild.eta_s) == (40.0, 600.0)
    assert "other rebuild" not in seen.words


def test_a_rebuild_figure_outside_its_assumed_unit_is_none_with_its_word_kept() -> None:
    devices = [{"name": "d1", "virtual_volume": "v1", "rebuild_status": "rebuilding", "rebuild_progress": "0.4/1",
                "rebuild_eta": -1}]
    seen = vplex_group(cg(), reading(devices=devices), SITES)
    assert seen.rebuild is not None and (seen.rebuild.percent_done, seen.rebuild.eta_s) == (None, None)
    assert seen.words["d1 rebuild"] == "rebuilding, progress 0.4/1, eta -1"


def test_the_groups_own_rebuilding_detail_is_resyncing_too() -> None:
    seen = vplex_group(cg(two=("degraded", ["rebuilding-across-clusters"])), reading(), SITES)
    assert seen.replica is ReplicaSync.RESYNCING and seen.rebuild == Rebuild(None, None)


@pytest.mark.parametrize(("witness", "states", "expected"), [
    ("enabled", ("in-contact", "remote-cluster-isolated-or-dead"), [Arbiter.REACHABLE, Arbiter.UNKNOWN]),
    ("disabled", ("in-contact", "in-contact"), [Arbiter.UNKNOWN, Arbiter.UNKNOWN]),
    ("inconsistent", ("in-contact", "in-contact"), [Arbiter.UNKNOWN, Arbiter.UNKNOWN]),
])
def test_only_an_enabled_witness_in_contact_is_reachable_and_nothing_is_claimed_unreachable(
        witness: str, states: tuple[str, str], expected: list[Arbiter]) -> None:
    seen = vplex_group(cg(), reading(witness=witness, states=states), SITES)
    assert [s.arbiter for s in seen.sites] == expected and seen.words["witness"] == witness


def test_an_unread_witness_leaves_the_arbiter_unknown_and_says_why() -> None:
    partial = VplexReading(reading().clusters, WanComHealth(status="full"), None, [],
                           {"/cluster_witness": "HTTP 404"})
    seen = vplex_group(cg(), partial, SITES)
    assert [s.arbiter for s in seen.sites] == [Arbiter.UNKNOWN, Arbiter.UNKNOWN]
    assert seen.words["/cluster_witness unread"] == "HTTP 404"


@pytest.mark.parametrize("rule", [["no_automatic_winner"], {"type": "no_automatic_winner"}, None, "winner?"])
def test_no_automatic_winner_or_an_unreadable_rule_names_no_preferred_site(rule: object) -> None:
    assert vplex_group(cg(detach_rule=rule), reading(), SITES).preferred is None


def test_an_unknown_summary_word_is_unknown_and_shown_as_it_came() -> None:
    seen = vplex_group(cg(("in-transition", [])), reading(), SITES)
    assert (seen.sites[0].serving, seen.replica) == (Serving.UNKNOWN, ReplicaSync.UNKNOWN)
    assert seen.words["cluster-1 cg summary"] == "in-transition"


def test_a_cluster_the_group_does_not_list_is_unknown() -> None:
    group = ConsistencyGroup.model_validate({"name": "cg1", "operational_status": [
        {"cluster": "/vplex/v2/clusters/cluster-1", "summary": "ok"}], "detach_rule": WINNER_1})
    seen = vplex_group(group, reading(), SITES)
    assert [s.serving for s in seen.sites] == [Serving.SERVING, Serving.UNKNOWN]
    assert seen.replica is ReplicaSync.UNKNOWN
