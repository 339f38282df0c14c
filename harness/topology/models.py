"""Typed topology: parsed once, validated up front, read by every backend.

Target names used by faults and by the allow-list have the form ``kind:name``:
``host:esx-a1``, ``disk:esx-a1/naa.5000...``, ``diskgroup:esx-a1/0``, ``site:site-a``,
``link:site-a~site-b``, ``witness:witness``, ``database:sql01``, ``node:<db>/<node>``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.topology.credentials import CredentialRef, SecretRef


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DiskGroup(_Model):
    cache: str | None = Field(default=None, description="cache device canonical name (none on vSAN ESA)")
    capacity: list[str] = Field(min_length=1)


class Host(_Model):
    name: str
    address: str
    bmc: str | None = Field(default=None, description="name of a redfish endpoint in management")
    ssh: str | None = Field(default=None, description="name of an ssh endpoint in management")
    disk_groups: list[DiskGroup] = []


class Site(_Model):
    name: str
    hosts: list[Host] = Field(min_length=1)
    subnets: list[str] = []


class Witness(_Model):
    name: str
    address: str
    site: str | None = Field(default=None, description="the third site the witness lives in")


class Link(_Model):
    """An inter-site (or site-witness) path through a router, with its interfaces there."""

    between: tuple[str, str]
    interfaces: dict[str, str] = Field(default_factory=dict, description="site name -> router interface")

    @property
    def name(self) -> str:
        return "~".join(self.between)


class Router(_Model):
    name: str
    ssh: str = Field(description="name of an ssh endpoint in management")
    links: list[Link] = []


class DatabaseNode(_Model):
    name: str
    host: str | None = Field(default=None, description="host (or VM host) it runs on, if known")
    address: str | None = None
    port: int | None = None


class Database(_Model):
    name: str
    kind: Literal["sqlserver-ag", "sqlserver-fci", "postgres"]
    endpoint: str = Field(description="listener / network name / comma-separated hosts")
    port: int = 1433
    database: str
    credential: CredentialRef | None = None
    odbc_driver: str | None = None
    nodes: list[DatabaseNode] = []
    winrm: str | None = Field(default=None, description="winrm endpoint used for cluster operations")
    ag_name: str | None = None
    role_name: str | None = None
    database_is_scratch: bool = Field(
        default=False, description="the database is a fresh one for the harness: it may create its tables there "
                                   "(otherwise only in a database that carries the harness's ownership marker)")


class TlsPolicy(_Model):
    verify: bool = True
    ca_file: str | None = None


class VCenter(_Model):
    address: str
    port: int = 443
    credential: CredentialRef
    tls: TlsPolicy = TlsPolicy()
    datacenter: str | None = None
    cluster: str


class RedfishEndpoint(_Model):
    name: str
    address: str
    port: int = 443
    system_id: str | None = Field(default=None, description="discovered from /redfish/v1/Systems if absent")
    credential: CredentialRef
    tls: TlsPolicy = TlsPolicy()


class WinRmEndpoint(_Model):
    name: str
    address: str
    port: int = 5986
    transport: Literal["ntlm", "kerberos", "credssp", "basic"] = "ntlm"
    credential: CredentialRef
    tls: TlsPolicy = TlsPolicy()


class SshEndpoint(_Model):
    name: str
    address: str
    port: int = 22
    username: str
    key_file: SecretRef | None = Field(default=None, description="where the private key path lives")
    password: SecretRef | None = None
    host_key: str | None = Field(default=None, description="'<type> <base64>' pinned host key")


class Management(_Model):
    vcenter: VCenter | None = None
    redfish: list[RedfishEndpoint] = []
    winrm: list[WinRmEndpoint] = []
    ssh: list[SshEndpoint] = []


class LocalProcess(_Model):
    """A process on the harness machine that faults may freeze (a stand-in service, a fio server)."""

    name: str
    pidfile: str


class Slo(_Model):
    """Thresholds the suites turn into assertions."""

    failover_max_s: float = 35.0
    tps_after_min_ratio: float = Field(default=0.8, gt=0, le=2)
    recovery_max_s: float = 900.0
    lost_commits_max: int = Field(default=0, ge=0)
    non_primary_stall_max_s: float = 5.0
    latency_tps_min_ratio: float = Field(default=0.8, gt=0, le=1)
    planned_failover_max_s: float = 35.0


class LabSettings(_Model):
    """The embedded lab's identity: a prefix for every resource and its /24 in 198.18.0.0/15."""

    prefix: str = Field(default="hlab", pattern=r"^[a-z][a-z0-9]{1,7}$")
    subnet_index: int | None = Field(default=None, ge=0, le=511, description="derived from the prefix if absent")
    state_dir: str | None = None


