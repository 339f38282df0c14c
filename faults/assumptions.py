"""What a backend assumes about a product where no document settles it, and how each is checked.

A vendor call whose meaning no document states is not guessed silently: it is an `Assumption`
(an id, what is assumed, the source or "none found", the fault kinds that depend on it) with a
read-only probe that answers PASS, FAIL or UNKNOWN (could not tell: unreachable is not failed).
A fault that depends on assumptions says which (`Assumes`), and the runner refuses it, naming
the assumption, when a probe does not answer PASS, before anything is journaled or injected.
This is the one protocol: later backends add rows to `ASSUMPTIONS`, a plug-in platform to its
descriptor's `assumptions` (`Catalogue.assumptions` reads both), never a second one.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from harness_kernel.errors import ConfigError


class ProbeResult(enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Assumption:
    id: str
    statement: str
    source: str  # a document that comes close, or "none found"
    blocks: tuple[str, ...]  # fault kinds that depend on it


@dataclass(frozen=True)
class Probed:
    """One probe's answer, with what it saw (shown when the fault is refused)."""

    result: ProbeResult
    seen: str


Probe = Callable[[], Probed]


@runtime_checkable
class Assumes(Protocol):
    """A fault whose backend relies on assumptions: each with the probe that checks it on this cluster."""

    def assumptions(self) -> Sequence[tuple[Assumption, Probe]]: ...


class AssumptionNotHeldError(ConfigError):
    """A probe says the cluster is not as the backend assumes (or could not tell): the fault is refused."""


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

ASSUMPTIONS: tuple[Assumption, ...] = (DISK_FAULT_SCRIPT, RESYNC_TYPE_UNSET, PHYSICAL_DISK_DEVNAME, PERMANENT_CLEAR,
                                       HEALTH_CACHE, IOPS_LIMIT_RULE, POLICY_CATEGORY)
"""Every assumption a backend still in `faults/` makes, in one table (README, "Assumptions"); a platform in its own
folder keeps its own in its descriptor (`Catalogue.assumptions` gives all of them)."""


def require(fault: Assumes, kind: str, target: str) -> list[tuple[Assumption, Probed]]:
    """Run every probe of `fault`; raise naming the first assumption whose probe did not PASS."""
    answers = []
    for assumption, probe in fault.assumptions():
        answer = probe()
        answers.append((assumption, answer))
        if answer.result is not ProbeResult.PASS:
            raise AssumptionNotHeldError(
                f"{kind} on {target}: refused: assumption {assumption.id} ({assumption.statement}) is "
                f"{answer.result.value} on this cluster: {answer.seen}")
    return answers
