"""The production router backend (paramiko, nft, tc) driving the lab's router through its real sshd.

The lab's router namespace runs an sshd; the topology names it like any router, with the lab's
client key (by environment reference) and its host key pinned. What a user's router would get
over SSH is what happens here; the effect is checked from the sites, not through the backend.

It runs on the lab tests' shared lab: the router is not its own subject's leftover, and every spec
starts from a lab whose drift (`Lab.drift`: nft tables, qdiscs) the shared fixture has checked.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from faults.backends import router
from faults.base import FaultSpec, FaultState
from faults.netrules import ROOT_HANDLE
from harness.safety.journal import Journal
from harness.safety.runner import FaultRunner, RunnerSettings
from harness_kernel.errors import ConfigError, ControlPlaneError, MissingCredentialError
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.credentials import SecretRef
from harness_kernel.topology.models import Topology
from harness_lab import shell
from harness_lab.controller import Lab
from harness_lab.latency import kernel_has_netem
from harness_lab.layout import PG_PORT, Member

KEY_ENV = "HARNESS_TEST_ROUTER_KEY"
LINK = "link:site-a~site-b"
OPERATOR_QOS = ["root", "handle", "1:", "htb", "default", "30"]


@pytest.fixture
def runner(lab: Lab, topology: Topology, tmp_path: Path) -> FaultRunner:
    return FaultRunner(topology, "lab:" + lab.layout.prefix, Journal(tmp_path / "journal"), Timeline(), "router-test",
                       RunnerSettings(settle_timeout_s=30, revert_timeout_s=30))


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


def switch_pids(marker: str) -> list[int]:
    """Processes with `marker` as one of their arguments: the dead man's switch (the router's namespace shares our pids)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def qdiscs(lab: Lab, port: str) -> str:
    """The port's qdiscs as configured (the packet counter htb prints is left out)."""
    shown = shell.run(["tc", "qdisc", "show", "dev", port], netns=lab.layout.router_netns).stdout
    return re.sub(r"direct_packets_stat \d+ ", "", shown)


@pytest.fixture
def operator_qos(lab: Lab) -> Iterator[list[str]]:
    """The operator's own QoS (`htb 1:`, the handle every QoS how-to uses) installed on router ports by the test."""
    ports: list[str] = []
    yield ports
    for port in ports:
        shell.run(["tc", "qdisc", "del", "dev", port, "root"], netns=lab.layout.router_netns, check=False)


def install_operator_qos(lab: Lab, port: str, ports: list[str]) -> str:
    shell.run(["tc", "qdisc", "add", "dev", port, *OPERATOR_QOS], netns=lab.layout.router_netns)
    ports.append(port)
    return qdiscs(lab, port)


# -- partitions ------------------------------------------------------------------------------------
def test_a_partition_cuts_only_the_named_link_and_its_revert_restores_it(lab: Lab, routed: Topology,
                                                                         runner: FaultRunner) -> None:
    a, b, w = lab.layout.site_a, lab.layout.site_b, lab.layout.witness
    fault = router.build_partition(FaultSpec("link-partition", LINK), routed)
    assert reaches(a, b.address) and reaches(b, a.address)
    with runner.inject(fault, duration_s=60):
        assert fault.table in lab.firewall.tables(), "the rules are in the router's own nft, seen from outside ssh"
        assert not reaches(a, b.address) and not reaches(b, a.address)
        assert reaches(a, w.address) and reaches(b, w.address), "the witness links are untouched"
        assert switch_pids(fault.marker), "its dead man's switch runs on the router"
    assert fault.table not in lab.firewall.tables()
    assert switch_pids(fault.marker) == [], "disarmed with the revert"
    assert reaches(a, b.address) and reaches(b, a.address)
    assert runner.journal.pending() == []


