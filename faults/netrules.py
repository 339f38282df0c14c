"""Linux router rules as text: nft drop tables and `tc netem` commands.

Pure builders, no execution: the embedded lab runs them in its router namespace, the
production `router` backend over SSH on a real router. One source, so what the lab
exercises is what a user's router receives.

A fault's drop rules live in a table of their own, so injecting is one atomic `nft -f`,
checking is "does the table exist", reverting is deleting it, and a dead man's switch is a
`sleep; nft delete table` that needs no handle lookups.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class DropRule:
    """Drop packets entering from `iif` / leaving by `oif`, from `saddr`, bound for `daddr` (None: any)."""

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


def table_name(prefix: str, name: str) -> str:
    """An nft table name from free text: `prefix` + the name's lowercase alphanumeric runs."""
    return f"{prefix}{re.sub(r'[^a-z0-9]+', '_', name.lower()).strip('_')}"


def drop_table_script(table: str, rules: Sequence[DropRule]) -> str:
    """`nft -f` input that (re)creates `table` with `rules`.

    Prerouting at priority -150 runs before DNAT, so forwarded and locally proxied traffic are
    both caught; the output chain catches what the router itself sends.
    """
    pre = "\n".join(f"    {r.render()}" for r in rules if not r.oif)
    out = "\n".join(f"    {r.render()}" for r in rules if r.oif or (r.daddr and not r.iif))
    return (f"table inet {table} {{}}\ndelete table inet {table}\n"
            f"table inet {table} {{\n"
            f"  chain pre {{\n    type filter hook prerouting priority -150; policy accept;\n{pre}\n  }}\n"
            f"  chain out {{\n    type filter hook output priority -150; policy accept;\n{out}\n  }}\n}}\n")


def delete_table_command(table: str) -> str:
    return f"nft delete table inet {table}"


def deadman_script(marker: str, seconds: float, undo: str) -> str:
    """A shell line that runs `undo` after `seconds`; `marker` names it for `pkill -f` (disarm)."""
    return f": {marker}; sleep {max(1, round(seconds))}; {undo}; exit 0"


@dataclass(frozen=True)
class Netem:
    """Delay (one way), jitter, loss and rate for packets from `sources` (networks) leaving by `dev`."""

    dev: str
    sources: tuple[str, ...]
    delay_ms: float
    jitter_ms: float = 0.0
    loss_pct: float = 0.0
    rate_mbit: float | None = None

    def commands(self) -> list[list[str]]:
        """An htb root whose default class passes traffic untouched and whose second class carries
        netem, selected by source network. htb, not prio: it is the one classful qdisc nearly every
        kernel has. Its rate is set far above any link, so it shapes nothing itself."""
        dev = self.dev
        netem = ["tc", "qdisc", "add", "dev", dev, "parent", "1:4", "handle", "40:", "netem", "delay", f"{self.delay_ms:g}ms"]
        if self.jitter_ms:
            netem.append(f"{self.jitter_ms:g}ms")
        if self.loss_pct:
            netem += ["loss", f"{self.loss_pct:g}%"]
        if self.rate_mbit:
            netem += ["rate", f"{self.rate_mbit:g}mbit"]
        filters = [["tc", "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "u32",
                    "match", "ip", "src", source, "flowid", "1:4"] for source in self.sources]
        return [["tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "1"],
                *(["tc", "class", "add", "dev", dev, "parent", "1:", "classid", c, "htb", "rate", UNLIMITED]
                  for c in ("1:1", "1:4")),
                netem, *filters]


ROOT_HANDLE = "qdisc htb 1:"  # how `tc qdisc show` prints the root these commands add
UNLIMITED = "400gbit"


def qdisc_kind(argv: Sequence[str]) -> str | None:
    """The qdisc a `tc qdisc add ... handle H KIND ...` command adds."""
    if argv[1:3] != ["qdisc", "add"] or "handle" not in argv:
        return None
    return argv[list(argv).index("handle") + 2]


def clear_qdisc_command(dev: str) -> list[str]:
    return ["tc", "qdisc", "del", "dev", dev, "root"]


def shell_line(argv: Sequence[str]) -> str:
    return shlex.join(argv)
