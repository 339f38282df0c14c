"""The Linux L3 router between the sites, over SSH: link partitions by nft, latency by `tc netem`.

The rules come from `faults.netrules`, the same text the embedded lab applies in its router
namespace. It must never touch what it did not create, and never leave a fault behind:

- Each fault instance has an id (`spec.instance`, journaled with the spec) in the name
  of everything it creates. A partition is an nft table of its own (`harness_<id>_<target>`):
  inject is one atomic `nft -f`, revert deletes that table and no other. Latency is an htb root
  with the harness's reserved handle `7a31:` whose default class is the instance's tag, with a
  netem class selected by the other site's networks (other traffic is not delayed); a port whose
  root is not a kernel default is refused at preflight, and a root is deleted only if it is
  provably this instance's (the kernel refuses the delete for any other handle).
- Fail closed: only a positive observation (a listing without the table, a root that is not
  ours) is CLEARED; an error is UNKNOWN. Revert always sends its guarded delete; after an inject
  that returned no status it first waits for that command to end on the router.
- A dead man's switch on the router (`setsid sh -c 'sleep N; undo' <marker>`) ends the fault if
  the harness is cut off; its pid is in `/run/<marker>.pid`, and disarm ends exactly that process.
- Every value that reaches the router's shell is quoted; names never reach it unencoded.
- Preflight checks tools and privileges (CAP_NET_ADMIN; `nft list tables` for partitions).
"""

from __future__ import annotations

import logging
import shlex
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from faults.base import FaultPlan, FaultSpec, FaultState, UnknownState
from faults.kinds import Direction, IsolationParams, LatencyParams, Params, PartitionParams, fault_kind
from faults.netrules import (
    ROOT_HANDLE,
    DropRule,
    Netem,
    clear_harness_root_command,
    clear_owned_root_line,
    deadman_arm_command,
    deadman_disarm_command,
    delete_table_command,
    drop_table_script,
    has_netem,
    is_harness_root,
    marked,
    owns_root,
    qdisc_kind,
    running_command,
    shell_line,
    table_name,
)
from faults.transports.shell import CommandResult, Shell
from harness_kernel.errors import ConfigError, ControlPlaneError
from harness_kernel.topology.models import Link, Router, Topology
from harness_kernel.topology.targets import Target, TargetKind

log = logging.getLogger(__name__)

BACKEND = "router"
CAP_NET_ADMIN = 12  # the capability bit nft and tc need (linux/capability.h)
INFLIGHT_WAIT_S = 30.0


@dataclass(frozen=True)
class RoutedLink:
    """A link of the topology with what the router needs: its interfaces and each side's networks."""

    router: Router
    link: Link
    networks: dict[str, tuple[str, ...]]

    def interface(self, site: str) -> str:
        try:
            return self.link.interfaces[site]
        except KeyError:
            raise ConfigError(f"router {self.router.name}: link {self.link.name} names no interface for {site!r} "
                              f"(routers[].links[].interfaces)") from None


def site_networks(topology: Topology, site: str) -> tuple[str, ...]:
    """A site's subnets; the witness's own address when `site` is the witness's site."""
    for index, candidate in enumerate(topology.sites):
        if candidate.name == site:
            if not candidate.subnets:
                raise ConfigError(f"sites[{index}].subnets: site {site!r} needs its subnets for router faults")
            return tuple(candidate.subnets)
    if topology.witness is not None and site in (topology.witness.site, topology.witness.name):
        return (f"{topology.witness.address}/32",)
    raise ConfigError(f"link names site {site!r}, which is neither in sites nor the witness's site")


def routed_links(topology: Topology, target: Target) -> list[RoutedLink]:
    """`link:A~B` is that link; `witness:NAME` is every link to the witness's site."""
    found = []
    for router in topology.routers:
        for link in router.links:
            witness = topology.witness
            wanted = (link.name == target.path if target.kind is TargetKind.LINK else
                      target.kind is TargetKind.WITNESS and witness is not None and target.path == witness.name
                      and (witness.site or witness.name) in link.between)
            if wanted:
                found.append(RoutedLink(router, link, {s: site_networks(topology, s) for s in link.between}))
    if not found:
        raise ConfigError(f"{target}: no router link carries it (routers[].links)")
    return found


