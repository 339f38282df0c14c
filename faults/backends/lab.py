"""The embedded lab's own controls: its processes, its router's nft tables, Toxiproxy, pg_auto_failover.

One small class per fault kind, driving the lab through its public API. Network cuts are the
production router backend's `RouterPartition` over a `LocalShell` in the lab's router
namespace (the same nft tables, fail-closed checks and dead man's switch a real router gets);
inter-site latency is the router's `RouterLatency` where the kernel has netem, and Toxiproxy
toxics otherwise. Every `check()` looks at the real thing; every `revert()` is idempotent, so
`python -m harness recover` may run it again; a lab that is down has nothing left broken.
"""

from __future__ import annotations

import logging
import shlex
import signal
from dataclasses import dataclass

from faults.backends.router import RouterLatency, RouterPartition, build_latency, build_partition
from faults.base import Fault, FaultPlan, FaultSpec, FaultState
from faults.kinds import LatencyParams, Params, PartitionParams, StorageLossParams
from faults.netrules import DropRule, deadman_arm_command, deadman_disarm_command
from faults.transports.shell import LocalShell
from harness_kernel import procs
from harness_kernel.errors import ConfigError, ControlPlaneError
from harness_kernel.topology.models import Topology
from harness_kernel.topology.targets import Target, TargetKind
from harness_lab.controller import Lab
from harness_lab.latency import NETEM, LatencyRequest
from harness_lab.layout import LabLayout, Member
from harness_lab.watchdog import QuorumWatchdog

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


def isolate(member: Member, address: str | None = None) -> list[DropRule]:
    """Everything to and from a member (or only one address on its link): in, forwarded and router-made."""
    if address:
        return [DropRule(saddr=address), DropRule(daddr=address)]
    return [DropRule(iif=member.veth_router), DropRule(daddr=member.network), DropRule(oif=member.veth_router)]


def _router_shell(lab: Lab) -> LocalShell:
    return LocalShell(lab.layout.router_netns)


def _cut(lab: Lab, spec: FaultSpec, topology: Topology, rules: list[DropRule]) -> RouterPartition:
    """A drop table of this fault's own in the lab's router namespace, as the router backend makes it.

    It cuts off the fault's own target (a site, or one host's address), and says so to the allow-list."""
    return RouterPartition(spec=spec, router=topology.routers[0], shell=_router_shell(lab), credentials=(),
                           instance=spec.instance, rules=rules, effects=frozenset({spec.target}))


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
    cut: RouterPartition

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> HostHang:
        lab, host = _lab(topology), target.name
        member = _member(lab.layout, topology.site_of(host).name)
        return cls(spec, lab, _node_of_host(topology, host),
                   _cut(lab, spec, topology, isolate(member, topology.host(host).address)))

    def plan(self) -> FaultPlan:
        cut = self.cut.plan()
        return FaultPlan(self.spec, BACKEND, inject_steps=(*cut.inject_steps, f"SIGSTOP the process tree of {self.node}"),
                         revert_steps=(f"SIGCONT the process tree of {self.node}, still cut off",
                                       f"if the monitor promoted another node meanwhile, kill {self.node}'s tree "
                                       "(the lab's fence, modelled: pg_auto_failover does not fence a primary that "
                                       "lost its monitor and standby at once)",
                                       *cut.revert_steps, f"start {self.node} again if it was fenced"))

    def preflight(self) -> None:
        self.cut.preflight()

    def inject(self) -> None:
        self.cut.inject()
        if not self.lab.freeze_node(self.node):
            raise ControlPlaneError(f"{self.spec.target}: {self.node} has no running process to freeze, "
                                    "or part of it kept running")

    def _check(self) -> FaultState:
        stopped = self.lab.node_stopped_fraction(self.node)
        dropping = self.cut.check()
        if stopped == 1.0 and dropping is FaultState.IN_EFFECT:
            return FaultState.IN_EFFECT
        if not stopped and dropping is FaultState.CLEARED and _settled(self.lab, self.node):
            return FaultState.CLEARED
        return FaultState.UNKNOWN

    def _revert(self) -> None:
        """Thaw first, still cut off, and heal the network only once the thawed node takes no write: a node the
        HA manager replaced meanwhile is fenced by the lab first (`Lab.fence_if_replaced`), so clients never reach
        a stale primary. A node that cannot be fenced in time stays cut off and the revert fails (asked again)."""
        self.lab.signal_node(self.node, signal.SIGCONT)
        if self.cut.check() is not FaultState.CLEARED:
            log.info("%s: %s", self.spec.target, self.lab.fence_if_replaced(self.node))
        self.cut.revert()
        if not self.lab.node_alive(self.node):  # fenced: it starts again and rejoins as the HA manager says
            self.lab.start_node(self.node)

    def arm_deadman(self, seconds: float) -> None:
        """Armed before inject; when it fires it thaws the node's tree as it is *then* (children forked while it was
        being frozen included), if its root is still the same process, and heals the network."""
        root = self.lab.node_root(self.node)
        ticks = procs.start_ticks(root) if root is not None else None
        thaw = f"{procs.continue_tree_command(root, ticks)}; " if root is not None and ticks is not None else ""
        self.cut.shell.check(deadman_arm_command(self.cut.marker, seconds, thaw + self.cut.undo_line()))

    def disarm_deadman(self) -> None:
        self.cut.disarm_deadman()


