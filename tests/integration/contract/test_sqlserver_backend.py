"""Contract: the availability group's queries and its failover, against the DB-API model of SQL Server.

The model (tests/support/sqlserver_model.py) parses each statement — the view, the columns,
the AG name, the ALTER — and answers as Microsoft documents the DMVs and the failover; the
fault goes through the registry as a run builds it.
"""

from __future__ import annotations

import time

import pytest

from faults import registry
from faults.base import FaultSpec, FaultState
from faults.transports.odbc import SqlServerError, TSqlSession
from harness_kernel.errors import ConfigError, HarnessError
from harness_kernel.odbc.errors import ErrorClass
from harness_platforms.sqlserver.faults import AgFailover
from harness_platforms.sqlserver.probes import AvailabilityGroup, fci_active_node
from tests.support.contract_world import ag_topology
from tests.support.sqlserver_model import SqlServerModel


def group(sql: SqlServerModel) -> AvailabilityGroup:
    topology = ag_topology()
    return AvailabilityGroup.from_topology(topology, topology.databases[0], connector=sql.connect)


def failover(sql: SqlServerModel, **params: str) -> AgFailover:
    topology = ag_topology()
    fault = registry.build(FaultSpec("role-move", "database:sql-ag-01", params), topology)
    assert isinstance(fault, AgFailover)
    for session in fault.group.sessions.values():
        session.connector = sql.connect
    return fault


def test_the_primary_and_every_replicas_health_are_read_from_the_primary(sql: SqlServerModel) -> None:
    ag = group(sql)
    assert ag.primary() == "sql01"
    assert [(r.node, r.role, r.connected, r.synchronization_health, r.availability_mode) for r in ag.replicas()] == [
        ("sql01", "PRIMARY", True, "HEALTHY", "SYNCHRONOUS_COMMIT"),
        ("sql02", "SECONDARY", True, "HEALTHY", "SYNCHRONOUS_COMMIT")]
    assert ag.health_problems() == []
    assert ag.version() == "16.0.4135 Enterprise Edition: Core-based Licensing (64-bit)"
    assert abs(ag.server_now() - time.time()) < 2


def test_the_primary_is_found_when_the_first_node_is_a_secondary(sql: SqlServerModel) -> None:
    sql.replicas["sql01"].role, sql.replicas["sql02"].role = "SECONDARY", "PRIMARY"
    assert group(sql).primary() == "sql02"


def test_microsofts_health_policies_name_each_problem(sql: SqlServerModel) -> None:
    sql.replicas["sql02"].connected, sql.replicas["sql02"].health = False, "NOT_HEALTHY"
    sql.databases[1].state, sql.databases[1].suspended, sql.databases[1].failover_ready = "NOT SYNCHRONIZING", True, False
    assert group(sql).health_problems() == [
        "replica sql02 is not connected", "replica sql02 is NOT_HEALTHY",
        "database bench on sql02 is suspended (data movement paused)",
        "database bench on sql02 is NOT SYNCHRONIZING, not SYNCHRONIZED",
        "database bench on sql02 is not failover ready"]


def test_estimates_come_from_the_targets_redo_and_log_send_queues(sql: SqlServerModel) -> None:
    sql.databases[1].redo_queue_kb, sql.databases[1].redo_rate_kb_s, sql.databases[1].log_send_queue_kb = 60000, 20000, 512
    estimates = group(sql).estimates()
    assert (estimates.rto_s, estimates.rpo_kb) == (3.0, 512)


def test_a_planned_failover_is_sent_to_the_other_sites_secondary_and_is_in_effect_once_it_is_primary(
        sql: SqlServerModel) -> None:
    fault = failover(sql)
    fault.preflight()
    fault.inject()
    assert sql.executed == [("sql02", "ALTER AVAILABILITY GROUP [AG01] FAILOVER;")]
    assert fault.check() is FaultState.IN_EFFECT
    fault.revert()
    assert fault.check() is FaultState.CLEARED