def _one_router(links: list[RoutedLink], target: str) -> Router:
    routers = {rl.router.name for rl in links}
    if len(routers) != 1:
        raise ConfigError(f"{target}: its links run through several routers ({', '.join(sorted(routers))}); "
                          "name one link per fault")
    return links[0].router


@dataclass
class _OnRouter:
    """What every router fault shares: the SSH session, its instance id, a dead man's switch and a preflight.

    `instance` (`spec.instance`: 12 hex digits the journal keeps, so `recover` rebuilds the
    very same fault) names everything the fault creates on the router: its nft table, the `default`
    class of its root qdisc, its dead man's switch and the marker of its inject commands. Nothing
    is deleted that does not carry it.
    """

    spec: FaultSpec
    router: Router
    shell: Shell
    credentials: tuple[str, ...]
    instance: str
    effects: frozenset[str] = field(default=frozenset(), kw_only=True)
    """The links (or, for the lab's own cuts, the sites and hosts) it cuts off: the allow-list judges these."""
    inflight_wait_s: float = field(default=INFLIGHT_WAIT_S, repr=False)
    _unsettled: bool = field(default=False, init=False, repr=False)
    _unknown: UnknownState = field(default_factory=UnknownState, init=False, repr=False)

    @property
    def marker(self) -> str:
        """The dead man's switch's name on the router: `$0` of its shell and the name of its pid file."""
        return f"harness-deadman-{self.instance}"

    @property
    def inject_marker(self) -> str:
        return f"harness-inject-{self.instance}"

    def undo_line(self) -> str:
        """The shell line that ends the fault (the dead man's switch runs it); it touches only what is ours."""
        raise NotImplementedError

    def tools(self) -> tuple[str, ...]:
        """Programs the router must have."""
        raise NotImplementedError

    def _remove(self) -> None:
        """Send the (idempotent, ownership-guarded) delete; raise if the router did not do it."""
        raise NotImplementedError

    def _observe(self) -> FaultState:
        raise NotImplementedError

    # -- preflight ---------------------------------------------------------------------
    def preflight(self) -> None:
        """Reachable, host key right, tools present, privileges enough: said before anything is journaled or touched."""
        probe = [f"command -v {tool} >/dev/null" for tool in self.tools()]
        done = self.shell.run(" && ".join([*probe, "printf 'x\\000' | grep -zqxF x", "grep '^CapEff:' /proc/self/status"]))
        if done.status != 0:
            raise ControlPlaneError(f"router {self.router.name}: needs {', '.join(self.tools())} on the PATH "
                                    f"(and a grep with -z)")
        caps = done.stdout.split()[-1] if done.stdout.split() else ""
        try:
            net_admin = int(caps, 16) >> CAP_NET_ADMIN & 1
        except ValueError:
            raise ControlPlaneError(f"router {self.router.name}: cannot read the login's capabilities "
                                    f"(CapEff: {caps!r})") from None
        if not net_admin:
            raise ControlPlaneError(f"router {self.router.name}: the login {self.shell.where} lacks CAP_NET_ADMIN, "
                                    "which nft and tc need to change anything; log in as root")

    # -- the dead man's switch -----------------------------------------------------------
    def arm_deadman(self, seconds: float) -> None:
        self.shell.check(deadman_arm_command(self.marker, seconds, self.undo_line()))

    def disarm_deadman(self) -> None:
        self.shell.check(deadman_disarm_command(self.marker))

    # -- inject, check, revert ------------------------------------------------------------
    def _inject_step(self, command: str, input_text: str | None = None) -> CommandResult:
        """One inject command, marked, so a revert can wait for it if its status never came back."""
        self._unsettled = True  # until a status comes back, the command may still take effect
        done = self.shell.run(marked(command, self.inject_marker), input_text=input_text)
        self._unsettled = False
        return done

    def _settle(self) -> None:
        """After an inject that returned no status: wait for its command to end on the router (or fail)."""
        if not self._unsettled:
            return
        deadline = time.monotonic() + self.inflight_wait_s
        while True:
            done = self.shell.run(running_command(self.inject_marker))
            if done.status == 0 and done.stdout.strip():
                running = True
            elif done.status == 1 or (done.status == 2 and not done.stderr.strip()):
                running = False
            else:
                raise ControlPlaneError(f"router {self.router.name}: cannot tell whether an inject is still running: "
                                        f"{(done.stderr or done.stdout).strip()[-300:]}")
            if not running:
                self._unsettled = False
                return
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"router {self.router.name}: an inject of {self.spec.kind} on {self.spec.target} "
                                        f"is still running after {self.inflight_wait_s:.0f} s; not reverting under it")
            time.sleep(min(0.5, self.inflight_wait_s))

    def check(self) -> FaultState:
        state = self._observe()
        if state is FaultState.CLEARED and self._unsettled:
            return self._unknown_because("an inject command returned no status and may still take effect")
        return state

    def _unknown_because(self, reason: str) -> FaultState:
        return self._unknown.because(self.spec, reason)

    def revert(self) -> None:
        """Always send the delete; once the fault is positively gone, disarm the switch (recover relies on it)."""
        self._settle()
        self._remove()
        if self.check() is FaultState.CLEARED:
            try:
                self.disarm_deadman()
            except ControlPlaneError as exc:  # its undo touches only this fault's own objects, now gone
                log.warning("%s on %s: cleared, but the dead man's switch was not disarmed: %s",
                            self.spec.kind, self.spec.target, exc)

    def _plan(self, inject: tuple[str, ...], revert: tuple[str, ...]) -> FaultPlan:
        via = f"{BACKEND} {self.router.name} over {self.shell.wire} {self.shell.where}"
        return FaultPlan(self.spec, via, inject, revert, self.credentials, effects=self.effects)


