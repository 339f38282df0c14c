"""Names and addresses of one embedded lab, derived from its prefix and subnet index.

Every lab owns one /24 inside 198.18.0.0/15 and names every namespace, veth and nft table
after its prefix, so a kept demo lab and a test lab never touch each other's resources.
Each site, the witness and the root namespace (where the harness and its clients run)
hang off the router namespace on a /29 point-to-point link.
"""

from __future__ import annotations

import ipaddress
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

from harness_kernel.topology.management import Management, SshEndpoint
from harness_kernel.topology.models import Database, DatabaseNode, Host, LabSettings, Link, Router, Site, Topology, Witness

LAB_NETWORK = ipaddress.ip_network("198.18.0.0/15")
PG_PORT = 5432
SSH_PORT = 22
DATABASE = "bench"


@dataclass(frozen=True)
class Member:
    """One namespace hanging off the router: its role, namespace and both link ends."""

    role: str  # "a", "b", "w", "c" (the root namespace, where clients run), "l1", "l2" (load machines)
    netns: str | None  # None for the root namespace
    veth_inside: str
    veth_router: str
    address: str
    router_address: str
    network: str


LAB_STATE_ROOT = Path("/var/lib/resilience-lab")


def default_state_dir(prefix: str) -> Path:
    """A lab's state by default: not under the harness's private state directory (0700), which
    user postgres could not enter, but beside it."""
    return LAB_STATE_ROOT / prefix


@dataclass(frozen=True)
class LabLayout:
    prefix: str
    subnet_index: int
    state_dir: Path

    @classmethod
    def from_settings(cls, settings: LabSettings) -> LabLayout:
        state = settings.state_dir or os.environ.get("HARNESS_LAB_DIR") or default_state_dir(settings.prefix)
        index = settings.subnet_index
        if index is None:
            index = zlib.crc32(settings.prefix.encode()) % 512
        return cls(prefix=settings.prefix, subnet_index=index, state_dir=Path(state))

    @property
    def settings(self) -> LabSettings:
        return LabSettings(prefix=self.prefix, subnet_index=self.subnet_index, state_dir=str(self.state_dir))

    @property
    def subnet(self) -> ipaddress.IPv4Network:
        base = int(LAB_NETWORK.network_address) + 256 * self.subnet_index
        return ipaddress.IPv4Network((base, 24))

    def _member(self, role: str, slot: int) -> Member:
        net = ipaddress.IPv4Network((int(self.subnet.network_address) + 8 * slot, 29))
        hosts = list(net.hosts())
        return Member(
            role=role,
            netns=None if role == "c" else f"{self.prefix}-{role}",
            veth_inside=f"{self.prefix}{role}1",
            veth_router=f"{self.prefix}{role}0",
            address=str(hosts[1]),
            router_address=str(hosts[0]),
            network=str(net),
        )

    @property
    def site_a(self) -> Member:
        return self._member("a", 0)

    @property
    def site_b(self) -> Member:
        return self._member("b", 1)

    @property
    def witness(self) -> Member:
        return self._member("w", 2)

    @property
    def client(self) -> Member:
        return self._member("c", 3)

    @property
    def router_netns(self) -> str:
        return f"{self.prefix}-r"

    @property
    def load_machines(self) -> tuple[Member, ...]:
        """Two namespaces with their own addresses, for load generators run as separate machines would be."""
        return (self._member("l1", 4), self._member("l2", 5))

    @property
    def members(self) -> tuple[Member, ...]:
        return (self.site_a, self.site_b, self.witness, self.client, *self.load_machines)

    @property
    def namespaces(self) -> tuple[str, ...]:
        return (self.router_netns, *(m.netns for m in self.members if m.netns))

    @property
    def nft_table(self) -> str:
        return f"{self.prefix}_lab"

    def node_member(self, node: str) -> Member:
        """`node-a` / `node-b` -> its site's member."""
        return {"node-a": self.site_a, "node-b": self.site_b}[node]

    def dsn_hosts(self) -> tuple[list[str], list[int]]:
        return [self.site_a.address, self.site_b.address], [PG_PORT, PG_PORT]

    def topology(self) -> Topology:
        """The lab as a topology: the same model a real cluster is described with."""
        a, b, w, c = self.site_a, self.site_b, self.witness, self.client
        topology = Topology(
            name=f"lab-{self.prefix}",
            kind="lab",
            sites=[
                Site(name="site-a", hosts=[Host(name="host-a", address=a.address)], subnets=[a.network]),
                Site(name="site-b", hosts=[Host(name="host-b", address=b.address)], subnets=[b.network]),
            ],
            witness=Witness(name="witness", address=w.address, site="witness"),
            routers=[
                Router(
                    name="router",
                    ssh="router-ssh",
                    links=[
                        Link(between=("site-a", "site-b"),
                             interfaces={"site-a": a.veth_router, "site-b": b.veth_router}),
                        Link(between=("site-a", "witness"),
                             interfaces={"site-a": a.veth_router, "witness": w.veth_router}),
                        Link(between=("site-b", "witness"),
                             interfaces={"site-b": b.veth_router, "witness": w.veth_router}),
                    ],
                )
            ],
            databases=[
                Database(
                    name="bench",
                    kind="postgres",
                    endpoint=f"{a.address},{b.address}",
                    port=PG_PORT,
                    database=DATABASE,
                    database_is_scratch=True,  # created by the lab itself (pg_autoctl --dbname)
                    backup_area=str(self.state_dir / "backups"),
                    nodes=[
                        DatabaseNode(name="node-a", host="host-a", address=a.address, port=PG_PORT),
                        DatabaseNode(name="node-b", host="host-b", address=b.address, port=PG_PORT),
                    ],
                )
            ],
            management=Management(
                ssh=[SshEndpoint(name="router-ssh", address=c.router_address, port=SSH_PORT, username="root")]
            ),
            lab=self.settings,
        )
        return topology.model_copy(update={"allow_list": sorted(topology.targets())})
