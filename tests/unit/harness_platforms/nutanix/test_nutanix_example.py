"""The Nutanix AHV example: it loads, its section validates, the suites' dry-run plans every case it can (node power
loss through the BMCs, as Prism has no host power call) and names what Nutanix does not offer, and `plan` shows the
platform's own faults with the exact v4 requests. Nothing is contacted: the example's addresses are documentation
ranges and never reached."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from faults import sections
from harness.clusters import cluster_for, cluster_parts, observers
from harness_kernel.topology.loader import load_topology
from harness_platforms.nutanix.view import NutanixView, Resilience
from harness_platforms.sqlserver.view import AvailabilityGroupCluster

ROOT = Path(__file__).parents[4]
EXAMPLE = ROOT / "examples" / "nutanix-ahv-esrp.yaml"
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
NOT_OFFERED = ("not offered on nutanix: disk-failure (no supported interface fails a disk; a planned removal",
               "not offered on nutanix: cvm-crash (no supported interface",
               "not offered on nutanix: metro-failover (later: Nutanix DR recovery plans")


def test_the_example_loads_its_section_validates_and_builds_the_view_and_the_observer() -> None:
    topology = load_topology(EXAMPLE)
    assert topology.kind == "nutanix" and all(h.bmc for h in topology.hosts()), "node power loss needs every BMC"
    paths = [path for path, _ in sections.every_secret_ref(topology)]
    assert "management.platforms.nutanix.credential.password" in paths
    assert isinstance(cluster_parts(topology)["nutanix"], NutanixView)
    [observer] = observers(topology).values()
    assert isinstance(observer, Resilience)
    assert [o for _, o in observer.inventory.section.origins] == [
        "https://203.0.113.10:9440", "https://203.0.113.21:9440", "https://203.0.113.22:9440"]


def test_the_suites_dry_run_plans_node_power_loss_through_the_bmcs_and_names_what_is_not_offered(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs", "harness_suites",
                             "--topology", str(EXAMPLE), "--dry-run", "--state-dir", str(tmp_path / "s")],
                            capture_output=True, text=True, cwd=tmp_path, timeout=120, env=ENV)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "host-power-off on host:ahv-a1 via redfish" in out
    assert "ahv-a1: ComputerSystem.Reset ResetType=ForceOff via redfish bmc-ahv-a1 (198.51.100.11:443)" in out
    assert "site-power-off on site:site-a via redfish" in out
    assert "NOT ALLOWED" not in out
    assert "observed read-only during each experiment: nutanix: harness_platforms.nutanix.view:Resilience" in out
    for line in NOT_OFFERED:
        assert line in out


def test_plan_shows_the_platform_s_faults_with_their_exact_v4_requests(tmp_path: Path) -> None:
    faults = ["vm-power-off@node:sql-ag-01/sql01", "vm-guest-shutdown@node:sql-ag-01/sql02",
              "vm-migrate@node:sql-ag-01/sql01", "host-maintenance@host:ahv-a2"]
    result = subprocess.run([sys.executable, "-m", "harness", "plan", "--topology", str(EXAMPLE), "--state-dir",
                             str(tmp_path / "s"), *(a for f in faults for a in ("--fault", f))],
                            capture_output=True, text=True, cwd=ROOT, timeout=120, env=ENV)
    assert result.returncode == 0, result.stdout + result.stderr
    out, pc = result.stdout, "https://203.0.113.10:9440"
    for kind, target in (f.split("@") for f in faults):
        assert f"{kind} on {target} via nutanix prism 203.0.113.10:9440" in out
    assert f"POST {pc}/api/vmm/v4.3/ahv/config/vms/{{extId of VM sql01-vm}}/$actions/power-off [" in out
    assert (f"POST {pc}/api/vmm/v4.3/ahv/config/vms/{{extId of VM sql02-vm}}/$actions/guest-shutdown [" in out and
            'body {"guestPowerStateTransitionConfig": {"shouldEnableScriptExec": false, "shouldFailOnScriptFailure": '
            'false}}' in out)
    assert 'migrate-to-host [' in out and 'body {"host": {"extId": "{extId of host ahv-a1}"}}' in out
    assert (f"POST {pc}/api/clustermgmt/v4.3/config/clusters/{{extId of cluster ahv-esrp-cluster}}/$actions/"
            "compute-non-migratable-vms") in out
    assert "/$actions/enter-host-maintenance [" in out and "/$actions/exit-host-maintenance [" in out
    assert out.count("If-Match: <ETag of GET ") == 6 and out.count("NTNX-Request-Id: ") >= 8, \
        "every VM change carries an If-Match; a host's maintenance none, as Nutanix's own client sends it"
    assert not [line for line in out.splitlines() if "host-maintenance [" in line and "If-Match" in line]
    assert "Authorization: Basic *** (management.platforms.nutanix.credential)" in out
    assert "NOT ALLOWED" not in out


def test_on_a_platform_that_hosts_it_the_cluster_is_the_databases_own_view_and_the_platform_judges_beside() -> None:
    """No cluster view of its own for Nutanix in the harness: the availability group's view is the cluster, and the
    Nutanix part (the resiliency state, discovery against the topology) joins every preflight and recovery."""
    topology = load_topology(EXAMPLE)
    assert isinstance(cluster_for(topology), AvailabilityGroupCluster)
    assert list(cluster_parts(topology)) == ["nutanix"]