@dataclass
class RouterPartition(_OnRouter):
    """Drop traffic between the link's sites, one direction or both, in an nft table of this fault's own."""

    rules: list[DropRule] = field(default_factory=list)

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> RouterPartition:
        return build_partition(spec, topology, params=params, target=target)

    @property
    def table(self) -> str:
        return table_name(f"harness_{self.instance}_", self.spec.target)

    def tools(self) -> tuple[str, ...]:
        return ("nft", "setsid", "grep", "sleep")

    def undo_line(self) -> str:
        return f"{delete_table_command(self.table)} 2>/dev/null"

    def preflight(self) -> None:
        super().preflight()
        done = self.shell.run("nft list tables")  # the privilege probe: it fails for a login that may not use nft
        if done.status != 0:
            raise ControlPlaneError(f"router {self.router.name}: `nft list tables` failed at preflight: "
                                    f"{(done.stderr or done.stdout).strip()[-300:]}")
        if self.table in _inet_tables(done.stdout):
            raise ConfigError(f"router {self.router.name}: nft table {self.table} is already there (this fault's "
                              "own, from an earlier attempt?); run `python -m harness recover` first")

    def plan(self) -> FaultPlan:
        rules = "; ".join(r.render() for r in self.rules)
        return self._plan((f"nft table inet {self.table}: {rules}",), (delete_table_command(self.table),))

    def inject(self) -> None:
        done = self._inject_step("nft -f -", input_text=drop_table_script(self.table, self.rules))
        if done.status != 0:
            raise ControlPlaneError(f"router {self.router.name}: `nft -f -` failed ({done.status}): "
                                    f"{(done.stderr or done.stdout).strip()[-500:]}")

    def _observe(self) -> FaultState:
        done = self.shell.run("nft list tables")
        if done.status != 0:
            return self._unknown_because(f"`nft list tables` failed ({done.status}): {done.stderr.strip()[-300:]}")
        return FaultState.IN_EFFECT if self.table in _inet_tables(done.stdout) else FaultState.CLEARED

    def _remove(self) -> None:
        done = self.shell.run(delete_table_command(self.table))
        if done.status != 0 and "No such file or directory" not in done.stderr:
            raise ControlPlaneError(f"router {self.router.name}: `{delete_table_command(self.table)}` failed "
                                    f"({done.status}): {(done.stderr or done.stdout).strip()[-300:]}")