def test_the_failover_leaves_its_phases_in_alwayson_health(sql: SqlServerModel) -> None:
    since = time.time() - 1
    failover(sql).inject()
    ag = group(sql)
    changes = [(c.node, c.previous, c.current) for c in ag.role_changes(since)]
    assert changes == [("sql01", "PRIMARY_NORMAL", "RESOLVING_NORMAL"), ("sql02", "SECONDARY_NORMAL", "RESOLVING_NORMAL"),
                       ("sql02", "RESOLVING_NORMAL", "PRIMARY_PENDING"), ("sql01", "RESOLVING_NORMAL", "SECONDARY_NORMAL"),
                       ("sql02", "PRIMARY_PENDING", "PRIMARY_NORMAL")]
    assert [(c.node, c.database) for c in ag.database_role_changes(since)] == [("sql02", "bench")]
    assert ag.role_changes(time.time() + 60) == []


def test_a_secondary_not_synchronized_is_refused_with_the_reason_and_nothing_is_sent(sql: SqlServerModel) -> None:
    sql.databases[1].state = "SYNCHRONIZING"
    with pytest.raises(HarnessError, match="database bench on sql02 is SYNCHRONIZING, not SYNCHRONIZED"):
        failover(sql).preflight()
    with pytest.raises(HarnessError, match="not failing AG01 over to sql02: database bench on sql02 is SYNCHRONIZING"):
        failover(sql).inject()
    assert sql.executed == []


def test_sql_server_refuses_a_planned_failover_the_preflight_missed_and_the_error_says_so(sql: SqlServerModel) -> None:
    ag = group(sql)
    with pytest.raises(SqlServerError, match=r"42000/41142 other: .*cannot become the primary replica"):
        sql.databases[1].state = "SYNCHRONIZING"
        ag.sessions["sql02"].execute("ALTER AVAILABILITY GROUP [AG01] FAILOVER;", what="failing over")


def test_forced_failover_needs_its_mode_by_name_and_never_happens_by_default(sql: SqlServerModel) -> None:
    for params in ({}, {"to_node": "sql02"}):
        assert "FORCE_FAILOVER_ALLOW_DATA_LOSS" not in failover(sql, **params).plan().render()
    with pytest.raises(ConfigError, match=r"role-move: params\.mode"):
        registry.build(FaultSpec("role-move", "database:sql-ag-01", {"mode": "forced"}), ag_topology())


def test_forced_failover_sends_force_allow_data_loss_and_its_revert_resumes_data_movement(sql: SqlServerModel) -> None:
    sql.databases[1].state = "NOT SYNCHRONIZING"  # the moment a forced failover is for
    fault = failover(sql, mode="forced-allow-data-loss")
    assert "ALTER AVAILABILITY GROUP [AG01] FORCE_FAILOVER_ALLOW_DATA_LOSS;" in fault.plan().render()
    fault.inject()
    assert sql.executed == [("sql02", "ALTER AVAILABILITY GROUP [AG01] FORCE_FAILOVER_ALLOW_DATA_LOSS;")]
    assert sql.databases[0].suspended
    fault.revert()
    assert sql.executed[-1] == ("sql01", "ALTER DATABASE [bench] SET HADR RESUME;")
    assert fault.check() is FaultState.CLEARED


def test_another_ag_name_finds_no_group(sql: SqlServerModel) -> None:
    sql.ag_name = "AG02"
    with pytest.raises(HarnessError, match="AG01: no node answers as its primary"):
        group(sql).primary()


def test_976_and_983_during_failover_are_not_primary_and_the_check_is_unknown(sql: SqlServerModel) -> None:
    fault = failover(sql)
    fault.inject()
    for replica in sql.replicas.values():
        replica.error = ("42000", 983, "Unable to access availability database 'bench' because the database "
                                        "replica is not in the PRIMARY or SECONDARY role.")
    assert fault.check() is FaultState.UNKNOWN
    with pytest.raises(SqlServerError) as caught:
        group(sql).sessions["sql01"].rows("SELECT 1", what="probing")
    assert caught.value.info.error_class is ErrorClass.NOT_PRIMARY and caught.value.info.native == 983
    sql.replicas["sql01"].error = ("42000", 976, "The target database, 'bench', is participating in an availability "
                                                 "group and is currently not accessible for queries.")
    with pytest.raises(SqlServerError) as caught:
        group(sql).sessions["sql01"].rows("SELECT 1", what="probing")
    assert caught.value.info.error_class is ErrorClass.NOT_PRIMARY and caught.value.info.native == 976


