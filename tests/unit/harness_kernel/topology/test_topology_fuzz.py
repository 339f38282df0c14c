"""Rule 5: fuzzing. Every document is either accepted, safe and stable under a round trip,
or refused with a one-line `ConfigError` that names a field path: never another exception.
Accepted means as a run reads a topology: the core's models, then each platform's section
(`faults.sections.check`: vSAN's `management.vsan` among them).

Profiles and figures are fuzz_support's (`HARNESS_FUZZ=long` for a larger random run); the
figures are inputs, accepted, refused by the field path the error named, edits by field.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from faults import sections
from harness_kernel.errors import ConfigError
from harness_kernel.topology.loader import load_topology, parse_topology
from harness_kernel.topology.models import Topology
from harness_platforms.vsphere.vsan.section import settings as vsan_settings
from tests.unit.harness_kernel.topology.fuzz_support import PROFILE, Tally, report
from tests.unit.harness_kernel.topology.topology_strategies import Case, mutated

# The oracle: written here independently of the models, so a loosened model pattern shows.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
DEVICE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
IFNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,14}")
LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
HOSTNAME = re.compile(rf"(?=.{{1,253}}$){LABEL}(\.{LABEL})*")
NEVER = set(";|&$`'\"{}<>\n\r\u2018\u2019\u201a\u201b")
SPECIAL = [ipaddress.ip_network(n) for n in ("0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/4", "240.0.0.0/4")]
_STEP = r"(?:\.[A-Za-z_]\w*|\[\d+\]|\['(?:[^'\\]|\\.)*'\]|\[\"(?:[^\"\\]|\\.)*\"\])"
FIELD_PATH = re.compile(rf"top level|(?:[A-Za-z_]\w*|\[\d+\]|\['(?:[^'\\]|\\.)*'\]|\[\"(?:[^\"\\]|\\.)*\"\]){_STEP}*")
YAML_PLACE = re.compile(r":\d+:\d+")
SYSTEM_DATABASES = {"master", "model", "msdb", "tempdb"}
KERNEL_TREES = ("proc", "sys", "dev")


def refusal_path(message: str, origin: str) -> str:
    """The field path a refusal names; fails the property if it names none or spans lines."""
    assert len(message.splitlines()) == 1, f"not one line: {message!r}"
    assert message.startswith(f"{origin}"), message
    rest = message[len(origin):]
    if YAML_PLACE.match(rest):
        return "(yaml line:column) " + ("duplicate key" if "duplicate key" in rest else "malformed")
    assert rest.startswith(": "), message
    match = FIELD_PATH.match(rest[2:])
    assert match and rest[2 + match.end():].startswith(": "), f"names no field path: {message!r}"
    return match.group(0)


def strings(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in (*strings(k), *strings(v))]
    if isinstance(node, list | tuple):
        return [s for v in node for s in strings(v)]
    return []


def is_address(value: str) -> bool:
    """One host's address in its canonical form, or a DNS name the resolver cannot read as a number."""
    try:
        ip = ipaddress.ip_address(value)
    except ValueError:
        labels = value.split(".")
        return HOSTNAME.fullmatch(value) is not None and not all(re.fullmatch(r"0x[0-9a-f]*|[0-9]+", x, re.I) for x in labels)
    mapped = isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None
    return (str(ip) == value and not mapped and not ip.is_unspecified and not ip.is_link_local and not ip.is_multicast
            and not (ip.is_reserved and not ip.is_loopback))