def _inet_tables(listing: str) -> set[str]:
    """Table names in `nft list tables` output."""
    return {line.split()[2] for line in listing.splitlines() if line.split()[:2] == ["table", "inet"] and len(line.split()) > 2}


@dataclass
class RouterLatency(_OnRouter):
    """Netem on the router port toward each side, for packets from the other side.

    The root qdisc is the harness's reserved `htb 7a31:` and its default class is this fault's tag,
    so a root is deleted only if it is provably this fault's; a port whose root is not a kernel
    default is refused at preflight (the fault would replace the operator's qdisc)."""

    shapes: list[Netem] = field(default_factory=list)
    roots_before: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> RouterLatency:
        return build_latency(spec, topology, params=params, target=target)

    @property
    def devices(self) -> list[str]:
        return [shape.dev for shape in self.shapes]

    @property
    def tag(self) -> int:
        return instance_tag(self.instance)

    def tools(self) -> tuple[str, ...]:
        return ("tc", "setsid", "grep", "sleep")

    def undo_line(self) -> str:
        return "; ".join(f"{{ {clear_owned_root_line(dev, self.tag)}; }} 2>/dev/null" for dev in self.devices)

    def preflight(self) -> None:
        super().preflight()
        for dev in self.devices:
            root = self._root(dev, at="preflight")
            if root is None:
                raise ConfigError(f"router {self.router.name}: no interface {dev!r} (routers[].links[].interfaces)")
            if is_harness_root(root):
                raise ConfigError(f"router {self.router.name}: {dev} already carries a harness latency qdisc "
                                  f"({root.strip()}), left by another fault; run `python -m harness recover` first")
            if root.split()[2:3] != ["0:"]:  # the kernel's default has handle 0:, anything configured has its own
                raise ConfigError(f"router {self.router.name}: {dev} has its own root qdisc ({root.strip()}), "
                                  "which the latency fault would replace; refusing")
            self.roots_before[dev] = root.strip()

    def _root(self, dev: str, at: str) -> str | None:
        """`dev`'s root qdisc line; None if there is no such device; raises if the router cannot say."""
        done = self.shell.run(f"tc qdisc show dev {shlex.quote(dev)} root")
        if done.status != 0:
            if "Cannot find device" in done.stderr:
                return None
            raise ControlPlaneError(f"router {self.router.name}: `tc qdisc show dev {dev} root` failed at {at} "
                                    f"({done.status}): {done.stderr.strip()[-300:]}")
        return done.stdout.splitlines()[0] if done.stdout.strip() else "qdisc noqueue 0: root"

    def plan(self) -> FaultPlan:
        inject = tuple(shell_line(argv) for shape in self.shapes for argv in shape.commands())
        revert = tuple(f"{shell_line(clear_harness_root_command(dev))}  (only if its root is this fault's: "
                       f"htb {ROOT_HANDLE} default {self.tag:x})" for dev in self.devices)
        return self._plan(inject, revert)

    def inject(self) -> None:
        for shape in self.shapes:
            for argv in shape.commands():
                done = self._inject_step(shell_line(argv))
                if done.status != 0:
                    reason, kind = done.stderr.strip(), qdisc_kind(argv)
                    hint = f" (the router's kernel has no sch_{kind})" if kind and "unknown" in reason.lower() else ""
                    raise ControlPlaneError(f"router {self.router.name}: `{shell_line(argv)}` failed: {reason}{hint}")

    def _observe(self) -> FaultState:
        states: set[FaultState] = set()
        for dev in self.devices:
            done = self.shell.run(f"tc qdisc show dev {shlex.quote(dev)}")
            if done.status != 0:
                if "Cannot find device" in done.stderr:
                    states.add(FaultState.CLEARED)  # no port, no qdisc on it
                    continue
                return self._unknown_because(f"`tc qdisc show dev {dev}` failed ({done.status}): "
                                             f"{done.stderr.strip()[-300:]}")
            ours = any(owns_root(line, self.tag) for line in done.stdout.splitlines())
            states.add(FaultState.CLEARED if not ours else
                       FaultState.IN_EFFECT if has_netem(done.stdout) else FaultState.UNKNOWN)
        return states.pop() if len(states) == 1 else FaultState.UNKNOWN

    def _remove(self) -> None:
        for dev in self.devices:
            root = self._root(dev, at="revert")
            if root is not None and owns_root(root, self.tag):
                self.shell.check(shell_line(clear_harness_root_command(dev)))


