"""Hypothesis strategies for topology documents, built field by field and then mutated.

`documents()` draws a coherent document (every reference resolves, every name is plain,
subnets are disjoint and miss the management addresses), so an unmutated one must be
accepted. `mutated()` then applies up to three edits at paths drawn from the document
itself: a hostile or wrong-typed value, a deleted field, a duplicated list item, an
unknown field, a metacharacter spliced into a good value, or a name moved elsewhere
(unknown and duplicate references).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

Path = tuple[str | int, ...]

# Plain names of every shape the strict pattern allows (a fixed pool: drawing from it is fast).
POOL = sorted({f"{stem}{i}" for stem in ("site-", "esx-a", "node-", "sql_ag.", "R", "w") for i in range(12)}
              | {"a", "Z", "0", "9x", "a.b_c-d", "x" * 63, "site-a", "esx-a1", "sql-ag-01", "node-a"})
NAMES = st.sampled_from(POOL)
DEVICES = st.sampled_from([f"naa.5000c500a1a1a{i:03}" for i in range(20)] + ["mpx.vmhba0:C0:T1:L0", "t10.ATA_____SSD_1"])
ENV = st.sampled_from(["HARNESS_VC_PASSWORD", "HARNESS_SQL_PASSWORD", "X", "_PW2"])
METACHARACTERS = ";|&$()`'\"{}\n\\<> \t\r*?[]!#~%^\x00"
HOSTILE_STRINGS = [
    "a;reboot", "a|nc -e sh x 1", "a && rm -rf /", "$(touch /tmp/pwn)", "`id`", "a'b", 'a"b', "{a}", "a\nb",
    "a}\n}\nflush ruleset\ntable inet x {", "../../../../srv/x", "../etc/passwd", "/", ".", "..", "a/b", "a~b",
    "a:b", "", " ", "x" * 64, "x" * 300, "0.0.0.0/0", "::/0", "192.0.2.0/0", "192.0.2.1/24", "192.0.2.0/33",
    "fe80::1%eth0", "fe80::1%$(id)", "192.0.2.256", "192.0.2.4.5", "host_name", "-lead.example", "a..b",
    "lab", "vsphere", "postgres", "Site A (Madrid)", "ens192abcdefghij", "eth0\"", "sql;Encrypt=no",
    "caf\u00e9", "\u2028", "\x1b[31m", "-rf", "--help", "%s%n", "${IFS}", "*", "~root",
    # round two: PowerShell's other quotes, separators and format characters
    "D:\\bak\u2019; Stop-Computer; \u2018x", "a\u2018b", "a\u201bb", "a\u201cb", "a\u0085b", "a\u2029b", "a\u200eb",
    "a\u202eb", "a\ufeffb",
    # addresses written another way, and addresses of no one host
    "0xc0000214", "192.0.2.0x14", "0300.0.2.0xb", "::ffff:192.0.2.20", "0x7f000001", "169.254.169.254", "0.0.0.0",
    "::", "255.255.255.255", "224.0.0.1", "fe80::1",
    # subnets too wide or special
    "0.0.0.0/1", "128.0.0.0/1", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/4", "198.18.0.0/15", "255.255.255.255/32",
    # pid files that are not files, and lines of a disk fault script
    "/proc/1/stat", "/dev/zero", "/sys/kernel/uevent_seqnum", "/proc/self/environ",
    "python /usr/lib/vmware/vsan/bin/vsanDiskFaultInjection.pyc -p -d @DEVICE@\n", "rm -rf / --no-preserve-root @DEVICE@",
    "env LD_PRELOAD=/x.so python /usr/lib/vmware/vsan/bin/vsanDiskFaultInjection.pyc -p -d @DEVICE@",
    # sizes
    "x" * 4000, "a" * 10_000,
    # this machine, SQL Server's own databases, the kernel's files, link-local REST endpoints, restore places
    "127.0.0.1", "127.1.2.3", "::1", "localhost", "db.localhost", "master", "TempDB", "MSDB", "bench", "/dev/stdin",
    "/proc/self/fd/0", "https://169.254.169.254", "https://[fe80::1]:9440", "C:\\", "C:\\Windows\\Temp",
]
WRONG_TYPES = st.one_of(
    st.none(), st.booleans(), st.builds(list), st.builds(dict), st.builds(lambda: ["a"]), st.builds(lambda: {"a": 1}),
    st.integers(min_value=-(2**70), max_value=2**70), st.sampled_from([0, -1, 65535, 65536, 2**31, 2**64]),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([float("nan"), float("inf"), -0.0, 1e308]),
)
HOSTILE = st.one_of(
    st.sampled_from(HOSTILE_STRINGS), WRONG_TYPES, st.text(max_size=20),
    st.text(alphabet=st.sampled_from(METACHARACTERS + "ab0."), min_size=1, max_size=12),
)
MUTATIONS = ("replace", "replace", "replace", "splice", "delete", "duplicate", "unknown-field", "move-name")


@dataclass
class Case:
    """A document and the edits made to it (normalised paths), for the per-field figures."""

    doc: Any
    edits: list[tuple[str, str]] = field(default_factory=list)


def normalised(path: Path) -> str:
    """('sites', 0, 'hosts', 1, 'name') -> 'sites[].hosts[].name' (dict keys of a map -> '[]')."""
    out = ""
    for key in path:
        if isinstance(key, int) or not key.isidentifier():
            out += "[]"
        else:
            out += ("." if out else "") + key
    return out or "(document)"


def _unique_names(draw: st.DrawFn, count: int, taken: set[str]) -> list[str]:
    names = draw(st.lists(st.sampled_from([n for n in POOL if n not in taken]), min_size=count, max_size=count, unique=True))
    taken.update(names)
    return names


def _secret(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.booleans()):
        return {"env": draw(ENV)}
    return {"keyring": {"service": "resilience-harness", "username": draw(NAMES)}}


def _credential(draw: st.DrawFn) -> dict[str, Any]:
    username = draw(st.sampled_from(["harness", "harness@vsphere.local", "EXAMPLE\\harness", "root", "sql_user"]))
    return {"username": username, "password": _secret(draw)}


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    """A coherent document: accepted as it is."""
    taken: set[str] = set()
    site_names = _unique_names(draw, draw(st.integers(1, 3)), taken)
    ssh = [{"name": n, "address": f"192.168.100.{i + 1}", "username": "harness", "key_file": _secret(draw)}
           for i, n in enumerate(_unique_names(draw, draw(st.integers(1, 2)), taken))]
    redfish = [{"name": n, "address": f"192.168.101.{i + 1}", "credential": _credential(draw)}
               for i, n in enumerate(_unique_names(draw, draw(st.integers(0, 2)), taken))]
    winrm = [{"name": n, "address": draw(st.sampled_from(["sql01.example.net", "192.168.102.1"])),
              "credential": _credential(draw)} for n in _unique_names(draw, draw(st.integers(0, 1)), taken)]
    management: dict[str, Any] = {"ssh": ssh, "redfish": redfish, "winrm": winrm}
    if draw(st.booleans()):
        management["vcenter"] = {"address": draw(st.sampled_from(["vcsa01.example.net", "192.168.103.1"])),
                                 "cluster": draw(st.sampled_from(["stretched-01", "Cluster 1"])),
                                 "credential": _credential(draw)}
        if draw(st.booleans()):  # not there on this machine: a plan is made on a laptop
            management["vcenter"]["tls"] = {"verify": True, "ca_file": "/etc/harness/not-here/vcenter-ca.pem"}
    sites, targets = [], [f"site:{n}" for n in site_names]
    free_bmcs = [r["name"] for r in redfish]  # one BMC per host
    for si, site in enumerate(site_names):
        hosts = []
        for hi, host in enumerate(_unique_names(draw, draw(st.integers(1, 2)), taken)):
            entry: dict[str, Any] = {"name": host, "address": f"10.{si}.0.{hi + 10}"}
            targets.append(f"host:{host}")
            if free_bmcs and draw(st.booleans()):
                entry["bmc"] = free_bmcs.pop(draw(st.integers(0, len(free_bmcs) - 1)))
            if draw(st.booleans()):
                devices = draw(st.lists(DEVICES, min_size=2, max_size=3, unique=True))
                entry["disk_groups"] = [{"cache": devices[0], "capacity": devices[1:]}]
                targets += [f"diskgroup:{host}/0", *(f"disk:{host}/{d}" for d in devices)]
            hosts.append(entry)
        subnets = [f"10.{si}.{j}.0/{draw(st.sampled_from([24, 25, 26]))}" for j in range(draw(st.integers(0, 2)))]
        sites.append({"name": site, "hosts": hosts, "subnets": subnets})
    doc: dict[str, Any] = {"name": draw(NAMES), "kind": "vsphere", "sites": sites, "management": management}
    ends = list(site_names)
    if draw(st.booleans()):
        witness = {"name": _unique_names(draw, 1, taken)[0], "address": "172.16.0.10", "site": "site-w"}
        taken.add("site-w")
        doc["witness"] = witness
        ends.append("site-w")
        targets.append(f"witness:{witness['name']}")
    if len(ends) >= 2 and draw(st.booleans()):
        pairs = [(a, b) for i, a in enumerate(ends) for b in ends[i + 1:]]
        links = [{"between": list(p), "interfaces": {p[0]: f"eth{ends.index(p[0])}", p[1]: f"eth{ends.index(p[1])}"}}
                 for p in draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=len(pairs), unique=True))]
        doc["routers"] = [{"name": _unique_names(draw, 1, taken)[0], "ssh": ssh[0]["name"], "links": links}]
        targets += [f"link:{link['between'][0]}~{link['between'][1]}" for link in links]
    databases = []
    all_hosts = [h["name"] for s in sites for h in s["hosts"]]
    for name in _unique_names(draw, draw(st.integers(0, 2)), taken):
        kind = draw(st.sampled_from(["postgres", "sqlserver-ag", "sqlserver-fci"]))
        listeners = ["sqlag01.example.net", "203.0.113.50"]
        endpoint = "203.0.113.10,203.0.113.74" if kind == "postgres" else draw(st.sampled_from(listeners))
        nodes = [{"name": n, "host": draw(st.sampled_from(all_hosts)), "port": 5432}
                 for n in _unique_names(draw, draw(st.integers(0, 2)), set(taken))]
        entry = {"name": name, "kind": kind, "endpoint": endpoint, "database": "bench", "nodes": nodes,
                 "port": draw(st.sampled_from([1433, 5432])), "credential": _credential(draw)}
        if winrm and kind != "postgres":
            entry["winrm"] = winrm[0]["name"]
        if kind != "postgres" and draw(st.booleans()):
            entry["restore_as"] = draw(st.sampled_from(["bench_restore_test", "bench_copy", "Bench2"]))
        databases.append(entry)
        targets += [f"database:{name}", *(f"node:{name}/{n['name']}" for n in nodes)]
    doc["databases"] = databases
    if draw(st.booleans()):
        process = _unique_names(draw, 1, taken)[0]
        doc["processes"] = [{"name": process, "pidfile": f"/run/{process}.pid", "executable": "/usr/bin/fio"}]
        targets.append(f"process:{process}")
    if draw(st.booleans()):
        doc["slo"] = {"failover_max_s": draw(st.floats(0.5, 600)), "lost_commits_max": draw(st.integers(0, 10))}
    doc["allow_list"] = draw(st.lists(st.sampled_from(targets), unique=True, max_size=len(targets)))
    return doc


def walk(node: Any, path: Path = ()) -> Iterator[Path]:
    """Every path in the document, containers and leaves, the root included."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from walk(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk(value, (*path, index))
    yield path


