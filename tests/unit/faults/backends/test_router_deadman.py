"""The dead man's switch on the router (review #10, #12): one per fault instance, disarmed exactly, armed by a
command in which every value is quoted, so no name can inject a command or silently disable it."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from faults import registry
from faults.backends import router
from faults.base import FaultSpec
from faults.transports import ssh
from harness.safety.journal import Journal, JournalEntry
from harness.safety.recover import recover
from harness.safety.revert import snapshot
from harness_kernel.topology.loader import load_topology
from tests.unit.faults.backends.fake_router_shell import FakeSshShell
from tests.unit.faults.backends.local_router import LocalRouter, StubRouterShell
from tests.unit.faults.backends.router_topologies import router_topology
from tests.unit.harness.safety.safety_support import eventually


def partition(target: str, topology, shell) -> router.RouterPartition:  # type: ignore[no-untyped-def]
    kind = "witness-isolation" if target.startswith("witness:") else "link-partition"
    fault = router.build_partition(FaultSpec(kind, target), topology)
    fault.shell = shell
    return fault


def running_shells(local: LocalRouter, pids: set[int]) -> set[int]:
    return {pid for pid, argv in local.processes().items() if pid in pids and argv[:1] != ["sleep"]}


def test_deadman_markers_are_unique_per_fault_instance() -> None:
    topology = router_topology("a", "b")
    first, second = (partition("link:a~b", topology, FakeSshShell()) for _ in range(2))
    assert first.marker != second.marker


def test_no_deadman_marker_is_a_prefix_of_another() -> None:
    topology = router_topology("a", "b", "bc")
    short, long = partition("link:a~b", topology, None), partition("link:a~bc", topology, None)
    assert not long.marker.startswith(short.marker) and not short.marker.startswith(long.marker)


def test_disarm_sends_no_pattern_to_pkill_and_markers_carry_no_regex_metacharacters(fake: FakeSshShell) -> None:
    fault = partition("link:a~b", router_topology("a", "b"), fake)
    fault.disarm_deadman()
    assert not any("pkill" in c for c in fake.sent), fake.sent
    assert re.fullmatch(r"[a-z0-9-]+", fault.marker), fault.marker


def test_disarm_ends_exactly_its_own_deadman(local: LocalRouter) -> None:
    topology = router_topology("unit-x", "unit-y", "unit-yz")
    short = partition("link:unit-x~unit-y", topology, StubRouterShell(local))
    long = partition("link:unit-x~unit-yz", topology, StubRouterShell(local))
    try:
        short.arm_deadman(30)
        short_pids = set(local.processes())
        long.arm_deadman(30)
        long_pids = set(local.processes()) - short_pids
        assert running_shells(local, short_pids) and running_shells(local, long_pids)
        short.disarm_deadman()
        assert eventually(lambda: not set(local.processes()) & short_pids), "its switch (and its sleep) are gone"
        assert running_shells(local, long_pids), "disarming link:unit-x~unit-y must not end link:unit-x~unit-yz's"
    finally:
        short.disarm_deadman()
        long.disarm_deadman()
    assert eventually(lambda: local.processes() == {}), local.processes()


def test_revert_disarms_its_deadman_once_the_fault_is_positively_cleared(fake: FakeSshShell) -> None:
    fault = partition("link:a~b", router_topology("a", "b"), fake)
    fault.inject()
    fault.revert()
    assert fake.disarms(), "recover reverts without disarming: the revert itself must"


@pytest.mark.parametrize("names", [("Site A (Madrid)", "Site B"), ("a b", "c'd")])
def test_names_with_spaces_or_parentheses_do_not_disable_the_deadman(local: LocalRouter, names: tuple[str, str]) -> None:
    fault = partition(f"link:{names[0]}~{names[1]}", router_topology(*names), StubRouterShell(local))
    try:
        fault.arm_deadman(1)
        assert local.wait_for_call(f"nft delete table inet {fault.table}", 5), local.calls()
    finally:
        fault.disarm_deadman()


def test_a_witness_name_with_parentheses_does_not_disable_the_deadman(local: LocalRouter) -> None:
    fault = partition("witness:vsan witness (1)", router_topology("a", "b", witness="vsan witness (1)"), StubRouterShell(local))
    try:
        fault.arm_deadman(1)
        assert local.wait_for_call(f"nft delete table inet {fault.table}", 5), local.calls()
    finally:
        fault.disarm_deadman()


def test_shell_syntax_in_names_never_runs_on_the_router(local: LocalRouter, tmp_path: Path) -> None:
    pwned = tmp_path / "pwned"
    evil = f"a$(touch {pwned})`touch {pwned}`;touch {pwned}"
    topology = router_topology(evil, "b")
    fault = partition(f"link:{evil}~b", topology, StubRouterShell(local))
    latency = router.build_latency(FaultSpec("latency", f"link:{evil}~b", {"rtt_ms": 2}), topology)
    latency.shell = StubRouterShell(local)  # type: ignore[assignment]
    try:
        for each in (fault, latency):
            each.arm_deadman(1)
            local.sh(each.undo_line())
            each.revert()
        time.sleep(1.5)
    finally:
        fault.disarm_deadman()
        latency.disarm_deadman()
    assert not pwned.exists()


def test_recover_rebuilds_the_fault_from_the_journal_deletes_its_table_and_disarms_its_deadman(
        fake: FakeSshShell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    example = Path(__file__).resolve().parents[4] / "examples" / "stretched-2plus2.yaml"
    monkeypatch.setattr(ssh, "SshShell", lambda *args, **kwargs: fake)
    topology = load_topology(example)
    crashed = registry.build(FaultSpec("link-partition", "link:site-a~site-b"), topology)
    journal = Journal(tmp_path / "journal")
    journal.write(JournalEntry(spec=crashed.spec, topology_source=str(example), topology_name=topology.name, run_id="gone",
                               topology=snapshot(topology)))
    crashed.inject()  # the run died here: its table is on the router, its switch armed
    [outcome] = recover(journal, force=True, clear_timeout_s=10)  # force: the entry names this (live) test process
    assert outcome.action == "reverted", outcome.detail
    assert fake.tables == set() and journal.pending() == []
    assert fake.disarms() and crashed.marker in fake.disarms()[-1]
