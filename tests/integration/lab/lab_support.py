"""Helpers shared by the lab tests."""

from __future__ import annotations

import tempfile
from pathlib import Path

from faults import registry
from faults.base import Fault, FaultSpec
from harness.topology.models import Topology


def make_state_dir(prefix: str) -> Path:
    """A fresh state directory user postgres can enter (/tmp, mode 755; pytest's tmp_path is 700)."""
    path = Path(tempfile.mkdtemp(prefix=f"{prefix}-", dir="/tmp"))
    path.chmod(0o755)
    return path


class FaultBuilder:
    def build(self, spec: FaultSpec, topology: Topology) -> Fault:
        return registry.build(spec, topology)
