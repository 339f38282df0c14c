"""Linux router rules as text: nft drop tables and `tc netem` commands.

Pure builders, no execution: the embedded lab runs them in its router namespace, the
production `router` backend over SSH on a real router. One source, so what the lab
exercises is what a user's router receives.

A fault's drop rules live in a table of their own, so injecting is one atomic `nft -f`,
checking is "does the table exist", reverting is deleting it, and a dead man's switch is a
`sleep; nft delete table` that needs no handle lookups.
"""

from __future__ import annotations

import hashlib
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


_TABLE_SAFE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")
_TABLE_MAX = 200  # nft allows 256


def table_name(prefix: str, name: str) -> str:
    """An nft table name from free text: `prefix` + an injective encoding of `name`.

    Lowercase letters, digits and `-` stay; every other byte (uppercase, `_`, `:`, `~`, spaces, non-ASCII)
    becomes `_` + two hex digits, so distinct names never share a table (`link:a~b-c`, `link:a-b~c` and
    `link:A~B-C` are three tables). A name too long for nft keeps its head and a hash of the whole.
    """
    encoded = "".join(chr(b) if chr(b) in _TABLE_SAFE else f"_{b:02x}" for b in name.encode())
    if len(prefix) + len(encoded) > _TABLE_MAX:
        digest = hashlib.sha256(name.encode()).hexdigest()[:16]
        encoded = f"{encoded[:_TABLE_MAX - len(prefix) - 18]}__{digest}"
    return f"{prefix}{encoded}"


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
    return f"nft delete table inet {shlex.quote(table)}"



def _whole_seconds(seconds: float) -> int:
    return max(1, round(seconds))


# -- latency: an htb root of the harness's own, netem in one of its classes ----------------------
ROOT_MAJOR = "7a31"
ROOT_HANDLE = f"{ROOT_MAJOR}:"  # reserved for the harness: not `1:`, the handle of nearly every QoS script
NETEM_CLASS = f"{ROOT_MAJOR}:4"
NETEM_HANDLE = "7a34:"
UNLIMITED = "400gbit"


@dataclass(frozen=True)
class Netem:
    """Delay (one way), jitter, loss and rate for packets from `sources` (networks) leaving by `dev`.

    `tag` (1..0xffff, not 4) is the minor of the root's default class: `tc qdisc show` prints it as the
    root's `default`, so a root can be matched to the one fault instance that added it."""

    dev: str
    sources: tuple[str, ...]
    delay_ms: float
    jitter_ms: float = 0.0
    loss_pct: float = 0.0
    rate_mbit: float | None = None
    tag: int = 1

    def commands(self) -> list[list[str]]:
        """An htb root whose default class passes traffic untouched and whose second class carries
        netem, selected by source network. htb, not prio: it is the one classful qdisc nearly every
        kernel has. Its rate is set far above any link, so it shapes nothing itself."""
        if not 0 < self.tag <= 0xFFFF or self.tag == 4:
            raise ValueError(f"netem tag {self.tag:#x} is not a free htb class minor")
        dev, tag = self.dev, f"{self.tag:x}"
        netem = ["tc", "qdisc", "add", "dev", dev, "parent", NETEM_CLASS, "handle", NETEM_HANDLE, "netem",
                 "delay", f"{self.delay_ms:g}ms"]
        if self.jitter_ms:
            netem.append(f"{self.jitter_ms:g}ms")
        if self.loss_pct:
            netem += ["loss", f"{self.loss_pct:g}%"]
        if self.rate_mbit:
            netem += ["rate", f"{self.rate_mbit:g}mbit"]
        filters = [["tc", "filter", "add", "dev", dev, "parent", ROOT_HANDLE, "protocol", "ip", "u32",
                    "match", "ip", "src", source, "flowid", NETEM_CLASS] for source in self.sources]
        return [["tc", "qdisc", "add", "dev", dev, "root", "handle", ROOT_HANDLE, "htb", "default", tag],
                *(["tc", "class", "add", "dev", dev, "parent", ROOT_HANDLE, "classid", c, "htb", "rate", UNLIMITED]
                  for c in (f"{ROOT_MAJOR}:{tag}", NETEM_CLASS)),
                netem, *filters]


def owns_root(line: str, tag: int) -> bool:
    """Is `line` (from `tc qdisc show dev X root`) the htb root that a Netem with `tag` adds?

    iproute2 prints the default class as `default 0x1a2b` (older: `default 1a2b`)."""
    words = line.split()
    if words[:4] != ["qdisc", "htb", ROOT_HANDLE, "root"] or "default" not in words[4:-1]:
        return False
    try:
        return int(words[words.index("default") + 1], 16) == tag
    except ValueError:
        return False


def is_harness_root(line: str) -> bool:
    """A root with the harness's reserved handle, whichever fault instance added it."""
    return line.split()[1:4] == ["htb", ROOT_HANDLE, "root"]


