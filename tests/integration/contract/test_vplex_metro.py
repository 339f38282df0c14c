"""The VPLEX / metro node observer against a REST API v2 stand-in written from Dell's SDK and guides.

The stand-in (tests/support/vplex_model.py, its FACTS table) answers on 127.0.0.1 and records every
request; the observer reads it through the platform as a run builds it (the topology's
`management.platforms.vplex`), and must say what the storage decided: in sync, apart, resyncing,
which site serves, whether each reaches the witness, in the product's own words beside.
"""

from __future__ import annotations

import secrets
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from faults.metro import Arbiter, PeerLink, ReplicaSync, Serving
from faults.transports import wire
from harness import doctor
from harness.clusters import cluster_parts, observers
from harness_kernel.errors import ConfigError, ControlPlaneError, CredentialRejectedError, HarnessError
from harness_kernel.topology.loader import parse_topology
from harness_kernel.topology.models import Topology
from harness_platforms.vplex.view import VplexMetro
from tests.support import variations
from tests.support.vplex_model import VplexModel

PASSWORD_ENV = "HARNESS_VPLEX_PASSWORD"


def metro_topology(endpoint: str, **section: Any) -> Topology:
    return parse_topology({
        "name": "metro-contract",
        "sites": [{"name": "site-a", "subnets": ["192.0.2.0/26"], "hosts": [{"name": "esx-a1", "address": "192.0.2.11"}]},
                  {"name": "site-b", "subnets": ["192.0.2.64/26"], "hosts": [{"name": "esx-b1", "address": "192.0.2.71"}]}],
        "management": {"platforms": {"vplex": {
            "endpoint": endpoint, "credential": {"username": "service", "password": {"env": PASSWORD_ENV}},
            "clusters": {"cluster-1": "site-a", "cluster-2": "site-b"}, "consistency_groups": ["cg-sql"],
            "timeout_s": 2, **section}}}}, "metro.yaml")


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> VplexModel:
    password = "Vp-" + secrets.token_urlsafe(12)
    monkeypatch.setenv(PASSWORD_ENV, password)
    return VplexModel("service", password)


@pytest.fixture
def topology(model: VplexModel) -> Iterator[Topology]:
    with model.serving() as endpoint:
        yield metro_topology(endpoint)


def observer(topology: Topology) -> VplexMetro:
    [(name, built)] = observers(topology).items()
    assert name == "vplex: harness_platforms.vplex.view:VplexMetro" and isinstance(built, VplexMetro)
    return built


def test_a_healthy_system_is_in_sync_both_sites_serve_and_reach_the_witness(topology: Topology) -> None:
    [group] = observer(topology).metro()
    assert (group.name, group.replica, group.link) == ("cg-sql", ReplicaSync.IN_SYNC, PeerLink.UP)
    assert [(s.site, s.serving, s.arbiter) for s in group.sites] == [
        ("site-a", Serving.SERVING, Arbiter.REACHABLE), ("site-b", Serving.SERVING, Arbiter.REACHABLE)]
    assert group.preferred == "site-a" and group.rebuild is None
    assert group.words["wan_com"] == "full" and group.words["witness cluster-2"] == "in-contact [admin enabled]"
    cluster_parts(topology)["vplex"].preflight()


@pytest.mark.reproducer("AA-S14")
def test_a_partition_cuts_the_link_suspends_the_loser_and_the_winner_serves(model: VplexModel,
                                                                            topology: Topology) -> None:
    """During the outage the loser says only cluster-departure (Admin Guide page-74); requires-resume-at-loser is
    "Displayed on the losing side when the inter-cluster link heals" (CLI Guide page-165)."""
    model.partition(loser="cluster-2")
    [group] = observer(topology).metro()
    assert (group.replica, group.link, group.serving_sites) == (ReplicaSync.FRACTURED, PeerLink.DOWN, ("site-a",))
    assert [s.serving for s in group.sites] == [Serving.SERVING, Serving.SUSPENDED]
    assert group.preferred == "site-a", "the detach rule's winner, named by its cluster URI"
    assert group.words["cluster-1 cg summary"] == "ok [cluster-departure]"
    assert group.words["cluster-2 cg summary"] == "suspended [cluster-departure]"
    assert group.words["detach rule"] == "winner /vplex/v2/clusters/cluster-1 5"
    with pytest.raises(HarnessError, match=r"cg-sql: replica fractured, link down; .* not in sync"):
        cluster_parts(topology)["vplex"].preflight()


