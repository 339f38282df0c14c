"""The Linux L3 router between the sites, over SSH: link partitions by nft, latency by `tc netem`.

The rules come from `faults.netrules`, the same text the embedded lab applies in its router
namespace. A partition is one nft table of the harness's own (`harness_<target>`): inject is
one atomic `nft -f`, check is "does the table exist", revert deletes it. Latency is a classful
qdisc with a netem band on the router port toward each site, selected by the other site's
networks (an htb root with a netem class), so other traffic is not delayed; it is refused on
a port whose root qdisc is not a kernel default, which the fault would otherwise replace. Both arm a dead man's switch on the
router itself (`setsid sh -c 'sleep N; undo'`) so the fault ends even if the harness is cut off.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from faults.base import FaultPlan, FaultSpec, FaultState
from faults.kinds import Params
from faults.netrules import (
    ROOT_HANDLE,
    DropRule,
    Netem,
    clear_qdisc_command,
    deadman_script,
    delete_table_command,
    drop_table_script,
    qdisc_kind,
    shell_line,
    table_name,
)
from faults.transports.ssh import SshShell, endpoint_named
from harness.errors import ConfigError, ControlPlaneError
from harness.topology.models import Link, Router, Topology
from harness.topology.targets import Target

BACKEND = "router"
DIRECTIONS = ("both", "forward", "reverse")
DEFAULT_ROOT_QDISCS = ("noqueue", "fq_codel", "pfifo_fast", "mq", "fq", "noop", "pfifo", "cake")


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


def routed_links(topology: Topology, target: str) -> list[RoutedLink]:
    """`link:A~B` is that link; `witness:NAME` is every link to the witness's site."""
    kind, _, name = target.partition(":")
    found = []
    for router in topology.routers:
        for link in router.links:
            witness = topology.witness
            wanted = (link.name == name if kind == "link" else
                      kind == "witness" and witness is not None and name == witness.name
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
    """What every router fault shares: the SSH session, a dead man's switch and a preflight."""

    spec: FaultSpec
    router: Router
    shell: SshShell
    credentials: tuple[str, ...]
    slug: str = ""

    @property
    def marker(self) -> str:
        return f"harness-deadman-{self.slug}"

    def undo_line(self) -> str:
        """The shell line that ends the fault (the dead man's switch runs it)."""
        raise NotImplementedError

    def tools(self) -> tuple[str, ...]:
        """Programs the router must have."""
        raise NotImplementedError

    def preflight(self) -> None:
        """Reachable, host key right, tools present: said before anything is journaled or touched."""
        done = self.shell.run(" && ".join(f"command -v {tool} >/dev/null" for tool in self.tools()))
        if done.status != 0:
            raise ControlPlaneError(f"router {self.router.name}: needs {', '.join(self.tools())} on the PATH")

    def arm_deadman(self, seconds: float) -> None:
        script = deadman_script(self.marker, seconds, self.undo_line())
        self.shell.check(f"setsid sh -c {shlex.quote(script)} </dev/null >/dev/null 2>&1 &")

    def disarm_deadman(self) -> None:
        # the bracket keeps pkill's pattern from matching the shell that runs pkill
        self.shell.run(f"pkill -f {shlex.quote('[' + self.marker[0] + ']' + self.marker[1:])}; true")

    def _plan(self, inject: tuple[str, ...], revert: tuple[str, ...]) -> FaultPlan:
        via = f"{BACKEND} {self.router.name} over ssh {self.shell.where}"
        return FaultPlan(self.spec, via, inject, revert, self.credentials)


@dataclass
class RouterPartition(_OnRouter):
    """Drop traffic between the link's sites, one direction or both."""

    rules: list[DropRule] = field(default_factory=list)

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> RouterPartition:
        return build_partition(spec, topology)

    @property
    def table(self) -> str:
        return table_name("harness_", self.slug)

    def tools(self) -> tuple[str, ...]:
        return ("nft", "setsid", "pkill")

    def undo_line(self) -> str:
        return f"{delete_table_command(self.table)} 2>/dev/null"

    def plan(self) -> FaultPlan:
        rules = "; ".join(r.render() for r in self.rules)
        return self._plan((f"nft table inet {self.table}: {rules}",), (delete_table_command(self.table),))

    def inject(self) -> None:
        self.shell.check("nft -f -", input_text=drop_table_script(self.table, self.rules))

    def check(self) -> FaultState:
        done = self.shell.run(f"nft list table inet {self.table}")
        return FaultState.IN_EFFECT if done.status == 0 else FaultState.CLEARED

    def revert(self) -> None:
        if self.check() is FaultState.IN_EFFECT:
            self.shell.check(delete_table_command(self.table))


@dataclass
class RouterLatency(_OnRouter):
    """Netem on the router port toward each side, for packets from the other side."""

    shapes: list[Netem] = field(default_factory=list)

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> RouterLatency:
        return build_latency(spec, topology)

    @property
    def devices(self) -> list[str]:
        return [shape.dev for shape in self.shapes]

    def tools(self) -> tuple[str, ...]:
        return ("tc", "setsid", "pkill")

    def undo_line(self) -> str:
        return "; ".join(f"{shell_line(clear_qdisc_command(dev))} 2>/dev/null" for dev in self.devices)

    def preflight(self) -> None:
        super().preflight()
        for dev in self.devices:
            root = self._root_qdisc(dev)
            if root is None:
                raise ConfigError(f"router {self.router.name}: no interface {dev!r} (routers[].links[].interfaces)")
            if root.split()[1] not in DEFAULT_ROOT_QDISCS and not self._ours(root):
                raise ConfigError(f"router {self.router.name}: {dev} has its own root qdisc ({root.strip()}), "
                                  "which the latency fault would replace; refusing")

    def _root_qdisc(self, dev: str) -> str | None:
        done = self.shell.run(f"tc qdisc show dev {shlex.quote(dev)} root")
        if done.status != 0:
            return None
        return done.stdout.splitlines()[0] if done.stdout.strip() else "qdisc noqueue 0: root"

    @staticmethod
    def _ours(root: str) -> bool:
        return root.startswith(ROOT_HANDLE)

    def plan(self) -> FaultPlan:
        inject = tuple(shell_line(argv) for shape in self.shapes for argv in shape.commands())
        return self._plan(inject, tuple(shell_line(clear_qdisc_command(dev)) for dev in self.devices))

    def inject(self) -> None:
        for shape in self.shapes:
            for argv in shape.commands():
                done = self.shell.run(shell_line(argv))
                if done.status != 0:
                    reason, kind = done.stderr.strip(), qdisc_kind(argv)
                    hint = f" (the router's kernel has no sch_{kind})" if kind and "unknown" in reason.lower() else ""
                    raise ControlPlaneError(f"router {self.router.name}: `{shell_line(argv)}` failed: {reason}{hint}")

    def check(self) -> FaultState:
        shown = [self.shell.run(f"tc qdisc show dev {shlex.quote(dev)}").stdout for dev in self.devices]
        if all("netem" in text for text in shown):
            return FaultState.IN_EFFECT
        if not any(self._ours(line) for text in shown for line in text.splitlines()):
            return FaultState.CLEARED
        return FaultState.UNKNOWN

    def revert(self) -> None:
        for dev in self.devices:
            root = self._root_qdisc(dev)
            if root is not None and self._ours(root):
                self.shell.check(shell_line(clear_qdisc_command(dev)))


# -- builders -----------------------------------------------------------------------
def _session(spec: FaultSpec, topology: Topology, router: Router) -> dict[str, Any]:
    index, endpoint = endpoint_named(topology, router.ssh)
    path = f"management.ssh[{index}]"
    creds = tuple(f"{path}.{name}" for name in ("key_file", "password") if getattr(endpoint, name) is not None)
    return {"spec": spec, "router": router, "shell": SshShell(endpoint, path), "credentials": creds,
            "slug": spec.target}


def _directed(spec: FaultSpec, link: RoutedLink) -> Iterator[tuple[str, str]]:
    """(from site, to site) pairs the fault acts on; 'forward' is the link's first site to its second."""
    direction = spec.params.get("direction", "both")
    if direction not in DIRECTIONS:
        raise ConfigError(f"{spec.kind}: direction must be one of {', '.join(DIRECTIONS)}, not {direction!r}")
    first, second = link.link.between
    if direction in ("both", "forward"):
        yield first, second
    if direction in ("both", "reverse"):
        yield second, first


def build_partition(spec: FaultSpec, topology: Topology) -> RouterPartition:
    links = routed_links(topology, spec.target)
    rules = [DropRule(saddr=src_net, daddr=dst_net)
             for link in links for src, dst in _directed(spec, link)
             for src_net in link.networks[src] for dst_net in link.networks[dst]]
    return RouterPartition(**_session(spec, topology, _one_router(links, spec.target)), rules=rules)


def build_latency(spec: FaultSpec, topology: Topology) -> RouterLatency:
    links = routed_links(topology, spec.target)
    if spec.target.split(":")[0] != "link" or len(links) != 1:
        raise ConfigError(f"latency: target must be one link (link:A~B), not {spec.target!r}")
    rtt, jitter = float(spec.params.get("rtt_ms", 0)), float(spec.params.get("jitter_ms", 0))
    loss, rate = float(spec.params.get("loss_pct", 0)), spec.params.get("rate_mbit")
    if rtt < 0 or jitter < 0 or not 0 <= loss <= 100:
        raise ConfigError("latency: rtt_ms and jitter_ms must be >= 0 and loss_pct within 0..100")
    link = links[0]
    shapes = [Netem(link.interface(dst), link.networks[src], rtt / 2, jitter / 2, loss, float(rate) if rate else None)
              for src, dst in _directed(spec, link)]
    return RouterLatency(**_session(spec, topology, link.router), shapes=shapes)
