"""A vSAN IOPS limit on a virtual disk of a database node's VM, set the way vSAN users set one: a storage policy.

vSAN limits an object's I/O by its storage policy's rule VSAN.iopsLimit (I/Os a second, each
weighted by its size against 32 KB: docs/reference/sqlserver-restore-and-vsan-iops-limit.md,
6a-6c). The fault reads the disk's own policy through the Storage Policy API (PBM), creates a
copy of it with every rule kept (so where the data lives, site mirroring or locality, does not
change) plus the limit, and applies it to the disk with `ReconfigVM_Task`: a device edit
carrying the profile, as VMware's sample sets a disk's policy (5a). The policy is named after
the fault (`harness-iops-<limit>-<instance>`) and its description names the disk and the policy
it had, so a revert, or `recover` after a crash, knows what to put back without any state of its
own. Revert applies that policy the same way, reads it back, and deletes the policy it created,
only one named after this fault.

A disk PBM associates with no policy is refused: no document shows how to set "no policy" back
(D5). Where the rule's property id comes from is assumption A-pbm-iops-limit-rule, probed read-
only with PbmFetchCapabilityMetadata before anything is created.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from faults.contract import (
    Assumption,
    AssumptionProbe,
    ConfigError,
    ControlPlaneError,
    FaultPlan,
    FaultSpec,
    FaultState,
    HarnessError,
    IopsLimitParams,
    Params,
    Probed,
    ProbeResult,
    Target,
    Topology,
    sdk,
    session_for,
)
from harness_platforms.vsphere.assumptions import IOPS_LIMIT_RULE
from harness_platforms.vsphere.faults import _VsphereFault
from harness_platforms.vsphere.policies import rules_of
from harness_platforms.vsphere.privileges import Need, PrivilegeMissing
from harness_platforms.vsphere.probes import Discovery, node_vm

log = logging.getLogger(__name__)

NAMESPACE = "VSAN"
CAPABILITY = "iopsLimit"  # "VSAN.iopsLimit" in PowerCLI (6c); its property id: A-pbm-iops-limit-rule
RECONFIGURE_TIMEOUT_S = 300.0
# pyVmomi _typeinfo_pbm.py: PbmCreate and PbmDelete "StorageProfile.Update", the reads "StorageProfile.View"
STORAGE_PROFILE_PRIVILEGES = ("StorageProfile.View", "StorageProfile.Update")
ORIGINAL = re.compile(r"had policy ([0-9A-Za-z-]+)")


@dataclass
class DiskIopsLimit(_VsphereFault):
    """disk-iops-limit on a node: its VM's disk gets a copy of its own policy with VSAN.iopsLimit, then its policy back."""

    vm: str = ""
    disk_label: str = ""
    limit: int = 0

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> DiskIopsLimit:
        assert isinstance(params, IopsLimitParams)
        database, node_name = target.parts
        node = next(n for d in topology.databases if d.name == database for n in d.nodes if n.name == node_name)
        return cls(spec, topology, session_for(topology), vm=node_vm(node), disk_label=params.disk,
                   limit=params.iops_limit)

    @property
    def policy_name(self) -> str:
        return f"harness-iops-{self.limit}-{self.spec.instance}"

    # -- what vCenter and PBM say ---------------------------------------------------------------
    def _disk(self) -> tuple[Any, Any]:
        """The VM and its disk labelled `disk_label` (ConfigError naming the labels it has)."""
        s = sdk()
        vm = self.session.find("VirtualMachine", self.vm)
        devices = self.session.read(vm, ["config.hardware.device"], f"reading VM {self.vm}'s devices")
        disks = [d for d in devices.get("config.hardware.device") or [] if isinstance(d, s.vim.vm.device.VirtualDisk)]
        for disk in disks:
            if disk.deviceInfo is not None and disk.deviceInfo.label == self.disk_label:
                return vm, disk
        labels = ", ".join(repr(d.deviceInfo.label) for d in disks if d.deviceInfo is not None) or "none"
        raise ConfigError(f"disk-iops-limit: params.disk: VM {self.vm} has no disk labelled {self.disk_label!r} "
                          f"(its disks: {labels})")

    def _ref(self, vm: Any, disk: Any) -> Any:
        return sdk().pbm.ServerObjectRef(objectType="virtualDiskId", key=f"{vm._moId}:{disk.key}")

    def _associated(self, vm: Any, disk: Any) -> list[str]:
        manager = self.session.pbm()
        ids = self.session.call(f"reading the policy of {self.vm} {self.disk_label} (PbmQueryAssociatedProfile)",
                                lambda: manager.QueryAssociatedProfile(entity=self._ref(vm, disk)))
        return [str(i.uniqueId) for i in ids or []]

    def _profile(self, unique_id: str) -> Any:
        manager, s = self.session.pbm(), sdk()
        found = self.session.call(f"reading storage policy {unique_id} (PbmRetrieveContent)",
                                  lambda: manager.RetrieveContent(profileIds=[s.pbm.profile.ProfileId(uniqueId=unique_id)]))
        if not found:
            raise ControlPlaneError(f"{self.session.where}: PBM has no storage policy {unique_id}")
        return found[0]

    def _ours(self) -> Any | None:
        """The policy this fault created, found by its name (after a crash as well)."""
        manager, s = self.session.pbm(), sdk()
        ids = self.session.call("listing storage policies (PbmQueryProfile)",
                                lambda: manager.QueryProfile(resourceType=s.pbm.profile.ResourceType(resourceType="STORAGE")))
        if not ids:
            return None
        profiles = self.session.call("reading storage policies (PbmRetrieveContent)",
                                     lambda: manager.RetrieveContent(profileIds=list(ids)))
        return next((p for p in profiles or [] if str(p.name) == self.policy_name), None)

    def _one_policy(self, vm: Any, disk: Any) -> str:
        ids = self._associated(vm, disk)
        if len(ids) != 1:
            raise ControlPlaneError(f"{self.session.where}: disk-iops-limit: {self.vm} {self.disk_label} is associated "
                                    f"with {len(ids) or 'no'} storage policies; the harness changes a disk that has one "
                                    "(it puts exactly that one back)")
        return ids[0]

    def probe_iops_rule(self) -> Probed:
        """A-pbm-iops-limit-rule: PBM's own metadata names the property inside VSAN/iopsLimit."""
        manager, s = self.session.pbm(), sdk()
        try:
            categories = self.session.call("reading PBM's capability metadata (PbmFetchCapabilityMetadata)",
                                            lambda: manager.FetchCapabilityMetadata(
                                                resourceType=s.pbm.profile.ResourceType(resourceType="STORAGE")))
        except HarnessError as exc:
            return Probed(ProbeResult.UNKNOWN, str(exc))
        for category in categories or []:
            for capability in category.capabilityMetadata or []:
                if (capability.id.namespace, capability.id.id) == (NAMESPACE, CAPABILITY):
                    properties = [str(p.id) for p in capability.propertyMetadata or []]
                    result = ProbeResult.PASS if properties == [CAPABILITY] else ProbeResult.FAIL
                    return Probed(result, f"{NAMESPACE}.{CAPABILITY} has properties {properties}")
        return Probed(ProbeResult.FAIL, f"PBM's capability metadata has no {NAMESPACE}.{CAPABILITY}")

    def assumptions(self) -> list[tuple[Assumption, AssumptionProbe]]:
        return [(IOPS_LIMIT_RULE, self.probe_iops_rule)]

    # -- building the change ----------------------------------------------------------------------
    def _create_spec(self, original: Any, description: str) -> Any:
        """The original policy's rules with VSAN.iopsLimit set to the limit (every other rule kept)."""
        s = sdk()
        subs = list(getattr(original.constraints, "subProfiles", None) or [])
        vsan = [sub for sub in subs if any(c.id.namespace == NAMESPACE for c in sub.capability or [])]
        if not vsan:
            raise ControlPlaneError(f"{self.session.where}: disk-iops-limit: policy '{original.name}' of {self.vm} "
                                    f"{self.disk_label} has no vSAN rules; an IOPS limit is a vSAN policy's rule")
        limit = s.pbm.capability.CapabilityInstance(
            id=s.pbm.capability.CapabilityMetadata.UniqueId(namespace=NAMESPACE, id=CAPABILITY),
            constraint=[s.pbm.capability.ConstraintInstance(propertyInstance=[
                s.pbm.capability.PropertyInstance(id=CAPABILITY, value=self.limit)])])
        copied = []
        for sub in subs:
            kept = [c for c in sub.capability or [] if (c.id.namespace, c.id.id) != (NAMESPACE, CAPABILITY)]
            copied.append(s.pbm.profile.SubProfileCapabilityConstraints.SubProfile(
                name=sub.name, capability=kept + ([limit] if sub is vsan[0] else []), forceProvision=sub.forceProvision))
        return s.pbm.profile.CapabilityBasedProfileCreateSpec(
            name=self.policy_name, description=description, category="REQUIREMENT",  # sent from PBM version 11 on
            resourceType=s.pbm.profile.ResourceType(resourceType="STORAGE"),
            constraints=s.pbm.profile.SubProfileCapabilityConstraints(subProfiles=copied))

    def _apply(self, vm: Any, disk: Any, unique_id: str, what: str) -> None:
        """ReconfigVM_Task: the disk, unchanged, carrying the policy (VMware's sample, 5a)."""
        s = sdk()
        spec = s.vim.vm.ConfigSpec(deviceChange=[s.vim.vm.device.VirtualDeviceSpec(
            operation="edit", device=disk, profile=[s.vim.vm.DefinedProfileSpec(profileId=unique_id)])])
        task = self.session.call(f"ReconfigVM_Task of {self.vm} ({what})", lambda: vm.ReconfigVM_Task(spec=spec))
        self.session.wait_task(task, f"{self.vm} {self.disk_label} to take {what}", RECONFIGURE_TIMEOUT_S)
        now = self._associated(vm, disk)
        if now != [unique_id]:
            raise ControlPlaneError(f"{self.session.where}: {self.vm} {self.disk_label} reads back policy {now} after "
                                    f"ReconfigVM_Task, not {unique_id} ({what})")

    # -- the fault contract --------------------------------------------------------------------------
    def plan(self) -> FaultPlan:
        ref = f"ServerObjectRef(objectType='virtualDiskId', key='<{self.vm} moid>:<key of {self.disk_label!r}>')"
        return self._plan((
            f"read the policy of VM {self.vm}'s disk {self.disk_label!r}: PbmQueryAssociatedProfile({ref}) "
            "(exactly one, else refused)",
            f"PbmCreate(CapabilityBasedProfileCreateSpec(name='{self.policy_name}', category='REQUIREMENT', "
            f"resourceType=STORAGE, constraints=<that policy's rules> with VSAN.iopsLimit={self.limit}, "
            "description naming the disk and its policy))",
            f"ReconfigVM_Task(ConfigSpec(deviceChange=[VirtualDeviceSpec(operation='edit', device=<the disk as read>, "
            f"profile=[DefinedProfileSpec(profileId=<the new policy>)])])), at most {RECONFIGURE_TIMEOUT_S:g} s; read "
            "back by PbmQueryAssociatedProfile"),
            (f"ReconfigVM_Task: the same edit with the disk's own policy (named in '{self.policy_name}''s description), "
             "read back by PbmQueryAssociatedProfile",
             f"PbmDelete([<the id of '{self.policy_name}'>]): only the policy of that name"))

    def _ready(self, seen: Discovery) -> None:
        self.privileges()
        vm, disk = self._disk()
        original = self._profile(self._one_policy(vm, disk))
        self._create_spec(original, "")  # refuses a policy without vSAN rules
        if self._ours() is not None:
            raise ControlPlaneError(f"{self.session.where}: a storage policy named {self.policy_name} exists already")

    def _needs(self, seen: Discovery) -> list[Need]:
        """The inventory's part: none (the storage-profile privileges are global: `privileges`)."""
        return []

    def privileges(self) -> str:
        """PbmCreate and PbmDelete need StorageProfile.Update, the reads StorageProfile.View (pyVmomi's PBM type
        information): global privileges, asked of vCenter on the root folder. ReconfigVM_Task names no privilege of
        its own (it checks each changed property), so for a disk's policy none is asked ahead."""
        content = self.session.content()
        key = content.sessionManager.currentSession.key
        answer = self.session.call("HasPrivilegeOnEntities", lambda: content.authorizationManager.HasPrivilegeOnEntities(
            entity=[content.rootFolder], sessionId=key, privId=list(STORAGE_PROFILE_PRIVILEGES)))
        held = {str(a.privId) for e in answer or [] for a in e.privAvailability or [] if a.isGranted}
        missing = [p for p in STORAGE_PROFILE_PRIVILEGES if p not in held]
        user = self.session.vcenter.credential.username
        if missing:
            raise PrivilegeMissing(f"{self.session.where}: vCenter user {user!r} lacks {', '.join(missing)} on the "
                                   "root folder (PbmCreate, PbmDelete): grant them to its role there")
        return (f"vCenter user {user!r} holds {', '.join(STORAGE_PROFILE_PRIVILEGES)} on the root folder; "
                "ReconfigVM_Task's privilege for a disk's policy is not asked ahead (vCenter refuses it by name)")

    def inject(self) -> None:
        vm, disk = self._disk()
        original_id = self._one_policy(vm, disk)
        original = self._profile(original_id)
        description = (f"harness fault {self.spec.instance}: disk {self.vm} {self.disk_label} "
                       f"({vm._moId}:{disk.key}) had policy {original_id} ('{original.name}'); it is put back, then "
                       "this policy deleted")
        manager = self.session.pbm()
        spec = self._create_spec(original, description)
        created = self.session.call(f"creating storage policy {self.policy_name} (PbmCreate)",
                                    lambda: manager.Create(createSpec=spec))
        self.evidence.update(vm=self.vm, disk=self.disk_label, policy=self.policy_name, policy_id=str(created.uniqueId),
                             original_policy=str(original.name), original_policy_id=original_id, iops_limit=self.limit)
        self._apply(vm, disk, str(created.uniqueId), f"policy {self.policy_name}")
        applied = rules_of(self._profile(str(created.uniqueId)))
        self.evidence["iops_limit_read_back"] = applied.get(f"{NAMESPACE}.{CAPABILITY}")
        log.info("%s %s: policy %s (VSAN.iopsLimit %s), was '%s'", self.vm, self.disk_label, self.policy_name,
                 applied.get(f"{NAMESPACE}.{CAPABILITY}"), original.name)

    def _observe(self) -> FaultState:
        """In effect while the policy it created exists (on the disk, or not yet deleted by the revert)."""
        return FaultState.CLEARED if self._ours() is None else FaultState.IN_EFFECT

    def revert(self) -> None:
        ours = self._ours()
        if ours is None:
            return
        ours_id = str(ours.profileId.uniqueId)
        found = ORIGINAL.search(str(ours.description or ""))
        vm, disk = self._disk()
        if self._associated(vm, disk) == [ours_id]:
            if found is None:
                raise ControlPlaneError(f"{self.session.where}: policy {self.policy_name}'s description does not name "
                                        f"the policy {self.vm} {self.disk_label} had; set it back by hand")
            self._apply(vm, disk, found.group(1), f"its own policy {found.group(1)} back")
        manager, s = self.session.pbm(), sdk()
        outcomes = self.session.call(f"deleting storage policy {self.policy_name} (PbmDelete)",
                                     lambda: manager.Delete(profileId=[s.pbm.profile.ProfileId(uniqueId=ours_id)]))
        failed = [o for o in outcomes or [] if getattr(o, "fault", None) is not None]
        if failed:
            raise ControlPlaneError(f"{self.session.where}: PbmDelete of {self.policy_name}: {failed[0].fault}")
