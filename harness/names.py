"""Host names in a topology, resolved: what loading a topology cannot check, because it resolves nothing.

Loading refuses a management endpoint inside a site subnet (a partition would cut the harness off
from it) and a witness inside one, but only for addresses written as such: a host name is resolved
when the harness connects. `doctor` resolves every name once, bounded in time, and applies the
same rules to what it resolves to, plus one loading cannot: a host whose name resolves outside its
own site's subnets is not cut off by that site's partition (the suite would measure nothing).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as Late
from dataclasses import dataclass

from harness_kernel.topology.models import Topology

RESOLVE_S = 5.0
Resolver = Callable[[str], list[str]]


def system_resolver(name: str) -> list[str]:
    """The IPv4 addresses the system resolves `name` to (its own files and DNS, as a connection would)."""
    return sorted({str(info[4][0]) for info in socket.getaddrinfo(name, None, socket.AF_INET, socket.SOCK_STREAM)})


@dataclass(frozen=True)
class Resolved:
    path: str  # the field that names it
    name: str
    addresses: tuple[str, ...]
    problem: str  # "" when it resolves where it should
    warning: bool = False  # the problem makes a suite measure nothing, but endangers nothing


def resolve_names(topology: Topology, resolve: Resolver = system_resolver) -> Iterator[Resolved]:
    """Each host name of the topology's endpoints and hosts, resolved within RESOLVE_S and judged."""
    networks = [(site.name, ipaddress.IPv4Network(n)) for site in topology.sites for n in site.subnets]
    with ThreadPoolExecutor(max_workers=1) as pool:
        def lookup(name: str) -> tuple[tuple[str, ...], str]:
            try:
                return tuple(pool.submit(resolve, name).result(timeout=RESOLVE_S)), ""
            except Late:
                return (), f"not resolved within {RESOLVE_S:g} s"
            except OSError as exc:
                return (), f"does not resolve ({exc})"

        for path, address in topology.management.addresses():
            if is_address(address):
                continue
            found, problem = lookup(address)
            inside = [f"{site}'s {net}" for ip in found for site, net in networks if ipaddress.IPv4Address(ip) in net]
            if not problem and inside:
                problem = (f"resolves into {', '.join(inside)}: a partition of that site would cut the harness off "
                           "from it")
            yield Resolved(path, address, found, problem)
        for si, site in enumerate(topology.sites):
            own = [net for name, net in networks if name == site.name]
            for hi, host in enumerate(site.hosts):
                if is_address(host.address):
                    continue
                found, problem = lookup(host.address)
                outside = [ip for ip in found if own and not any(ipaddress.IPv4Address(ip) in net for net in own)]
                if not problem and outside:
                    yield Resolved(f"sites[{si}].hosts[{hi}].address", host.address, found,
                                   f"resolves outside site {site.name}'s subnets ({', '.join(outside)}): its "
                                   "partition would not cut this host off", warning=True)
                    continue
                yield Resolved(f"sites[{si}].hosts[{hi}].address", host.address, found, problem)


def is_address(text: str) -> bool:
    """Whether `text` is written as an IP address (not a name to resolve)."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