def assert_safe(topology: Topology) -> None:
    """What an accepted topology promises the backends."""
    for value in strings(topology.model_dump()):
        assert value.isprintable() and not NEVER & set(value), f"unsafe value accepted: {value!r}"
    names = [topology.name, *(s.name for s in topology.sites), *(h.name for h in topology.hosts()),
             *(r.name for r in topology.routers), *(d.name for d in topology.databases),
             *(n.name for d in topology.databases for n in d.nodes), *(p.name for p in topology.processes),
             *(e.name for e in (*topology.management.ssh, *topology.management.redfish, *topology.management.winrm))]
    if topology.witness:
        names.append(topology.witness.name)
        assert ipaddress.IPv4Address(topology.witness.address)
    for name in names:
        assert NAME.fullmatch(name), f"unsafe name accepted: {name!r}"
    for host in topology.hosts():
        assert is_address(host.address), host.address
        for group in host.disk_groups:
            assert all(DEVICE.fullmatch(d) for d in [*group.capacity, *([group.cache] if group.cache else [])])
    for site in topology.sites:
        for subnet in site.subnets:
            network = ipaddress.IPv4Network(subnet, strict=True)
            assert network.prefixlen >= 16 and str(network) == subnet, subnet
            assert not any(network.overlaps(special) for special in SPECIAL), subnet
    if topology.witness:  # a third site: never a data site, a host's address or inside a site subnet
        data = {s.name.casefold() for s in topology.sites}
        assert topology.witness.name.casefold() not in data and (topology.witness.site or "").casefold() not in data
        witness_ip = ipaddress.IPv4Address(topology.witness.address)
        assert all(witness_ip not in ipaddress.IPv4Network(n) for s in topology.sites for n in s.subnets)
        assert all(h.address != topology.witness.address for h in topology.hosts())
        assert not witness_ip.is_loopback, topology.witness.address
    for process in topology.processes:
        assert process.pidfile.split("/")[1] not in ("proc", "sys", "dev"), process.pidfile
    for line in vsan_settings(topology).disk_faults.model_dump().values():
        assert line.split(" ")[1].startswith("/usr/lib/vmware/vsan/bin/") and "\n" not in line, line
    lowered = [n.casefold() for n in (h.name for h in topology.hosts())]
    assert len(lowered) == len(set(lowered)), "host names differ only in case"
    for router in topology.routers:
        for link in router.links:
            assert all(NAME.fullmatch(end) for end in link.between)
            assert all(IFNAME.fullmatch(i) and k in link.between for k, i in link.interfaces.items())
    mgmt = topology.management
    for endpoint in (*mgmt.ssh, *mgmt.redfish, *mgmt.winrm, *([mgmt.vcenter] if mgmt.vcenter else [])):
        assert is_address(endpoint.address) and 0 < endpoint.port < 65536, endpoint
    for db in topology.databases:
        assert all(is_address(h) for h in db.endpoint.split(",")), db.endpoint
        if db.restore_as is not None:
            assert db.restore_as.casefold() not in SYSTEM_DATABASES | {db.database.casefold()}, db.restore_as
    for endpoint in (*mgmt.redfish, *mgmt.winrm, *([mgmt.vcenter] if mgmt.vcenter else [])):
        if endpoint.tls.ca_file is not None:
            assert Path(endpoint.tls.ca_file).parts[1] not in KERNEL_TREES, endpoint.tls.ca_file


def read(doc: Any, origin: str) -> Topology:
    """As `load_source` reads a topology: the core's models, then the platforms' sections."""
    topology = parse_topology(doc, origin)
    sections.check(topology)
    return topology


def check(case: Case, tally: Tally) -> None:
    try:
        topology = read(case.doc, "fuzz.yaml")
    except ConfigError as exc:
        tally.record(case, refusal_path(str(exc), "fuzz.yaml"))
        assert case.edits, f"an unedited document was refused: {exc}"
        return
    tally.record(case, None)
    assert_safe(topology)
    again = parse_topology(topology.model_dump(), "round-trip")
    assert again == topology


def test_every_document_is_accepted_safe_and_stable_or_refused_naming_a_field() -> None:
    tally = Tally()

    @PROFILE
    @given(mutated())
    def documents(case: Case) -> None:
        check(case, tally)

    documents()
    report(tally.summary("topology documents"))


def test_every_file_is_loaded_or_refused_naming_a_field_or_a_line(tmp_path: Path) -> None:
    """The same through the YAML reader, with a line repeated now and then (duplicate keys)."""
    tally = Tally()
    path = tmp_path / "fuzz.yaml"

    @settings(PROFILE, max_examples=max(100, PROFILE.max_examples // 5))
    @given(mutated(), st.one_of(st.none(), st.none(), st.integers(0, 200)))
    def files(case: Case, repeat: int | None) -> None:
        lines = yaml.safe_dump(case.doc, allow_unicode=True).splitlines(keepends=True)
        if repeat is not None and lines:
            lines.insert(repeat % len(lines), lines[repeat % len(lines)])
            case.edits.append(("(a repeated line)", "duplicate"))
        path.write_text("".join(lines))
        try:
            topology = load_topology(path)
            sections.check(topology)
        except ConfigError as exc:
            tally.record(case, refusal_path(str(exc), str(path)))
            return
        tally.record(case, None)
        assert_safe(topology)

    files()
    report(tally.summary("topology files"))

