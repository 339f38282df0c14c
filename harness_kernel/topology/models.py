"""Typed topology: parsed once, validated up front, read by every backend.

Target names used by faults and by the allow-list have the form ``kind:name``:
``host:esx-a1``, ``disk:esx-a1/naa.5000...``, ``diskgroup:esx-a1/0``, ``site:site-a``,
``link:site-a~site-b``, ``witness:witness``, ``database:sql01``, ``node:<db>/<node>``.

Values reach a root shell on a router, `nft -f` and `tc` scripts, file paths and connection
strings, so each field has a type that says what it may hold (`Name`, `Address`, `Subnet`,
`Interface`, ...: `values`) and is checked once, with an error that names its field path. The
management plane's sections are `management`; the checks across fields are here.

`kind: lab` exempts a run from `--allow-destructive`, so a document may not claim it: the
lab's topology is built by code (`LabLayout.topology()`, constructing the models directly),
and everything parsed from a document goes through `Topology.model_validate(raw,
context=DOCUMENT)` (see `harness_kernel.topology.loader.parse_topology`), which refuses it.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from types import MappingProxyType
from typing import Annotated, Final, Literal

from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from harness_kernel.topology.credentials import CredentialRef, SecretRef
from harness_kernel.topology.management import Management
from harness_kernel.topology.targets import Target, TargetKind
from harness_kernel.topology.values import (
    ENV_NAME,
    KEYRING_KEY,
    USERNAME,
    WIDEST_SITE_PREFIX,
    Address,
    Device,
    Display,
    FilePath,
    Interface,
    IPv4,
    Name,
    Port,
    Seconds,
    StrictModel,
    Subnet,
    from_document,
    matching,
    shown,
    this_machine,
    valid_address,
)

DOCUMENT: Final = MappingProxyType({"document": True})
"""Validation context for input read from a document (a file): `kind: lab` and `lab:` are refused."""
ORIGIN: Final = "_origin"
"""Where a topology keeps the file it was read from (the validation context's `origin`): see `Topology.origin`."""



class DiskGroup(StrictModel):
    cache: Device | None = Field(default=None, description="cache device canonical name (none on vSAN ESA)")
    capacity: list[Device] = Field(min_length=1)


class Host(StrictModel):
    name: Name
    address: Address
    bmc: Name | None = Field(default=None, description="name of a redfish endpoint in management")
    ssh: Name | None = Field(default=None, description="name of an ssh endpoint in management")
    disk_groups: list[DiskGroup] = []


MAX_SITE_SUBNETS = 4096
"""A site lists its networks, not its addresses: more than this is the wrong file (and its checks' cost)."""


class Site(StrictModel):
    name: Name
    hosts: list[Host] = Field(min_length=1)
    subnets: list[Subnet] = Field(default=[], max_length=MAX_SITE_SUBNETS)


class Witness(StrictModel):
    name: Name
    address: IPv4
    site: Name | None = Field(default=None, description="the third site the witness lives in (default: its name)")

    @field_validator("address")
    @classmethod
    def _another_machine(cls, address: str) -> str:
        """The router drops the witness's address to isolate it: at loopback that drops the router's own traffic."""
        if this_machine(address):
            raise ValueError(f"{shown(address)} is a loopback address: the witness is a machine of a third site, "
                             "never this one (isolating it would cut a router off from itself)")
        return address

    @property
    def site_name(self) -> str:
        return self.site or self.name


class Link(StrictModel):
    """An inter-site (or site-witness) path through a router, with its interfaces there."""

    between: tuple[Name, Name]
    interfaces: dict[Name, Interface] = Field(default_factory=dict, description="site name -> router interface")

    @property
    def name(self) -> str:
        return Target.of(TargetKind.LINK, *self.between).path


class Router(StrictModel):
    name: Name
    ssh: Name = Field(description="name of an ssh endpoint in management")
    links: list[Link] = []


SYSTEM_DATABASES = frozenset({"master", "model", "msdb", "tempdb"})
"""SQL Server's own databases: a restore named like one would write over it (names compare case-insensitively)."""

SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}(?:\\[A-Za-z0-9_$-]{1,16})?")
ServerName = Annotated[str, AfterValidator(matching(SERVER_NAME, "a SQL Server name: HOST or HOST\\INSTANCE"))]