def test_a_login_timeout_is_a_clear_error_naming_the_instance_without_the_password(sql: SqlServerModel) -> None:
    sql.replicas["sql02"].up = False
    with pytest.raises(SqlServerError) as caught:
        group(sql).sessions["sql02"].rows("SELECT 1", what="reading the replicas")
    message = str(caught.value)
    assert message.startswith("sql sql02 (sql02.example.net:1433): reading the replicas: HYT00/0 timeout: ")
    assert "Login timeout expired" in message and sql.password not in message


def test_the_transport_logs_in_with_autocommit_and_the_topologys_timeouts(sql: SqlServerModel) -> None:
    group(sql).primary()
    first = sql.connections[0]
    assert first["autocommit"] is True and first["timeout"] == 5
    assert first["attributes"]["SERVER"] == "tcp:sql01.example.net,1433" and first["attributes"]["DATABASE"] == "master"
    assert first["attributes"]["MultiSubnetFailover"] == "Yes" and first["attributes"]["Encrypt"] == "yes"


def test_the_active_node_of_an_fci_is_what_the_instance_says(sql: SqlServerModel) -> None:
    topology = ag_topology()
    session = TSqlSession.to_node(topology, topology.databases[0], topology.databases[0].nodes[1], connector=sql.connect)
    assert fci_active_node(session) == "SQL02"


def test_alwayson_health_state_names_and_the_group_name_are_read_whatever_their_case(sql: SqlServerModel) -> None:
    """XE map values and object names are compared as SQL Server compares names: case-insensitively."""
    since = time.time() - 1
    sql.ag_name = "ag01"  # the session's events carry the group's name as it was created
    sql.state_change("sql02", time.time(), "secondary_normal", "resolving_normal")
    changes = [(c.node, c.previous, c.current) for c in group(sql).role_changes(since)]
    assert changes == [("sql02", "SECONDARY_NORMAL", "RESOLVING_NORMAL")]


def test_the_failover_phases_are_read_on_sql_server_2016_too(sql: SqlServerModel) -> None:
    """fn_xe_file_target_read_file has no timestamp_utc before 2017: each event's time comes from its own XML."""
    sql.version = "13.0.6300.2"
    since = time.time() - 1
    failover(sql).inject()
    assert [c.current for c in group(sql).role_changes(since)][-1] == "PRIMARY_NORMAL"
    assert group(sql).role_changes(time.time() + 60) == []


def test_the_logins_permissions_are_read_on_every_replica_before_a_failover(sql: SqlServerModel) -> None:
    fault = failover(sql)
    [check] = fault.checks()
    assert check.run() == "ALTER on availability group AG01 and VIEW SERVER STATE on sql01, sql02"


@pytest.mark.parametrize(("grants", "lacking"), [
    ({"VIEW SERVER STATE"}, ["sql01: ALTER on availability group AG01", "sql02: ALTER on availability group AG01"]),
    ({"ALTER AVAILABILITY GROUP::AG01"}, ["sql01: VIEW SERVER STATE", "sql02: VIEW SERVER STATE"]),
])
def test_a_login_without_a_permission_is_refused_naming_it_and_nothing_is_sent(
        sql: SqlServerModel, grants: set[str], lacking: list[str]) -> None:
    sql.grants = grants
    fault = failover(sql)
    with pytest.raises(HarnessError) as caught:
        fault.preflight()
    assert str(caught.value) == "SQL login 'harness_sql' lacks " + "; ".join(lacking)
    assert fault.checks()[0].fix.startswith("GRANT ALTER ON AVAILABILITY GROUP::[AG01] TO [harness_sql]")
    assert sql.executed == []


@pytest.mark.parametrize("grants", [{"CONTROL SERVER"}, {"CONTROL AVAILABILITY GROUP::AG01", "VIEW SERVER STATE"}])
def test_a_higher_permission_holds_what_a_failover_needs(sql: SqlServerModel, grants: set[str]) -> None:
    sql.grants = grants
    assert failover(sql).checks()[0].run().startswith("ALTER on availability group AG01")
