"""Fail closed (review #3): only a positive observation that the fault is gone counts as CLEARED; an error is
UNKNOWN, the revert always sends its (idempotent, ownership-guarded) delete, and an inject that never
reported a status counts as possibly in effect."""

from __future__ import annotations

import pytest

from faults.backends import router
from faults.base import FaultSpec, FaultState
from faults.transports.shell import CommandResult
from harness_kernel.errors import ControlPlaneError, RevertFailedError
from tests.unit.faults.backends.fake_router_shell import FakeSshShell
from tests.unit.faults.backends.router_topologies import router_topology

TOPOLOGY = router_topology("a", "b")
BUSY = CommandResult(1, "", "Error: cache initialization failed: Device or resource busy\n")


def partition(shell: FakeSshShell) -> router.RouterPartition:
    fault = router.build_partition(FaultSpec("link-partition", "link:a~b"), TOPOLOGY)
    fault.shell = shell  # type: ignore[assignment]
    return fault


def latency(shell: FakeSshShell) -> router.RouterLatency:
    fault = router.build_latency(FaultSpec("latency", "link:a~b", {"rtt_ms": 10}), TOPOLOGY)
    fault.shell = shell  # type: ignore[assignment]
    return fault


def test_a_failed_nft_list_is_unknown_not_cleared(fake: FakeSshShell) -> None:
    fault = partition(fake)
    fault.inject()
    fake.answer("nft list", BUSY)
    assert fault.check() is FaultState.UNKNOWN


def test_a_listing_without_the_table_is_cleared_and_with_it_in_effect(fake: FakeSshShell) -> None:
    fault = partition(fake)
    assert fault.check() is FaultState.CLEARED
    fault.inject()
    assert fault.check() is FaultState.IN_EFFECT


def test_a_failed_tc_show_is_unknown_not_cleared(fake: FakeSshShell) -> None:
    fault = latency(fake)
    fault.inject()
    fake.answer("tc qdisc show", CommandResult(1, "", "RTNETLINK answers: Operation not permitted\n"))
    assert fault.check() is FaultState.UNKNOWN


def test_revert_always_sends_the_delete_even_when_the_check_errors(fake: FakeSshShell) -> None:
    fault = partition(fake)
    fault.inject()
    fake.answer("nft list", BUSY)
    fault.revert()
    assert f"nft delete table inet {fault.table}" in fake.sent
    assert fake.tables == set()


def test_a_check_error_at_revert_keeps_the_journal_entry_and_the_deadman(fake: FakeSshShell, runner_for) -> None:
    runner = runner_for(TOPOLOGY)
    with pytest.raises(RevertFailedError), runner.inject(partition(fake), duration_s=20):
        fake.answer("nft list", BUSY)  # the router answers every check with an error from now on
    assert len(runner.journal.pending()) == 1
    assert fake.disarms() == []


def test_latency_revert_fails_closed_when_it_cannot_see_the_root(fake: FakeSshShell) -> None:
    fault = latency(fake)
    fault.inject()
    fake.answer("tc qdisc show", CommandResult(1, "", "RTNETLINK answers: Operation not permitted\n"))
    with pytest.raises(ControlPlaneError):
        fault.revert()


def test_an_inject_without_a_status_counts_as_possibly_in_effect(fake: FakeSshShell) -> None:
    fault = partition(fake)
    fault.inflight_wait_s = 0.2
    fake.answer("nft -f -", ControlPlaneError("ssh fake-router: 'nft' did not finish within 30 s"))
    with pytest.raises(ControlPlaneError):
        fault.inject()
    fake.forget_answers()
    assert fault.check() is not FaultState.CLEARED, "the nft -f may still commit"
    fake.inflight = True
    with pytest.raises(ControlPlaneError, match="still running"):
        fault.revert()
    fake.tables.add(fault.table)  # the in-flight nft commits, then ends
    fake.inflight = False
    fault.revert()
    assert fake.tables == set()
    assert fault.check() is FaultState.CLEARED
