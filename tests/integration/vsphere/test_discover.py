"""`harness discover` drafts a topology from what vCenter says, after trust is settled, changing nothing.

Run as a user would (`python -m harness discover ...`, a process of its own) against the simulator.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness import doctor
from harness_kernel.topology.loader import parse_topology
from harness_lab.ca import LabCa
from harness_lab.controller import CODE_ROOT
from harness_platforms.vsphere.vsan.probes import VsanCluster
from tests.support.vsim import (
    CLUSTER,
    DATACENTER,
    MODEL,
    PASSWORD_ENV,
    SITES,
    VMS,
    WITNESS,
    WITNESS_ADDRESS,
    Simulator,
    disk_group,
    running,
)


def discover(sim: Simulator, *args: str, password: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(CODE_ROOT), PASSWORD_ENV: password or sim.password}
    return subprocess.run([sys.executable, "-m", "harness", "discover", "--vcenter", "127.0.0.1", "--port", str(sim.port),
                           "--user", sim.username, "--password-env", PASSWORD_ENV, *args],
                          capture_output=True, text=True, timeout=120, env=env, check=False)


def thumbprint(sim: Simulator) -> str:
    """The simulator's certificate's SHA-256, from its file: what a person reads off their vCenter."""
    der = ssl.PEM_cert_to_DER_cert(LabCa(sim.ca_file.parent).cert_file.read_text())
    return ":".join(f"{b:02X}" for b in hashlib.sha256(der).digest())


def test_without_a_ca_or_a_thumbprint_it_refuses_and_prints_the_presented_thumbprint(sim: Simulator) -> None:
    done = discover(sim)
    assert done.returncode == 4 and done.stdout == ""
    assert f"presents a certificate with SHA-256 thumbprint {thumbprint(sim)}" in done.stderr
    assert f"--thumbprint {thumbprint(sim)}" in done.stderr and sim.password not in done.stderr


def test_a_thumbprint_that_is_not_the_servers_is_refused_before_any_password_is_sent(sim: Simulator) -> None:
    done = discover(sim, "--thumbprint", "AB" * 32)
    assert done.returncode == 4 and "not the one given (--thumbprint): refused" in done.stderr


def test_the_draft_holds_the_cluster_as_vcenter_says_and_loads(sim: Simulator, tmp_path: Path) -> None:
    done = discover(sim, "--thumbprint", thumbprint(sim))
    assert done.returncode == 0, done.stderr
    draft = done.stdout
    document = yaml.safe_load(draft)
    topology = parse_topology(document, "draft")
    assert {s.name: sorted(h.name for h in s.hosts) for s in topology.sites} == {s: sorted(h) for s, h in SITES.items()}
    for host in topology.hosts():
        assert [g.model_dump(exclude_none=True) for g in host.disk_groups] == [disk_group(host.name, ())]
        assert host.address == "127.0.0.1"  # its management VMkernel address in the simulator
    assert topology.witness is not None and (topology.witness.name, topology.witness.address) == (WITNESS, WITNESS_ADDRESS)
    vcenter = topology.management.vcenter
    assert vcenter is not None and (vcenter.cluster, vcenter.datacenter) == (CLUSTER, DATACENTER)
    assert vcenter.credential.password.env == PASSWORD_ENV and sim.password not in draft
    assert topology.allow_list == [] and "#   - host:esx-a1" in draft and "#   - diskgroup:esx-b1/0" in draft
    assert "preferred site site-a; witness vsan-witness-01" in draft
    assert "#   pg-node-a on esx-a1 (site-a), poweredOn" in draft
    assert "address: 127.0.0.1  # guessed: the host's management VMkernel address" in draft
    assert "# TLS: discover trusted the pinned certificate" in draft
    with_ca = discover(sim, "--ca", str(sim.ca_file))
    assert with_ca.returncode == 0 and f"ca_file: {sim.ca_file}" in with_ca.stdout


def test_the_draft_follows_the_inventory_as_it_changes(sim: Simulator) -> None:
    """A VM moved through the API (govc, a client we did not write) shows where it runs now."""
    sim.govc("vm.migrate", "-host", f"/{DATACENTER}/host/{CLUSTER}/esx-b2", "pg-node-b")
    try:
        done = discover(sim, "--ca", str(sim.ca_file))
        assert done.returncode == 0 and "#   pg-node-b on esx-b2 (site-b), poweredOn" in done.stdout
    finally:
        sim.govc("vm.migrate", "-host", f"/{DATACENTER}/host/{CLUSTER}/esx-b1", "pg-node-b")


def test_a_wrong_password_is_refused_naming_the_variable_not_the_password(sim: Simulator) -> None:
    done = discover(sim, "--ca", str(sim.ca_file), password="not-the-password-9")
    assert done.returncode == 4 and "login refused" in done.stderr and "not-the-password-9" not in done.stderr


@pytest.mark.reproducer("AA-compute-only-host")
def test_a_host_added_without_a_vsan_service_is_named_in_the_draft_and_in_doctor_and_nothing_else_stops(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A compute-only host is real: added to the cluster with govc, the simulator gives it no vSAN service, and
    `QueryPhysicalVsanDisks` on it fails. One host that cannot be read is a comment in the draft and a row in doctor,
    never the end; named to sort first, it is not the host vSAN's object queries are asked through either."""
    password = secrets.token_urlsafe(16)
    monkeypatch.setenv(PASSWORD_ENV, password)
    with running(tmp_path / "vsim", MODEL, password=password, username="harness") as own:
        own.govc("cluster.add", "-cluster", f"/{DATACENTER}/host/{CLUSTER}", "-hostname", "esx-0c1",
                 "-username", "root", "-password", secrets.token_urlsafe(8), "-noverify")
        done = discover(own, "--ca", str(own.ca_file))
        assert done.returncode == 0, done.stderr[-2000:]
        draft = parse_topology(yaml.safe_load(done.stdout), "draft")
        findings = doctor.examine(draft, open_keyring=False)
        placed = VsanCluster(draft).vm_placement(next(iter(VMS)))
    assert "# host esx-0c1: its vSAN disks could not be read (QueryPhysicalVsanDisks on esx-0c1 failed: " \
           "ManagedObjectNotFound" in done.stdout
    assert "esx-0c1" in {h.name for h in draft.hosts()}
    assert {h.name: h.disk_groups for h in draft.hosts()}["esx-a1"], "the other hosts' disk groups are read"
    rows = {row.check: row for row in findings.rows if row.where == "vsan hosts"}
    assert rows["host esx-0c1: its vSAN disks read"].status == "WARN"
    assert "QueryPhysicalVsanDisks on esx-0c1 failed: ManagedObjectNotFound" in rows[
        "host esx-0c1: its vSAN disks read"].seen
    assert rows["host esx-a1: its vSAN disks read"].status == "PASS"
    assert findings.exit_code == 0, "a host that cannot be read is a warning, not a cluster that is not ready"
    assert placed, "the VM's components are found through a host that serves vSAN"
