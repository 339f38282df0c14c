"""What the transports send, seen at the wire: each call recorded and, while watched read-only, refused unless it reads.

`doctor` promises to change nothing. Its checks are read-only by contract; this makes it so by
construction: every transport reports each call here just before sending it (a SOAP method, an
HTTP method and path, a command line), and inside `watching(read_only=True)` a call that is not a
read raises `WriteRefused` instead of going out. Session-scoped objects (a container view, a
property collector or filter, an event collector) are writes in the strict sense; they are allowed
as create/destroy pairs, and `Wire.left_open()` names any created and not destroyed.

With `capture=True` the transports also hand over what came back (`recorded`): the raw answer as
the parser saw it, for `harness.capture` to scrub into contract fixtures. Outside `watching`
nothing is recorded and nothing refused: a run's faults send what they must.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from harness_kernel.errors import HarnessError


class WriteRefused(HarnessError):
    """A call that would change something, refused before it was sent (the caller promised to only read)."""


@dataclass(frozen=True)
class WireCall:
    transport: str  # "soap", "https", "ssh", "shell"
    endpoint: str
    operation: str  # the SOAP method, "GET /redfish/v1/Systems/1", the command line
    reads: bool


@dataclass(frozen=True)
class Exchange:
    """One request and its answer, raw, as a transport saw them (a credential in a request is never kept)."""
    transport: str  # "soap", "https", "ssh"
    endpoint: str
    request: dict[str, Any]  # soap: path, action, body; https: method, path; ssh: command
    response: dict[str, Any]  # http: status, content_type, body; ssh: status, stdout, stderr
    at: float = 0.0  # when it came back (epoch seconds): a replay shifts the answer's clock readings by as much


@dataclass
class Wire:
    read_only: bool
    capture: bool = False
    calls: list[WireCall] = field(default_factory=list)
    exchanges: list[Exchange] = field(default_factory=list)
    _open: dict[str, str] = field(default_factory=dict)  # session objects created and not yet destroyed: id -> how

    def created(self, endpoint: str, obj: str, how: str) -> None:
        self._open[f"{endpoint} {obj}"] = how

    def destroyed(self, endpoint: str, obj: str) -> None:
        self._open.pop(f"{endpoint} {obj}", None)

    def left_open(self) -> list[str]:
        """Session objects created and never destroyed: `<endpoint> <object> (<created by>)`."""
        return [f"{where} ({how})" for where, how in self._open.items()]

    def writes(self) -> list[WireCall]:
        return [c for c in self.calls if not c.reads]


_WIRE: ContextVar[Wire | None] = ContextVar("harness_wire", default=None)


@contextmanager
def watching(*, read_only: bool = True, capture: bool = False) -> Iterator[Wire]:
    """Record every call the transports send in this context; with `read_only`, refuse any that is not a read;
    with `capture`, keep each answer too."""
    wire = Wire(read_only, capture)
    token = _WIRE.set(wire)
    try:
        yield wire
    finally:
        _WIRE.reset(token)


def current() -> Wire | None:
    return _WIRE.get()


def sent(transport: str, endpoint: str, operation: str, *, reads: bool) -> None:
    """Called by a transport just before it sends: recorded when watched; refused if watched read-only and a write."""
    wire = _WIRE.get()
    if wire is None:
        return
    wire.calls.append(WireCall(transport, endpoint, operation, reads))
    if wire.read_only and not reads:
        raise WriteRefused(f"{endpoint}: {operation} would change something; refused, only reads are allowed here")


def capturing() -> bool:
    wire = _WIRE.get()
    return wire is not None and wire.capture


def recorded(transport: str, endpoint: str, request: dict[str, Any], response: dict[str, Any]) -> None:
    """Called by a transport with what came back: kept when the watch captures, dropped otherwise."""
    wire = _WIRE.get()
    if wire is not None and wire.capture:
        wire.exchanges.append(Exchange(transport, endpoint, request, response, time.time()))


# -- what reads ------------------------------------------------------------------------------------
# vim and vSAN methods that read: by verb, after the vSAN API's subject prefixes (VsanClusterGetConfig,
# VSANVcGetWitnessHosts, VsanPerfQueryPerf). A method not matched is a write (VsanClusterReconfig,
# VsanHealthRepairClusterObjectsImmediate). The privileges in pyVmomi's type information cannot decide
# it: VsanClusterReconfig names none at all.
_SOAP_READ_VERB = re.compile(r"^(?:(?:VSAN|Vsan)(?:Vc|Cluster|Host|Health|Perf)*|Pbm)?"
                             r"(?:Retrieve|Query|Fetch|Has|Continue|Read|Get|Current|Wait)")
# Session objects, allowed as pairs: what creates one, what destroys it (its `this`).
SOAP_SESSION_CREATES = frozenset({"CreateContainerView", "CreateListView", "CreatePropertyCollector", "CreateFilter",
                                  "CreateCollectorForEvents", "CreateCollectorForTasks"})
SOAP_SESSION_DESTROYS = frozenset({"DestroyView", "DestroyPropertyCollector", "DestroyPropertyFilter", "DestroyCollector"})
SOAP_SESSION = frozenset({"Login", "Logout", "SessionIsActive", "CancelWaitForUpdates"}) | SOAP_SESSION_CREATES \
    | SOAP_SESSION_DESTROYS


def soap_reads(method: str) -> bool:
    """Whether vim/vSAN/PBM method `method` (its wire name) only reads, or is a session-scoped create/destroy."""
    return method in SOAP_SESSION or bool(_SOAP_READ_VERB.match(method))


def http_reads(method: str) -> bool:
    return method.upper() in ("GET", "HEAD")


# Command lines that read: each `;`/`&&`/`||`/`|` part starts with one of these words.
_READ_COMMANDS = (
    "tc qdisc show", "tc -j qdisc show", "tc -s qdisc show", "tc filter show", "tc class show",
    "nft list", "nft -j list", "nft --json list", "ip -j addr show", "ip addr show", "ip -j link show", "ip link show",
    "ip -j route show", "ip route show", "ip -j netns", "ip netns list", "test ", "[ ", "command -v", "cat ", "ls ",
    "stat ", "id", "uname", "true", "echo ", "printf ", "head ", "grep ", "readlink ", "hostname", "date", "capsh --print",
    "sysctl -n",
)


def command_reads(command: str) -> bool:
    """Whether a shell command line only reads: each of its `;` `&&` `||` `|` parts starts with a reading command,
    and nothing is redirected into a file."""
    quiet = re.sub(r"[0-9]?>\s*/dev/null|2>&1", "", command)
    if ">" in quiet:
        return False
    parts = [p.strip() for p in re.split(r"&&|\|\||;|\|", quiet) if p.strip()]
    return bool(parts) and all(_part_reads(p) for p in parts)


def _part_reads(part: str) -> bool:
    """A known reading command, or a program asked for its usage alone (`python SCRIPT -h`)."""
    words = part.split()
    if words[-1] in ("-h", "--help") and not any(w.startswith("-") for w in words[:-1]):
        return True
    return any(part == c.strip() or part.startswith(c) for c in _READ_COMMANDS)


# PowerShell: every command a script runs is a Verb-Noun cmdlet; a script reads if each verb does.
# Quoted strings are not commands ("Microsoft-Windows-FailoverClustering/Operational" is a log name).
_PS_READ_VERBS = frozenset({"Get", "Test", "Select", "Where", "ForEach", "Sort", "Measure", "Group", "Compare",
                            "ConvertTo", "ConvertFrom", "Format", "Out", "Write", "Import", "Resolve", "Join", "Split"})
_PS_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"`]|`.)*\"")
_PS_CMDLET = re.compile(r"\b([A-Z][a-z]+)-[A-Z][A-Za-z]+\b")


def powershell_commands(script: str) -> list[str]:
    """The Verb-Noun commands a script names, outside its quoted strings."""
    return [m.group(0) for m in _PS_CMDLET.finditer(_PS_QUOTED.sub("''", script))]


def powershell_reads(script: str) -> bool:
    """Whether every cmdlet the script runs has a reading verb, and it sets no object's property."""
    bare = _PS_QUOTED.sub("''", script)
    if re.search(r"\$\w+(?:\.\w+)+\s*=(?!=)", bare):  # $group.Property = ...: a change through an object
        return False
    return all(_PS_CMDLET.match(c).group(1) in _PS_READ_VERBS for c in powershell_commands(script))  # type: ignore[union-attr]


# T-SQL: a query reads if it is a SELECT (or a WITH ... SELECT) naming no statement that changes anything.
_SQL_WRITES = re.compile(r"\b(INSERT|UPDATE|DELETE|MERGE|ALTER|CREATE|DROP|TRUNCATE|EXEC|EXECUTE|BACKUP|RESTORE|DBCC|"
                         r"KILL|GRANT|DENY|REVOKE|SHUTDOWN|RECONFIGURE|INTO)\b", re.IGNORECASE)


def sql_reads(sql: str) -> bool:
    text = re.sub(r"--[^\n]*|/\*.*?\*/", " ", sql, flags=re.S)
    text = re.sub(r"'(?:[^']|'')*'", "''", text)
    return bool(re.match(r"\s*(SELECT|WITH)\b", text, re.IGNORECASE)) and not _SQL_WRITES.search(text)
