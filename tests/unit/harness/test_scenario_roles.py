"""A suite's disk and disk-group faults strike the device that holds the standby's data, found, not guessed."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from harness.clusters import DataDevice
from harness.scenario import Role, ScenarioFault
from harness_kernel.errors import ConfigError, HarnessError
from harness_kernel.topology.loader import parse_topology
from harness_kernel.topology.models import Topology
from tests.unit.harness_kernel.topology.topology_docs import example

DISK = ScenarioFault("disk", Role.STANDBY_DISK, "capacity-device-failure")
DISK_GROUP = ScenarioFault("disk group", Role.STANDBY_DISK_GROUP, "disk-group-failure")


@dataclass
class PlacedCluster:
    """A cluster as its storage layer reports it: the standby runs on `standby_host`."""

    standby_host: str
    devices: list[DataDevice] = field(default_factory=list)
    name: str = "stretched"

    def standby_node(self) -> str:
        return "sql02"

    def host_of(self, node: str) -> str:
        return self.standby_host

    def devices_of(self, node: str) -> list[DataDevice]:
        return list(self.devices)


@dataclass
class UnplacedCluster:
    name: str = "no-storage-view"

    def standby_node(self) -> str:
        return "sql02"


def topology() -> Topology:
    return parse_topology(example(), "t.yaml")


def test_the_disk_is_a_capacity_device_of_the_host_the_standby_runs_on() -> None:
    cluster = PlacedCluster("esx-b1", [
        DataDevice("esx-a1", "naa.5000c500a1a1a101", 0, "capacity"),  # the mirror in the other site
        DataDevice("esx-b1", "naa.5000c500b1b1b100", 0, "cache"),
        DataDevice("esx-b1", "naa.5000c500b1b1b102", 0, "capacity"),
    ])
    assert DISK.resolve(cluster, topology()).target == "disk:esx-b1/naa.5000c500b1b1b102"
    assert DISK_GROUP.resolve(cluster, topology()).target == "diskgroup:esx-b1/0"


def test_after_ha_moved_the_standby_its_data_may_sit_on_another_host_only() -> None:
    cluster = PlacedCluster("esx-b2", [DataDevice("esx-b1", "naa.5000c500b1b1b101", 0, "capacity")])
    assert DISK_GROUP.resolve(cluster, topology()).target == "diskgroup:esx-b1/0"


def test_no_capacity_device_holding_the_data_is_an_error_not_a_guess() -> None:
    cluster = PlacedCluster("esx-b1", [DataDevice("esx-b1", "naa.5000c500b1b1b100", 0, "cache")])
    with pytest.raises(HarnessError, match="no capacity device holds a component of sql02's data"):
        DISK.resolve(cluster, topology())


def test_a_cluster_without_a_storage_view_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="cluster 'no-storage-view' cannot report; it is not guessed"):
        DISK.resolve(UnplacedCluster(), topology())