class DatabaseNode(StrictModel):
    name: Name = Field(description="the node's name; for SQL Server, its WSFC node (computer) name")
    host: Name | None = Field(default=None, description="host (or VM host) it runs on, if known")
    vm: Name | None = Field(default=None, description="the vSphere VM the node runs in (vSphere topologies)")
    address: Address | None = Field(default=None, description="the node's own address (SQL Server: the "
                                                              "replica's instance, reached without the listener)")
    port: Port | None = None
    replica: ServerName | None = Field(default=None, description="SQL Server: the instance as the AG names it "
                                                                 "(replica_server_name); default: the node name")
    winrm: Name | None = Field(default=None, description="SQL Server: the winrm endpoint on this node, tried "
                                                         "when the database's own winrm endpoint does not answer")

    @property
    def replica_name(self) -> str:
        return self.replica or self.name


class Database(StrictModel):
    name: Name
    kind: Name = Field(description="postgres, or a kind an installed platform brings (SQL Server's sqlserver-ag and "
                                   "sqlserver-fci): checked against the catalogue when a run reads the topology")
    endpoint: str = Field(description="listener / network name; for postgres, comma-separated hosts")
    port: Port = 1433
    database: Name
    credential: CredentialRef | None = None
    odbc_driver: Literal["ODBC Driver 18 for SQL Server", "FreeTDS"] | None = Field(
        default=None, description="SQL Server: the ODBC driver (default: ODBC Driver 18 for SQL Server)")
    encrypt: bool = Field(default=True, strict=True, description="SQL Server: Encrypt=yes")
    trust_server_certificate: bool = Field(default=False, strict=True,
                                           description="SQL Server: accept a certificate no CA vouches for")
    login_timeout_s: int = Field(default=5, strict=True, ge=1, le=120)
    query_timeout_s: float = Field(default=10.0, strict=True, gt=0, le=600)
    nodes: list[DatabaseNode] = []
    winrm: Name | None = Field(default=None, description="winrm endpoint used for cluster operations")
    ag_name: Name | None = Field(default=None, description="sqlserver-ag: the availability group's name")
    role_name: Display | None = Field(default=None, description="sqlserver-fci: the WSFC role (cluster group) "
                                                                "of the instance, e.g. 'SQL Server (MSSQLSERVER)'")
    backup_area: FilePath | None = Field(
        default=None, description="postgres: where a backup without params.destination goes (the harness writes "
                                  "only its own instance-named entries there); the embedded lab sets its own")
    restore_as: Name | None = Field(
        default=None,
        description="SQL Server: the scratch database a restore under load (S7) creates beside this one; the "
                    "harness refuses it when it exists, and drops it afterwards only when its files are the ones "
                    "the harness restored")
    database_is_scratch: bool = Field(
        default=False, strict=True,
        description="the database is a fresh one for the harness: it may create its tables there "
                    "(otherwise only in a database that carries the harness's ownership marker)")
    replication: Literal["synchronous", "asynchronous"] = Field(
        default="synchronous",
        description="the replication the business expects: synchronous (a commit is acknowledged once another "
                    "copy has it: no acknowledged commit is lost in a failover) or asynchronous; a run against a "
                    "cluster found weaker is flagged and its '0 lost' is not judged a pass "
                    "(--accept-weaker-replication judges it knowingly)")

    @field_validator("endpoint")
    @classmethod
    def _hosts(cls, endpoint: str, info: ValidationInfo) -> str:
        """One host (it goes into `SERVER=tcp:host,port`); postgres lists several (the `Pqopt` host list)."""
        hosts = [valid_address(host) for host in endpoint.split(",")]
        if len(hosts) > 1 and info.data.get("kind") != "postgres":
            raise ValueError(f"{shown(endpoint)}: one host for SQL Server (only postgres lists several)")
        return ",".join(hosts)

    @field_validator("restore_as")
    @classmethod
    def _a_scratch_name(cls, restore_as: str | None, info: ValidationInfo) -> str | None:
        """RESTORE writes the copy under this name: never a system database's, never the database's own."""
        if restore_as is None:
            return None
        if restore_as.casefold() in SYSTEM_DATABASES:
            raise ValueError(f"{shown(restore_as)} is a SQL Server system database ({', '.join(sorted(SYSTEM_DATABASES))}"
                             "): a restore would write over it; name a scratch database such as bench_restore_test")
        own = info.data.get("database")
        if isinstance(own, str) and restore_as.casefold() == own.casefold():
            raise ValueError(f"{shown(restore_as)} is this database itself (database: {shown(own)}; case makes no "
                             "difference to SQL Server): the copy is restored beside it, never over it")
        return restore_as


