"""The embedded lab's own controls: its processes, its router's nft tables, Toxiproxy, pg_auto_failover.

One small class per fault kind. Every `check()` looks at the real thing (processes in
/proc, nft tables in the router namespace, toxics in Toxiproxy, roles on the monitor);
every `revert()` is idempotent, so `python -m harness recover` may run it again. Faults
whose effect is a router rule or a toxic also carry a dead man's switch: a `sleep; undo`
process in the router namespace that ends the fault even if the harness is gone.
"""

from __future__ import annotations

import logging
import signal
import time
from dataclasses import dataclass

from faults.base import FaultPlan, FaultSpec, FaultState
from faults.kinds import IsolationParams, LatencyParams, Params, PartitionParams, StorageLossParams
from harness.errors import ConfigError, ControlPlaneError
from harness.lab import firewall
from harness.lab.controller import Lab
from harness.lab.latency import LatencyRequest
from harness.lab.layout import LabLayout, Member
from harness.lab.watchdog import QuorumWatchdog
from harness.topology.models import Topology
from harness.topology.targets import Target

log = logging.getLogger(__name__)

BACKEND = "lab"


# -- resolving targets ---------------------------------------------------------------
def _lab(topology: Topology) -> Lab:
    if topology.lab is None:
        raise ConfigError(f"topology {topology.name!r} is not a lab (no 'lab' section)")
    return Lab(LabLayout.from_settings(topology.lab))


def _member(layout: LabLayout, site: str) -> Member:
    members = {"site-a": layout.site_a, "site-b": layout.site_b, "witness": layout.witness}
    if site not in members:
        raise ConfigError(f"lab has no site {site!r}; it has {', '.join(members)}")
    return members[site]


def _node_of_host(topology: Topology, host: str) -> str:
    for db in topology.databases:
        for node in db.nodes:
            if node.host == host:
                return node.name
    raise ConfigError(f"no database node runs on host {host!r}")


def _nodes_of_site(topology: Topology, site: str) -> list[str]:
    hosts = {h.name for s in topology.sites if s.name == site for h in s.hosts}
    return [n.name for db in topology.databases for n in db.nodes if n.host in hosts]


# -- shared pieces -------------------------------------------------------------------
class _LabFault:
    """A lab that is down has nothing left broken: `check` says cleared and `revert` does nothing.

    Keeps `recover` from addressing a lab that no longer exists (its addresses lead nowhere).
    Subclasses implement `_check` and `_revert`.
    """

    lab: Lab

    def check(self) -> FaultState:
        return self._check() if self.lab.present() else FaultState.CLEARED

    def revert(self) -> None:
        if self.lab.present():
            self._revert()

    def _check(self) -> FaultState:
        raise NotImplementedError

    def _revert(self) -> None:
        raise NotImplementedError


@dataclass
class _RouterRules:
    """A drop table in the router namespace, with its dead man's switch."""

    lab: Lab
    name: str
    rules: list[firewall.DropRule]

    @property
    def table(self) -> str:
        return self.lab.firewall.fault_table(self.name)

    @property
    def deadman(self) -> str:
        return f"deadman-{self.table}"

    def add(self) -> None:
        self.lab.firewall.add_drop_table(self.table, self.rules)

    def present(self) -> bool:
        return self.lab.firewall.has(self.table)

    def remove(self) -> None:
        self.lab.firewall.delete(self.table)

    def arm(self, seconds: float, first: str = "") -> None:
        self.lab.start_in_router(self.deadman, self.lab.firewall.deadman_argv(self.table, seconds, first))

    def disarm(self) -> None:
        self.lab.stop_in_router(self.deadman)

    def describe(self) -> str:
        return f"nft table inet {self.table} in {self.lab.layout.router_netns}: " + "; ".join(r.render() for r in self.rules)


def _settled(lab: Lab, node: str) -> bool:
    """The node runs and the monitor sees it in a steady primary/secondary role."""
    if not lab.node_alive(node):
        return False
    try:
        states = {n.name: n for n in lab.nodes()}
    except ControlPlaneError:
        return False
    mine = states.get(node)
    return mine is not None and mine.reportedstate == mine.goalstate and mine.reportedstate in ("primary", "secondary")


