"""The lab's formation read as metro storage: pg_auto_failover's states mapped to the one state set every metro
product's adapter fills (replica, link, arbiter, which site serves), from states the lab passes through in a
site failure and a link cut."""

from __future__ import annotations

from faults.metro import Arbiter, MetroGroup, PeerLink, ReplicaSync, Serving
from harness.clusters.lab import HaNode, lab_group

SITES = {"node-a": "site-a", "node-b": "site-b"}


def group(a: tuple[str, str, int], b: tuple[str, str, int],
          standbys: list[tuple[str, str, str]] | None) -> MetroGroup:
    nodes = [HaNode("node-a", *a), HaNode("node-b", *b)]
    return lab_group("bench", nodes, standbys, SITES.__getitem__)


def test_a_healthy_formation_is_in_sync_with_the_link_up_and_one_site_serving() -> None:
    seen = group(("primary", "primary", 1), ("secondary", "secondary", 1),
                 [("pgautofailover_standby_2", "streaming", "quorum")])
    assert (seen.replica, seen.link, seen.serving_sites) == (ReplicaSync.IN_SYNC, PeerLink.UP, ("site-a",))
    assert [s.serving for s in seen.sites] == [Serving.SERVING, Serving.STANDBY]
    assert all(s.arbiter is Arbiter.REACHABLE for s in seen.sites)
    assert seen.words["pg_stat_replication"] == "pgautofailover_standby_2 streaming/quorum"


def test_a_cut_link_leaves_the_primary_alone_the_standby_reachable_and_the_link_down() -> None:
    seen = group(("wait_primary", "wait_primary", 1), ("secondary", "catchingup", 1), [])
    assert (seen.replica, seen.link, seen.serving_sites) == (ReplicaSync.FRACTURED, PeerLink.DOWN, ("site-a",))
    back = group(("wait_primary", "wait_primary", 1), ("catchingup", "catchingup", 1),
                 [("pgautofailover_standby_2", "catchup", "async")])
    assert (back.replica, back.link) == (ReplicaSync.RESYNCING, PeerLink.UP)


def test_a_lost_site_is_out_of_the_arbiters_reach_and_unknown_while_the_other_takes_over() -> None:
    """The monitor wants the lost primary demoted, but cannot reach it: whether it stopped, nobody here can tell."""
    seen = group(("primary", "demote_timeout", 0), ("prepare_promotion", "stop_replication", 1), None)
    assert seen.replica is ReplicaSync.UNKNOWN and seen.link is PeerLink.UNKNOWN and seen.serving_sites == ()
    assert [(s.site, s.serving, s.arbiter) for s in seen.sites] == [
        ("site-a", Serving.UNKNOWN, Arbiter.UNREACHABLE), ("site-b", Serving.SUSPENDED, Arbiter.REACHABLE)]
    after = group(("primary", "demoted", 0), ("wait_primary", "wait_primary", 1), [])
    assert (after.replica, after.link, after.serving_sites) == (ReplicaSync.FRACTURED, PeerLink.UNKNOWN, ("site-b",))
    assert after.words["node-a"] == "primary/demoted, health 0", "pg_auto_failover's own words kept beside"
    assert after.describe() == ("bench: replica fractured, link unknown; site-a unknown (arbiter unreachable), "
                                "site-b serving (arbiter reachable)")
