"""`python -m harness discover --vcenter`: a draft topology from what vCenter says the cluster is; it changes nothing.

The vSphere platform's topology drafter (`faults.drafts.TopologyDrafter`): the command watches the
wire read-only while it and the other platforms' drafters read, then it writes the whole draft with
their parts (the databases, `management.winrm`) in it.

Trust first: the certificate is verified against `--ca FILE`, or pinned by `--thumbprint SHA256`;
with neither, discover refuses and prints the thumbprint the server presents, for a person to
compare with the one their vCenter shows (no silent trust on first use). The password comes from
the environment variable `--password-env` names and is never printed.

The draft is the vSphere part of a topology: the cluster, its vSAN fault domains as sites (the
preferred one said), the witness, each host with its disk groups (cache and capacity devices, or
an ESA storage pool), and the management section with the credential as a reference. What
vCenter cannot say is left out or marked `guessed` (a host's address is its management VMkernel
address, a witness's site name is ours); the cluster's VMs with where they run, its HA/DRS
settings and VM/host rules are comments to choose the database nodes from. The allow-list is
empty, with the candidate targets listed: nothing may be touched until a person says so. The
draft loads as it is (`parse_topology` checks it before it is printed).

"""

from __future__ import annotations

import datetime as dt
import functools
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml
from pydantic import ValidationError

from faults.contract import (
    ConfigError,
    ControlPlaneError,
    DraftPart,
    SeenVm,
    VCenter,
    VCenterSession,
    parse_topology,
    pinned_context,
    presented_certificate,
)
from harness_platforms.vsphere.probes import Discovery, discover_cluster
from harness_platforms.vsphere.vsan.probes import DISK_PROPS, load_json, physical_disks

SCHEMA_NOTE = "# Drafted by `python -m harness discover`"


class Untrusted(ConfigError):
    """No CA and no thumbprint: discover will not send a password to a server it cannot tell from another."""


@dataclass(frozen=True)
class Request:
    address: str
    port: int
    user: str
    password_env: str
    ca_file: str | None = None
    thumbprint: str | None = None
    datacenter: str | None = None
    cluster: str | None = None


def drafter(arguments: Mapping[str, Any]) -> VcenterDraft | None:
    """The topology drafter for `--vcenter` and its options as the command parsed them; None without `--vcenter`."""
    if not arguments.get("vcenter"):
        return None
    if not (arguments.get("user") and arguments.get("password_env")):
        raise ConfigError("--vcenter needs --user and --password-env")
    return VcenterDraft(Request(arguments["vcenter"], arguments.get("port") or 443, arguments["user"],
                                arguments["password_env"], arguments.get("ca"), arguments.get("thumbprint"),
                                arguments.get("datacenter"), arguments.get("cluster")))


@dataclass
class VcenterDraft:
    """What vCenter says the cluster is, read once (trust settled first), then written as a whole draft."""

    request: Request
    session: VCenterSession | None = field(default=None, init=False)
    vcenter: VCenter | None = field(default=None, init=False)
    seen: Discovery | None = field(default=None, init=False)
    addresses: dict[str, str] = field(default_factory=dict, init=False)
    unhealthy: dict[str, int] = field(default_factory=dict, init=False)
    unread: dict[str, str] = field(default_factory=dict, init=False)

    def read(self) -> None:
        self.session = session = _session(self.request)
        self.vcenter = session.vcenter = _named(session, self.request)
        self.seen = discover_cluster(session, self.vcenter)
        self.addresses = _management_addresses(session)
        self.unhealthy, self.unread = _unhealthy_devices(session, self.seen)
        session.close()

    def close(self) -> None:
        if self.session is not None:
            self.session.close()

    def vms(self) -> list[SeenVm]:
        return [SeenVm(vm.name, vm.host) for vm in self._seen().vms.values()]

    def drafted(self, parts: Sequence[DraftPart]) -> str:
        """The draft topology (YAML with comments), after checking it loads."""
        seen, vcenter = self._seen(), self.vcenter
        assert vcenter is not None
        document = _document(vcenter, seen, self.addresses, self.request, parts)
        parse_topology(document, "the draft")  # it must load as it is
        said = [f"# host {name}: its vSAN disks could not be read ({why}): its disk groups, if any, are not in this "
                "draft" for name, why in sorted(self.unread.items())] + [line for p in parts for line in p.comments]
        return _render(document, vcenter, seen, self.request, self.unhealthy, said)

    def _seen(self) -> Discovery:
        if self.seen is None:
            raise ConfigError("discover: vCenter was not read yet")
        return self.seen


