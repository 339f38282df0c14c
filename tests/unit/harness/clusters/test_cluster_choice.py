"""Which cluster view a topology gets, built from the file alone: nothing contacted, no credential needed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.clusters import Forecasting, cluster_for
from harness_kernel.errors import ConfigError
from harness_kernel.topology.loader import load_topology, parse_topology
from harness_platforms.sqlserver.view import AvailabilityGroupCluster, FailoverInstanceCluster
from harness_platforms.vsphere.view import VsphereCluster

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"


@pytest.mark.parametrize(("example", "part"), [("stretched-2plus2.yaml", AvailabilityGroupCluster),
                                               ("stretched-fci.yaml", FailoverInstanceCluster)])
def test_a_sql_server_topology_on_vsphere_gets_its_database_part_and_forecasts(
        example: str, part: type, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HARNESS_SQL_PASSWORD", "HARNESS_WINRM_PASSWORD", "HARNESS_VC_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    cluster = cluster_for(load_topology(EXAMPLES / example))
    assert isinstance(cluster, VsphereCluster) and isinstance(cluster.database, part)
    assert isinstance(cluster, Forecasting)


def test_an_availability_group_without_its_name_is_refused_naming_the_field() -> None:
    doc = yaml.safe_load((EXAMPLES / "stretched-2plus2.yaml").read_text())
    del doc["databases"][0]["ag_name"]
    with pytest.raises(ConfigError, match=r"databases\[0\]\.ag_name: required for kind sqlserver-ag"):
        cluster_for(parse_topology(doc, "t.yaml"))
