"""Contract: the failover cluster's queries and the FCI role move, against the model cluster over WinRM.

The model (tests/support/wsfc_model.py) parses each cmdlet and its parameters and answers as
Microsoft documents the objects; the fault goes through the registry as a run would build it.
"""

from __future__ import annotations

import re
import socket
import time

import pytest

from faults import registry
from faults.base import FaultSpec, FaultState
from harness_kernel.errors import ConfigError, ControlPlaneError, HarnessError
from harness_platforms.sqlserver.wsfc.faults import FciRoleMove, move_role
from harness_platforms.sqlserver.wsfc.probes import FailoverCluster
from tests.support.contract_world import WsfcWorld
from tests.support.wsfc_model import ModelEvent

ROLE = "SQL Server (MSSQLSERVER)"


def cluster_of(wsfc: WsfcWorld, **kw: int) -> FailoverCluster:
    topology = wsfc.topology(**kw)
    return FailoverCluster.from_topology(topology, topology.databases[0])


def role_move(wsfc: WsfcWorld, **params: str) -> FciRoleMove:
    fault = registry.build(FaultSpec("role-move", "database:sql-fci-01", params), wsfc.topology())
    assert isinstance(fault, FciRoleMove)
    return fault


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_queries_read_roles_nodes_resources_quorum_and_detection_settings(wsfc: WsfcWorld) -> None:
    cluster = cluster_of(wsfc)
    assert {(g.name, g.owner_node, g.state) for g in cluster.groups()} == {
        ("Cluster Group", "FCI01", "Online"), (ROLE, "FCI01", "Online")}
    assert [(n.name, n.state) for n in cluster.nodes()] == [("FCI01", "Up"), ("FCI02", "Up")]
    assert [r.resource_type for r in cluster.resources(ROLE)] == ["SQL Server", "Physical Disk"]
    assert cluster.quorum().quorum_type == "NodeAndFileShareMajority"
    settings = cluster.detection_settings(ROLE)
    assert settings.describe() == ("SameSubnetDelay 1000 ms x 10, CrossSubnetDelay 1000 ms x 20, LeaseTimeout 20000 ms, "
                                   "HealthCheckTimeout 30000 ms, FailureConditionLevel 3")
    assert cluster.health_problems(ROLE) == []
    assert abs(cluster.server_now() - time.time()) < 2


def test_the_node_clock_is_read_as_the_node_keeps_it(wsfc: WsfcWorld) -> None:
    wsfc.model.clock_offset_s = 42.0
    assert cluster_of(wsfc).server_now() - time.time() == pytest.approx(42.0, abs=1.0)


def test_a_role_move_sends_move_cluster_group_with_wait_and_is_in_effect_once_online_elsewhere(wsfc: WsfcWorld) -> None:
    fault = role_move(wsfc)
    fault.preflight()
    fault.inject()
    assert wsfc.model.moves == [{"Name": ROLE, "Node": "fci02", "Wait": "120"}], "to the node in the other site"
    assert fault.check() is FaultState.IN_EFFECT
    fault.revert()
    assert fault.check() is FaultState.CLEARED
    assert wsfc.model.owner == "FCI02"


def test_the_plan_shows_the_exact_powershell_and_contacts_nothing(wsfc: WsfcWorld) -> None:
    plan = role_move(wsfc, to_node="fci02").plan().render()
    assert f"Move-ClusterGroup -Name '{ROLE}' -Node 'fci02' -Wait 120" in plan
    assert "management.winrm[0].credential.password" in plan
    assert wsfc.first.log.scripts == [] and wsfc.second.log.scripts == []


def test_a_role_stuck_pending_after_the_move_is_an_error_not_success(wsfc: WsfcWorld) -> None:
    wsfc.model.settle_state = "Pending"
    fault = role_move(wsfc)
    with pytest.raises(ControlPlaneError, match=rf"role {re.escape(ROLE)} is Pending on FCI02 120 s after"):
        fault.inject()
    assert fault.check() is FaultState.UNKNOWN


def test_a_role_already_pending_is_refused_by_the_preflight(wsfc: WsfcWorld) -> None:
    wsfc.model.state = "Pending"
    with pytest.raises(HarnessError, match=rf"not moving {re.escape(ROLE)}: role {re.escape(ROLE)} is Pending on FCI01"):
        role_move(wsfc).preflight()
    assert wsfc.model.moves == []


def test_a_down_target_node_is_refused_and_the_survivors_log_says_so(wsfc: WsfcWorld) -> None:
    before = time.time() - 1
    wsfc.model.fail_node("FCI02")
    with pytest.raises(HarnessError, match="node fci02 is Down"):
        role_move(wsfc).preflight()
    events = cluster_of(wsfc).events(before)
    assert [(e.event_id, e.node) for e in events] == [(1135, "FCI02")]


