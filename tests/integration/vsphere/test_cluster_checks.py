"""What the cluster must be for the suites' findings to mean what they say: read from vCenter and vSAN before a run."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from faults.base import Uncertain
from faults.transports.vcenter import VCenterSession, session_for
from harness_kernel.errors import HarnessError
from harness_kernel.topology.models import Topology
from harness_platforms.vsphere import checks as vsphere_checks
from harness_platforms.vsphere import policies
from harness_platforms.vsphere.vsan.probes import VsanCluster
from tests.support.vsim import CLUSTER, DATACENTER, MODEL, PASSWORD_ENV, Simulator, running


def test_on_the_labs_cluster_data_is_mirrored_ha_restarts_and_the_clock_agrees(sim: Simulator) -> None:
    topology = sim.topology()
    session = session_for(topology)
    mirrored = vsphere_checks.site_mirroring(topology, session, VsanCluster(topology, session))
    assert mirrored == ("pg-node-a: 2 objects, each with data in site-a and site-b; "
                        "pg-node-b: 2 objects, each with data in site-a and site-b")
    assert vsphere_checks.ha_restarts(topology, session).startswith("HA on, host monitoring enabled, admission control on")
    assert vsphere_checks.clock(session).startswith("vCenter's clock is 0.")


@pytest.fixture
def site_local_b(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Topology, VCenterSession]]:
    """A simulator whose pg-node-b follows a policy keeping its data in its own site, and a session to it."""
    password = secrets.token_urlsafe(16)
    monkeypatch.setenv(PASSWORD_ENV, password)
    with running(tmp_path, MODEL, password=password, username="harness", site_local_vms=("pg-node-b",)) as local:
        topology = local.topology()
        session = VCenterSession(topology.management.vcenter)  # type: ignore[arg-type]
        try:
            yield topology, session
        finally:
            session.close()


def test_a_vm_whose_policy_keeps_its_data_in_one_site_fails_naming_the_object(
        site_local_b: tuple[Topology, VCenterSession]) -> None:
    topology, session = site_local_b
    with pytest.raises(HarnessError) as caught:
        vsphere_checks.site_mirroring(topology, session, VsanCluster(topology, session))
    said = str(caught.value)
    assert said.count("VM pg-node-b's object") == 2 and "has all its data in site-b" in said
    assert "pg-node-a" not in said and said.endswith("a site failure loses it")


def test_ha_turned_off_is_a_warning_that_says_what_the_suites_would_measure(sim: Simulator) -> None:
    topology = sim.topology()
    sim.govc("cluster.change", "-ha-enabled=false", f"/{DATACENTER}/host/{CLUSTER}")
    try:
        with pytest.raises(Uncertain, match=r"HA off.*its VMs stay down"):
            vsphere_checks.ha_restarts(topology, session_for(topology))
    finally:
        sim.govc("cluster.change", "-ha-enabled=true", f"/{DATACENTER}/host/{CLUSTER}")
    assert vsphere_checks.ha_restarts(topology, session_for(topology)).startswith("HA on")


def test_a_clock_far_from_this_machines_is_a_warning(sim: Simulator, monkeypatch: pytest.MonkeyPatch) -> None:
    """vCenter's answer shifted by 9 s, as a vCenter without NTP would give it."""
    session = session_for(sim.topology())
    answer = session.server_now
    monkeypatch.setattr(session, "server_now", lambda: answer() + 9.0)
    with pytest.raises(Uncertain, match=r"vCenter's clock is 9\.\d\d s ahead of this machine's"):
        vsphere_checks.clock(session)
    assert abs(answer() - time.time()) < 1


def test_each_vms_storage_policy_is_read_through_pbm_and_says_whether_its_data_is_in_both_sites(
        site_local_b: tuple[Topology, VCenterSession]) -> None:
    """The Storage Policy API's association (PbmQueryAssociatedProfiles, PbmRetrieveContent) for the VM homes and
    disks: pg-node-b's policy keeps its data in one site, and says so with the rules it was read from."""
    _, session = site_local_b
    seen = policies.vm_policies(session, ["pg-node-a", "pg-node-b"])
    with pytest.raises(HarnessError, match="no VirtualMachine named 'pg-node-z'"):
        policies.vm_policies(session, ["pg-node-z"])
    by_vm = {p.where: p.policy for p in seen}
    assert {p.vm for p in seen} == {"pg-node-a", "pg-node-b"} and all(p is not None for p in by_vm.values())
    assert any(p.part.startswith("disk ") for p in seen), "each disk is read, not only the VM home"
    for where, policy in by_vm.items():
        assert policy is not None
        if where.startswith("pg-node-a"):
            assert policy.site_mirrored is True and policy.describe() == (
                "'Stretched cluster: dual site mirroring' (hostFailuresToTolerate 1, locality None)")
        else:
            assert policy.site_mirrored is False and policy.rules["VSAN.locality"] == "Preferred Fault Domain"