def names_in(node: Any) -> list[str]:
    return [v for k, v in _items(node) if k == "name" and isinstance(v, str)]


def _items(node: Any) -> Iterator[tuple[Any, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key, value
            yield from _items(value)
    elif isinstance(node, list):
        for value in node:
            yield from _items(value)


def _get(doc: Any, path: Path) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _mutate(draw: st.DrawFn, doc: Any) -> tuple[Any, tuple[str, str]]:
    paths = list(walk(doc))
    # Hypothesis favours index 0 (its simplest choice); an offset from the document's shape
    # spreads that favour over every path instead of the first field.
    path = paths[(draw(st.integers(0, len(paths) - 1)) + len(repr(doc))) % len(paths)]
    how = draw(st.sampled_from(MUTATIONS))
    where = normalised(path)
    if not path:
        return draw(HOSTILE), (where, "replace")
    parent, key, value = _get(doc, path[:-1]), path[-1], _get(doc, path)
    if how == "delete":
        del parent[key]
    elif how == "duplicate" and isinstance(parent, list):
        parent.append(copy.deepcopy(value))
    elif how == "unknown-field" and isinstance(value, dict):
        value[draw(st.sampled_from(["bmcc", "addres", "x;y", "kind", "lab"]))] = draw(HOSTILE)
    elif how == "splice" and isinstance(value, str):
        at = draw(st.integers(0, len(value)))
        parent[key] = value[:at] + draw(st.text(st.sampled_from(METACHARACTERS), min_size=1, max_size=3)) + value[at:]
    elif how == "move-name" and names_in(doc):  # also a witness named like, or living in, a data site
        parent[key] = draw(st.sampled_from([*names_in(doc), "nowhere", "site-w", *(n.upper() for n in names_in(doc))]))
    else:
        how = "replace"
        parent[key] = draw(HOSTILE)
    return doc, (where, how)


@st.composite
def mutated(draw: st.DrawFn) -> Case:
    """A coherent document with 0-3 edits (some are left as they are: they must be accepted)."""
    case = Case(draw(documents()))
    for _ in range(draw(st.sampled_from([1, 2, 1, 3, 1, 2, 0]))):  # draws favour the first: 0 last
        case.doc, edit = _mutate(draw, case.doc)
        case.edits.append(edit)
    return case
