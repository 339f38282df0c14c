"""Every lab fault, injected for real under a small write load, through the harness's fault lifecycle."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable

import paramiko
import pytest

from faults.base import FaultSpec, FaultState
from harness.clusters import CopiesSample
from harness.clusters.lab import LabCluster
from harness.safety.runner import FaultRunner
from harness_kernel.errors import ConfigError, ControlPlaneError
from harness_kernel.topology.models import Topology
from harness_lab import haevents, latency, shell
from harness_lab.controller import Lab
from tests.integration.lab.lab_support import FaultBuilder
from tests.integration.lab.lab_writers import WriteLoad

FAILOVER_MAX_S = 20.0


def other(node: str, topology: Topology) -> str:
    [survivor] = [n.name for n in topology.databases[0].nodes if n.name != node]
    return survivor


def host_of(node: str, topology: Topology) -> str:
    host = next(n.host for n in topology.databases[0].nodes if n.name == node)
    assert host is not None, f"the lab's topology names the host of {node}"
    return host


def site_of(node: str, topology: Topology) -> str:
    return topology.site_of(host_of(node, topology)).name


def run_fault(runner: FaultRunner, factory: FaultBuilder, topology: Topology, spec: FaultSpec,
              load: WriteLoad, hold_s: float, until: Callable[[], bool] | None = None) -> tuple[float, float]:
    """Inject, hold (until `until` holds, at most `hold_s`, when given), revert; returns (in-effect, reverted)
    monotonic times."""
    fault = factory.build(spec, topology)
    assert fault.plan().inject_steps
    with runner.inject(fault, duration_s=hold_s + 60) as active:
        in_effect = time.monotonic()
        assert fault.check() is FaultState.IN_EFFECT
        while time.monotonic() - in_effect < hold_s and not (until and until()):
            active.sleep(0.25)
    assert fault.check() is FaultState.CLEARED
    return in_effect, time.monotonic()


def promoted_to(lab: Lab, node: str) -> Callable[[], bool]:
    """The monitor shows `node` as the primary (False while the monitor cannot be asked)."""
    def probe() -> bool:
        try:
            return lab.primary() == node
        except ControlPlaneError:
            return False
    return probe


def test_lab_is_up_and_observable(lab: Lab) -> None:
    status = lab.status()
    assert status.up, status
    assert set(status.namespaces) == set(lab.layout.namespaces)
    expected = latency.NETEM if latency.kernel_has_netem(lab.layout.router_netns) else latency.TOXIPROXY
    assert status.latency_mechanism == expected, "netem where the kernel has it, Toxiproxy otherwise"
    assert status.primary in ("node-a", "node-b")
    assert abs(lab.clock_offset()) < 1.0
    assert lab.ha_events(time.time() - 3600)


def test_the_replication_mode_is_read_from_the_cluster_and_a_changed_setting_is_put_back(
        lab: Lab, topology: Topology) -> None:
    cluster = LabCluster.from_topology(topology)
    before = cluster.replication()
    assert before.mode == "synchronous" and "synchronous_standby_names 'ANY 1 (" in before.read_from, before
    standby = other(lab.primary(), topology)
    assert before.settings[f"replication-quorum {standby}"] == "true"
    lab.pg.set_replication_quorum(standby, False)  # pg_auto_failover then names no synchronous standby
    try:
        shell.wait_for(lambda: cluster.replication().mode == "asynchronous", 30,
                       "the primary running asynchronously", interval_s=0.5)
        weaker = cluster.replication()
        assert "synchronous_standby_names ''" in weaker.read_from
        assert f"{standby} false" in weaker.read_from, "the HA manager's quorum setting is quoted"
        assert cluster.restore_replication(before) == [f"replication-quorum {standby}: false -> true"]
        shell.wait_for(lambda: cluster.replication().mode == "synchronous", 30,
                       "the primary synchronous again, as read from it", interval_s=0.5)
        assert cluster.replication().settings == before.settings
        assert cluster.restore_replication(before) == [], "nothing left to put back"
    finally:
        lab.pg.set_replication_quorum(standby, True)
        lab.wait_healthy(60)


def test_router_sshd_runs_router_commands(lab: Lab) -> None:
    client = paramiko.SSHClient()
    kind, blob = lab.ssh_host_key.split()
    client.get_host_keys().add(lab.layout.client.router_address, kind,
                               paramiko.PKey.from_type_string(kind, base64.b64decode(blob)))
    client.connect(lab.layout.client.router_address, username="root", key_filename=str(lab.ssh_key_file),
                   look_for_keys=False, allow_agent=False, timeout=5)
    try:
        _, out, _ = client.exec_command("nft list tables; ip -br link")
        text = out.read().decode()
    finally:
        client.close()
    assert lab.layout.nft_table in text
    assert lab.layout.site_a.veth_router in text


@pytest.mark.parametrize("kind", ["host-crash", "host-hang", "site-failure"])
def test_primary_loss_fails_over(kind: str, lab: Lab, runner: FaultRunner, factory: FaultBuilder,
                                 topology: Topology) -> None:
    before = lab.primary()
    target = f"host:{host_of(before, topology)}" if kind != "site-failure" else f"site:{site_of(before, topology)}"
    with WriteLoad(lab.odbc_connection_string()) as load:
        assert load.wait_commits(20, time.monotonic(), 20)
        since_wall = time.time()
        in_effect, _ = run_fault(runner, factory, topology, FaultSpec(kind, target), load, hold_s=30,
                                 until=promoted_to(lab, other(before, topology)))
        assert lab.primary() == other(before, topology), "the surviving node took over"
        load.wait_commits(20, time.monotonic(), 30)
        outage = load.outage(in_effect - 0.5, time.monotonic())
    print(f"{kind}: write outage {outage:.1f} s")
    assert outage < FAILOVER_MAX_S
    events = lab.ha_events(since_wall + lab.clock_offset())
    detected, promoted = haevents.failure_detected(events), haevents.promoted(events, other(before, topology))
    assert detected is not None and promoted is not None, events
    print(f"{kind}: monitor saw the failure -> promoted {promoted.wall - detected.wall:.1f} s")
    lab.wait_healthy(60)


@pytest.mark.parametrize("kind", ["site-isolation", "witness-isolation"])
def test_isolating_secondary_or_witness_keeps_primary(kind: str, lab: Lab, runner: FaultRunner, factory: FaultBuilder,
                                                      topology: Topology) -> None:
    before = lab.primary()
    target = f"site:{site_of(other(before, topology), topology)}" if kind == "site-isolation" else "witness:witness"
    with WriteLoad(lab.odbc_connection_string()) as load:
        assert load.wait_commits(20, time.monotonic(), 20)
        start = time.monotonic()
        fault = factory.build(FaultSpec(kind, target), topology)
        with runner.inject(fault, duration_s=60) as active:
            active.sleep(8)
            assert lab.roles()[before] == "primary"
            assert len(load.successes(start + 5)) > 10, "writes go on on the primary"
        outage = load.outage(start, time.monotonic())
    print(f"{kind}: longest write stall {outage:.1f} s")
    assert outage < 10
    lab.wait_healthy(60)


@pytest.mark.parametrize("watchdog", [False, True], ids=["no-watchdog", "watchdog-2s"])
def test_inter_site_cut(watchdog: bool, lab: Lab, runner: FaultRunner, factory: FaultBuilder, topology: Topology) -> None:
    before = lab.primary()
    params = {"sync_timeout_s": 2.0} if watchdog else {}
    hold = 10.0
    with WriteLoad(lab.odbc_connection_string()) as load:
        assert load.wait_commits(20, time.monotonic(), 20)
        fault = factory.build(FaultSpec("link-partition", "link:site-a~site-b", params), topology)
        with runner.inject(fault, duration_s=60) as active:
            start = time.monotonic()
            active.sleep(hold)
            end = time.monotonic()
            cut_outage = load.outage(start, end)
            assert lab.primary() == before, "the witness sees both nodes: no failover"
        assert load.wait_commits(10, time.monotonic(), 30)
    print(f"A-B cut {'with' if watchdog else 'without'} watchdog: write outage {cut_outage:.1f} s of {hold:.0f} s")
    if watchdog:
        assert cut_outage < 9, "the watchdog let commits resume during the cut"
    else:
        assert cut_outage > hold - 1, "commits wait for the synchronous standby for the whole cut"
    assert all(n.replication_quorum for n in lab.nodes())
    lab.wait_healthy(60)


def test_latency_adds_requested_rtt(lab: Lab, runner: FaultRunner, factory: FaultBuilder, topology: Topology) -> None:
    a, b = lab.layout.site_a, lab.layout.site_b
    base = latency.probe_rtt_ms(a, b.address)
    rtt = 10.0
    with WriteLoad(lab.odbc_connection_string()) as load:
        assert load.wait_commits(20, time.monotonic(), 20)
        fault = factory.build(FaultSpec("latency", "link:site-a~site-b", {"rtt_ms": rtt, "jitter_ms": 0}), topology)
        with runner.inject(fault, duration_s=60) as active:
            measured = [latency.probe_rtt_ms(a, b.address) - base, latency.probe_rtt_ms(b, a.address) - base]
            active.sleep(1)
            assert load.wait_commits(10, time.monotonic(), 10), "writes go on, slower"
    print(f"latency: requested {rtt} ms, measured added {measured} (base {base:.2f} ms)")
    for added in measured:
        assert abs(added - rtt) <= max(0.2 * rtt, 0.5)
    if lab.latency_mechanism == latency.TOXIPROXY:
        assert not any(lab.latency().active().values()), f"toxics left after the revert: {lab.latency().active()}"
    # and the delay is gone: the bound tells the fault's 10 ms from none, not a fraction of a millisecond (beside make
    # test's other lanes a probe's least time still moves by a millisecond or two)
    restored = latency.probe_rtt_ms(a, b.address) - base
    assert restored < 0.5 * rtt, f"{restored:.2f} ms of the {rtt} ms added is left after the revert"
    with pytest.raises(ConfigError, match="loss"):
        factory.build(FaultSpec("latency", "link:site-a~site-b", {"rtt_ms": 1, "loss_pct": 1}), topology).inject()


def test_switchover_moves_the_primary(lab: Lab, runner: FaultRunner, factory: FaultBuilder, topology: Topology) -> None:
    before = lab.primary()
    with WriteLoad(lab.odbc_connection_string()) as load:
        assert load.wait_commits(20, time.monotonic(), 20)
        start = time.monotonic()
        run_fault(runner, factory, topology, FaultSpec("role-switchover", "database:bench"), load, hold_s=1)
        assert load.wait_commits(20, time.monotonic(), 30)
        outage = load.outage(start, time.monotonic())
    print(f"switchover: write outage {outage:.1f} s")
    assert lab.primary() == other(before, topology)
    assert outage < FAILOVER_MAX_S


REBUILD_RATE_MB = 6  # a rebuild of some 20 s: several progress samples, not minutes


def test_storage_loss_rebuilds_replica_with_progress(lab: Lab, runner: FaultRunner, factory: FaultBuilder,
                                                     topology: Topology) -> None:
    replica = other(lab.primary(), topology)
    fault = factory.build(FaultSpec("storage-loss", f"node:bench/{replica}", {"max_rate": f"{REBUILD_RATE_MB}M"}),
                          topology)
    samples: list[tuple[float, int, int]] = []
    cluster = LabCluster.from_topology(topology)
    assert cluster.copies().in_sync == 2, "a primary and its synchronous secondary before the fault"
    copies: list[CopiesSample] = []
    with WriteLoad(lab.odbc_connection_string(), threads=1) as load:
        assert load.wait_commits(10, time.monotonic(), 20)
        start = time.monotonic()
        with runner.inject(fault, duration_s=180):
            # until the replica is back in sync: the fault clears only at its revert (the keeper's settings put back)
            while time.monotonic() - start < 150:
                progress = lab.resync_progress()
                if progress:
                    samples.append((time.monotonic() - start, progress.bytes_total, progress.bytes_done))
                copies.append(cluster.copies())
                if copies[-1].in_sync == 2 and lab.healthy():
                    break
                time.sleep(1)
            took = time.monotonic() - start
        assert fault.check() is FaultState.CLEARED
        assert len(load.successes(start)) > 20, "the primary keeps taking writes during the rebuild"
    print(f"storage-loss: rebuild {took:.1f} s, last progress {samples[-1] if samples else None}")
    assert took < 150, "the replica was rebuilt and back in sync within the bound"
    assert samples, "resync progress was reported"
    assert samples[-1][2] > samples[0][2], "bytes done grows"
    total = samples[-1][1]
    assert total > 10_000_000
    # the base backup is throttled: its bytes take at least most of their time at the rate asked for
    assert took >= 0.8 * total / (REBUILD_RATE_MB * 1024 * 1024), f"{total} bytes in {took:.1f} s"
    lab.wait_healthy(60)
    rebuilding = [c for c in copies if c.in_sync == 1]
    assert rebuilding, f"the cluster said it held one in-sync copy while the replica was rebuilt: {copies[:3]}"
    assert all("wait_primary" in c.states for c in rebuilding), "the HA manager's own state says so"
    healed = cluster.copies()
    assert healed.in_sync == 2 and "streaming/quorum" in healed.states, healed
