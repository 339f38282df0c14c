"""What the vSphere and vSAN platforms assume where VMware's documents leave a call's meaning open.

Each has a read-only probe beside the code that relies on it (the disk fault script's flags, the
resync type, the health cache, the IOPS limit rule, the policy category); a fault that depends on
one names it (`Assumes`) and is refused, naming it, when its probe does not PASS.
"""

from __future__ import annotations

from faults.contract import Assumption

DISK_FAULT_SCRIPT = Assumption(
    "A-vsan-disk-fault-script",
    "the host's vSAN disk fault injection script is at the configured path and takes the flags the "
    "configured lines use (-p, -t -r SECONDS, -u, -c, -d DEVICE)",
    "VMware's vSAN PoC hardware testing guide names the script and flags; no copy quotable here",
    ("disk-failure", "disk-group-failure"))

RESYNC_TYPE_UNSET = Assumption(
    "A-vsan-resync-type-unset",
    "a VsanSyncingObjectFilter without resyncType counts every resync, whatever its VsanSyncReason",
    "none found (the API documents resyncType as 'one of the values defined in VsanSyncReason'); probed: no reason "
    "counts more objects than the unset filter (their sum may: a component's sync state lists several reasons)",
    ("disk-failure", "disk-group-failure"))

PHYSICAL_DISK_DEVNAME = Assumption(
    "A-vsan-physical-disk-devname",
    "QueryPhysicalVsanDisks answers each device's name in its devName property (with a :N partition suffix at most)",
    "none found for that method (CMMDS DISK entries carry devName; RVC never asks QueryPhysicalVsanDisks for it)",
    ("disk-failure", "disk-group-failure"))

PERMANENT_CLEAR = Assumption(
    "A-vsan-permanent-clear",
    "the disk fault script's clear (-c) restores a device after a permanent error (-p)",
    "none found; guarded without a probe (none can tell without failing a device): the permanent mode's check says "
    "cleared only when vSAN shows the device healthy, and a revert that cannot get there fails with the manual remedy",
    ())

HEALTH_CACHE = Assumption(
    "A-vsan-health-cache",
    "the cached health summary (fetchFromCache) carries the groups com.vmware.vsan.health.test.network and "
    "...cluster by those ids, and its timestamp is when the health service computed it",
    "the ids as a public health script reads them from vCenter; no document for the timestamp's meaning",
    ())

IOPS_LIMIT_RULE = Assumption(
    "A-pbm-iops-limit-rule",
    "a policy's IOPS limit is the capability VSAN/iopsLimit with its value in a property of the same id",
    "the capability's name is documented (PowerCLI 'VSAN.iopsLimit'); the property's id is not: PBM's capability "
    "metadata (PbmFetchCapabilityMetadata) says it",
    ("disk-iops-limit",))

POLICY_CATEGORY = Assumption(
    "A-pbm-default-category",
    "a policy created without a category (PBM version 1 has no such field) is a REQUIREMENT policy, as a policy "
    "created in the vSphere Client is",
    "none found; guarded without a probe: the harness finds the policy it created by its name in every category",
    ())

VSAN_ASSUMPTIONS = (DISK_FAULT_SCRIPT, RESYNC_TYPE_UNSET, PHYSICAL_DISK_DEVNAME, PERMANENT_CLEAR, HEALTH_CACHE)
VSPHERE_ASSUMPTIONS = (IOPS_LIMIT_RULE, POLICY_CATEGORY)
