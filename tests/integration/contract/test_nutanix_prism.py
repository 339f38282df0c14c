"""The nutanix platform against a Prism stand-in written from Nutanix's v4 SDK, Ansible modules and one public capture.

Documentation-derived and unconfirmed: no test here has met a real Prism (tests/support/prism_model.py
names the source of every fact it serves; the only recorded reply is the v2 resiliency capture). Each
call the platform makes is exercised through the fault as a run builds it (`faults.registry.build`)
and read back from the stand-in: what was sent, with which headers, and what Prism then holds.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from typing import Any

import pytest

from faults import registry
from faults.base import Check, Fault, FaultSpec, FaultState, Uncertain
from faults.transports import wire
from harness.clusters import cluster_parts, observers, probe, probes
from harness_kernel.errors import ConfigError, ControlPlaneError, CredentialRejectedError, HarnessError
from harness_kernel.topology.loader import parse_topology
from harness_kernel.topology.models import Topology
from harness_platforms.nutanix.api import request_id
from tests.support import variations
from tests.support.prism_model import PrismModel

pytestmark = pytest.mark.contract(source="documentation-derived, unconfirmed until a capture from a real Prism exists")
PASSWORD_ENV = "HARNESS_PRISM_PASSWORD"
HOSTS = {"site-a": ("ahv-a1", "ahv-a2"), "site-b": ("ahv-b1", "ahv-b2")}


def ahv_document(central: str, element: str, *, name: str, allow_list: list[str],
                 databases: list[dict[str, Any]] | None = None, **section: Any) -> dict[str, Any]:
    """A topology of the four AHV hosts with Prism Central (and an Element as its fallback), as a file holds it."""
    return {
        "name": name, "kind": "nutanix",
        "sites": [{"name": site, "hosts": [{"name": h, "address": f"192.0.2.{10 + i + 60 * n}"} for i, h in enumerate(hosts)]}
                  for n, (site, hosts) in enumerate(HOSTS.items())],
        **({"databases": databases} if databases else {}),
        "management": {"platforms": {"nutanix": {
            "endpoint": central, "fallback_endpoints": [element], "cluster": "ahv-esrp-cluster",
            "credential": {"username": "operator", "password": {"env": PASSWORD_ENV}},
            "timeout_s": 2, "task_timeout_s": 1, "poll_s": 0.01, **section}}},
        "allow_list": allow_list}


def prism_topology(central: str, element: str, **section: Any) -> Topology:
    return parse_topology(ahv_document(
        central, element, name="ahv-contract",
        databases=[{"name": "db", "kind": "sqlserver-ag", "endpoint": "192.0.2.100", "database": "bench",
                    "nodes": [{"name": "sql01", "host": "ahv-a1", "vm": "sql01-vm"},
                              {"name": "sql02", "host": "ahv-b1", "vm": "sql02-vm"}]}],
        allow_list=["node:db/sql01", "node:db/sql02", "host:ahv-a2", "host:ahv-b2"], **section), "ahv.yaml")


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> PrismModel:
    password = "Nx-" + secrets.token_urlsafe(12)
    monkeypatch.setenv(PASSWORD_ENV, password)
    prism = PrismModel("operator", password)
    for hosts in HOSTS.values():
        for host in hosts:
            prism.add_host(host)
    prism.add_vm("sql01-vm", "ahv-a1")
    prism.add_vm("sql02-vm", "ahv-b1")
    return prism


@pytest.fixture
def origins(model: PrismModel) -> Iterator[tuple[str, str]]:
    with model.serving() as served:
        yield served


@pytest.fixture
def topology(origins: tuple[str, str]) -> Topology:
    return prism_topology(*origins)


def build(topology: Topology, kind: str, target: str, **params: Any) -> Fault:
    return registry.build(FaultSpec(kind, target, params, instance="00aa11bb22cc"), topology)


def sent(model: PrismModel, action: str) -> list[str]:
    return [rid for done, _, rid in model.changes if done == action]


def test_power_off_then_on_send_if_match_and_the_derived_request_ids(model: PrismModel, topology: Topology) -> None:
    fault = build(topology, "vm-power-off", "node:db/sql01")
    fault.preflight()  # type: ignore[attr-defined]
    fault.inject()
    assert model.vm_power("sql01-vm") == "OFF" and fault.check() is FaultState.IN_EFFECT
    fault.revert()
    assert model.vm_power("sql01-vm") == "ON" and fault.check() is FaultState.CLEARED
    assert sent(model, "power-off") == [request_id("00aa11bb22cc", "inject power-off")]
    assert sent(model, "power-on") == [request_id("00aa11bb22cc", "revert power-on")]
    assert model.refused == [], "every change carried the ETag of the read just before it"
    fault.revert()
    assert len(sent(model, "power-on")) == 1, "a revert with nothing to undo sends nothing"


@pytest.mark.parametrize("variation", [
    # HTTP field names are case-insensitive (RFC 9110 §5.1); Prism Central's Envoy front end lower-cases them
    pytest.param(variations.LOWERCASE_HEADERS, marks=pytest.mark.reproducer("AA-N7")),
    # Nutanix's own SDK reads a reply's ETag from X-Ntnx-Etag when it has no ETag
    pytest.param(variations.X_NTNX_ETAG, marks=pytest.mark.reproducer("AA-etag-alternative"))])
def test_an_etag_is_read_under_any_name_prism_may_send_it_with(variation: str, model: PrismModel, topology: Topology,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(variations.ENV, variation)
    fault = build(topology, "vm-power-off", "node:db/sql01")
    fault.inject()
    fault.revert()
    assert model.vm_power("sql01-vm") == "ON" and model.refused == []
    assert ("power-off", True) in model.if_match_sent and ("power-on", True) in model.if_match_sent


@pytest.mark.reproducer("AA-maintenance-if-match")
def test_maintenance_is_asked_as_nutanix_s_own_client_asks_it_without_if_match(model: PrismModel,
                                                                                topology: Topology) -> None:
    """Nutanix's Ansible module enters maintenance with a new spec and no If-Match, and the SDK adds none: a Prism
    that never gave the host an ETag, or checks none there, is asked as its vendor's client asks it."""
    fault = build(topology, "host-maintenance", "host:ahv-b2", timeout_s=5)
    assert not any("If-Match" in line for line in (*fault.plan().inject_steps, *fault.plan().revert_steps)
                   if "maintenance" in line)
    fault.inject()
    fault.revert()
    assert [(action, carried) for action, carried in model.if_match_sent if "maintenance" in action] == \
        [("enter-host-maintenance", False), ("exit-host-maintenance", False)]
    assert not model.in_maintenance("ahv-b2")


