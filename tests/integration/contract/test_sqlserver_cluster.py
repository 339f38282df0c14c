"""Contract: the SQL Server cluster view (AG and FCI) the suites measure, over both stand-ins.

The AG's roles, health and AlwaysOn_health come from the DB-API model; its failover cluster's
events and settings from the model cluster behind WinRM. What is checked is what the suites
read: who is primary, which node stands by (another site's), whether a run may start, the
failover's phases on the database's clock, the forecast, and the workload's connection.
"""

from __future__ import annotations

import time

import pytest

from faults.assumptions import ProbeResult
from faults.base import Uncertain
from harness_kernel.errors import HarnessError
from harness_kernel.history import EventKind
from harness_platforms.sqlserver.faults import fail_over
from harness_platforms.sqlserver.probes import AvailabilityGroup
from harness_platforms.sqlserver.view import AvailabilityGroupCluster, FailoverInstanceCluster
from tests.support import variations
from tests.support.contract_world import WsfcWorld, ag_topology
from tests.support.sqlserver_model import SqlServerModel
from tests.support.wsfc_model import ModelEvent
from workloads.oltp import TSqlDialect


@pytest.fixture
def ag_wsfc(wsfc: WsfcWorld) -> WsfcWorld:
    wsfc.model.role, wsfc.model.role_type = "AG01", "SQL Server Availability Group"
    wsfc.model.nodes, wsfc.model.owner = {"SQL01": "Up", "SQL02": "Up"}, "SQL01"
    return wsfc


def ag_cluster(sql: SqlServerModel, wsfc: WsfcWorld) -> AvailabilityGroupCluster:
    return AvailabilityGroupCluster.from_topology(ag_topology([wsfc.first.port, wsfc.second.port], wsfc.site),
                                                  connector=sql.connect)


def test_the_view_names_the_primary_and_the_other_sites_synchronous_secondary(sql: SqlServerModel,
                                                                             ag_wsfc: WsfcWorld) -> None:
    cluster = ag_cluster(sql, ag_wsfc)
    assert (cluster.primary_node(), cluster.standby_node()) == ("sql01", "sql02")
    assert (cluster.site_of("sql01"), cluster.site_of("sql02")) == ("site-a", "site-b")
    cluster.preflight()


def test_a_run_does_not_start_while_a_policy_fails_on_either_side(sql: SqlServerModel, ag_wsfc: WsfcWorld) -> None:
    sql.databases[1].suspended = True
    ag_wsfc.model.nodes["SQL02"] = "Down"
    with pytest.raises(HarnessError) as caught:
        ag_cluster(sql, ag_wsfc).preflight()
    assert "database bench on sql02 is suspended" in str(caught.value) and "node sql02 is Down" in str(caught.value)


# The replication mode, as Microsoft's "Availability modes for an Always On availability group" defines when a
# commit waits (availability-modes-always-on-availability-groups): both replicas SYNCHRONOUS_COMMIT and the
# secondary's databases SYNCHRONIZED; a primary in ASYNCHRONOUS_COMMIT "commits transactions asynchronously for all
# secondary replicas"; a synchronous secondary past the session timeout is marked "NOT SYNCHRONIZING".
def test_the_replication_mode_is_synchronous_when_a_synchronous_secondary_is_synchronized(
        sql: SqlServerModel, ag_wsfc: WsfcWorld) -> None:
    state = ag_cluster(sql, ag_wsfc).replication()
    assert state.mode == "synchronous"
    assert "sql02 secondary SYNCHRONOUS_COMMIT (SYNCHRONIZED)" in state.read_from, state.read_from
    assert state.settings == {"availability_mode sql01": "SYNCHRONOUS_COMMIT",
                              "availability_mode sql02": "SYNCHRONOUS_COMMIT"}


@pytest.mark.parametrize(("replica", "mode", "sync_state"), [
    ("sql02", "ASYNCHRONOUS_COMMIT", "SYNCHRONIZING"),  # the secondary's mode
    ("sql01", "ASYNCHRONOUS_COMMIT", "SYNCHRONIZED"),  # the primary's own mode decides for every secondary
    ("sql02", "SYNCHRONOUS_COMMIT", "NOT SYNCHRONIZING"),  # past the session timeout: not waited for
], ids=["async-secondary", "async-primary", "secondary-not-synchronizing"])
def test_the_replication_mode_is_asynchronous_when_no_commit_waits_for_a_secondary(
        sql: SqlServerModel, ag_wsfc: WsfcWorld, replica: str, mode: str, sync_state: str) -> None:
    sql.replicas[replica].mode = mode
    if replica == "sql02":
        sql.databases[1].state = sync_state
    state = ag_cluster(sql, ag_wsfc).replication()
    assert state.mode == "asynchronous", state
    assert f"{replica} {'primary' if replica == 'sql01' else 'secondary'} {mode}" in state.read_from