class LocalProcess(StrictModel):
    """A process on the harness machine that faults may freeze (a stand-in service, a fio server).

    Its pid file names the process and `executable` confirms it: a freeze acts only on a process
    whose /proc/PID/exe is that program (never pid 1, the harness or anything it runs under).
    """

    name: Name
    pidfile: FilePath
    executable: FilePath = Field(description="the program the process runs, as /proc/PID/exe shows it")

    @field_validator("pidfile")
    @classmethod
    def _an_ordinary_file(cls, pidfile: str) -> str:
        if PurePosixPath(pidfile).parts[1:2] in (("proc",), ("sys",), ("dev",)):
            raise ValueError(f"{shown(pidfile)}: a pid file is an ordinary file, not under /proc, /sys or /dev")
        return pidfile


class Slo(StrictModel):
    """Thresholds the suites turn into assertions."""

    failover_max_s: Seconds = 35.0
    tps_after_min_ratio: float = Field(default=0.8, strict=True, gt=0, le=2)
    recovery_max_s: Seconds = 900.0
    lost_commits_max: int = Field(default=0, strict=True, ge=0)
    non_primary_stall_max_s: Seconds = 5.0
    latency_tps_min_ratio: float = Field(default=0.8, strict=True, gt=0, le=1)
    planned_failover_max_s: Seconds = 35.0
    # the inter-site RTT the design must support (S1 fails when throughput is not kept up to it); unset, S1's
    # sweep characterises and a step below the throughput target is a finding
    required_rtt_ms: float | None = Field(default=None, strict=True, ge=0, le=1000)
    # how long the data may have fewer in-sync copies than before a failure (the time at risk): the failed copy
    # rebuilt and back in sync within it
    time_at_risk_max_s: Seconds = 300.0
    # how long commits may stop while the inter-site link or the witness is cut (a synchronous replica's timeout:
    # an AG's session timeout, 10 s by default); unset, S3's partitions characterise and a stall is a finding
    partition_stall_max_s: Seconds | None = None


LAB_PREFIX = re.compile(r"^[a-z][a-z0-9]{1,7}$")


class LabSettings(StrictModel):
    """The embedded lab's identity: a prefix for every resource and its /24 in 198.18.0.0/15."""

    prefix: str = Field(default="hlab", pattern=LAB_PREFIX.pattern)
    subnet_index: int | None = Field(default=None, ge=0, le=511, description="derived from the prefix if absent")
    state_dir: str | None = None


def _widest_site_prefix(info: ValidationInfo) -> int:
    """The command line may widen the bound (`--widest-site-subnet`); a file cannot."""
    if isinstance(info.context, Mapping) and isinstance(info.context.get("widest_site_prefix"), int):
        return int(info.context["widest_site_prefix"])
    return WIDEST_SITE_PREFIX


