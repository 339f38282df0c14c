"""nft in the router namespace: one table per lab for its plumbing, one table per active fault
(`{prefix}_f_<name>`); the rules themselves come from `faults.netrules`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from faults.netrules import DropRule, deadman_script, delete_table_command, drop_table_script, table_name
from harness.lab import shell
from harness.lab.layout import LabLayout, Member

__all__ = ["DropRule", "RouterFirewall", "cut", "isolate"]


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
        return table_name(f"{self.layout.prefix}_f_", name)

    def tables(self) -> list[str]:
        done = shell.run(["nft", "list", "tables"], netns=self.layout.router_netns, check=False)
        return [line.split()[-1] for line in done.stdout.splitlines() if line.startswith("table inet ")]

    def has(self, table: str) -> bool:
        return table in self.tables()

    def add_drop_table(self, table: str, rules: Sequence[DropRule]) -> None:
        self._nft(drop_table_script(table, rules))

    def delete(self, table: str) -> None:
        if self.has(table):
            self._nft(f"delete table inet {table}\n", check=False)

    def deadman_argv(self, table: str, seconds: float, first: str = "") -> list[str]:
        """A process for the router namespace that deletes `table` after `seconds` (running `first` before)."""
        before = f"{first}; " if first else ""
        return ["sh", "-c", deadman_script(table, seconds, f"{before}{delete_table_command(table)} 2>/dev/null")]

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