def _session(request: Request) -> VCenterSession:
    if not request.ca_file and not request.thumbprint:
        thumbprint, _ = presented_certificate(request.address, request.port)
        raise Untrusted(f"{request.address}:{request.port} presents a certificate with SHA-256 thumbprint {thumbprint}. "
                        "Compare it with the one your vCenter shows (its certificate management page), then run again "
                        f"with --thumbprint {thumbprint}, or give the CA that signed it with --ca FILE")
    tls: dict[str, Any] = {"ca_file": request.ca_file} if request.ca_file else {}
    try:
        vcenter = VCenter.model_validate({
            "address": request.address, "port": request.port, "cluster": request.cluster or "unknown",
            "datacenter": request.datacenter, "tls": tls,
            "credential": {"username": request.user, "password": {"env": request.password_env}}})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"discover: {problems}") from None
    pinned = pinned_context(request.address, request.port, request.thumbprint) if request.thumbprint else None
    return VCenterSession(vcenter, pinned=pinned)


def _named(session: VCenterSession, request: Request) -> VCenter:
    """The section with the datacenter and cluster named: as asked, else the only one vCenter has."""
    updates: dict[str, str] = {}
    for kind, option, asked in (("Datacenter", "datacenter", request.datacenter),
                                ("ClusterComputeResource", "cluster", request.cluster)):
        known = sorted(session.inventory(kind, []))
        if asked is None:
            if len(known) != 1:
                raise ConfigError(f"{session.where}: vCenter has {len(known)} {kind} objects "
                                  f"({', '.join(known) or 'none'}): name one with --{option}")
            updates[option] = known[0]
    return session.vcenter.model_copy(update=updates)


def _management_addresses(session: VCenterSession) -> dict[str, str]:
    """Each host's management VMkernel IPv4 address (the `Management Network` port group's, else its first)."""
    found: dict[str, str] = {}
    for name, (_, props) in session.inventory("HostSystem", ["config.network.vnic"]).items():
        vnics = list(props.get("config.network.vnic") or [])
        vnics.sort(key=lambda v: getattr(v, "portgroup", "") != "Management Network")
        for vnic in vnics:
            ip = getattr(getattr(getattr(vnic, "spec", None), "ip", None), "ipAddress", None)
            if ip and _ipv4(str(ip)):
                found[name] = str(ip)
                break
    return found


def _unhealthy_devices(session: VCenterSession, seen: Discovery) -> tuple[dict[str, int], dict[str, str]]:
    """Each device vSAN reports with non-zero health flags (`QueryPhysicalVsanDisks` on every connected host of
    the cluster): a draft made while a disk group is failed says so, rather than describing it as healthy. A host
    that cannot be asked (a compute-only host has no vSAN service) is a comment in the draft, never the end: the
    second mapping, host -> why."""
    found: dict[str, int] = {}
    unread: dict[str, str] = {}
    for name, host in sorted(seen.hosts.items()):
        if host.connection != "connected":
            continue
        try:
            system = session.read(session.find("HostSystem", name), ["configManager.vsanInternalSystem"],
                                  f"reading host {name}")["configManager.vsanInternalSystem"]
            text = session.call(f"QueryPhysicalVsanDisks on {name}", functools.partial(
                system.QueryPhysicalVsanDisks, props=list(DISK_PROPS)))
            disks = physical_disks(load_json(text, f"QueryPhysicalVsanDisks on {name}"))
        except ControlPlaneError as exc:
            unread[name] = str(exc).removeprefix(f"{session.where}: ")
            continue
        for disk in disks.values():
            if disk.owner == host.node_uuid and disk.health_flags:
                found[disk.device] = disk.health_flags
    return found, unread


def _ipv4(text: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(text), ipaddress.IPv4Address)
    except ValueError:
        return False