class Topology(StrictModel):
    name: Name
    # the platform the cluster runs on: vsphere, or the name of an installed platform that hosts clusters (checked
    # against the catalogue when a run reads the topology: `faults.sections.check`); lab is built by code only
    kind: str = Field(default="vsphere", pattern=r"^[a-z][a-z0-9-]{1,30}$")
    sites: list[Site] = Field(min_length=1)
    witness: Witness | None = None
    routers: list[Router] = []
    databases: list[Database] = []
    management: Management = Management()
    slo: Slo = Slo()
    processes: list[LocalProcess] = []
    allow_list: list[str] = []
    owners: dict[str, Name] = Field(
        default_factory=dict, description="target -> the platform that acts on it, where the one inferred from the "
                                          "topology is not wanted (e.g. a link delayed by the lab, not the router)")
    lab: LabSettings | None = None

    @field_validator("kind")
    @classmethod
    def _lab_is_built_by_code(cls, kind: str, info: ValidationInfo) -> str:
        if kind == "lab" and from_document(info):
            raise ValueError("'lab' is the embedded lab, chosen with --topology lab[:PREFIX]; "
                             "a file describes a real cluster (kind: vsphere)")
        return kind

    @field_validator("lab")
    @classmethod
    def _lab_settings_are_built_by_code(cls, lab: LabSettings | None, info: ValidationInfo) -> LabSettings | None:
        """A document names a lab only to bind a vSphere topology to it (`lab up --vsphere` writes one).

        Then it gives the prefix alone: where the lab keeps its state is the lab's own rule, never a
        path a file could point elsewhere.
        """
        if lab is None or not from_document(info):
            return lab
        if info.data.get("kind") != "vsphere" or lab.state_dir is not None or lab.subnet_index is not None:
            raise ValueError("only the embedded lab (--topology lab[:PREFIX]) has lab settings; a vsphere "
                             "topology bound to it (`python -m harness lab up --vsphere`) names its prefix alone")
        return lab

    @model_validator(mode="after")
    def _coherent(self, info: ValidationInfo) -> Topology:
        problems: list[str] = []
        for check in (_names_are_unique, _references_resolve, _networks_spare_management, _secrets_are_plain,
                      _witness_stands_apart, _one_bmc_per_host):
            check(self, problems)
        _site_subnets_within(self, _widest_site_prefix(info), problems)
        targets = self.targets()
        for ai, entry in enumerate(self.allow_list):
            if entry not in targets:
                problems.append(f"allow_list[{ai}]: {shown(entry)} names no target in this topology")
        problems += [f"owners: {shown(target)} names no target in this topology" for target in self.owners
                     if target not in targets]
        if self.kind == "lab" and self.lab is None:
            problems.append("lab: required when kind is 'lab'")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @model_validator(mode="after")
    def _remember_its_file(self, info: ValidationInfo) -> Topology:
        """Where a document was read from (`loader.parse_topology` says), for the errors found once it is loaded (a
        plug-in platform's section): kept beside the fields, never one (equality, hashing and dumps ignore it)."""
        origin = info.context.get("origin") if isinstance(info.context, Mapping) else None
        if isinstance(origin, str):
            self.__dict__[ORIGIN] = origin
        return self

    @property
    def origin(self) -> str | None:
        """The file this topology was read from; None when code built it (the embedded lab)."""
        origin = self.__dict__.get(ORIGIN)
        return origin if isinstance(origin, str) else None

    def hosts(self) -> list[Host]:
        return [h for s in self.sites for h in s.hosts]

    def host(self, name: str) -> Host:
        for host in self.hosts():
            if host.name == name:
                return host
        raise KeyError(name)

    def site_of(self, host_name: str) -> Site:
        for site in self.sites:
            if any(h.name == host_name for h in site.hosts):
                return site
        raise KeyError(host_name)

    def targets(self) -> set[str]:
        """Every fault target this topology names (the allow-list vocabulary)."""
        found = [Target.of(TargetKind.SITE, s.name) for s in self.sites]
        for host in self.hosts():
            found.append(Target.of(TargetKind.HOST, host.name))
            for gi, group in enumerate(host.disk_groups):
                found.append(Target.of(TargetKind.DISK_GROUP, host.name, gi))
                found += [Target.of(TargetKind.DISK, host.name, d) for d in [*group.capacity, *filter(None, [group.cache])]]
        found += [Target.of(TargetKind.LINK, *link.between) for router in self.routers for link in router.links]
        if self.witness:
            found.append(Target.of(TargetKind.WITNESS, self.witness.name))
        found += [Target.of(TargetKind.PROCESS, p.name) for p in self.processes]
        for db in self.databases:
            found.append(Target.of(TargetKind.DATABASE, db.name))
            found += [Target.of(TargetKind.NODE, db.name, n.name) for n in db.nodes]
        return {str(t) for t in found}

    def credentials(self) -> list[tuple[str, CredentialRef]]:
        """Every username + password reference with its field path."""
        mgmt = self.management
        found = [("management.vcenter.credential", mgmt.vcenter.credential)] if mgmt.vcenter else []
        found += [(f"management.redfish[{i}].credential", r.credential) for i, r in enumerate(mgmt.redfish)]
        found += [(f"management.winrm[{i}].credential", w.credential) for i, w in enumerate(mgmt.winrm)]
        found += [(f"databases[{i}].credential", d.credential) for i, d in enumerate(self.databases) if d.credential]
        return found

    def secret_refs(self) -> list[tuple[str, SecretRef]]:
        """Every secret reference with its field path, for up-front checks and dry-run."""
        credentials = [(f"{path}.password", credential.password) for path, credential in self.credentials()]
        ssh: list[tuple[str, SecretRef]] = []
        for i, s in enumerate(self.management.ssh):
            if s.key_file:
                ssh.append((f"management.ssh[{i}].key_file", s.key_file))
            if s.password:
                ssh.append((f"management.ssh[{i}].password", s.password))
        management = [ref for ref in credentials if ref[0].startswith("management.")]
        databases = [ref for ref in credentials if ref[0].startswith("databases[")]
        return management + ssh + databases  # the order dry-run has always listed them in