def test_events_are_read_from_every_node_that_answers_with_who_and_what_they_concern(wsfc: WsfcWorld) -> None:
    now = time.time()
    wsfc.model.events += [ModelEvent(now - 3600, 1201, "FCI01", "old", [ROLE]),
                          ModelEvent(now, 1069, "FCI02", "failed", ["SQL Server", ROLE, "SQL Server"])]
    wsfc.model.fail_node("FCI01", at=now + 1)
    events = cluster_of(wsfc).events(now - 10)
    assert [(e.event_id, e.role, e.node) for e in events] == [
        (1069, ROLE, "FCI02"), (1135, None, "FCI01"), (1201, ROLE, "FCI02")]
    assert events[0].wall == pytest.approx(now, abs=0.001)


@pytest.mark.reproducer("AA-P2b")
@pytest.mark.parametrize(("template", "strings"), [("to", [ROLE, "FCI02"]), ("from_to", [ROLE, "FCI01", "FCI02"])])
def test_the_role_moving_event_names_its_target_node_in_either_template(wsfc: WsfcWorld, template: str,
                                                                          strings: list[str]) -> None:
    """Event 1641 has two templates in the provider's message table: "Clustered role '%1' is moving to cluster node
    '%2'." and "... is moving from cluster node '%2' to cluster node '%3'.": the target is the last string."""
    before = time.time() - 1
    wsfc.model.role_moving_template = template
    role_move(wsfc).inject()
    events = cluster_of(wsfc).events(before)
    [moving] = [e for e in events if e.event_id == 1641]
    assert (moving.role, moving.node, list(moving.strings)) == (ROLE, "FCI02", strings)
    assert moving.message.startswith(f"Clustered role '{ROLE}' is moving ") and moving.message.endswith(
        " to cluster node 'FCI02'.")
    [online] = [e for e in events if e.event_id == 1201]
    assert (online.role, online.node, online.message) == (
        ROLE, "FCI02", f"The Cluster service successfully brought the clustered role '{ROLE}' online.")


def test_the_next_nodes_endpoint_answers_when_the_first_is_down(wsfc: WsfcWorld) -> None:
    cluster = cluster_of(wsfc, first_port=closed_port())
    assert cluster.owner_of(ROLE) == "FCI01"
    assert wsfc.second.log.scripts, "the second endpoint answered"


def test_an_availability_groups_role_is_never_moved_with_cluster_cmdlets(wsfc: WsfcWorld) -> None:
    wsfc.model.role, wsfc.model.role_type = "AG01", "SQL Server Availability Group"
    with pytest.raises(ConfigError, match="ALTER AVAILABILITY GROUP"):
        move_role(cluster_of(wsfc), "AG01", "FCI02")
    assert wsfc.model.moves == []


def test_a_forced_move_is_refused_for_an_fci(wsfc: WsfcWorld) -> None:
    with pytest.raises(ConfigError, match="no forced failover"):
        role_move(wsfc, mode="forced-allow-data-loss")


def test_the_winrm_password_appears_in_no_error(wsfc: WsfcWorld) -> None:
    with pytest.raises(HarnessError) as caught:
        FailoverCluster.from_topology(wsfc.topology(first_port=closed_port()), wsfc.topology().databases[0]).group("x")
    assert wsfc.password not in str(caught.value)


def test_preferred_owners_on_one_site_do_not_block_a_move_to_the_other(wsfc: WsfcWorld) -> None:
    """Get-ClusterOwnerNode -Group lists the role's preferred owners, an order of preference, not a limit."""
    wsfc.model.preferred_owners = ["FCI01"]
    fault = role_move(wsfc)
    fault.preflight()
    fault.inject()
    assert wsfc.model.owner == "FCI02"


def test_a_node_that_cannot_own_the_roles_disk_is_refused_naming_the_resource(wsfc: WsfcWorld) -> None:
    """Possible owners are per resource (Get-ClusterOwnerNode -Resource): the SQL Server resource and its disks."""
    wsfc.model.resource_owners["Cluster Disk 1"] = ["FCI01"]
    with pytest.raises(HarnessError, match=r"fci02 is not a possible owner of Cluster Disk 1"):
        role_move(wsfc).preflight()
    assert wsfc.model.moves == []


def test_the_winrm_account_reads_the_cluster_before_a_role_move(wsfc: WsfcWorld) -> None:
    [check] = role_move(wsfc).checks()
    assert check.run().endswith(": nodes FCI01 Up, FCI02 Up")


def test_a_node_without_the_failoverclusters_module_is_named_with_the_fix(wsfc: WsfcWorld) -> None:
    wsfc.model.module_installed = False
    fault = role_move(wsfc)
    with pytest.raises(ControlPlaneError, match="the FailoverClusters PowerShell module is not installed on the node"):
        fault.preflight()
    assert "RSAT-Clustering-PowerShell" in fault.checks()[0].fix and wsfc.model.moves == []
