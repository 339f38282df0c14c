"""nft in the router namespace: one table per lab for its plumbing, one table per active fault.

A fault's rules live in a table of their own (`{prefix}_f_<name>`), so injecting is one
atomic `nft -f`, checking is "does the table exist", reverting is deleting it, and a dead
man's switch is a `sleep; nft delete table` process that needs no handle lookups.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from harness.lab import shell
from harness.lab.layout import LabLayout, Member


@dataclass(frozen=True)
class DropRule:
    """Drop packets entering from `iif` (any if None) bound for `daddr` (any if None), from `saddr`."""

    iif: str | None = None
    daddr: str | None = None
    saddr: str | None = None
    oif: str | None = None

    def render(self) -> str:
        parts = []
        if self.iif:
            parts.append(f'iifname "{self.iif}"')
        if self.oif:
            parts.append(f'oifname "{self.oif}"')
        if self.saddr:
            parts.append(f"ip saddr {self.saddr}")
        if self.daddr:
            parts.append(f"ip daddr {self.daddr}")
        return " ".join([*parts, "drop"])


def isolate(member: Member, address: str | None = None) -> list[DropRule]:
    """Everything to and from a member (or only one address on its link): in, forwarded and router-made."""
    target = address or member.network
    if address:
        return [DropRule(saddr=target), DropRule(daddr=target)]
    return [DropRule(iif=member.veth_router), DropRule(daddr=target), DropRule(oif=member.veth_router)]


def cut(src: Member, dst: Member) -> list[DropRule]:
    """Packets from `src`'s site bound for `dst`'s site (seen before DNAT, so proxied traffic too)."""
    return [DropRule(iif=src.veth_router, daddr=dst.network)]


@dataclass(frozen=True)
class RouterFirewall:
    layout: LabLayout

    def _nft(self, script: str, check: bool = True) -> str:
        return shell.run(["nft", "-f", "-"], netns=self.layout.router_netns, input_text=script, check=check).stdout

    def fault_table(self, name: str) -> str:
        return f"{self.layout.prefix}_f_{re.sub(r'[^a-z0-9]+', '_', name.lower()).strip('_')}"

    def tables(self) -> list[str]:
        done = shell.run(["nft", "list", "tables"], netns=self.layout.router_netns, check=False)
        return [line.split()[-1] for line in done.stdout.splitlines() if line.startswith("table inet ")]

    def has(self, table: str) -> bool:
        return table in self.tables()

    def add_drop_table(self, table: str, rules: Sequence[DropRule]) -> None:
        """Prerouting (before DNAT) catches forwarded and proxied traffic; output catches the router's own."""
        pre = "\n".join(f"    {r.render()}" for r in rules if not r.oif)
        out = "\n".join(f"    {r.render()}" for r in rules if r.oif or (r.daddr and not r.iif))
        self._nft(f"table inet {table} {{}}\ndelete table inet {table}\n"
                  f"table inet {table} {{\n"
                  f"  chain pre {{\n    type filter hook prerouting priority -150; policy accept;\n{pre}\n  }}\n"
                  f"  chain out {{\n    type filter hook output priority -150; policy accept;\n{out}\n  }}\n}}\n")

    def delete(self, table: str) -> None:
        if self.has(table):
            self._nft(f"delete table inet {table}\n", check=False)

    def deadman_argv(self, table: str, seconds: float, first: str = "") -> list[str]:
        """A process for the router namespace that deletes `table` after `seconds` (running `first` before)."""
        before = f"{first}; " if first else ""
        return ["sh", "-c", f"sleep {seconds:.0f}; {before}nft delete table inet {table} 2>/dev/null; exit 0"]

    def set_dnat(self, redirects: Sequence[tuple[Member, str, int, str, int]]) -> None:
        """The lab table: (from member, original daddr, dport, to address, to port) redirects."""
        table = self.layout.nft_table
        rules = "\n".join(f'    iifname "{m.veth_router}" ip daddr {dst} tcp dport {port} dnat ip to {to}:{to_port}'
                          for m, dst, port, to, to_port in redirects)
        self._nft(f"table inet {table} {{}}\ndelete table inet {table}\n"
                  f"table inet {table} {{\n  chain prerouting {{\n    type nat hook prerouting priority dstnat; "
                  f"policy accept;\n{rules}\n  }}\n}}\n")

    def delete_all(self) -> None:
        for table in self.tables():
            if table == self.layout.nft_table or table.startswith(f"{self.layout.prefix}_f_"):
                self.delete(table)