class Topology(_Model):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    kind: Literal["vsphere", "lab"] = "vsphere"
    sites: list[Site] = Field(min_length=1)
    witness: Witness | None = None
    routers: list[Router] = []
    databases: list[Database] = []
    management: Management = Management()
    slo: Slo = Slo()
    processes: list[LocalProcess] = []
    allow_list: list[str] = []
    lab: LabSettings | None = None

    @model_validator(mode="after")
    def _references_resolve(self) -> Topology:
        problems: list[str] = []
        site_names = {s.name for s in self.sites}
        hosts = [h for s in self.sites for h in s.hosts]
        _unique("sites", [s.name for s in self.sites], problems)
        _unique("hosts", [h.name for h in hosts], problems)
        redfish = {r.name for r in self.management.redfish}
        ssh = {e.name for e in self.management.ssh}
        for si, site in enumerate(self.sites):
            for hi, host in enumerate(site.hosts):
                if host.bmc and host.bmc not in redfish:
                    problems.append(f"sites[{si}].hosts[{hi}].bmc: no redfish endpoint named {host.bmc!r}")
                if host.ssh and host.ssh not in ssh:
                    problems.append(f"sites[{si}].hosts[{hi}].ssh: no ssh endpoint named {host.ssh!r}")
        known_sites = site_names | ({self.witness.site or self.witness.name} if self.witness else set())
        for ri, router in enumerate(self.routers):
            if router.ssh not in ssh:
                problems.append(f"routers[{ri}].ssh: no ssh endpoint named {router.ssh!r}")
            for li, link in enumerate(router.links):
                for end in link.between:
                    if end not in known_sites:
                        problems.append(f"routers[{ri}].links[{li}].between: unknown site {end!r}")
        winrm = {w.name for w in self.management.winrm}
        for di, db in enumerate(self.databases):
            if db.winrm and db.winrm not in winrm:
                problems.append(f"databases[{di}].winrm: no winrm endpoint named {db.winrm!r}")
        targets = self.targets()
        for ai, entry in enumerate(self.allow_list):
            if entry not in targets:
                problems.append(f"allow_list[{ai}]: {entry!r} names no target in this topology")
        if self.kind == "lab" and self.lab is None:
            problems.append("lab: required when kind is 'lab'")
        if problems:
            raise ValueError("; ".join(problems))
        return self

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
        names = {f"site:{s.name}" for s in self.sites}
        for host in self.hosts():
            names.add(f"host:{host.name}")
            for gi, group in enumerate(host.disk_groups):
                names.add(f"diskgroup:{host.name}/{gi}")
                names.update(f"disk:{host.name}/{d}" for d in group.capacity)
                if group.cache:
                    names.add(f"disk:{host.name}/{group.cache}")
        for router in self.routers:
            names.update(f"link:{link.name}" for link in router.links)
        if self.witness:
            names.add(f"witness:{self.witness.name}")
        names.update(f"process:{p.name}" for p in self.processes)
        for db in self.databases:
            names.add(f"database:{db.name}")
            names.update(f"node:{db.name}/{n.name}" for n in db.nodes)
        return names

    def secret_refs(self) -> list[tuple[str, SecretRef]]:
        """Every secret reference with its field path, for up-front checks and dry-run."""
        refs: list[tuple[str, SecretRef]] = []
        mgmt = self.management
        if mgmt.vcenter:
            refs.append(("management.vcenter.credential.password", mgmt.vcenter.credential.password))
        refs += [(f"management.redfish[{i}].credential.password", r.credential.password)
                 for i, r in enumerate(mgmt.redfish)]
        refs += [(f"management.winrm[{i}].credential.password", w.credential.password)
                 for i, w in enumerate(mgmt.winrm)]
        for i, s in enumerate(mgmt.ssh):
            if s.key_file:
                refs.append((f"management.ssh[{i}].key_file", s.key_file))
            if s.password:
                refs.append((f"management.ssh[{i}].password", s.password))
        refs += [(f"databases[{i}].credential.password", d.credential.password)
                 for i, d in enumerate(self.databases) if d.credential]
        return refs


def _unique(what: str, names: list[str], problems: list[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            problems.append(f"{what}: name {name!r} is used twice")
        seen.add(name)