# -- builders -----------------------------------------------------------------------
def _session(spec: FaultSpec, topology: Topology, router: Router, shell: Shell | None) -> dict[str, Any]:
    """The fault's fields for `router`: over SSH as the topology names it, unless a shell is given
    (the embedded lab's router is a namespace on this machine: a `LocalShell`)."""
    creds: tuple[str, ...] = ()
    if shell is None:
        from faults.transports.ssh import SshShell, endpoint_named  # paramiko (the router extra) only for SSH

        index, endpoint = endpoint_named(topology, router.ssh)
        path = f"management.ssh[{index}]"
        creds = tuple(f"{path}.{name}" for name in ("key_file", "password") if getattr(endpoint, name) is not None)
        shell = SshShell(endpoint, path)
    return {"spec": spec, "router": router, "shell": shell, "credentials": creds, "instance": spec.instance}


def instance_tag(instance: str) -> int:
    """The htb class minor (0x1000..0xefff) that marks this instance's root qdisc."""
    return 0x1000 + int(instance[:4], 16) % 0xE000


def _directed(direction: Direction, link: RoutedLink) -> Iterator[tuple[str, str]]:
    """(from site, to site) pairs the fault acts on; 'forward' is the link's first site to its second."""
    first, second = link.link.between
    if direction in ("both", "forward"):
        yield first, second
    if direction in ("both", "reverse"):
        yield second, first


def _typed(spec: FaultSpec, params: Params | None, target: Target | None) -> tuple[Params, Target]:
    """The spec's params and target as the fault table parses them (given by the registry, or parsed here once)."""
    return (params if params is not None else fault_kind(spec.kind).parse_params(spec.params),
            target if target is not None else Target.parse(spec.target))


def build_partition(spec: FaultSpec, topology: Topology, shell: Shell | None = None, *,
                    params: Params | None = None, target: Target | None = None) -> RouterPartition:
    params, target = _typed(spec, params, target)
    assert isinstance(params, PartitionParams | IsolationParams)
    links = routed_links(topology, target)
    rules = [DropRule(saddr=src_net, daddr=dst_net)
             for link in links for src, dst in _directed(params.direction, link)
             for src_net in link.networks[src] for dst_net in link.networks[dst]]
    return RouterPartition(**_session(spec, topology, _one_router(links, spec.target), shell), rules=rules,
                           effects=_links_cut(links))


def build_latency(spec: FaultSpec, topology: Topology, shell: Shell | None = None, *,
                  params: Params | None = None, target: Target | None = None) -> RouterLatency:
    params, target = _typed(spec, params, target)
    assert isinstance(params, LatencyParams)
    links = routed_links(topology, target)
    if target.kind is not TargetKind.LINK or len(links) != 1:
        raise ConfigError(f"latency: target must be one link (link:A~B), not {spec.target!r}")
    link = links[0]
    session = _session(spec, topology, link.router, shell)
    tag = instance_tag(session["instance"])
    shapes = [Netem(link.interface(dst), link.networks[src], params.rtt_ms / 2, params.jitter_ms / 2, params.loss_pct,
                    params.rate_mbit, tag) for src, dst in _directed("both", link)]
    return RouterLatency(**session, shapes=shapes, effects=_links_cut(links))


def _links_cut(links: list[RoutedLink]) -> frozenset[str]:
    return frozenset(str(Target.of(TargetKind.LINK, *link.link.between)) for link in links)
