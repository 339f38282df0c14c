"""Never touch what is not ours (review #2, #21 table names): the router backend deletes only a root qdisc
or an nft table it can prove it created, and its names never collide with an operator's or another run's."""

from __future__ import annotations

import re
import shlex

import pytest

from faults import netrules, registry
from faults.backends import router
from faults.base import FaultSpec, FaultState
from harness_kernel.errors import ConfigError, ControlPlaneError
from tests.unit.faults.backends.fake_router_shell import NOQUEUE, OPERATOR_HTB, FakeSshShell
from tests.unit.faults.backends.local_router import LocalRouter, StubRouterShell
from tests.unit.faults.backends.router_topologies import router_topology

TOPOLOGY = router_topology("a", "b")
def latency_spec() -> FaultSpec:
    """A new fault instance each call, as a suite makes one per injection."""
    return FaultSpec("latency", "link:a~b", {"rtt_ms": 10})


def partition_spec() -> FaultSpec:
    return FaultSpec("link-partition", "link:a~b")


def latency(shell: object) -> router.RouterLatency:
    fault = router.build_latency(latency_spec(), TOPOLOGY)
    fault.shell = shell  # type: ignore[assignment]
    return fault


def root_handle(steps: tuple[str, ...]) -> str:
    adds = [shlex.split(s) for s in steps if re.match(r"tc qdisc add .* root ", s)]
    return adds[0][adds[0].index("handle") + 1]


def test_latency_preflight_refuses_an_operators_htb_1_root(fake: FakeSshShell) -> None:
    fake.devices["eth2"] = OPERATOR_HTB
    with pytest.raises(ConfigError, match="own root qdisc"):
        latency(fake).preflight()


def test_latency_preflight_refuses_a_leftover_harness_root_and_names_recover(fake: FakeSshShell) -> None:
    leftover = latency(FakeSshShell())
    leftover.inject()
    fake.devices["eth1"] = leftover.shell.devices["eth1"]  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="recover"):
        latency(fake).preflight()


def test_latency_never_sends_a_root_delete_for_a_root_it_did_not_create(fake: FakeSshShell, runner_for) -> None:
    fake.devices.update(eth1=OPERATOR_HTB, eth2=OPERATOR_HTB)
    with pytest.raises((ConfigError, ControlPlaneError)), runner_for(TOPOLOGY).inject(latency(fake), duration_s=20):
        pass
    assert fake.deletes_of_a_root() == []
    assert fake.devices == {"eth1": OPERATOR_HTB, "eth2": OPERATOR_HTB}


def test_latency_revert_deletes_its_own_root_and_leaves_one_that_appeared_after_preflight(fake: FakeSshShell) -> None:
    fault = latency(fake)
    fault.preflight()
    fake.devices["eth1"] = OPERATOR_HTB  # the operator's QoS arrives between preflight and inject
    with pytest.raises(ControlPlaneError):
        fault.inject()  # eth2 gets the fault, eth1 refuses it
    fault.revert()
    assert fake.devices["eth1"] == OPERATOR_HTB
    assert fake.devices["eth2"] == NOQUEUE
    assert all("dev eth2" in c for c in fake.deletes_of_a_root()), fake.deletes_of_a_root()


def test_latency_uses_a_reserved_distinctive_root_handle_and_deletes_only_that_handle() -> None:
    plan = latency(FakeSshShell()).plan()
    handle = root_handle(plan.inject_steps)
    assert handle not in ("1:", "0:") and handle == netrules.ROOT_HANDLE
    assert all(f"root handle {handle}" in step for step in plan.revert_steps), plan.revert_steps


def test_latency_revert_leaves_another_faults_reserved_root_alone(fake: FakeSshShell) -> None:
    other = latency(FakeSshShell())
    other.inject()
    fake.devices.update(other.shell.devices)  # type: ignore[attr-defined]
    mine = latency(fake)
    mine.revert()
    assert fake.deletes_of_a_root() == []
    assert mine.check() is FaultState.CLEARED


def test_the_deadman_undo_deletes_a_root_only_if_it_is_ours(local: LocalRouter) -> None:
    fault = latency(StubRouterShell(local))
    local.set_root("eth1", OPERATOR_HTB)
    local.set_root("eth2", OPERATOR_HTB)
    local.sh(fault.undo_line())
    assert [c for c in local.calls() if "qdisc del" in c] == []
    other = latency(FakeSshShell())
    other.inject()
    local.set_root("eth1", other.shell.devices["eth1"])  # type: ignore[attr-defined]
    local.sh(fault.undo_line())
    assert [c for c in local.calls() if "qdisc del" in c] == [], "another fault's reserved root is not ours either"
    ours = FakeSshShell()
    fault.shell = ours  # type: ignore[assignment]
    fault.inject()
    local.set_root("eth1", ours.devices["eth1"])
    local.set_root("eth2", ours.devices["eth2"])
    local.sh(fault.undo_line())
    assert local.root("eth1").startswith("qdisc noqueue") and local.root("eth2").startswith("qdisc noqueue")


def test_two_partitions_of_one_target_never_share_a_table(fake: FakeSshShell) -> None:
    first, second = (router.build_partition(partition_spec(), TOPOLOGY) for _ in range(2))
    assert first.table != second.table
    first.shell = second.shell = fake  # type: ignore[assignment]
    first.inject()
    second.inject()
    first.revert()
    assert fake.tables == {second.table}


def test_table_names_cannot_collide() -> None:
    names = {netrules.table_name("harness_", target) for target in ("link:a~b-c", "link:a-b~c", "link:A~B-C", "link:a~b_c")}
    assert len(names) == 4, names
    assert all(re.fullmatch(r"[a-z_][a-z0-9_-]*", name) for name in names), names


def test_recover_rebuilds_the_very_same_fault_from_its_journaled_spec() -> None:
    for spec in (partition_spec(), latency_spec()):
        built = registry.build(spec, TOPOLOGY)
        again = registry.build(FaultSpec.from_dict(built.spec.to_dict()), TOPOLOGY)
        assert again.plan() == built.plan()
        assert again.marker == built.marker  # type: ignore[attr-defined]
