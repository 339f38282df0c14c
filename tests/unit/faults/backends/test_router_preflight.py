"""Preflight checks privileges, not only tools (review #21): a login that may not change nft or tc fails
before anything is journaled or touched."""

from __future__ import annotations

import pytest

from faults.backends import router
from faults.base import FaultSpec
from faults.transports.shell import CommandResult
from harness_kernel.errors import ConfigError, ControlPlaneError
from tests.unit.faults.backends.fake_router_shell import NO_NET_ADMIN, FakeSshShell
from tests.unit.faults.backends.router_topologies import router_topology

TOPOLOGY = router_topology("a", "b")
NOT_PERMITTED = CommandResult(1, "", "Error: cache initialization failed: Operation not permitted\n")


def test_partition_preflight_checks_privileges_not_only_tools(fake: FakeSshShell) -> None:
    fake.capeff = NO_NET_ADMIN
    fake.answer("nft list", NOT_PERMITTED)
    fault = router.build_partition(FaultSpec("link-partition", "link:a~b"), TOPOLOGY)
    fault.shell = fake  # type: ignore[assignment]
    with pytest.raises(ControlPlaneError, match=r"CAP_NET_ADMIN|not permitted"):
        fault.preflight()


def test_partition_preflight_probes_nft_itself(fake: FakeSshShell) -> None:
    fake.answer("nft list", NOT_PERMITTED)
    fault = router.build_partition(FaultSpec("link-partition", "link:a~b"), TOPOLOGY)
    fault.shell = fake  # type: ignore[assignment]
    with pytest.raises(ControlPlaneError, match="Operation not permitted"):
        fault.preflight()
    assert any(c == "nft list tables" for c in fake.sent)


def test_latency_preflight_checks_privileges_not_only_tools(fake: FakeSshShell) -> None:
    fake.capeff = NO_NET_ADMIN
    fault = router.build_latency(FaultSpec("latency", "link:a~b", {"rtt_ms": 4}), TOPOLOGY)
    fault.shell = fake  # type: ignore[assignment]
    with pytest.raises(ControlPlaneError, match="CAP_NET_ADMIN"):
        fault.preflight()


def test_partition_preflight_refuses_a_table_that_is_already_there(fake: FakeSshShell) -> None:
    fault = router.build_partition(FaultSpec("link-partition", "link:a~b"), TOPOLOGY)
    fault.shell = fake  # type: ignore[assignment]
    fake.tables.add(fault.table)
    with pytest.raises(ConfigError, match="already"):
        fault.preflight()