# -- network faults ------------------------------------------------------------------
@dataclass
class _OnLabRouter(_LabFault):
    """A router backend fault on the lab's router namespace; only "the lab is gone, so it is cleared" is added."""

    spec: FaultSpec
    lab: Lab
    inner: RouterPartition | RouterLatency

    def plan(self) -> FaultPlan:
        return self.inner.plan()

    def preflight(self) -> None:
        self.inner.preflight()

    def inject(self) -> None:
        self.inner.inject()

    def _check(self) -> FaultState:
        return self.inner.check()

    def _revert(self) -> None:
        self.inner.revert()

    def arm_deadman(self, seconds: float) -> None:
        self.inner.arm_deadman(seconds)

    def disarm_deadman(self) -> None:
        self.inner.disarm_deadman()


@dataclass
class Isolation(_OnLabRouter):
    """A site or the witness cut off: the router backend's partition in the lab's router namespace.

    The witness goes through the very rules a real router gets (every link to the witness's
    site); a site also loses its clients (the lab's own rule: everything in and out of its port).
    """

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> Isolation:
        lab = _lab(topology)
        if target.kind is TargetKind.WITNESS:
            return cls(spec, lab, build_partition(spec, topology, _router_shell(lab), params=params, target=target))
        return cls(spec, lab, _cut(lab, spec, topology, isolate(_member(lab.layout, target.name))))


