"""Helpers shared by the lab tests."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from faults import registry
from faults.base import Fault, FaultSpec
from harness_kernel.topology.models import LabSettings, Topology
from harness_lab.controller import Lab
from harness_lab.layout import LabLayout


def make_state_dir(prefix: str) -> Path:
    """A fresh state directory user postgres can enter (/tmp, mode 755; pytest's tmp_path is 700)."""
    path = Path(tempfile.mkdtemp(prefix=f"{prefix}-", dir="/tmp"))
    path.chmod(0o755)
    return path


class FaultBuilder:
    def build(self, spec: FaultSpec, topology: Topology) -> Fault:
        return registry.build(spec, topology)


@contextmanager
def own_lab(prefix: str) -> Iterator[Lab]:
    """A module's own lab, up (inside the try: a lab that came up halfway is taken down too), then down and gone."""
    state = make_state_dir(prefix)
    built = Lab(LabLayout.from_settings(LabSettings(prefix=prefix, state_dir=str(state))))
    try:
        took = built.up()
        print(f"\nlab {prefix} up in {took:.1f} s")
        yield built
    finally:
        built.down()
        shutil.rmtree(state, ignore_errors=True)
