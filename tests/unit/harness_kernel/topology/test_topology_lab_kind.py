"""Rule 2: `kind: lab` is not a claim a file can make (safety.md #15).

The lab kind skips `--allow-destructive`; only `--topology lab[:PREFIX]`, built by the lab's
own code (`harness.topology_source`), may carry it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.topology_source import load_source
from harness_kernel.errors import ConfigError
from harness_kernel.topology.loader import load_topology, parse_topology
from harness_kernel.topology.models import LabSettings
from harness_lab.layout import LabLayout, default_state_dir
from tests.unit.harness_kernel.topology.topology_docs import example, write


def test_kind_lab_in_a_file_is_refused(tmp_path: Path) -> None:
    doc = example()
    doc.update(kind="lab", lab={"prefix": "evil"})
    with pytest.raises(ConfigError, match=r"bad\.yaml: kind: 'lab' .*--topology lab"):
        load_topology(write(tmp_path, doc))


def test_a_lab_section_in_a_file_is_refused() -> None:
    doc = example()
    doc["lab"] = {"prefix": "evil", "state_dir": "/etc"}
    with pytest.raises(ConfigError, match=r"^t\.yaml: lab: "):
        parse_topology(doc, "t.yaml")
    doc["lab"] = {"prefix": "evil", "subnet_index": 3}
    with pytest.raises(ConfigError, match=r"^t\.yaml: lab: .*prefix alone"):
        parse_topology(doc, "t.yaml")


def test_a_vsphere_file_binds_to_a_lab_by_its_prefix_alone() -> None:
    doc = example()
    doc["lab"] = {"prefix": "hbound"}
    topology = parse_topology(doc, "t.yaml")
    assert (topology.kind, topology.lab and topology.lab.prefix) == ("vsphere", "hbound")
    assert LabLayout.from_settings(topology.lab).state_dir == default_state_dir("hbound")  # the lab's own rule


def test_the_lab_is_still_built_by_code_and_keeps_its_kind() -> None:
    topology = load_source("lab:hx2")
    assert (topology.kind, topology.name, topology.lab and topology.lab.prefix) == ("lab", "lab-hx2", "hx2")
    built = LabLayout.from_settings(LabSettings(prefix="hx3")).topology()
    assert built.kind == "lab" and "node:bench/node-a" in built.allow_list