@pytest.mark.reproducer("AA-S14")
def test_after_the_link_heals_the_loser_waits_suspended_for_resume_at_loser_and_is_never_read_in_sync(
        model: VplexModel, topology: Topology) -> None:
    """Link back, the loser still suspended saying requires-resume-at-loser, the winner ok with no details: the
    link reads up and only the winner serves, and the copies are not claimed in sync (no document says what they
    are until the loser resumes: unknown). After resume-at-loser both say ok and the group is in sync again."""
    model.partition(loser="cluster-2")
    model.heal(loser="cluster-2")
    [group] = observer(topology).metro()
    assert (group.replica, group.link, group.serving_sites) == (ReplicaSync.UNKNOWN, PeerLink.UP, ("site-a",))
    assert [s.serving for s in group.sites] == [Serving.SERVING, Serving.SUSPENDED]
    assert group.words["cluster-1 cg summary"] == "ok"
    assert group.words["cluster-2 cg summary"] == "suspended [requires-resume-at-loser]"
    assert group.words["wan_com"] == "full"
    with pytest.raises(HarnessError, match=r"cg-sql: replica unknown, link up; .* not in sync"):
        cluster_parts(topology)["vplex"].preflight()
    model.resume_at_loser()
    [group] = observer(topology).metro()
    assert (group.replica, group.serving_sites) == (ReplicaSync.IN_SYNC, ("site-a", "site-b"))


@pytest.mark.reproducer("AA-S13")
def test_a_group_without_an_automatic_winner_names_no_preferred_site(model: VplexModel, topology: Topology) -> None:
    """The rule on the wire is an object with a type (Dell's Ansible reads `detach_rule['type']` and PATCHes
    `{'type': 'no_automatic_winner'}`), not the list of valid choices the module builds: the observer reads its type."""
    model.no_winner()
    served = model.group_row("cg-sql")
    assert served is not None and served["detach_rule"] == {"type": "no_automatic_winner"}
    [group] = observer(topology).metro()
    assert group.preferred is None and group.words["detach rule"] == "no_automatic_winner"


def test_a_lost_witness_is_not_reachable_and_its_word_is_kept(model: VplexModel, topology: Topology) -> None:
    """No document names a lost witness's states: not reachable, but not claimed unreachable either."""
    model.witness_lost()
    [group] = observer(topology).metro()
    assert [s.arbiter for s in group.sites] == [Arbiter.UNKNOWN, Arbiter.UNKNOWN]
    assert group.words["witness cluster-1"] == "unknown [admin enabled]"
    assert group.replica is ReplicaSync.IN_SYNC, "the copies do not depend on the witness"


def test_a_rebuild_reads_as_resyncing_with_its_percent_and_eta(model: VplexModel, topology: Topology) -> None:
    """Two devices, one flagged among its health indications, one by its rebuild status: the slowest and longest."""
    model.rebuild((40, 600), (70, 300))
    seen = observer(topology)
    [group] = seen.metro()
    assert group.replica is ReplicaSync.RESYNCING
    assert group.rebuild is not None and (group.rebuild.percent_done, group.rebuild.eta_s) == (40.0, 600.0)
    assert group.words["dd_cg-sql_0 rebuild"] == "None, progress 40, eta 600"
    assert group.words["dd_cg-sql_1 rebuild"] == "rebuilding, progress 70, eta 300"
    assert seen.sample() == {"cg-sql sites serving": 2.0, "cg-sql sites suspended": 0.0, "cg-sql in sync": 0.0,
                             "cg-sql rebuild done %": 40.0, "cg-sql rebuild eta s": 600.0}


def test_a_word_no_document_names_is_unknown_and_shown_as_it_came(model: VplexModel, topology: Topology) -> None:
    model.wan = "degraded-beyond-words"
    model.summaries["cg-sql"]["cluster-1"] = ("in-transition", [])
    [group] = observer(topology).metro()
    assert (group.link, group.sites[0].serving, group.replica) == (PeerLink.UNKNOWN, Serving.UNKNOWN,
                                                                   ReplicaSync.UNKNOWN)
    assert group.words["wan_com"] == "degraded-beyond-words" and group.words["cluster-1 cg summary"] == "in-transition"


def test_a_wrong_password_names_the_credential_field_and_never_the_password(monkeypatch: pytest.MonkeyPatch,
                                                                            model: VplexModel,
                                                                            topology: Topology) -> None:
    monkeypatch.setenv(PASSWORD_ENV, "wrong-Hunter2-secret")
    with pytest.raises(CredentialRejectedError) as refused:
        observer(topology).metro()
    said = str(refused.value)
    assert "HTTP 401" in said and "management.platforms.vplex.credential" in said
    assert "wrong-Hunter2-secret" not in said and model.password not in said