# Whole-topology checks: each appends "field.path: problem" lines.

def _unique(named: list[tuple[str, str]], problems: list[str]) -> None:
    """`named` is (field path, name); a name seen before, in any case, is reported at its second path.

    Case counts as no difference: Windows, DNS and SQL Server compare names case-insensitively, and so
    do the backends, so `sql01` and `SQL01` would be one node to them and two to the allow-list."""
    first: dict[str, tuple[str, str]] = {}
    for path, name in named:
        key = name.casefold()
        if key in first:
            other, spelled = first[key]
            case = "" if spelled == name else f" as {shown(spelled)}: case makes no difference"
            problems.append(f"{path}: {shown(name)} is used twice (first at {other}{case})")
        first.setdefault(key, (path, name))


def _names_are_unique(topology: Topology, problems: list[str]) -> None:
    """Names are how targets, references and the router's nft tables find things: one thing each."""
    mgmt = topology.management
    sites = list(enumerate(topology.sites))
    _unique([(f"sites[{si}].name", s.name) for si, s in sites], problems)
    _unique([(f"sites[{si}].hosts[{hi}].name", h.name) for si, s in sites for hi, h in enumerate(s.hosts)], problems)
    _unique([(f"routers[{ri}].name", r.name) for ri, r in enumerate(topology.routers)], problems)
    _unique([(f"routers[{ri}].links[{li}].between", link.name)
             for ri, r in enumerate(topology.routers) for li, link in enumerate(r.links)], problems)
    _unique([(f"databases[{di}].name", d.name) for di, d in enumerate(topology.databases)], problems)
    _unique([(f"processes[{pi}].name", p.name) for pi, p in enumerate(topology.processes)], problems)
    for kind in ("redfish", "winrm", "ssh"):
        _unique([(f"{path}.name", e.name) for path, e in mgmt.named() if path.startswith(f"management.{kind}[")], problems)
    for di, db in enumerate(topology.databases):
        _unique([(f"databases[{di}].nodes[{ni}].name", n.name) for ni, n in enumerate(db.nodes)], problems)
    for si, site in sites:
        for hi, host in enumerate(site.hosts):
            where = f"sites[{si}].hosts[{hi}].disk_groups"
            _unique([(f"{where}[{gi}].{path}", device) for gi, group in enumerate(host.disk_groups)
                     for path, device in ([("cache", group.cache)] if group.cache else [])
                     + [(f"capacity[{ci}]", d) for ci, d in enumerate(group.capacity)]], problems)