# -- host faults ---------------------------------------------------------------------
@dataclass
class HostCrash(_LabFault):
    """kill -9 of a node's keeper and PostgreSQL tree; revert restarts the keeper and the node rejoins."""

    spec: FaultSpec
    lab: Lab
    node: str

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> HostCrash:
        return cls(spec, _lab(topology), _node_of_host(topology, target.name))

    def plan(self) -> FaultPlan:
        return FaultPlan(self.spec, BACKEND, inject_steps=(f"SIGKILL the process tree of {self.node} (pg_autoctl + postgres)",),
                         revert_steps=(f"pg_autoctl run {self.node}; wait until it is primary or secondary again",))

    def inject(self) -> None:
        self.lab.kill_node(self.node)

    def _check(self) -> FaultState:
        if not self.lab.node_alive(self.node):
            return FaultState.IN_EFFECT
        return FaultState.CLEARED if _settled(self.lab, self.node) else FaultState.UNKNOWN

    def _revert(self) -> None:
        self.lab.start_node(self.node)


@dataclass
class HostHang(_LabFault):
    """SIGSTOP of a node's tree plus a drop of its packets, so clients do not wait on half-open sockets."""

    spec: FaultSpec
    lab: Lab
    node: str
    rules: _RouterRules

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> HostHang:
        lab, host = _lab(topology), target.name
        member = _member(lab.layout, topology.site_of(host).name)
        rules = firewall.isolate(member, topology.host(host).address)
        return cls(spec, lab, _node_of_host(topology, host), _RouterRules(lab, _name(spec, target), rules))

    def plan(self) -> FaultPlan:
        return FaultPlan(self.spec, BACKEND,
                         inject_steps=(self.rules.describe(), f"SIGSTOP the process tree of {self.node}"),
                         revert_steps=(f"SIGCONT the process tree of {self.node}", f"delete nft table {self.rules.table}"))

    def inject(self) -> None:
        self.rules.add()
        if not self.lab.signal_node(self.node, signal.SIGSTOP):
            raise ControlPlaneError(f"{self.spec.target}: {self.node} has no running process to freeze")

    def _check(self) -> FaultState:
        stopped = self.lab.node_stopped_fraction(self.node)
        dropping = self.rules.present()
        if stopped == 1.0 and dropping:
            return FaultState.IN_EFFECT
        if not stopped and not dropping and _settled(self.lab, self.node):
            return FaultState.CLEARED
        return FaultState.UNKNOWN

    def _revert(self) -> None:
        """Thaw first, still cut off: the keeper finds itself partitioned and fences its PostgreSQL
        (network_partition_timeout) before clients can reach a stale primary again."""
        self.lab.signal_node(self.node, signal.SIGCONT)
        if self.rules.present():
            time.sleep(self.lab.partition_fence_s)
        self.rules.remove()

    def arm_deadman(self, seconds: float) -> None:
        """Armed before inject, so it thaws the processes of the tree as it is now, then heals the network."""
        pids = " ".join(str(p) for p in self.lab.node_pids(self.node))
        self.rules.arm(seconds, f"kill -CONT {pids} 2>/dev/null" if pids else "")

    def disarm_deadman(self) -> None:
        self.rules.disarm()


# -- network faults ------------------------------------------------------------------
@dataclass
class Isolation(_LabFault):
    """Site isolation, witness isolation: one drop table in the router namespace."""

    spec: FaultSpec
    lab: Lab
    rules: _RouterRules

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> Isolation:
        assert isinstance(params, IsolationParams)
        lab = _lab(topology)
        return cls(spec, lab, _RouterRules(lab, _name(spec, target), firewall.isolate(_member(lab.layout, target.name))))

    def plan(self) -> FaultPlan:
        return FaultPlan(self.spec, BACKEND, inject_steps=(self.rules.describe(),),
                         revert_steps=(f"delete nft table {self.rules.table}",))

    def inject(self) -> None:
        self.rules.add()

    def _check(self) -> FaultState:
        return FaultState.IN_EFFECT if self.rules.present() else FaultState.CLEARED

    def _revert(self) -> None:
        self.rules.remove()

    def arm_deadman(self, seconds: float) -> None:
        self.rules.arm(seconds)

    def disarm_deadman(self) -> None:
        self.rules.disarm()