def test_an_availability_mode_changed_during_a_run_is_named_and_never_altered(
        sql: SqlServerModel, ag_wsfc: WsfcWorld) -> None:
    cluster = ag_cluster(sql, ag_wsfc)
    before = cluster.replication()
    assert cluster.restore_replication(before) == []
    sql.replicas["sql02"].mode = "ASYNCHRONOUS_COMMIT"
    with pytest.raises(HarnessError, match="availability_mode sql02: SYNCHRONOUS_COMMIT before, ASYNCHRONOUS_COMMIT now"):
        cluster.restore_replication(before)
    assert not sql.executed, "no ALTER was sent"


def test_a_failover_splits_into_detection_role_change_databases_and_listener_on_the_databases_clock(
        sql: SqlServerModel, ag_wsfc: WsfcWorld) -> None:
    sql.clock_offset_s = ag_wsfc.model.clock_offset_s = 30.0  # both servers 30 s ahead of the harness
    cluster = ag_cluster(sql, ag_wsfc)
    since = cluster.ag.server_now() - 1
    topology = ag_topology()
    fail_over(AvailabilityGroup.from_topology(topology, topology.databases[0], connector=sql.connect), "sql02",
              forced=False)
    ag_wsfc.model.events.append(ModelEvent(sql.now() + 1.0, 1201, "SQL02", "The Cluster service successfully "
                                           "brought the clustered role 'AG01' online.", ["AG01"]))
    events = cluster.ha_events(since, "sql01")
    kinds = [e.kind for e in events]
    assert kinds == [EventKind.DETECTED, EventKind.PROMOTED, EventKind.DATABASES_ONLINE, EventKind.LISTENER_ONLINE]
    assert events[1].attrs["node"] == "sql02" and events[2].attrs["databases"] == ["bench"]
    assert all(abs(e.wall - (time.time() + 30)) < 5 for e in events), "on the database's clock"
    assert cluster.clock_offset() == pytest.approx(30.0, abs=0.5)


def test_the_forecast_states_the_detection_settings_and_the_queues(sql: SqlServerModel, ag_wsfc: WsfcWorld) -> None:
    sql.databases[1].redo_queue_kb, sql.databases[1].redo_rate_kb_s, sql.databases[1].log_send_queue_kb = 40000, 10000, 64
    forecast = ag_cluster(sql, ag_wsfc).failover_forecast()
    assert forecast is not None
    assert forecast.detection.startswith("SameSubnetDelay 1000 ms x 10, CrossSubnetDelay 1000 ms x 20")
    assert forecast.detection_s == 20.0, "the nodes are in two sites: cross-subnet settings"
    assert (forecast.rto_s, forecast.rpo_kb) == (4.0, 64)


def test_the_workload_connects_through_the_listener_with_driver_18(sql: SqlServerModel, ag_wsfc: WsfcWorld) -> None:
    dialect, settings = ag_cluster(sql, ag_wsfc).connection()
    assert isinstance(dialect, TSqlDialect) and dialect.driver == "odbc18"
    assert [(e.host, e.port) for e in settings.endpoints] == [("sqlag01-listener.example.net", 1433)]
    text = dialect.redacted_connection_string(settings)
    assert "MultiSubnetFailover=Yes" in text and "PWD=***" in text and sql.password not in text


def test_the_environment_names_versions_replicas_and_detection_settings(sql: SqlServerModel, ag_wsfc: WsfcWorld) -> None:
    described = ag_cluster(sql, ag_wsfc).describe()
    assert described["database"] == "SQL Server 16.0.4135 Enterprise Edition: Core-based Licensing (64-bit)"
    assert described["replicas"] == ("sql01 primary synchronous_commit automatic, "
                                     "sql02 secondary synchronous_commit automatic")
    assert "LeaseTimeout 20000 ms" in described["detection_settings"]


