"""nft in the router namespace for the lab's own plumbing (the DNAT to Toxiproxy).

Faults make their own tables there through the router backend; the namespace is the lab's,
so everything in it goes when the lab goes down.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness_lab import shell
from harness_lab.layout import LabLayout, Member


@dataclass(frozen=True)
class RouterFirewall:
    layout: LabLayout

    def _nft(self, script: str, check: bool = True) -> str:
        return shell.run(["nft", "-f", "-"], netns=self.layout.router_netns, input_text=script, check=check).stdout

    def tables(self) -> list[str]:
        done = shell.run(["nft", "list", "tables"], netns=self.layout.router_netns, check=False)
        return [line.split()[-1] for line in done.stdout.splitlines() if line.startswith("table inet ")]

    def has(self, table: str) -> bool:
        return table in self.tables()

    def delete(self, table: str) -> None:
        if self.has(table):
            self._nft(f"delete table inet {table}\n", check=False)

    def set_dnat(self, redirects: Sequence[tuple[Member, str, int, str, int]]) -> None:
        """The lab table: (from member, original daddr, dport, to address, to port) redirects."""
        table = self.layout.nft_table
        rules = "\n".join(f'    iifname "{m.veth_router}" ip daddr {dst} tcp dport {port} dnat ip to {to}:{to_port}'
                          for m, dst, port, to, to_port in redirects)
        self._nft(f"table inet {table} {{}}\ndelete table inet {table}\n"
                  f"table inet {table} {{\n  chain prerouting {{\n    type nat hook prerouting priority dstnat; "
                  f"policy accept;\n{rules}\n  }}\n}}\n")

    def delete_all(self) -> None:
        """Every table in the lab's router namespace: the lab's own and those its faults made there."""
        for table in self.tables():
            self.delete(table)