@dataclass
class LinkPartition(Isolation):
    """An inter-site link cut (the router backend's rules), optionally with the quorum watchdog (`sync_timeout_s`)."""

    watchdog: QuorumWatchdog | None = None

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> LinkPartition:
        assert isinstance(params, PartitionParams)
        lab = _lab(topology)
        watchdog = lab.quorum_watchdog(params.sync_timeout_s) if params.sync_timeout_s is not None else None
        return cls(spec, lab, build_partition(spec, topology, _router_shell(lab), params=params, target=target), watchdog)

    def plan(self) -> FaultPlan:
        base = super().plan()
        if self.watchdog is None:
            return base
        return FaultPlan(self.spec, base.backend, effects=base.effects,
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
    cut: RouterPartition

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> SiteFailure:
        lab, site = _lab(topology), target.name
        return cls(spec, lab, _nodes_of_site(topology, site), _cut(lab, spec, topology, isolate(_member(lab.layout, site))))

    def plan(self) -> FaultPlan:
        cut = self.cut.plan()
        return FaultPlan(self.spec, BACKEND,
                         inject_steps=(*cut.inject_steps, *(f"SIGKILL the process tree of {n}" for n in self.nodes)),
                         revert_steps=(*cut.revert_steps, *(f"pg_autoctl run {n}" for n in self.nodes)))

    def preflight(self) -> None:
        self.cut.preflight()

    def inject(self) -> None:
        self.cut.inject()
        for node in self.nodes:
            self.lab.kill_node(node)

    def _check(self) -> FaultState:
        down = [not self.lab.node_alive(n) for n in self.nodes]
        cut = self.cut.check()
        if cut is FaultState.IN_EFFECT and all(down):
            return FaultState.IN_EFFECT
        if cut is FaultState.CLEARED and all(_settled(self.lab, n) for n in self.nodes):
            return FaultState.CLEARED
        return FaultState.UNKNOWN

    def _revert(self) -> None:
        self.cut.revert()
        for node in self.nodes:
            self.lab.start_node(node)

    def arm_deadman(self, seconds: float) -> None:
        self.cut.arm_deadman(seconds)

    def disarm_deadman(self) -> None:
        self.cut.disarm_deadman()


@dataclass
class Latency(_LabFault):
    """Added round-trip time (and jitter, rate) on the site A <-> site B path through Toxiproxy toxics.

    Where the kernel has `sch_netem`, `from_spec` returns the router backend's `RouterLatency`
    over the lab's router namespace instead.
    """

    spec: FaultSpec
    lab: Lab
    request: LatencyRequest

    @property
    def marker(self) -> str:
        return f"harness-deadman-{self.spec.instance}"

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> Fault:
        assert isinstance(params, LatencyParams)
        if target.path != "site-a~site-b":
            raise ConfigError(f"{spec.kind}: the lab delays only the inter-site link (link:site-a~site-b), not {target}")
        lab = _lab(topology)
        if lab.latency_mechanism == NETEM:
            return _OnLabRouter(spec, lab, build_latency(spec, topology, _router_shell(lab), params=params, target=target))
        request = LatencyRequest(rtt_ms=params.rtt_ms, jitter_ms=params.jitter_ms, rate_mbit=params.rate_mbit,
                                 loss_pct=params.loss_pct)
        return cls(spec, lab, request)

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
        undo = shlex.join(self.lab.latency().clear_argv())
        _router_shell(self.lab).check(deadman_arm_command(self.marker, seconds, undo))

    def disarm_deadman(self) -> None:
        _router_shell(self.lab).check(deadman_disarm_command(self.marker))


# -- database operations -------------------------------------------------------------
@dataclass
class ReplicationAsync(_LabFault):
    """The database's standby dropped from the write quorum: the primary acknowledges commits alone.

    A setting, journaled like any fault so that the run's revert, the guardian and `recover` all
    put it back (pg_auto_failover's replication-quorum of every node true: the lab's own
    setting). Cleared when the monitor holds every node in the quorum again; the primary names
    its standby synchronous again through pg_auto_failover's apply_settings."""

    spec: FaultSpec
    lab: Lab

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> ReplicationAsync:
        return cls(spec, _lab(topology))

    def plan(self) -> FaultPlan:
        return FaultPlan(self.spec, BACKEND,
                         inject_steps=("pgautofailover.set_node_replication_quorum(<the standby>, false) on the monitor",),
                         revert_steps=("pgautofailover.set_node_replication_quorum(<each node>, true) on the monitor",))

    def inject(self) -> None:
        standbys = [n.name for n in self.lab.nodes() if n.reportedstate == "secondary"]
        if not standbys:
            raise ControlPlaneError(f"{self.spec.target}: no secondary to drop from the write quorum")
        for node in standbys:
            self.lab.pg.set_replication_quorum(node, False)

    def _check(self) -> FaultState:
        try:
            quorum = [n.replication_quorum for n in self.lab.nodes()]
        except ControlPlaneError:
            return FaultState.UNKNOWN
        return FaultState.CLEARED if all(quorum) else FaultState.IN_EFFECT

    def _revert(self) -> None:
        for node in self.lab.nodes():
            if not node.replication_quorum:
                self.lab.pg.set_replication_quorum(node.name, True)


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
        """Cleared once the node is a settled secondary again with the lab's keeper settings (a rebuilt keeper
        starts from pg_autoctl's defaults: a 20 s partition timeout and the fault's throttle)."""
        rejoined = _settled(self.lab, self.node) and self.lab.healthy()
        return FaultState.CLEARED if rejoined and self.lab.keeper_configured(self.node) else FaultState.IN_EFFECT

    def _revert(self) -> None:
        if self.lab.node_alive(self.node):
            if _settled(self.lab, self.node) and not self.lab.keeper_configured(self.node):
                self.lab.configure_keeper(self.node)  # the rebuild is done: the lab's settings back
            return
        if self.lab.has_data(self.node):
            self.lab.start_node(self.node)
            return
        self.lab.lose_storage(self.node)
        self.lab.rebuild_storage(self.node, self.max_rate)


def _name(spec: FaultSpec, target: Target) -> str:
    return f"{spec.kind}-{target.path}"
