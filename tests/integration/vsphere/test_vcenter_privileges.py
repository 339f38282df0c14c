"""vCenter privileges: asked of vCenter for the harness's own session before any fault, and refused at the call.

The simulator holds a second account whose role may only read (`harness_lab.vsphere_binding.READONLY_USER`):
privilege questions about its session are answered from that role and the routed vim methods refuse it
with NoPermission, as vCenter does. Everything here goes through pyVmomi, unchanged.
"""

from __future__ import annotations

from typing import Any

import pytest

from faults import registry
from faults.base import Checked, FaultSpec, Preflight
from faults.transports.vcenter import sdk, session_for
from harness import doctor
from harness_kernel.topology.models import Topology
from harness_platforms.vsphere.privileges import PrivilegeMissing, required
from tests.support.vsim import READONLY_PASSWORD_ENV, READONLY_USER, Simulator


@pytest.fixture
def readonly(sim: Simulator, monkeypatch: pytest.MonkeyPatch) -> Topology:
    """The simulator's topology, logged in as the account whose role may only read."""
    monkeypatch.setenv(READONLY_PASSWORD_ENV, sim.readonly_password)
    topology = sim.topology(allow_list=["host:esx-a2", "node:bench/node-a"])
    vcenter = topology.management.vcenter
    assert vcenter is not None
    credential = vcenter.credential.model_copy(update={
        "username": READONLY_USER, "password": vcenter.credential.password.model_copy(update={"env": READONLY_PASSWORD_ENV})})
    management = topology.management.model_copy(update={"vcenter": vcenter.model_copy(update={"credential": credential})})
    return topology.model_copy(update={"management": management})


def maintenance(topology: Topology) -> Any:
    fault = registry.build(FaultSpec("host-maintenance", "host:esx-a2"), topology)
    assert isinstance(fault, Checked) and isinstance(fault, Preflight)
    assert [c.name for c in fault.checks()] == ["privileges"]
    return fault


def test_the_privileges_each_call_needs_are_read_from_pyvmomis_type_information() -> None:
    assert required("HostSystem", "EnterMaintenanceMode_Task") == "Host.Config.Maintenance"
    assert required("HostSystem", "ReconnectHost_Task") == "Host.Config.Connection"
    assert required("VirtualMachine", "RelocateVM_Task") == "Resource.ColdMigrate"
    with pytest.raises(ValueError, match="no method Nonexistent_Task"):
        required("HostSystem", "Nonexistent_Task")


def test_the_administrator_holds_what_maintenance_and_vmotion_need(sim: Simulator) -> None:
    topology = sim.topology(allow_list=["host:esx-a2", "node:bench/node-a"])
    seen = maintenance(topology).privileges()
    assert seen == "vCenter user 'harness' holds Host.Config.Maintenance on HostSystem esx-a2"
    migrate = registry.build(FaultSpec("vm-migrate", "node:bench/node-a"), topology)
    assert [c.run() for c in migrate.checks()] == [  # type: ignore[attr-defined]
        "vCenter user 'harness' holds Resource.ColdMigrate on VirtualMachine pg-node-a, "
        "Resource.HotMigrate on VirtualMachine pg-node-a"]


def test_a_read_only_account_is_refused_before_anything_changes_naming_privilege_entity_and_call(
        sim: Simulator, readonly: Topology) -> None:
    fault = maintenance(readonly)
    with pytest.raises(PrivilegeMissing) as caught:
        fault.privileges()
    said = str(caught.value)
    assert f"vCenter user {READONLY_USER!r} lacks Host.Config.Maintenance on HostSystem esx-a2 " \
           "(EnterMaintenanceMode_Task, ExitMaintenanceMode_Task): grant them" in said
    assert "grant them to its role" in said and sim.readonly_password not in said
    with pytest.raises(PrivilegeMissing, match=r"lacks Host\.Config\.Maintenance"):
        fault.preflight()
    migrate = registry.build(FaultSpec("vm-migrate", "node:bench/node-a"), readonly)
    with pytest.raises(PrivilegeMissing) as migration:
        migrate.preflight()  # type: ignore[attr-defined]
    assert "lacks Resource.ColdMigrate on VirtualMachine pg-node-a (RelocateVM_Task); " \
           "Resource.HotMigrate on VirtualMachine pg-node-a (RelocateVM_Task)" in str(migration.value)  # it runs
    assert next(h for h in sim.get("/hosts") if h["name"] == "esx-a2")["maintenance"] is False


def test_the_simulator_refuses_the_read_only_account_at_the_call_with_no_permission(
        sim: Simulator, readonly: Topology) -> None:
    """What a real vCenter does when a privilege check is skipped: the method fails, nothing changes."""
    s, session = sdk(), session_for(readonly)
    host = session.find("HostSystem", "esx-a2")
    with pytest.raises(s.vim.fault.NoPermission) as caught:
        host.EnterMaintenanceMode_Task(timeout=60)
    assert (caught.value.privilegeId, caught.value.object._moId) == ("Host.Config.Maintenance", host._moId)
    vm = session.find("VirtualMachine", "pg-node-a")
    with pytest.raises(s.vim.fault.NoPermission, match=r"Resource\.ColdMigrate"):
        vm.RelocateVM_Task(spec=s.vim.vm.RelocateSpec(host=session.find("HostSystem", "esx-b1")))
    assert next(h for h in sim.get("/hosts") if h["name"] == "esx-a2")["maintenance"] is False
    assert next(v for v in sim.get("/state")["vms"] if v["name"] == "pg-node-a")["host"] == "esx-a1"


def test_a_privilege_question_about_a_session_that_does_not_exist_is_refused(sim: Simulator) -> None:
    s, session = sdk(), session_for(sim.topology())
    content = session.content()
    with pytest.raises(s.vmodl.fault.InvalidArgument):
        content.authorizationManager.HasPrivilegeOnEntities(
            entity=[session.find("HostSystem", "esx-a2")], sessionId="no-such-session", privId=["System.Read"])


def test_doctor_fails_the_privilege_row_of_each_fault_the_account_cannot_make_exit_10(
        sim: Simulator, readonly: Topology) -> None:
    findings = doctor.examine(readonly, open_keyring=False)
    rows = {r.check: r for r in findings.rows if r.where.startswith("vsphere ")}
    row = rows["host-maintenance on host:esx-a2: privileges"]
    assert (row.status, row.blocks) == ("FAIL", ("host-maintenance",))
    assert "lacks Host.Config.Maintenance on HostSystem esx-a2" in row.seen and "grant the account a role" in row.fix
    assert rows["vm-migrate on node:bench/node-a: privileges"].status == "FAIL"
    assert "host-maintenance on host:esx-a2: ready" not in rows  # one row says it: the preflight would ask again
    assert findings.exit_code == doctor.EXIT_NOT_READY
    text = findings.render() + findings.dumps()
    assert f"FAIL vsphere management.vcenter 127.0.0.1:{sim.port}: host-maintenance on host:esx-a2: privileges: " \
           f"management.vcenter 127.0.0.1:{sim.port}: vCenter user {READONLY_USER!r} lacks" in text
    assert sim.readonly_password not in text and sim.password not in text