def has_netem(shown: str) -> bool:
    """Does `tc qdisc show dev X` list the netem qdisc a Netem adds?"""
    return any(line.split()[:4] == ["qdisc", "netem", NETEM_HANDLE, "parent"] and line.split()[4:5] == [NETEM_CLASS]
               for line in shown.splitlines())


def qdisc_kind(argv: Sequence[str]) -> str | None:
    """The qdisc a `tc qdisc add ... handle H KIND ...` command adds."""
    if argv[1:3] != ["qdisc", "add"] or "handle" not in argv:
        return None
    return argv[list(argv).index("handle") + 2]



def clear_harness_root_command(dev: str) -> list[str]:
    """Delete `dev`'s root only if its handle is the harness's: the kernel refuses any other ("Invalid handle")."""
    return ["tc", "qdisc", "del", "dev", dev, "root", "handle", ROOT_HANDLE]


def clear_owned_root_line(dev: str, tag: int) -> str:
    """A shell line that deletes `dev`'s root only if it is the one a Netem with `tag` added (the dead man's undo)."""
    pattern = f"^qdisc htb {ROOT_HANDLE} root( .*)? default (0x)?{tag:x}( |$)"
    show = shell_line(["tc", "qdisc", "show", "dev", dev, "root"])
    return f"if {show} | grep -Eq {shlex.quote(pattern)}; then {shell_line(clear_harness_root_command(dev))}; fi"


def shell_line(argv: Sequence[str]) -> str:
    return shlex.join(argv)


# -- commands marked with a name, and the dead man's switch -----------------------------------
_MARKER = re.compile(r"[a-z0-9][a-z0-9-]*")
DEADMAN_DIRS = ("/run", "/tmp")


def _checked_marker(marker: str) -> str:
    if not _MARKER.fullmatch(marker):
        raise ValueError(f"marker {marker!r}: only lowercase letters, digits and '-'")
    return marker


def marked(command: str, marker: str) -> str:
    """`command` run by an `sh` whose last argument is `marker`, so `running_command(marker)` finds it."""
    return f"sh -c {shlex.quote(command + '; exit $?')} {shlex.quote(_checked_marker(marker))}"


def running_command(marker: str) -> str:
    """Lists `/proc/PID/cmdline` of every process with an argument exactly `marker` (exit 1: none).

    The pattern goes through stdin, so the grep itself never matches."""
    return f"printf '%s\\n' {shlex.quote(_checked_marker(marker))} | grep -zlsxF -f - /proc/[0-9]*/cmdline"


def deadman_arm_command(marker: str, seconds: float, undo: str) -> str:
    """Start `undo` after `seconds` in its own session on the target, and prove it runs.

    The switch writes its pid to `/run/<marker>.pid` (`/tmp` when /run is not writable) and is an
    `sh` whose `$0` is `marker`; the command exits 0 (printing the pid) only once that process is
    seen running, so a switch that failed to start is an error, not a silent no-op."""
    marker = _checked_marker(marker)
    switch = f'set -C; echo $$ >"$1" || exit 1; sleep {_whole_seconds(seconds)}; {undo}; rm -f -- "$1"; exit 0'
    script = "\n".join([
        f"m={shlex.quote(marker)}",
        'd=/run; { [ -d /run ] && [ -w /run ]; } || d=/tmp',
        'f="$d/$m.pid"',
        'if [ -e "$f" ]; then echo "$m: already armed ($f)" >&2; exit 4; fi',
        f'setsid sh -c {shlex.quote(switch)} "$m" "$f" </dev/null >/dev/null 2>&1 &',
        "i=0",
        'while [ ! -s "$f" ]; do',
        '  i=$((i + 1)); if [ "$i" -gt 50 ]; then echo "$m: the switch did not start" >&2; exit 5; fi',
        "  sleep 0.1",
        "done",
        'p=$(cat "$f")',
        'printf \'%s\\n\' "$m" | grep -zqxF -f - "/proc/$p/cmdline" || { echo "$m: pid $p is not the switch" >&2; exit 6; }',
        'echo "$p"',
    ])
    return f"sh -c {shlex.quote(script)}"


def deadman_disarm_command(marker: str) -> str:
    """End exactly the switch `deadman_arm_command(marker, ...)` started: the pid in its file, and only if that
    process still has `marker` as an argument (a reused pid is left alone); its `sleep` goes with its group."""
    marker = _checked_marker(marker)
    script = "\n".join([
        f"m={shlex.quote(marker)}",
        "for d in " + " ".join(DEADMAN_DIRS) + "; do",
        '  f="$d/$m.pid"',
        '  [ -f "$f" ] || continue',
        '  p=$(cat "$f")',
        '  case "$p" in ""|*[!0-9]*) echo "$m: $f holds no pid" >&2; exit 3 ;; esac',
        '  if printf \'%s\\n\' "$m" | grep -zqxF -f - "/proc/$p/cmdline" 2>/dev/null; then',
        '    kill -TERM "-$p" 2>/dev/null || kill -TERM "$p" || exit 3',
        "  fi",
        '  rm -f -- "$f"',
        "done",
        "exit 0",
    ])
    return f"sh -c {shlex.quote(script)}"