def _references_resolve(topology: Topology, problems: list[str]) -> None:
    mgmt = topology.management
    redfish, ssh, winrm = ({e.name for e in eps} for eps in (mgmt.redfish, mgmt.ssh, mgmt.winrm))
    host_names = {h.name for h in topology.hosts()}
    for si, site in enumerate(topology.sites):
        for hi, host in enumerate(site.hosts):
            if host.bmc and host.bmc not in redfish:
                problems.append(f"sites[{si}].hosts[{hi}].bmc: no redfish endpoint named {shown(host.bmc)}")
            if host.ssh and host.ssh not in ssh:
                problems.append(f"sites[{si}].hosts[{hi}].ssh: no ssh endpoint named {shown(host.ssh)}")
    witness = topology.witness
    known_sites = {s.name for s in topology.sites} | ({witness.site or witness.name} if witness else set())
    for ri, router in enumerate(topology.routers):
        if router.ssh not in ssh:
            problems.append(f"routers[{ri}].ssh: no ssh endpoint named {shown(router.ssh)}")
        for li, link in enumerate(router.links):
            where = f"routers[{ri}].links[{li}]"
            for end in link.between:
                if end not in known_sites:
                    problems.append(f"{where}.between: unknown site {shown(end)}")
            if link.between[0] == link.between[1]:
                problems.append(f"{where}.between: a link joins two different sites")
            for site_name in link.interfaces:
                if site_name not in link.between:
                    problems.append(f"{where}.interfaces: {shown(site_name)} is not an end of this link")
    for di, db in enumerate(topology.databases):
        if db.winrm and db.winrm not in winrm:
            problems.append(f"databases[{di}].winrm: no winrm endpoint named {shown(db.winrm)}")
        for ni, node in enumerate(db.nodes):
            if node.host and node.host not in host_names:
                problems.append(f"databases[{di}].nodes[{ni}].host: no host named {shown(node.host)}")
            if node.winrm and node.winrm not in winrm:
                problems.append(f"databases[{di}].nodes[{ni}].winrm: no winrm endpoint named {shown(node.winrm)}")


def _site_networks(topology: Topology) -> list[tuple[int, str, ipaddress.IPv4Network]]:
    """(site index, field path, network) of every site subnet, in document order."""
    return [(si, f"sites[{si}].subnets[{ni}]", ipaddress.IPv4Network(subnet))
            for si, site in enumerate(topology.sites) for ni, subnet in enumerate(site.subnets)]


def _containing(ip: ipaddress.IPv4Address, by_network: Mapping[ipaddress.IPv4Network, str]) -> list[str]:
    """Paths of the networks that hold `ip`: one look-up per prefix length, whatever their number."""
    found = []
    for length in range(33):
        path = by_network.get(ipaddress.IPv4Network((int(ip) >> (32 - length) << (32 - length), length)))
        if path is not None:
            found.append(path)
    return found


def _networks_spare_management(topology: Topology, problems: list[str]) -> None:
    """A partition drops a site's subnets: they may neither overlap across sites nor hold a management endpoint.

    Linear in the number of subnets: CIDR blocks either nest or are apart, so one pass in address
    order with the chain of blocks that hold the current one finds every overlap."""
    networks = _site_networks(topology)
    by_network: dict[ipaddress.IPv4Network, str] = {}
    for _, path, network in networks:
        by_network.setdefault(network, path)
    for path, address in topology.management.addresses():
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            continue  # a host name: resolved only when connecting
        if isinstance(ip, ipaddress.IPv4Address):
            for where in _containing(ip, by_network):
                problems.append(f"{where}: it covers {path} ({ip}): a partition would cut the harness off from it")
    order = {where: index for index, (_, where, _) in enumerate(networks)}
    chain: list[tuple[int, str, ipaddress.IPv4Network]] = []
    for site, where, network in sorted(networks, key=lambda n: (int(n[2].network_address), n[2].prefixlen)):
        while chain and int(chain[-1][2].broadcast_address) < int(network.network_address):
            chain.pop()
        other = next((c for c in reversed(chain) if c[0] != site), None)
        if other is not None:  # said at the one that comes later in the file
            (_, later, later_net), (_, earlier, earlier_net) = sorted(
                [(order[where], where, network), (order[other[1]], other[1], other[2])], reverse=True)
            problems.append(f"{later}: {later_net} overlaps {earlier} ({earlier_net})")
        chain.append((site, where, network))


