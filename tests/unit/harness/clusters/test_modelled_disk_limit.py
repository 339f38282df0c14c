"""Where the platform cannot limit a disk's IOPS, the bound lab says how it models the limit; elsewhere nothing."""

from __future__ import annotations

import json
from pathlib import Path

from harness.clusters import ModelsDiskLimits
from harness.clusters.lab import LabCluster
from harness_kernel.topology.models import Topology


def lab(tmp_path: Path, kind: str) -> Topology:
    doc = {"name": "t", "kind": kind, "lab": {"prefix": "tq", "state_dir": str(tmp_path)},
           "sites": [{"name": "site-a", "hosts": [{"name": "esx-a1", "address": "198.18.1.1"}]}],
           "databases": [{"name": "bench", "kind": "postgres", "endpoint": "198.18.1.10", "port": 5432,
                          "database": "bench", "nodes": [{"name": "node-a", "host": "esx-a1"}]}]}
    if kind == "vsphere":
        doc["management"] = {"vcenter": {"address": "127.0.0.1", "cluster": "c",
                                         "credential": {"username": "u", "password": {"env": "X"}}}}
    return Topology.model_validate(doc)  # built by code, as the lab builds its own (a document may not)


def test_the_bound_lab_caps_an_operation_at_the_limit_times_the_models_io_size(tmp_path: Path) -> None:
    (tmp_path / "vsphere").mkdir()
    (tmp_path / "vsphere" / "vsim.json").write_text(json.dumps({"model": {"iops_limit_io_kb": 32}}))
    cluster = LabCluster.from_topology(lab(tmp_path, "vsphere"))
    assert isinstance(cluster, ModelsDiskLimits)
    modelled = cluster.modelled_disk_limit(128)
    assert modelled is not None and modelled.max_rate == "4096k"
    assert "VSAN.iopsLimit x 32 KB/s" in modelled.model and "cannot limit" in modelled.model


def test_the_plain_lab_and_a_model_without_the_parameter_model_no_limit(tmp_path: Path) -> None:
    assert LabCluster.from_topology(lab(tmp_path, "lab")).modelled_disk_limit(128) is None
    (tmp_path / "vsphere").mkdir()
    (tmp_path / "vsphere" / "vsim.json").write_text(json.dumps({"model": {"stun_s": 1}}))
    assert LabCluster.from_topology(lab(tmp_path, "vsphere")).modelled_disk_limit(128) is None
