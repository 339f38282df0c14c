"""A vSAN IOPS limit set the way vSAN users set one (a storage policy through PBM), against the simulator, read back
by govc (govmomi's own client: `vm.policy.ls`, `storage.policy.info`), not by the harness."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from faults import registry
from faults.assumptions import ProbeResult
from faults.base import FaultSpec, FaultState
from harness_kernel.errors import ConfigError
from harness_platforms.vsphere.privileges import PrivilegeMissing
from harness_platforms.vsphere.qos import DiskIopsLimit
from tests.support.vsim import READONLY_PASSWORD_ENV, READONLY_USER, VMS, Simulator

VM = next(iter(VMS))
NODE = VMS[VM][1]
INSTANCE = "5eed0f1ab5c2"
POLICY = "harness-iops-400-5eed0f1ab5c2"
MIRRORED = "Stretched cluster: dual site mirroring"


def policies_of(sim: Simulator, vm: str) -> dict[str, str]:
    """govc's view: each of the VM's storage objects (home, disks) -> its policy's name."""
    listed = json.loads(sim.govc("vm.policy.ls", "-json", "-vm", vm))
    return {str(e["name"]): str(e["policyName"]) for e in listed}


def policy_rules(sim: Simulator, name: str) -> dict[str, object]:
    """govc's view of a policy's rules: "NAMESPACE.id" -> value."""
    info = json.loads(sim.govc("storage.policy.info", "-json", name))
    rules: dict[str, object] = {}
    for policy in info["policies"]:
        for sub in policy["profile"]["constraints"]["subProfiles"]:
            for capability in sub["capability"]:
                rules[f"{capability['id']['namespace']}.{capability['id']['id']}"] = \
                    capability["constraint"][0]["propertyInstance"][0]["value"]
    return rules


def limit(sim: Simulator, **params: object) -> DiskIopsLimit:
    spec = FaultSpec("disk-iops-limit", f"node:bench/{NODE}", {"iops_limit": 400, **params}, instance=INSTANCE)
    fault = registry.build(spec, sim.topology())
    assert isinstance(fault, DiskIopsLimit)
    return fault


@pytest.fixture
def fault(sim: Simulator) -> Iterator[DiskIopsLimit]:
    made = limit(sim)
    yield made
    made.revert()


def test_the_limit_is_a_copy_of_the_disks_policy_with_the_rule_and_the_revert_puts_its_own_back(
        sim: Simulator, fault: DiskIopsLimit) -> None:
    before = policies_of(sim, VM)
    assert set(before.values()) == {MIRRORED}
    assert [a.id for a, _ in fault.assumptions()] == ["A-pbm-iops-limit-rule"]
    assert fault.probe_iops_rule().result is ProbeResult.PASS
    fault.preflight()
    fault.inject()
    during = policies_of(sim, VM)
    disks = [name for name in during if name != "VM home"]
    assert len(disks) == 1 and during[disks[0]] == POLICY, during
    assert during["VM home"] == MIRRORED, "only the disk's policy changes"
    assert policy_rules(sim, POLICY) == {**policy_rules(sim, MIRRORED), "VSAN.iopsLimit": 400}, \
        "every rule of its own policy kept, the limit added"
    assert fault.evidence["iops_limit_read_back"] == "400" and fault.evidence["original_policy"] == MIRRORED
    assert fault.check() is FaultState.IN_EFFECT
    rebuilt = limit(sim)  # what recover builds from the journal: the spec only
    assert rebuilt.check() is FaultState.IN_EFFECT
    rebuilt.revert()
    assert policies_of(sim, VM) == before
    assert POLICY not in sim.govc("storage.policy.ls"), "the policy it created is deleted"
    assert fault.check() is FaultState.CLEARED
    fault.revert()  # idempotent: nothing of its own left
    assert policies_of(sim, VM) == before


def test_a_disk_label_the_vm_does_not_have_is_refused_naming_its_disks(sim: Simulator) -> None:
    fault = limit(sim, disk="Hard disk 9")
    with pytest.raises(ConfigError, match=r"params\.disk: VM .* has no disk labelled 'Hard disk 9' \(its disks: 'Hard "):
        fault.preflight()
    assert POLICY not in sim.govc("storage.policy.ls")


def test_the_plan_names_every_call_and_contacts_nothing(sim: Simulator) -> None:
    text = limit(sim).plan().render()
    assert f"PbmCreate(CapabilityBasedProfileCreateSpec(name='{POLICY}'" in text and "VSAN.iopsLimit=400" in text
    assert "ReconfigVM_Task(ConfigSpec(deviceChange=[VirtualDeviceSpec(operation='edit'" in text
    assert f"PbmDelete([<the id of '{POLICY}'>]): only the policy of that name" in text


def test_the_storage_profile_privileges_are_asked_of_vcenter_and_a_reader_lacks_them(
        sim: Simulator, monkeypatch: pytest.MonkeyPatch) -> None:
    assert "holds StorageProfile.View, StorageProfile.Update on the root folder" in limit(sim).privileges()
    monkeypatch.setenv(READONLY_PASSWORD_ENV, sim.readonly_password)
    topology = sim.topology()
    vcenter = topology.management.vcenter
    assert vcenter is not None
    credential = vcenter.credential.model_copy(update={
        "username": READONLY_USER, "password": vcenter.credential.password.model_copy(update={"env": READONLY_PASSWORD_ENV})})
    reader = topology.model_copy(update={"management": topology.management.model_copy(
        update={"vcenter": vcenter.model_copy(update={"credential": credential})})})
    fault = registry.build(FaultSpec("disk-iops-limit", f"node:bench/{NODE}", {"iops_limit": 400}), reader)
    assert isinstance(fault, DiskIopsLimit)
    with pytest.raises(PrivilegeMissing, match=r"lacks StorageProfile.View, StorageProfile.Update on the root folder"):
        fault.preflight()
    assert POLICY not in sim.govc("storage.policy.ls")
