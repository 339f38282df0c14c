"""The lab's network: namespaces joined by veth pairs through the router namespace.

Only the router forwards; every member has a route to the lab's /24 via its router end and
no default route, so nothing the lab runs can reach beyond the machine.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass

from harness_kernel.errors import ControlPlaneError
from harness_lab import shell
from harness_lab.layout import LAB_NETWORK, LabLayout, Member


def _prefixlen(member: Member) -> int:
    return ipaddress.ip_network(member.network).prefixlen


def existing_namespaces() -> list[str]:
    out = shell.run(["ip", "netns", "list"]).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def root_links() -> list[str]:
    out = shell.run(["ip", "-o", "link", "show"]).stdout
    return [line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line]


@dataclass(frozen=True)
class LabNetwork:
    layout: LabLayout

    def present(self) -> list[str]:
        """The lab's own namespaces that exist now."""
        have = set(existing_namespaces())
        return [ns for ns in self.layout.namespaces if ns in have]

    def route_present(self) -> bool:
        out = shell.run(["ip", "-4", "route", "show", str(self.layout.subnet)]).stdout
        return bool(out.strip())

    def leftovers(self) -> list[str]:
        """Everything of this prefix still on the machine (namespaces, root veth, root route)."""
        found = [f"netns {ns}" for ns in self.present()]
        if self.layout.client.veth_inside in root_links():
            found.append(f"link {self.layout.client.veth_inside}")
        if self.route_present():
            found.append(f"route {self.layout.subnet}")
        return found

    def check_free(self) -> None:
        """Refuse to build over someone else's subnet: another route to our /24 that is not ours."""
        out = shell.run(["ip", "-4", "route", "show"]).stdout
        ours = self.layout.subnet
        for line in out.splitlines():
            dest = line.split()[0]
            if dest == "default":
                continue
            try:
                net = ipaddress.ip_network(dest, strict=False)
            except ValueError:
                continue
            if net.overlaps(ours) and f"dev {self.layout.client.veth_inside}" not in line:
                raise ControlPlaneError(f"subnet {ours} of lab {self.layout.prefix!r} is already routed here ({line.strip()}); "
                                        f"choose another lab.subnet_index or remove that route")

    def create(self) -> None:
        lay = self.layout
        router = lay.router_netns
        guard_lab_range()
        batch = [f"netns add {ns}" for ns in lay.namespaces]
        shell.run(["ip", "-batch", "-"], input_text="\n".join(batch) + "\n")
        cmds: list[list[str]] = []
        for m in lay.members:
            cmds.append(["ip", "link", "add", m.veth_inside, *(["netns", m.netns] if m.netns else []),
                         "type", "veth", "peer", "name", m.veth_router, "netns", router])
        for c in cmds:
            shell.run(c)
        router_batch = ["link set lo up"]
        for m in lay.members:
            router_batch += [f"addr add {m.router_address}/{_prefixlen(m)} dev {m.veth_router}",
                             f"link set {m.veth_router} up"]
        shell.run(["ip", "-n", router, "-batch", "-"], input_text="\n".join(router_batch) + "\n")
        shell.run(["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"], netns=router)
        for m in lay.members:
            inside = [f"addr add {m.address}/{_prefixlen(m)} dev {m.veth_inside}", f"link set {m.veth_inside} up",
                      f"route add {lay.subnet} via {m.router_address} dev {m.veth_inside}"]
            if m.netns:
                inside.insert(0, "link set lo up")
                shell.run(["ip", "-n", m.netns, "-batch", "-"], input_text="\n".join(inside) + "\n")
            else:
                shell.run(["ip", "-batch", "-"], input_text="\n".join(inside) + "\n")

    def destroy(self) -> None:
        """Remove this lab's namespaces (their veths go with them), the root veth and route. Idempotent."""
        lay = self.layout
        if self.route_present():
            shell.run(["ip", "route", "del", str(lay.subnet)], check=False)
        if lay.client.veth_inside in root_links():
            shell.run(["ip", "link", "del", lay.client.veth_inside], check=False)
        for ns in self.present():
            shell.run(["ip", "netns", "del", ns], check=False)


def guard_lab_range() -> None:
    """A blackhole route for all of 198.18.0.0/15 in the root namespace.

    Each lab's own /24 route is more specific and wins while that lab is up; once a lab is
    down, anything still addressed to it (a late reconnect, a recover) dies here instead of
    following the machine's default route out. It stays after `down` on purpose.
    """
    shell.run(["ip", "route", "replace", "blackhole", str(LAB_NETWORK)])


def pids_in(netns: str) -> list[int]:
    """Processes whose network namespace is `netns` (by inode): what must die before it goes."""
    try:
        inode = os.stat(f"/run/netns/{netns}").st_ino
    except FileNotFoundError:
        return []
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}/ns/net").st_ino == inode:
                    found.append(int(entry))
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue
    return found
