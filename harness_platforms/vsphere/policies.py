"""The storage policies of the database VMs, as the Storage Policy API (PBM) associates them: read-only.

vSphere keeps a VM's and each disk's policy in PBM only ("Neither the association nor the policy
data is persisted in Virtual Machine configuration", vim.vm.DefinedProfileSpec), so the policy a
VM's data follows is read there: `PbmQueryAssociatedProfiles` for the VM home (`virtualMachine`,
its managed object id) and each disk (`virtualDiskId`, "vm-42:2000"), then `PbmRetrieveContent`.

In a vSAN stretched cluster, whether the data has a copy in both sites is the policy's site
disaster tolerance: VSAN.hostFailuresToTolerate 1 with VSAN.locality "None" is dual site
mirroring; 0 with a locality ("Preferred Fault Domain", "Secondary Fault Domain") keeps the data
in one site (Microsoft's AVS module builds the choices so, and VMware's stretched-cluster guide:
"Configure the Primary level of failures to tolerate to 1 for stretched clusters"). Sources with
quotes: docs/reference/pbm-vsan-policy.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from faults.contract import ControlPlaneError, VCenterSession, sdk

SITE_TOLERANCE = "VSAN.hostFailuresToTolerate"  # in a stretched cluster: site failures tolerated (0 or 1)
LOCALITY = "VSAN.locality"  # "None" (both sites), "Preferred Fault Domain", "Secondary Fault Domain"
# no locality rule counts as "None": assumed (no source says so; the vSAN Default Storage Policy has none)
MIRRORED_LOCALITIES = ("None", "")


@dataclass(frozen=True)
class StoragePolicy:
    """A policy as PBM serves it: its name and its rules ("VSAN.locality" -> "None"), values as text."""

    name: str
    rules: Mapping[str, str]

    @property
    def site_mirrored(self) -> bool | None:
        """A copy in each site of a stretched cluster (dual site mirroring); None without vSAN rules."""
        if SITE_TOLERANCE not in self.rules:
            return None
        return int(self.rules[SITE_TOLERANCE]) >= 1 and self.rules.get(LOCALITY, "") in MIRRORED_LOCALITIES

    def describe(self) -> str:
        said = ", ".join(f"{k.removeprefix('VSAN.')} {v}" for k, v in sorted(self.rules.items())
                         if k in (SITE_TOLERANCE, LOCALITY))
        return f"'{self.name}'" + (f" ({said})" if said else "")


@dataclass(frozen=True)
class PolicyOf:
    """One storage object of a VM and its policy: the VM home ("home") or a disk ("disk 2000")."""

    vm: str
    part: str
    policy: StoragePolicy | None  # None: no policy associated

    @property
    def where(self) -> str:
        return self.vm if self.part == "home" else f"{self.vm} {self.part}"


def vm_policies(session: VCenterSession, vms: Sequence[str]) -> list[PolicyOf]:
    """The policy of each named VM's home and disks (ControlPlaneError naming a VM vCenter does not have)."""
    s = sdk()
    found = session.inventory("VirtualMachine", ["config.hardware.device"])
    missing = [vm for vm in vms if vm not in found]
    if missing:
        raise ControlPlaneError(f"{session.where}: no VirtualMachine named {', '.join(map(repr, missing))}")
    parts: list[tuple[str, str, Any]] = []
    for vm in vms:
        obj, props = found[vm]
        parts.append((vm, "home", s.pbm.ServerObjectRef(objectType="virtualMachine", key=obj._moId)))
        for device in props.get("config.hardware.device") or []:
            if isinstance(device, s.vim.vm.device.VirtualDisk):
                parts.append((vm, f"disk {device.key}", s.pbm.ServerObjectRef(objectType="virtualDiskId",
                                                                              key=f"{obj._moId}:{device.key}")))
    manager = session.pbm()
    results = session.call("reading the VMs' storage policies (PbmQueryAssociatedProfiles)",
                           lambda: manager.QueryAssociatedProfiles(entities=[ref for _, _, ref in parts]))
    ids = {(r.object.objectType, r.object.key): [p.uniqueId for p in (r.profileId or [])] for r in results or []}
    wanted = sorted({i for found_ids in ids.values() for i in found_ids})
    profiles = _profiles(session, manager, wanted) if wanted else {}
    return [PolicyOf(vm, part, next((profiles[i] for i in ids.get((ref.objectType, ref.key), []) if i in profiles),
                                    None)) for vm, part, ref in parts]


def _profiles(session: VCenterSession, manager: Any, ids: list[str]) -> dict[str, StoragePolicy]:
    s = sdk()
    content = session.call("reading storage policies (PbmRetrieveContent)",
                           lambda: manager.RetrieveContent(profileIds=[s.pbm.profile.ProfileId(uniqueId=i)
                                                                          for i in ids]))
    return {p.profileId.uniqueId: StoragePolicy(str(p.name), rules_of(p)) for p in content or []}


def rules_of(profile: Any) -> dict[str, str]:
    """A capability profile's rules, "NAMESPACE.id" -> value as text (its first property instance's)."""
    rules: dict[str, str] = {}
    for sub in getattr(getattr(profile, "constraints", None), "subProfiles", None) or []:
        for capability in sub.capability or []:
            for constraint in capability.constraint or []:
                for prop in constraint.propertyInstance or []:
                    rules.setdefault(f"{capability.id.namespace}.{capability.id.id}", str(prop.value))
    return rules