def _site_subnets_within(topology: Topology, widest: int, problems: list[str]) -> None:
    for _site, where, network in _site_networks(topology):
        if network.prefixlen < widest:
            problems.append(f"{where}: {network} is wider than /{widest}; a partition would drop all of it "
                            f"(widen the bound from the command line: --widest-site-subnet {network.prefixlen})")


def _witness_stands_apart(topology: Topology, problems: list[str]) -> None:
    """The witness is a third site: its site is no data site, its address no host's and in no site subnet.

    Otherwise a `witness:` target would reach a data site, and isolating the witness would cut the
    cluster in two (or cut a host off) under a name the allow-list reads as harmless."""
    witness = topology.witness
    if witness is None:
        return
    data_sites = {site.name.casefold(): site.name for site in topology.sites}
    if witness.name.casefold() in data_sites:
        problems.append(f"witness.name: {shown(witness.name)} is a data site's name; the witness is a third site")
    if witness.site is not None and witness.site.casefold() in data_sites:
        problems.append(f"witness.site: {shown(witness.site)} is a data site; the witness lives in a third site")
    ip = ipaddress.IPv4Address(witness.address)
    for index, where, network in _site_networks(topology):
        if ip in network:
            problems.append(f"witness.address: {ip} is inside {where} ({network}) of data site "
                            f"{topology.sites[index].name!r}")
    for si, site in enumerate(topology.sites):
        for hi, host in enumerate(site.hosts):
            if host.address == str(ip):
                problems.append(f"witness.address: {ip} is also sites[{si}].hosts[{hi}].address ({host.name})")


def _one_bmc_per_host(topology: Topology, problems: list[str]) -> None:
    """Two BMCs at one address power off one server for two hosts: the wrong one, for one of them."""
    first: dict[tuple[str, int, str | None], str] = {}
    for ri, endpoint in enumerate(topology.management.redfish):
        key = (endpoint.address.casefold(), endpoint.port, endpoint.system_id)  # one service may manage several
        if key in first:
            problems.append(f"management.redfish[{ri}].address: {endpoint.address} (system "
                            f"{endpoint.system_id or 'discovered'}) is also {first[key]}'s: one BMC per host")
        first.setdefault(key, f"management.redfish[{ri}]")
    _unique([(f"sites[{si}].hosts[{hi}].bmc", host.bmc) for si, site in enumerate(topology.sites)
             for hi, host in enumerate(site.hosts) if host.bmc is not None], problems)


def _secrets_are_plain(topology: Topology, problems: list[str]) -> None:
    """References name a variable or a keyring entry; usernames go into connection strings."""
    for path, credential in topology.credentials():
        if not USERNAME.fullmatch(credential.username):
            problems.append(f"{path}.username: {shown(credential.username)} is not a user name: "
                            "letters, digits and '_.@\\-'")
    for path, ref in topology.secret_refs():  # values never shown: a secret pasted here would be printed
        if ref.env is not None and not ENV_NAME.fullmatch(ref.env):
            problems.append(f"{path}.env: not an environment variable name (letters, digits and '_'; the value is "
                            "not shown, in case it is the secret itself)")
        if ref.keyring is not None:
            for key in ("service", "username"):
                value = getattr(ref.keyring, key)
                if not KEYRING_KEY.fullmatch(value):
                    problems.append(f"{path}.keyring.{key}: not a keyring key: letters, digits, spaces and "
                                    "'_.@:/\\-' (the value is not shown, in case it is the secret itself)")