@dataclass
class LinkPartition(Isolation):
    """An inter-site link cut, optionally with the quorum watchdog (`sync_timeout_s`)."""

    watchdog: QuorumWatchdog | None = None

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> LinkPartition:
        assert isinstance(params, PartitionParams)
        lab = _lab(topology)
        first, second = (_member(lab.layout, site) for site in target.parts)
        rules: list[firewall.DropRule] = []
        if params.direction in ("both", "forward"):
            rules += firewall.cut(first, second)
        if params.direction in ("both", "reverse"):
            rules += firewall.cut(second, first)
        watchdog = lab.quorum_watchdog(params.sync_timeout_s) if params.sync_timeout_s is not None else None
        return cls(spec, lab, _RouterRules(lab, _name(spec, target), rules), watchdog)

    def plan(self) -> FaultPlan:
        base = super().plan()
        if self.watchdog is None:
            return base
        return FaultPlan(self.spec, BACKEND,
                         inject_steps=(*base.inject_steps, f"watchdog: standby silent {self.watchdog.timeout_s:g} s -> "
                                       "replication-quorum false on it"),
                         revert_steps=(*base.revert_steps, "replication-quorum true again once the standby streams"))

    def inject(self) -> None:
        super().inject()
        if self.watchdog is not None:
            self.watchdog.start()

    def _check(self) -> FaultState:
        state = super()._check()
        if state is FaultState.CLEARED and any(not n.replication_quorum for n in self.lab.nodes()):
            return FaultState.UNKNOWN
        return state

    def _revert(self) -> None:
        super()._revert()
        if self.watchdog is not None:
            self.watchdog.stop_and_restore()
        else:
            self.lab.restore_quorum()


@dataclass
class SiteFailure(_LabFault):
    """A whole site goes: its database node crashes and its links are cut; revert heals links, then restarts the node."""

    spec: FaultSpec
    lab: Lab
    nodes: list[str]
    rules: _RouterRules

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> SiteFailure:
        lab, site = _lab(topology), target.name
        return cls(spec, lab, _nodes_of_site(topology, site),
                   _RouterRules(lab, _name(spec, target), firewall.isolate(_member(lab.layout, site))))

    def plan(self) -> FaultPlan:
        return FaultPlan(self.spec, BACKEND,
                         inject_steps=(self.rules.describe(), *(f"SIGKILL the process tree of {n}" for n in self.nodes)),
                         revert_steps=(f"delete nft table {self.rules.table}", *(f"pg_autoctl run {n}" for n in self.nodes)))

    def inject(self) -> None:
        self.rules.add()
        for node in self.nodes:
            self.lab.kill_node(node)

    def _check(self) -> FaultState:
        down = [not self.lab.node_alive(n) for n in self.nodes]
        cut = self.rules.present()
        if cut and all(down):
            return FaultState.IN_EFFECT
        if not cut and all(_settled(self.lab, n) for n in self.nodes):
            return FaultState.CLEARED
        return FaultState.UNKNOWN

    def _revert(self) -> None:
        self.rules.remove()
        for node in self.nodes:
            self.lab.start_node(node)

    def arm_deadman(self, seconds: float) -> None:
        self.rules.arm(seconds)

    def disarm_deadman(self) -> None:
        self.rules.disarm()


@dataclass
class Latency(_LabFault):
    """Added round-trip time (and jitter, rate) on the site A <-> site B path: netem or Toxiproxy toxics."""

    spec: FaultSpec
    lab: Lab
    request: LatencyRequest

    @property
    def deadman(self) -> str:
        return f"deadman-{self.lab.layout.prefix}-latency"

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> Latency:
        assert isinstance(params, LatencyParams)
        if target.path != "site-a~site-b":
            raise ConfigError(f"{spec.kind}: the lab delays only the inter-site link (link:site-a~site-b), not {target}")
        request = LatencyRequest(rtt_ms=params.rtt_ms, jitter_ms=params.jitter_ms, rate_mbit=params.rate_mbit,
                                 loss_pct=params.loss_pct)
        return cls(spec, _lab(topology), request)

    def plan(self) -> FaultPlan:
        r = self.request
        what = f"rtt {r.rtt_ms:g} ms, jitter {r.jitter_ms:g} ms" + (f", rate {r.rate_mbit:g} Mbit/s" if r.rate_mbit else "")
        return FaultPlan(self.spec, BACKEND,
                         inject_steps=(f"{what} on site-a <-> site-b (tc netem, or Toxiproxy latency toxics "
                                       "split half downstream / half upstream)",),
                         revert_steps=("remove the netem qdiscs / the toxics",))

    def inject(self) -> None:
        self.lab.latency().apply(self.request)

    def _check(self) -> FaultState:
        active = self.lab.latency().active()
        return FaultState.IN_EFFECT if all(active.values()) else (
            FaultState.CLEARED if not any(active.values()) else FaultState.UNKNOWN)

    def _revert(self) -> None:
        self.lab.latency().clear()

    def arm_deadman(self, seconds: float) -> None:
        self.lab.start_in_router(self.deadman, self.lab.latency().deadman_argv(seconds))

    def disarm_deadman(self) -> None:
        self.lab.stop_in_router(self.deadman)