def test_the_deadman_ends_a_partition_after_the_ssh_session_is_closed(routed: Topology, lab: Lab) -> None:
    fault = router.build_partition(FaultSpec("link-partition", LINK, {"direction": "forward"}), routed)
    fault.preflight()
    fault.arm_deadman(2)
    fault.inject()
    assert fault.check() is FaultState.IN_EFFECT
    assert not reaches(lab.layout.site_a, lab.layout.site_b.address)
    fault.shell.close()  # the harness is cut off: nothing but the router's own switch can end it now
    deadline = time.monotonic() + 15
    while fault.table in lab.firewall.tables() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert fault.table not in lab.firewall.tables()
    assert fault.check() is FaultState.CLEARED
    assert reaches(lab.layout.site_a, lab.layout.site_b.address)
    assert switch_pids(fault.marker) == [], "the switch exits once it has run"


def test_a_disarmed_switch_is_gone_and_another_faults_switch_is_not(routed: Topology) -> None:
    mine, other = (router.build_partition(FaultSpec("link-partition", LINK), routed) for _ in range(2))
    mine.arm_deadman(30)
    other.arm_deadman(30)
    try:
        assert switch_pids(mine.marker) and switch_pids(other.marker)
        mine.disarm_deadman()
        time.sleep(0.2)
        assert switch_pids(mine.marker) == []
        assert switch_pids(other.marker), "disarm ends exactly its own switch"
    finally:
        other.disarm_deadman()
    assert switch_pids(other.marker) == []


# -- latency ------------------------------------------------------------------------------------------
def test_latency_is_netem_on_the_router_or_a_clear_error_that_leaves_nothing_behind(
        lab: Lab, routed: Topology, runner: FaultRunner) -> None:
    fault = router.build_latency(FaultSpec("latency", LINK, {"rtt_ms": 10}), routed)
    ports = [lab.layout.site_a.veth_router, lab.layout.site_b.veth_router]
    if kernel_has_netem(lab.layout.router_netns):
        with runner.inject(fault, duration_s=60):
            assert fault.check() is FaultState.IN_EFFECT
    else:
        with pytest.raises(ControlPlaneError, match="has no sch_netem"), runner.inject(fault, duration_s=60):
            pass
    for port in ports:
        shown = qdiscs(lab, port)
        assert ROOT_HANDLE not in shown and "netem" not in shown, shown
    assert switch_pids(fault.marker) == []
    assert runner.journal.pending() == []


def test_latency_refuses_a_port_with_the_operators_htb_1_root_and_leaves_it_intact(
        lab: Lab, routed: Topology, runner: FaultRunner, operator_qos: list[str]) -> None:
    port = lab.layout.site_b.veth_router
    before = install_operator_qos(lab, port, operator_qos)
    assert "qdisc htb 1: root" in before
    fault = router.build_latency(FaultSpec("latency", LINK, {"rtt_ms": 10}), routed)
    with pytest.raises(ConfigError, match="has its own root qdisc"), runner.inject(fault, duration_s=60):
        pass
    assert qdiscs(lab, port) == before
    assert runner.journal.pending() == []


def test_a_failed_latency_and_its_deadman_leave_an_operators_root_that_appeared_after_preflight_intact(
        lab: Lab, routed: Topology, operator_qos: list[str]) -> None:
    a_port, b_port = lab.layout.site_a.veth_router, lab.layout.site_b.veth_router
    fault = router.build_latency(FaultSpec("latency", LINK, {"rtt_ms": 10}), routed)
    fault.preflight()
    before = install_operator_qos(lab, a_port, operator_qos)  # the operator's QoS arrives after our preflight
    fault.arm_deadman(1)
    with pytest.raises(ControlPlaneError):
        fault.inject()  # site-b's port takes the fault (or fails for want of netem); site-a's refuses it
    assert ROOT_HANDLE in qdiscs(lab, b_port)
    deadline = time.monotonic() + 10  # the harness does nothing more: the switch's undo runs on the router
    while switch_pids(fault.marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ROOT_HANDLE not in qdiscs(lab, b_port), "the switch removed this fault's own root"
    assert qdiscs(lab, a_port) == before, "and spared the operator's"
    fault.revert()
    assert qdiscs(lab, a_port) == before
    assert fault.check() is FaultState.CLEARED


# -- refused before anything is journaled --------------------------------------------------------------
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
    missing = r"management.ssh\[0\].key_file: the environment variable named at management.ssh\[0\].key_file.env"
    with pytest.raises(MissingCredentialError, match=missing), runner.inject(fault):
        pass
    assert runner.journal.pending() == []
