"""Each extra alone, in a fresh virtualenv outside the repository, plans its platform's faults with nothing missing.

`pip install 'resilience-harness[vsphere]'` is what a vSphere team runs; `[all]` would hide an extra
that forgets what its platform imports. Each case installs the wheel with one extra, then plans
(never contacts) one fault of each of that extra's platforms against an example topology.
Nightly: five virtualenvs from the package registry take minutes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.wheels import ROOT, build_wheel, fresh_venv, run, tracked_copy

pytestmark = pytest.mark.nightly

# extra -> (example topology, faults to plan, what each plan line says acts)
CASES = {
    "router": ("stretched-2plus2.yaml", ["link-partition@link:site-a~site-b"], ["via router rtr-01"]),
    "vsphere": ("stretched-2plus2.yaml", ["disk-failure@disk:esx-a1/naa.5000c500a1a1a101", "host-maintenance@host:esx-a1"],
                ["via vsan management.vcenter", "via vsphere management.vcenter"]),
    "redfish": ("stretched-2plus2.yaml", ["host-power-off@host:esx-a1"], ["via redfish"]),
    "sqlserver": ("stretched-2plus2.yaml", ["role-move@database:sql-ag-01"], ["via sqlserver"]),
    "wsfc": ("stretched-fci.yaml", ["role-move@database:sql-fci-01"], ["via wsfc"]),
}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    here = tmp_path_factory.mktemp("wheel")
    return build_wheel(tracked_copy(ROOT, here / "resilience-harness"), here / "dist", here)


@pytest.mark.parametrize("extra", sorted(CASES))
def test_one_extra_alone_plans_its_platforms_faults(extra: str, wheel: Path, tmp_path: Path) -> None:
    venv = fresh_venv(tmp_path / "venv", f"{wheel}[{extra}]")
    example, faults, acting = CASES[extra]
    topology = tmp_path / example
    topology.write_text((ROOT / "examples" / example).read_text())
    planned = run([str(venv / "bin" / "python"), "-m", "harness", "plan", "--topology", str(topology),
                   *(f"--fault={f}" for f in faults)], cwd=tmp_path, timeout=120)
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert "ModuleNotFoundError" not in planned.stderr and "pip install" not in planned.stderr
    for fault, says in zip(faults, acting, strict=True):
        kind, _, target = fault.partition("@")
        assert f"{kind} on {target} {says}" in planned.stdout, planned.stdout
