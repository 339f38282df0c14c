"""The VPLEX metro example: it loads, its section validates, and a dry-run plans the faults VPLEX is watched through
(a link partition and the witness isolated, both at the router) and names the VPLEX observer, contacting nothing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from faults import sections
from harness.clusters import cluster_parts, observers
from harness_kernel.topology.loader import load_topology
from harness_platforms.vplex.view import VplexMetro

ROOT = Path(__file__).parents[3]
EXAMPLE = ROOT / "examples" / "stretched-metro-vplex.yaml"
SUITE = textwrap.dedent("""\
    import pytest
    from faults.base import FaultSpec

    @pytest.mark.parametrize("fault", [FaultSpec("link-partition", "link:site-a~site-b"),
                                       FaultSpec("witness-isolation", "witness:vplex-witness-01")])
    def test_cut(fault, inject):
        with inject(fault) as active:
            active.sleep(5)
    """)


def test_the_example_loads_and_its_vplex_section_maps_each_cluster_to_a_site() -> None:
    topology = load_topology(EXAMPLE)
    [(path, _)] = [r for r in sections.secret_refs(topology)]
    assert path == "management.platforms.vplex.credential.password"
    [metro] = observers(topology).values()
    assert isinstance(metro, VplexMetro) and isinstance(cluster_parts(topology)["vplex"], VplexMetro)
    assert dict(metro.sites) == {"cluster-1": "site-a", "cluster-2": "site-b"}
    assert metro.groups == ("cg-sql-ag-01",) and [o for _, o in metro.client.section.origins] == [
        "https://192.0.2.150", "https://192.0.2.151"]


def test_a_dry_run_plans_the_partition_and_the_witness_isolation_at_the_router_and_names_the_observer(
        tmp_path: Path) -> None:
    suite = tmp_path / "test_suite.py"
    suite.write_text(SUITE)
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "harness.plugin",
                             str(suite), "--topology", str(EXAMPLE), "--dry-run", "--state-dir", str(tmp_path / "s"),
                             "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml")],
                            capture_output=True, text=True, cwd=ROOT, timeout=120,
                            env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "link-partition on link:site-a~site-b via router rtr-01" in out
    assert "ip saddr 192.0.2.0/26 ip daddr 192.0.2.64/26 drop" in out
    assert "witness-isolation on witness:vplex-witness-01 via router rtr-01" in out
    assert "ip saddr 198.51.100.10/32 ip daddr 192.0.2.64/26 drop" in out
    assert "NOT ALLOWED" not in out and "dry-run: 2 fault(s) planned in 2 test(s)" in out
    assert "observed read-only during each experiment: vplex: harness_platforms.vplex.view:VplexMetro" in out
    assert "management.platforms.vplex.credential.password: the environment variable" in out
