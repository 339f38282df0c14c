"""Router topologies for the backend's unit tests, built without the loader's validation.

The backend must be safe whatever names reach it (the loader's checks are a second line), so
names with spaces, parentheses or shell syntax are built here with `model_construct`.
"""

from __future__ import annotations

from harness_kernel.topology.credentials import SecretRef
from harness_kernel.topology.management import Management, SshEndpoint
from harness_kernel.topology.models import Host, Link, Router, Site, Topology, Witness

WITNESS_SITE = "site w"


def router_topology(*sites: str, witness: str | None = None, interfaces: dict[str, str] | None = None) -> Topology:
    """Sites `sites` (each a /26 in 192.0.2.0/24), one router `r1` with a link between every pair of them
    (and each to the witness's site when `witness` is given), ports eth1, eth2, ... in order."""
    names = list(sites) or ["a", "b"]
    built = [Site.model_construct(name=name, hosts=[Host.model_construct(name=f"h{i}", address=f"192.0.2.{64 * i + 1}")],
                                  subnets=[f"192.0.2.{64 * i}/26"]) for i, name in enumerate(names)]
    ends = [*names, *([WITNESS_SITE] if witness else [])]
    ports = interfaces or {name: f"eth{i + 1}" for i, name in enumerate(ends)}
    links = [Link.model_construct(between=(first, second), interfaces={first: ports[first], second: ports[second]})
             for i, first in enumerate(ends) for second in ends[i + 1:]]
    endpoint = SshEndpoint.model_construct(name="r1", address="192.0.2.254", port=22, username="root",
                                           password=SecretRef(env="HARNESS_TEST_UNUSED"), key_file=None, host_key=None)
    return Topology.model_construct(
        name="unit", kind="vsphere", sites=built,
        witness=Witness.model_construct(name=witness, address="198.51.100.10", site=WITNESS_SITE) if witness else None,
        routers=[Router.model_construct(name="r1", ssh="r1", links=links)],
        management=Management.model_construct(ssh=[endpoint]),
        allow_list=[f"link:{link.name}" for link in links] + ([f"witness:{witness}"] if witness else []))