def test_a_busy_server_is_asked_again_within_the_bound_and_then_named(model: VplexModel, topology: Topology,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(variations.ENV, variations.without(variations.RETRY_AFTER))  # it counts its own 503s
    model.busy = 2
    assert observer(topology).client.clusters()
    model.busy = 10
    with pytest.raises(HarnessError, match=r"vplex 127\.0\.0\.1:\d+: GET /clusters/ -> HTTP 503: 503 busy \(after up to "
                                           r"3 attempts\)"):
        observer(topology).client.clusters()
    assert model.busy == 7


def test_an_unknown_consistency_group_is_refused_naming_its_field(model: VplexModel) -> None:
    with model.serving() as endpoint:
        part = cluster_parts(metro_topology(endpoint, consistency_groups=["cg-sql", "cg-gone"]))["vplex"]
        with pytest.raises(ConfigError, match=r"management\.platforms\.vplex\.consistency_groups\[1\]: no distributed "
                                              r"consistency group 'cg-gone'"):
            part.preflight()


def test_the_observer_only_reads(model: VplexModel, topology: Topology) -> None:
    """Every request a reading, the probes and the preflight make is a GET, as the wire sees it and the server."""
    with wire.watching(read_only=True) as sent:
        seen = observer(topology)
        seen.metro()
        seen.sample()
        seen.preflight()
        described = seen.describe()
    assert described["vplex"].endswith("observed read-only: cg-sql; versions: (model) (model)")
    assert sent.writes() == [] and len(sent.calls) == len(model.requests)
    assert {method for method, _ in model.requests} == {"GET"}
    assert {path for _, path in model.requests} == {
        "/vplex/v2/clusters/", "/vplex/v2/health/wan_com", "/vplex/v2/cluster_witness", "/vplex/v2/versions",
        "/vplex/v2/distributed_storage/distributed_devices",
        "/vplex/v2/distributed_storage/distributed_consistency_groups/cg-sql"}


def test_doctor_shows_what_the_system_says_and_each_assumption(topology: Topology) -> None:
    findings = doctor.examine(topology, open_keyring=False, resolve=lambda name: [])
    rows = {r.check: r for r in findings.rows if r.where in ("vplex", "doctor")}
    assert rows["probe harness_platforms.vplex.view:probe"].seen == \
        "wan_com full; cg-sql: cluster-1 ok, cluster-2 ok; witness enabled"
    assumptions = rows["probe harness_platforms.vplex.view:probe_assumptions"]
    assert assumptions.status == "PASS", assumptions.seen
    for said in ("A-vplex-basic-auth pass", "A-vplex-status-words pass", "A-vplex-witness-components pass",
                 "A-vplex-references pass", "A-vplex-rebuild-units unknown: unprobed"):
        assert said in assumptions.seen
    assert rows["sent only reads"].status == "PASS"


def closed_port() -> str:
    """A loopback endpoint nothing listens on: a management server lost with its site."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def test_a_lost_management_server_is_read_through_the_other_clusters_and_stays_so(model: VplexModel) -> None:
    """After a site loss its management server is gone with it: the other cluster's says what the survivor
    decided, and later reads go there first (no retries spent on the lost one each second)."""
    lost = closed_port()
    with model.serving() as endpoint:
        metro = observer(metro_topology(lost, fallback_endpoints=[endpoint]))
        model.partition(loser="cluster-2")
        [group] = metro.metro()
        assert (group.replica, group.serving_sites) == (ReplicaSync.FRACTURED, ("site-a",))
        assert metro.client.origin == endpoint and endpoint in metro.describe()["vplex"]
        asked = len(model.requests)
        metro.metro()
        assert len(model.requests) > asked


def test_when_no_management_server_answers_each_is_named(model: VplexModel) -> None:
    lost, also_lost = closed_port(), closed_port()
    metro = observer(metro_topology(lost, fallback_endpoints=[also_lost]))
    with pytest.raises(ControlPlaneError) as raised:
        metro.metro()
    assert lost.removeprefix("http://") in str(raised.value) and also_lost.removeprefix("http://") in str(raised.value)


def test_with_auth_token_it_logs_in_once_reads_with_the_bearer_token_and_logs_in_again_when_it_is_refused(
        model: VplexModel) -> None:
    with model.serving() as endpoint:
        metro = observer(metro_topology(endpoint, auth="token"))
        [group] = metro.metro()
        assert group.replica is ReplicaSync.IN_SYNC
        logins = [r for r in model.requests if r[0] == "POST"]
        assert logins == [("POST", "/vplex/v2/token")] and len(model.tokens) == 1
        model.expire_tokens()
        metro.metro()
        assert [r for r in model.requests if r[0] == "POST"] == [("POST", "/vplex/v2/token")] * 2
        assert {m for m, _ in model.requests} == {"GET", "POST"}, "a login, and reads: nothing else"