# -- database operations -------------------------------------------------------------
@dataclass
class RoleSwitchover(_LabFault):
    """Planned role move: `pg_autoctl perform switchover`.

    A planned operation has nothing to undo: revert leaves the new primary where it is
    (moving it back would be a second switchover, i.e. another fault). So `check()` means
    "the move happened" (a primary other than the one before inject is in place) until
    revert, and "the cluster is healthy again" (one primary, one synchronous secondary) after.
    """

    spec: FaultSpec
    lab: Lab
    before: str | None = None
    reverted: bool = False

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> RoleSwitchover:
        return cls(spec, _lab(topology))

    def plan(self) -> FaultPlan:
        return FaultPlan(self.spec, BACKEND, inject_steps=("pg_autoctl perform switchover (from the current primary)",),
                         revert_steps=("nothing to undo; wait for one primary + one synchronous secondary",))

    def inject(self) -> None:
        self.reverted = False
        self.before = self.lab.primary()
        self.lab.switchover(self.before)

    def _check(self) -> FaultState:
        if self.reverted:
            return FaultState.CLEARED if self.lab.healthy() else FaultState.UNKNOWN
        try:
            now = self.lab.primary()
        except ControlPlaneError:
            return FaultState.UNKNOWN
        return FaultState.IN_EFFECT if self.before is not None and now != self.before else FaultState.UNKNOWN

    def _revert(self) -> None:
        self.reverted = True


@dataclass
class StorageLoss(_LabFault):
    """A replica's disk is lost (vSAN disk / disk-group failure analog) and rebuilt from the primary.

    Inject: stop the node, wipe its data directory and keeper state, drop it from the monitor,
    and start the rebuild at once (`pg_autoctl create postgres --run` with a throttled base
    backup, `max_rate`), as vSAN resyncs a failed component. In effect while the node is not
    a settled secondary; `Lab.resync_progress()` gives the bytes. Revert restarts the rebuild
    if nothing runs it (e.g. after a harness crash), then the runner waits for the rejoin.
    """

    spec: FaultSpec
    lab: Lab
    node: str
    max_rate: str

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> StorageLoss:
        assert isinstance(params, StorageLossParams)
        return cls(spec, _lab(topology), target.name, params.max_rate)

    def plan(self) -> FaultPlan:
        return FaultPlan(self.spec, BACKEND,
                         inject_steps=(f"SIGKILL {self.node}; delete its pgdata and keeper state; remove it from the monitor",
                                       f"re-create it from the primary: base backup throttled to {self.max_rate}/s"),
                         revert_steps=("restart the rebuild if it is not running; wait until it is a secondary again",))

    def inject(self) -> None:
        if self.lab.primary() == self.node:
            raise ConfigError(f"{self.spec.target}: {self.node} is the primary; storage loss is injected on the replica "
                              "(switch roles first)")
        self.lab.lose_storage(self.node)
        self.lab.rebuild_storage(self.node, self.max_rate)

    def _check(self) -> FaultState:
        return FaultState.CLEARED if _settled(self.lab, self.node) and self.lab.healthy() else FaultState.IN_EFFECT

    def _revert(self) -> None:
        if self.lab.node_alive(self.node):
            return
        if self.lab.has_data(self.node):
            self.lab.start_node(self.node)
            return
        self.lab.lose_storage(self.node)
        self.lab.rebuild_storage(self.node, self.max_rate)


def _name(spec: FaultSpec, target: Target) -> str:
    return f"{spec.kind}-{target.path}"