@pytest.mark.reproducer("AA-row-order")
def test_what_is_said_of_the_replicas_does_not_change_with_the_order_sql_server_returns_rows(
        sql: SqlServerModel, ag_wsfc: WsfcWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rowset without ORDER BY comes in any order ("The order in which rows are returned in a result set are not
    guaranteed unless an ORDER BY clause is specified"): the environment, the settings and the replicas' health
    read the same either way, so a report does not change between two nights of one cluster."""
    said = []
    for served in ("", variations.MEMBER_ORDER):
        monkeypatch.setenv(variations.ENV, served)
        cluster = ag_cluster(sql, ag_wsfc)
        said.append((cluster.describe()["replicas"], cluster.ag.detection(), [r.replica for r in cluster.ag.replicas()],
                     [d.replica for d in cluster.ag.databases()]))
    assert said[0] == said[1]


def test_an_fci_is_owned_by_the_wsfc_role_and_its_failover_is_read_from_the_cluster_log(wsfc: WsfcWorld) -> None:
    cluster = FailoverInstanceCluster.from_topology(wsfc.topology())
    assert (cluster.primary_node(), cluster.standby_node()) == ("fci01", "fci02")
    since = cluster.cluster.server_now() - 1
    wsfc.model.fail_node("FCI01")
    events = cluster.ha_events(since, "fci01")
    assert [(e.kind, e.attrs["node"]) for e in events] == [(EventKind.DETECTED, "FCI01"), (EventKind.PROMOTED, "FCI02")]
    assert events[1].wall - events[0].wall == pytest.approx(8.0, abs=0.01)
    forecast = cluster.failover_forecast()
    assert forecast is not None and forecast.rpo_kb == 0.0 and forecast.detection_s == 20.0


def test_the_role_online_event_is_read_by_the_roles_name_wherever_its_insertion_strings_put_it(
        wsfc: WsfcWorld) -> None:
    """The provider's message table puts the role in event 1201's '%1' (assumption A-wsfc-role-event-strings, from
    a public dump, not a Microsoft document): the backend finds the role by its name among the strings all the same,
    in any case, not by position, so a layout other than the table's is still read."""
    wsfc.model.role_online_layout = ("node", "role-upper")
    cluster = FailoverInstanceCluster.from_topology(wsfc.topology())
    since = cluster.cluster.server_now() - 1
    wsfc.model.fail_node("FCI01")
    events = cluster.ha_events(since, "fci01")
    assert [(e.kind, e.attrs["node"]) for e in events] == [(EventKind.DETECTED, "FCI01"), (EventKind.PROMOTED, "FCI02")]


def test_an_fci_role_coming_back_online_on_its_old_node_is_no_failover_whatever_the_case_of_its_name(
        wsfc: WsfcWorld) -> None:
    """WSFC writes node names as it was given them (FCI01); the topology may say fci01: one node."""
    cluster = FailoverInstanceCluster.from_topology(wsfc.topology())
    since = cluster.cluster.server_now() - 1
    wsfc.model.events.append(ModelEvent(wsfc.model.now(), 1201, "FCI01", "The Cluster service successfully brought "
                                        f"the clustered role '{wsfc.model.role}' online.", [wsfc.model.role]))
    assert [e.kind for e in cluster.ha_events(since, "fci01")] == []


def test_the_role_event_probe_passes_where_the_role_is_named_and_fails_where_it_is_not(wsfc: WsfcWorld) -> None:
    cluster = FailoverInstanceCluster.from_topology(wsfc.topology()).cluster
    assert cluster.probe_role_event_strings().result is ProbeResult.UNKNOWN  # no role has come online yet
    wsfc.model.fail_node("FCI01")
    assert cluster.probe_role_event_strings().result is ProbeResult.PASS
    wsfc.model.nodes["FCI01"] = "Up"
    wsfc.model.role_online_layout = ("node",)  # a layout without the role's name
    wsfc.model.fail_node("FCI02")
    probed = cluster.probe_role_event_strings()
    assert probed.result is ProbeResult.FAIL and probed.seen.startswith("1 of 2 role-online events name a role")


def test_the_groups_failure_detection_settings_are_read_from_the_catalog_views(sql: SqlServerModel,
                                                                             ag_wsfc: WsfcWorld) -> None:
    cluster = ag_cluster(sql, ag_wsfc)
    check = cluster.checks()[0]
    assert check.run() == "FAILURE_CONDITION_LEVEL 3, HEALTH_CHECK_TIMEOUT 30000 ms, SESSION_TIMEOUT sql01 10 s, sql02 10 s"


def test_a_session_timeout_under_microsofts_advice_is_a_warning_naming_the_replica(sql: SqlServerModel,
                                                                                 ag_wsfc: WsfcWorld) -> None:
    sql.replicas["sql02"].session_timeout_s = 5
    with pytest.raises(Uncertain, match=r"SESSION_TIMEOUT sql01 10 s, sql02 5 s: under 10 s on sql02, which Microsoft "
                                        r"advises against"):
        ag_cluster(sql, ag_wsfc).checks()[0].run()


def test_a_witness_online_keeps_quorum_without_a_site(sql: SqlServerModel, ag_wsfc: WsfcWorld) -> None:
    quorum = ag_cluster(sql, ag_wsfc).checks()[1]
    assert quorum.name == "the failover cluster keeps quorum without one site"
    assert quorum.run() == "quorum NodeAndFileShareMajority, 2 nodes, witness File Share Witness Online"


def test_a_witness_offline_or_none_across_two_sites_fails_naming_what_a_site_failure_would_do(
        sql: SqlServerModel, ag_wsfc: WsfcWorld) -> None:
    ag_wsfc.model.witness_state = "Offline"
    with pytest.raises(HarnessError, match="witness File Share Witness is Offline: losing a site can lose quorum"):
        ag_cluster(sql, ag_wsfc).checks()[1].run()
    ag_wsfc.model.witness_state, ag_wsfc.model.quorum_type = "Online", "NodeMajority"
    with pytest.raises(HarnessError, match="quorum NodeMajority, 2 nodes and no witness, split over two sites: losing "
                                           "a site loses quorum"):
        ag_cluster(sql, ag_wsfc).checks()[1].run()