def _document(vcenter: VCenter, seen: Discovery, addresses: dict[str, str], request: Request,
              parts: Sequence[DraftPart]) -> dict[str, Any]:
    sites: list[dict[str, Any]] = []
    host_addresses: set[str] = set()
    for site, names in seen.sites.items():
        hosts = []
        for name in names:
            host = seen.hosts[name]
            groups = [{"capacity": list(g.capacity)} if g.cache is None else {"cache": g.cache, "capacity": list(g.capacity)}
                      for g in host.disk_groups if g.capacity]
            hosts.append({"name": name, "address": addresses.get(name, name), "disk_groups": groups})
            host_addresses.add(addresses.get(name, name))
        sites.append({"name": site or "no-fault-domain", "hosts": hosts})
    document: dict[str, Any] = {"name": seen.cluster, "kind": "vsphere", "sites": sites}
    witness_address = addresses.get(seen.witness or "")
    if seen.witness and witness_address and witness_address not in host_addresses:
        document["witness"] = {"name": seen.witness, "address": witness_address, "site": "witness"}
    document["databases"] = [entry for part in parts for entry in part.databases]
    section: dict[str, Any] = {"address": vcenter.address, "port": vcenter.port}
    if vcenter.datacenter:
        section["datacenter"] = vcenter.datacenter
    section["cluster"] = seen.cluster
    section["tls"] = {"verify": True, **({"ca_file": request.ca_file} if request.ca_file else {})}
    section["credential"] = {"username": request.user, "password": {"env": request.password_env}}
    document["management"] = {"vcenter": section}
    for part in parts:
        document["management"].update(part.management)
    document["allow_list"] = []
    return document


def _render(document: dict[str, Any], vcenter: VCenter, seen: Discovery, request: Request,
            unhealthy: dict[str, int], said: list[str]) -> str:
    """The document as YAML, each guessed value marked, with what vCenter said that a topology does not hold."""
    def dump(part: dict[str, Any]) -> list[str]:
        return yaml.safe_dump(part, sort_keys=False, default_flow_style=False).rstrip("\n").splitlines()

    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = [f"{SCHEMA_NOTE} from vCenter {vcenter.address}:{vcenter.port}, cluster {seen.cluster}, at {now}.",
             "# Read it before use: values marked `guessed` are the harness's; BMCs (sites[].hosts[].bmc), ESXi SSH",
             "# endpoints, routers and databases are not in vCenter: add them. Nothing is allowed yet (allow_list).",
             f"# vSAN stretched cluster: preferred site {seen.preferred_site or '(none)'}; witness "
             f"{seen.witness or '(none)'}."]
    if request.thumbprint and not request.ca_file:
        lines.append(f"# TLS: discover trusted the pinned certificate {request.thumbprint}; a topology verifies against "
                     "a CA: set management.vcenter.tls.ca_file to the CA that signed it.")
    lines += dump({"name": document["name"], "kind": document["kind"]})
    for line in dump({"sites": document["sites"]}):
        device = next((d for d in unhealthy if line.rstrip().endswith(d)), None)
        lines.append(line + ("  # guessed: the host's management VMkernel address" if "address:" in line else "")
                     + (f"  # unhealthy now: vSAN health flags {unhealthy[device]:#x}" if device else ""))
    if seen.witness and "witness" not in document:
        lines.append(f"# witness {seen.witness}: vCenter gives no management address of its own; add witness: "
                     "{name, address, site}")
    if "witness" in document:
        for line in dump({"witness": document["witness"]}):
            guess = {"address:": "  # guessed: its management VMkernel address", "site:": "  # guessed: a name of ours"}
            lines.append(line + next((g for key, g in guess.items() if line.strip().startswith(key)), ""))
    lines += ["# The cluster's VMs, where they run now: name the database's as databases[].nodes[].vm",
              *(f"#   {vm.name} on {vm.host or '(no host)'} ({seen.hosts[vm.host].site if vm.host in seen.hosts else '-'})"
                f", {vm.power}" for vm in sorted(seen.vms.values(), key=lambda v: v.name))]
    lines.append(f"# HA {'on' if seen.ha_enabled else 'off'}; DRS {'on' if seen.drs_enabled else 'off'}"
                 f"{f' ({seen.drs_behavior})' if seen.drs_behavior else ''}")
    lines += [f"# rule {r.name}: {', '.join(r.vms)} {'must' if r.mandatory else 'should'} "
              f"{'' if r.affine else 'not '}run on {', '.join(r.hosts)}{'' if r.enabled else ' (disabled)'}"
              for r in seen.rules]
    lines += said
    guesses = {"database:": "  # guessed: a database the harness may own (it creates its table there): choose one",
               "address:": "  # guessed: the node's name as its address"}
    for line in dump({"databases": document["databases"]}):
        lines.append(line + next((g for key, g in guesses.items() if line.strip().lstrip("- ").startswith(key)), ""))
    lines += dump({"management": document["management"]})
    candidates = sorted(parse_topology(document, "the draft").targets())
    lines += ["# allow_list: the targets faults may act on. Candidates (destructive: choose deliberately):",
              *(f"#   - {t}" for t in candidates), "allow_list: []"]
    return "\n".join(lines) + "\n"