@pytest.mark.reproducer("AA-api-version")
def test_a_prism_serving_an_older_v4_version_is_asked_at_that_version_as_the_sdk_negotiates(
        model: PrismModel, topology: Topology) -> None:
    """The SDK asks `OPTIONS /api/<namespace>/unversioned/info` and uses the server's version where it is older than
    its own: a release serving clustermgmt up to v4.2 is asked at v4.2, the other namespaces at the SDK's."""
    model.versions["clustermgmt"] = "v4.2"
    fault = build(topology, "host-maintenance", "host:ahv-b2", timeout_s=5)
    fault.preflight()  # type: ignore[attr-defined]
    fault.inject()
    fault.revert()
    asked = [path for _, method, path in model.requests if method != "OPTIONS"]
    assert not [p for p in asked if p.startswith("/api/clustermgmt/") and not p.startswith("/api/clustermgmt/v4.2/")]
    assert [p for p in asked if p.startswith("/api/prism/v4.4/")], "prism's own version is the SDK's"
    assert ("central", "OPTIONS", "/api/clustermgmt/unversioned/info") in model.requests
    assert not model.in_maintenance("ahv-b2")
    assert "API versions asked: vmm v4.3, clustermgmt v4.2 (Prism serves no newer; the section's v4.3), prism v4.4" \
        in probe(topology)["nutanix probe harness_platforms.nutanix.view:probe"], "doctor names the version negotiated"


