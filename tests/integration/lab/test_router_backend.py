"""The production router backend (paramiko, nft, tc) driving the lab's router through its real sshd.

The lab's router namespace runs an sshd; the topology names it like any router, with the lab's
client key (by environment reference) and its host key pinned. What a user's router would get
over SSH is what happens here; the effect is checked from the sites, not through the backend.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from faults.backends import router
from faults.base import FaultSpec, FaultState
from harness.errors import ControlPlaneError, MissingCredentialError
from harness.lab import shell
from harness.lab.controller import Lab
from harness.lab.latency import kernel_has_netem
from harness.lab.layout import PG_PORT, Member
from harness.safety.runner import FaultRunner
from harness.topology.credentials import SecretRef
from harness.topology.models import Topology

KEY_ENV = "HARNESS_TEST_ROUTER_KEY"
LINK = "link:site-a~site-b"


def with_router_ssh(topology: Topology, host_key: str) -> Topology:
    endpoint = topology.management.ssh[0].model_copy(update={"key_file": SecretRef(env=KEY_ENV), "host_key": host_key})
    return topology.model_copy(update={"management": topology.management.model_copy(update={"ssh": [endpoint]})})


@pytest.fixture
def routed(lab: Lab, topology: Topology, monkeypatch: pytest.MonkeyPatch) -> Topology:
    monkeypatch.setenv(KEY_ENV, str(lab.ssh_key_file))
    return with_router_ssh(topology, lab.ssh_host_key)


def reaches(source: Member, address: str) -> bool:
    """A TCP connection from inside `source`'s namespace to PostgreSQL at `address` (1 s budget)."""
    probe = f"import socket; socket.create_connection(({address!r}, {PG_PORT}), 1).close()"
    return shell.run(["python3", "-c", probe], netns=source.netns, check=False, timeout=10).returncode == 0


def test_a_partition_cuts_only_the_named_link_and_its_revert_restores_it(lab: Lab, routed: Topology,
                                                                         runner: FaultRunner) -> None:
    a, b, w = lab.layout.site_a, lab.layout.site_b, lab.layout.witness
    fault = router.build_partition(FaultSpec("link-partition", LINK), routed)
    assert reaches(a, b.address) and reaches(b, a.address)
    with runner.inject(fault):
        assert fault.table in lab.firewall.tables(), "the rules are in the router's own nft, seen from outside ssh"
        assert not reaches(a, b.address) and not reaches(b, a.address)
        assert reaches(a, w.address) and reaches(b, w.address), "the witness links are untouched"
    assert fault.table not in lab.firewall.tables()
    assert reaches(a, b.address) and reaches(b, a.address)
    assert runner.journal.pending() == []


def test_the_dead_mans_switch_on_the_router_ends_a_partition_the_harness_abandoned(routed: Topology, lab: Lab) -> None:
    fault = router.build_partition(FaultSpec("link-partition", LINK, {"direction": "forward"}), routed)
    fault.preflight()
    fault.arm_deadman(1)
    fault.inject()
    assert fault.check() is FaultState.IN_EFFECT
    deadline = time.monotonic() + 10
    while fault.check() is not FaultState.CLEARED and time.monotonic() < deadline:
        time.sleep(0.2)
    assert fault.check() is FaultState.CLEARED
    assert reaches(lab.layout.site_a, lab.layout.site_b.address)


def test_a_disarmed_switch_is_gone_and_leaves_the_fault_to_the_harness(routed: Topology) -> None:
    fault = router.build_partition(FaultSpec("link-partition", LINK), routed)
    fault.arm_deadman(30)
    pattern = "[" + fault.marker[0] + "]" + fault.marker[1:]
    assert subprocess.run(["pgrep", "-f", pattern], capture_output=True).returncode == 0
    fault.disarm_deadman()
    assert subprocess.run(["pgrep", "-f", pattern], capture_output=True).returncode == 1


def test_latency_is_netem_on_the_router_or_a_clear_error_that_leaves_nothing_behind(
        lab: Lab, routed: Topology, runner: FaultRunner) -> None:
    fault = router.build_latency(FaultSpec("latency", LINK, {"rtt_ms": 10}), routed)
    ports = [lab.layout.site_a.veth_router, lab.layout.site_b.veth_router]
    if kernel_has_netem(lab.layout.router_netns):
        with runner.inject(fault):
            assert fault.check() is FaultState.IN_EFFECT
    else:
        with pytest.raises(ControlPlaneError, match="has no sch_netem"), runner.inject(fault):
            pass
    for port in ports:
        shown = shell.run(["tc", "qdisc", "show", "dev", port], netns=lab.layout.router_netns).stdout
        assert "htb 1:" not in shown and "netem" not in shown, shown
    assert runner.journal.pending() == []


def test_a_wrong_host_key_is_refused_before_anything_is_journaled(lab: Lab, routed: Topology, runner: FaultRunner,
                                                                   tmp_path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    impostor = " ".join((tmp_path / "other.pub").read_text().split()[:2])
    fault = router.build_partition(FaultSpec("link-partition", LINK), with_router_ssh(routed, impostor))
    with pytest.raises(ControlPlaneError, match=r"host key does not match the pinned one \(management.ssh\[0\].host_key\)"), \
            runner.inject(fault):
        pass
    assert runner.journal.pending() == []
    assert fault.table not in lab.firewall.tables()


def test_a_missing_key_names_the_field_before_anything_is_journaled(routed: Topology, runner: FaultRunner,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    fault = router.build_partition(FaultSpec("link-partition", LINK), routed)
    with pytest.raises(MissingCredentialError, match=rf"management.ssh\[0\].key_file: environment variable {KEY_ENV}"), \
            runner.inject(fault):
        pass
    assert runner.journal.pending() == []
