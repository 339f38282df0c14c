"""The vSAN preflight: objects and resync judged live, the configured groups from the cached summary with its age.

(`VsanQuiet` reads through `VsanCluster`; here a cluster that answers as told stands in for it, so each
rule can be shown alone. Against the simulator: tests/integration/vsphere/test_vsan_disk_faults.py.)"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from harness_kernel.errors import ConfigError, ControlPlaneError
from harness_kernel.topology.loader import parse_topology
from harness_kernel.topology.models import Topology
from harness_platforms.vsphere.vsan.probes import CachedHealth, GroupSeen, ResyncSummary, VsanCluster, VsanQuiet
from harness_platforms.vsphere.vsan.section import settings as vsan_settings
from tests.unit.harness_platforms.vsphere.test_vsphere_backend import document

NETWORK, CLUSTER, HCL = (f"com.vmware.vsan.health.test.{g}" for g in ("network", "cluster", "hcl"))


@dataclass
class Answering:
    """A cluster that answers the preflight's three questions as a test says."""

    topology: Topology
    objects: dict[str, int] = field(default_factory=lambda: {"healthy": 12})
    cached: CachedHealth = field(default_factory=lambda: CachedHealth(600.0, {
        NETWORK: GroupSeen("green"), CLUSTER: GroupSeen("green"), HCL: GroupSeen("red", ("vSAN HCL DB up-to-date",))}))
    session: Any = field(default_factory=lambda: type("S", (), {"where": "vcenter vc.example.net:443"})())

    resyncing: ResyncSummary = field(default_factory=lambda: ResyncSummary(0, 0, None))

    def resync(self) -> ResyncSummary:
        return self.resyncing

    def object_health(self) -> dict[str, int]:
        return self.objects

    def cached_health(self) -> CachedHealth:
        return self.cached


def quiet(cluster: Answering) -> VsanQuiet:
    return VsanQuiet(cast(VsanCluster, cluster))


def test_a_red_hardware_compatibility_group_does_not_refuse_and_the_judged_groups_are_named() -> None:
    judged = quiet(Answering(parse_topology(document(), "unit"))).preflight()
    assert judged.groups == (NETWORK, CLUSTER) and judged.warnings == []
    assert judged.describe() == "objects 12 healthy (live); network, cluster from the cached summary, 10 min old"


def test_a_running_resync_refuses_with_its_size_and_eta() -> None:
    cluster = Answering(parse_topology(document(), "unit"), resyncing=ResyncSummary(3, 6442450944, 120))
    with pytest.raises(ControlPlaneError, match=r"vSAN is resynchronising 3 objects \(6442450944 bytes, ETA 120 s\); "
                                                "start when it is done"):
        quiet(cluster).preflight()


def test_a_red_judged_group_refuses_naming_its_red_tests_and_the_summarys_age() -> None:
    cluster = Answering(parse_topology(document(), "unit"))
    cluster.cached.groups[NETWORK] = GroupSeen("red", ("vSAN cluster partition",))
    with pytest.raises(ControlPlaneError, match=r"red in the cached summary \(600 s old\): "
                                                r"com\.vmware\.vsan\.health\.test\.network: vSAN cluster partition"):
        quiet(cluster).preflight()


def test_objects_that_lost_availability_refuse_and_policy_only_states_do_not() -> None:
    cluster = Answering(parse_topology(document(), "unit"))
    cluster.objects = {"healthy": 10, "nonavailabilityrelatedincompliance": 2}
    assert quiet(cluster).preflight().objects == cluster.objects
    cluster.objects = {"healthy": 10, "reducedavailabilitywithnorebuild": 2}
    with pytest.raises(ControlPlaneError, match=r"objects are not healthy \(2 reducedavailabilitywithnorebuild\)"):
        quiet(cluster).preflight()


def test_an_old_summary_or_a_missing_group_is_a_warning_not_a_refusal() -> None:
    cluster = Answering(parse_topology(document(), "unit"))
    cluster.cached = CachedHealth(30 * 3600.0, {NETWORK: GroupSeen("green")})
    judged = quiet(cluster).preflight()
    assert judged.groups == (NETWORK,)
    assert judged.warnings == [
        f"the cached health summary has no group {CLUSTER} (it has {NETWORK}): not judged",
        "the cached health summary is 30.0 h old (warned past 6 h): run a health check in vCenter"]


def test_hardware_compatibility_and_online_groups_cannot_be_made_to_refuse_a_run() -> None:
    raw = document()
    raw["management"]["vsan"] = {"preflight_health_groups": [NETWORK, HCL]}
    with pytest.raises(ConfigError, match=r"unit: management\.vsan\.preflight_health_groups") as refused:
        vsan_settings(parse_topology(raw, "unit"))  # the vsan platform's section, as every reader of it
    assert "hardware-compatibility and online health checks never refuse a run" in str(refused.value)