@pytest.mark.reproducer("AA-pagination")
def test_a_cluster_listed_past_prism_s_first_page_is_found(model: PrismModel, topology: Topology,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Prism Central managing more clusters than a page holds (50 unless `$limit` says otherwise): the section's
    cluster is found on a later page, and the hosts' list is read to its end."""
    monkeypatch.setenv(variations.ENV, variations.PAGINATION)
    fault = build(topology, "host-maintenance", "host:ahv-b2", timeout_s=5)
    fault.preflight()  # type: ignore[attr-defined]
    fault.inject()
    fault.revert()
    assert not model.in_maintenance("ahv-b2") and sent(model, "exit-host-maintenance")
    pages = [path for _, method, path in model.requests if path.endswith("/config/clusters")]
    assert len(pages) == 2, "121 clusters: two pages of at most 100, the cluster's id read once"


def test_guest_shutdown_asks_the_guest_tools_and_the_revert_powers_the_vm_on(model: PrismModel,
                                                                             topology: Topology) -> None:
    fault = build(topology, "vm-guest-shutdown", "node:db/sql02")
    fault.inject()
    assert model.vm_power("sql02-vm") == "OFF" and sent(model, "guest-shutdown")
    fault.revert()
    assert model.vm_power("sql02-vm") == "ON"


def test_a_vm_already_off_is_not_the_harness_s_to_power_on(model: PrismModel, topology: Topology) -> None:
    model.set_power(model.vm_id("sql01-vm"), "OFF")
    with pytest.raises(ControlPlaneError, match="VM sql01-vm is OFF, not ON"):
        build(topology, "vm-power-off", "node:db/sql01").preflight()  # type: ignore[attr-defined]


def test_migrate_to_host_goes_to_another_site_and_back(model: PrismModel, topology: Topology) -> None:
    fault = build(topology, "vm-migrate", "node:db/sql01")
    fault.preflight()  # type: ignore[attr-defined]
    fault.inject()
    assert model.vm_host("sql01-vm") == "ahv-b1" and fault.check() is FaultState.IN_EFFECT
    assert fault.evidence["to_host"] == "ahv-b1" and "migration_s" in fault.evidence  # type: ignore[attr-defined]
    fault.revert()
    assert model.vm_host("sql01-vm") == "ahv-a1" and fault.check() is FaultState.CLEARED
    assert sent(model, "migrate-to-host") == [request_id("00aa11bb22cc", "inject migrate-to-host ahv-b1"),
                                              request_id("00aa11bb22cc", "revert migrate-to-host ahv-a1")]


def test_a_migration_to_a_named_host_goes_there(model: PrismModel, topology: Topology) -> None:
    fault = build(topology, "vm-migrate", "node:db/sql01", to_host="ahv-a2")
    fault.inject()
    assert model.vm_host("sql01-vm") == "ahv-a2"


def test_maintenance_enters_and_exits_and_its_vms_are_migrated_off(model: PrismModel, topology: Topology) -> None:
    model.add_vm("app-vm", "ahv-b2")
    fault = build(topology, "host-maintenance", "host:ahv-b2", timeout_s=5)
    fault.preflight()  # type: ignore[attr-defined]
    fault.inject()
    assert model.in_maintenance("ahv-b2") and fault.check() is FaultState.IN_EFFECT
    assert model.vm_host("app-vm") != "ahv-b2"
    fault.revert()
    assert not model.in_maintenance("ahv-b2") and fault.check() is FaultState.CLEARED
    assert sent(model, "enter-host-maintenance") == [request_id("00aa11bb22cc", "inject enter-host-maintenance")]
    assert sent(model, "exit-host-maintenance") == [request_id("00aa11bb22cc", "revert exit-host-maintenance")]


def test_maintenance_is_refused_while_prism_cannot_migrate_a_vm_off_unless_the_topology_consents(
        model: PrismModel, origins: tuple[str, str]) -> None:
    model.non_migratable[model.host_id("ahv-b2")] = ["pinned-vm"]
    fault = build(prism_topology(*origins), "host-maintenance", "host:ahv-b2")
    with pytest.raises(ControlPlaneError, match=r"Prism cannot migrate pinned-vm \(pinned\) off it: refused \(set "
                                                r"management\.platforms\.nutanix\.shutdown_non_migratable_vms"):
        fault.preflight()  # type: ignore[attr-defined]
    with pytest.raises(ControlPlaneError, match="refused"):
        fault.inject()
    assert sent(model, "enter-host-maintenance") == [] and not model.in_maintenance("ahv-b2")
    consenting = build(prism_topology(*origins, shutdown_non_migratable_vms=True), "host-maintenance", "host:ahv-b2")
    consenting.inject()
    assert model.in_maintenance("ahv-b2") and consenting.evidence["powered_off_for_maintenance"] == [  # type: ignore[attr-defined]
        "pinned-vm (pinned)"]


def test_a_stalled_task_ends_in_a_clear_error_within_its_bound(model: PrismModel, topology: Topology) -> None:
    model.stall = True
    fault = build(topology, "vm-power-off", "node:db/sql01")
    started = time.monotonic()
    with pytest.raises(ControlPlaneError, match=r"VM sql01-vm power-off: task ZXJnb24=:\S+ still RUNNING \(\d+ %\) "
                                                r"after 1 s"):
        fault.inject()
    assert time.monotonic() - started < 3


def test_a_failed_task_is_an_error_with_prism_s_message(model: PrismModel, topology: Topology) -> None:
    model.fail_next = True
    with pytest.raises(ControlPlaneError, match="FAILED: the stand-in was told to fail this task"):
        build(topology, "vm-power-off", "node:db/sql01").inject()


def test_a_stale_etag_is_refused_and_the_change_is_read_again_and_resent_with_the_same_id(
        model: PrismModel, topology: Topology) -> None:
    """Something changes the VM between the harness's read and its change: Prism refuses it, the harness reads
    again and sends it again, with the same request id."""
    model.changed_after_read[model.vm_id("sql01-vm")] = 2  # the inject's own read, then the one before its change
    fault = build(topology, "vm-power-off", "node:db/sql01")
    fault.inject()
    assert [status for _, status in model.refused] == [412]
    assert sent(model, "power-off") == [request_id("00aa11bb22cc", "inject power-off")]
    assert model.vm_power("sql01-vm") == "OFF"


def test_a_retried_revert_reuses_its_request_id_and_prism_does_it_once(model: PrismModel, origins: tuple[str, str]) -> None:
    """The first revert's task stalls past its bound; a second revert (as recover would build it, from the
    journaled spec) sends the same id, and Prism answers the first task instead of powering on twice."""
    topology = prism_topology(*origins)
    build(topology, "vm-power-off", "node:db/sql01").inject()
    model.stall = True
    with pytest.raises(ControlPlaneError, match="still RUNNING"):
        build(topology, "vm-power-off", "node:db/sql01").revert()
    model.stall = False
    build(topology, "vm-power-off", "node:db/sql01").revert()
    assert model.vm_power("sql01-vm") == "ON"
    assert sent(model, "power-on") == [request_id("00aa11bb22cc", "revert power-on")], "one power-on, not two"
    posts = [p for role, method, p in model.requests if method == "POST" and p.endswith("/power-on")]
    assert len(posts) == 2, "the second revert did send it; Prism de-duplicated it"


def test_the_observer_follows_a_node_loss_and_the_drain_back_to_ok(model: PrismModel, topology: Topology) -> None:
    [(name, observer)] = observers(topology).items()
    assert name == "nutanix: harness_platforms.nutanix.view:Resilience"
    assert observer.sample()["resiliency ok"] == 1.0
    model.node_lost(under_replicated=3_000, drain_per_read=1_000)
    seen = [dict(observer.sample()) for _ in range(4)]
    assert [s["fault tolerance (failures tolerable)"] for s in seen] == [0.0, 0.0, 1.0, 1.0]
    assert [s["under-replicated bytes"] for s in seen] == [2000.0, 1000.0, 0.0, 0.0]
    assert [s["resiliency ok"] for s in seen] == [0.0, 0.0, 1.0, 1.0]
    assert seen[0]["fault tolerance current (v4)"] == 0.0 and seen[0]["fault tolerance desired (v4)"] == 1.0


def test_preflight_refuses_while_the_resiliency_is_not_ok(model: PrismModel, topology: Topology) -> None:
    part = cluster_parts(topology)["nutanix"]
    part.preflight()
    model.node_lost(under_replicated=10_000, drain_per_read=0)
    with pytest.raises(HarnessError, match=r"data resiliency is not OK \(failures tolerable 0, under-replicated "
                                           r"10000\.0 B.*no run starts until it is"):
        part.preflight()


@pytest.mark.reproducer("AA-C2")
def test_a_node_loss_is_reported_in_prism_s_own_words_for_the_component_that_tolerates_nothing(
        model: PrismModel, topology: Topology) -> None:
    """A component tolerating no failure carries Prism's reason in `details.message` (the AOS 6.8.1 capture: "Not
    enough nodes (hosts) in the cluster"); a healthy one carries null. The preflight and the probe name it."""
    part = cluster_parts(topology)["nutanix"]
    assert probe(topology)["nutanix probe harness_platforms.nutanix.view:probe"].endswith(
        "weakest: DISK/EXTENT_GROUPS; NODE/STATIC_CONFIGURATION"), "healthy: no words"
    model.node_lost(under_replicated=10_000, drain_per_read=0)
    with pytest.raises(HarnessError, match=r"failures tolerable 0, .*weakest: DISK/EXTENT_GROUPS\b.*; "
                                           r"NODE/STATIC_CONFIGURATION: Not enough nodes \(hosts\) in the cluster\)"):
        part.preflight()
    assert "NODE/STATIC_CONFIGURATION: Not enough nodes (hosts) in the cluster" in probe(topology)[
        "nutanix probe harness_platforms.nutanix.view:probe"]


def test_preflight_refuses_a_topology_prism_disagrees_with(model: PrismModel, origins: tuple[str, str]) -> None:
    model.move(model.vm_id("sql02-vm"), model.host_id("ahv-b2"))
    topology = prism_topology(*origins, hosts={"ahv-a2": "NTNX-renamed"})
    with pytest.raises(HarnessError) as refused:
        cluster_parts(topology)["nutanix"].preflight()
    said = str(refused.value)
    assert "management.platforms.nutanix.hosts: host ahv-a2 is 'NTNX-renamed' in Prism, which has no such host" in said
    assert "databases[db].nodes[sql02].host: ahv-b1, but Prism runs VM sql02-vm on ahv-b2" in said


def test_after_prism_central_is_lost_the_survivor_s_prism_element_is_read(model: PrismModel,
                                                                           topology: Topology) -> None:
    [observer] = observers(topology).values()
    model.central_down = True
    model.node_lost(under_replicated=500, drain_per_read=0)
    figures = observer.sample()
    assert figures["fault tolerance (failures tolerable)"] == 0.0 and figures["under-replicated bytes"] == 500.0
    assert "fault tolerance current (v4)" in figures, "Prism Element answered the v4 read as well"
    assert {role for role, _, _ in model.requests} == {"element"}
    said = probe(topology)["nutanix probe harness_platforms.nutanix.view:probe"]
    assert said.startswith("cluster ahv-esrp-cluster (stand-in (documentation-derived); API versions asked: vmm v4.3, "
                           "clustermgmt v4.3, prism v4.4): failures tolerable 0")


def test_doctor_asks_each_prism_element_for_a_v4_read_with_the_section_s_login(model: PrismModel,
                                                                              topology: Topology) -> None:
    """A-prism-element-reads, probed read-only: after a site loss the harness reads Prism Element with Prism Central's
    login. One that has a login of its own is a WARN naming it, before any run relies on it."""
    name = "nutanix probe harness_platforms.nutanix.view:probe_elements"
    with wire.watching(read_only=True) as seen:
        assert probe(topology)[name].endswith("answers the v4 reads with this login")
    assert seen.writes() == []
    model.element_password = "its-own-" + secrets.token_urlsafe(8)
    with pytest.raises(Uncertain, match=r"A-prism-element-reads does not hold here: prism 127\.0\.0\.1:\d+: "
                                        r"GET /api/clustermgmt/v4\.3/config/clusters refused the login \(HTTP 401"):
        probes(topology)[name]()
    assert {role for role, method, _ in model.requests if method == "GET"} >= {"element"}


def test_a_change_never_goes_to_a_prism_element(model: PrismModel, topology: Topology) -> None:
    model.central_down = True
    with pytest.raises(ControlPlaneError, match=r"prism 127\.0\.0\.1:\d+: no answer|unreachable"):
        build(topology, "vm-power-off", "node:db/sql01").inject()
    assert model.changes == [] and model.vm_power("sql01-vm") == "ON"


def test_a_wrong_password_names_the_field_and_never_a_secret(monkeypatch: pytest.MonkeyPatch, model: PrismModel,
                                                             topology: Topology) -> None:
    monkeypatch.setenv(PASSWORD_ENV, "wrong-Hunter2-secret")
    with pytest.raises(CredentialRejectedError) as refused:
        build(topology, "vm-power-off", "node:db/sql01").inject()
    said = str(refused.value)
    assert "HTTP 401" in said and "management.platforms.nutanix.credential" in said
    assert "wrong-Hunter2-secret" not in said and model.password not in said


def test_an_unknown_vm_name_is_refused_naming_the_field(model: PrismModel, origins: tuple[str, str]) -> None:
    fault = build(prism_topology(*origins, vms={"sql01": "not-there"}), "vm-power-off", "node:db/sql01")
    with pytest.raises(ConfigError, match=r"Prism has 0 VMs named 'not-there'.*management\.platforms\.nutanix\.vms"):
        fault.preflight()  # type: ignore[attr-defined]


def test_the_role_s_permissions_are_named_unprobed_and_the_doctor_checks_only_read(model: PrismModel,
                                                                                    topology: Topology) -> None:
    fault = build(topology, "host-maintenance", "host:ahv-b2")
    [check] = fault.checks()  # type: ignore[attr-defined]
    assert isinstance(check, Check) and check.name == "permissions"
    with pytest.raises(Uncertain, match=r"unprobed: .*A-prism-role-permissions.*enter-host-maintenance"):
        check.run()
    with wire.watching(read_only=True) as seen:
        fault.preflight()  # type: ignore[attr-defined]
        cluster_parts(topology)["nutanix"].preflight()
    assert seen.writes() == [] and any("compute-non-migratable-vms (computes only)" in c.operation for c in seen.calls)
    assert model.changes and all(action == "compute-non-migratable-vms" for action, _, _ in model.changes)
