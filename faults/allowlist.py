"""The allow-list judges what a fault does, not only what it names.

A fault's plan states its effects: the sites, hosts, links, witness, devices, databases and
processes it cuts off or powers off (`FaultPlan.effect_set`). Each effect must be covered by an
allow-listed target: itself; a `site:` covers its hosts and their devices; a `host:` its devices;
a `database:` its nodes; a `witness:` the links between its own site and another site (never a
link between two data sites: that is a partition of the cluster, allowed only as `link:`).
So a target that is allowed cannot carry a fault further than the allow-list reaches.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness_kernel.topology.models import Topology
from harness_kernel.topology.targets import Target, TargetKind


def uncovered(effects: Iterable[str], topology: Topology) -> list[str]:
    """The effects no allow-listed target covers, sorted; [] when every one is covered."""
    allowed = set(topology.allow_list)
    return sorted(effect for effect in set(effects) if not _covered(effect, allowed, topology))


def _covered(effect: str, allowed: set[str], topology: Topology) -> bool:
    if effect in allowed:
        return True
    target = Target.parse(effect)
    if target.kind is TargetKind.HOST:
        return _host_covered(target.name, allowed, topology)
    if target.kind in (TargetKind.DISK, TargetKind.DISK_GROUP):
        return _host_covered(target.parts[0], allowed, topology)
    if target.kind is TargetKind.NODE:
        return str(Target.of(TargetKind.DATABASE, target.parts[0])) in allowed
    if target.kind is TargetKind.LINK:
        return _link_covered(target.parts, allowed, topology)
    return False


def _host_covered(host: str, allowed: set[str], topology: Topology) -> bool:
    if str(Target.of(TargetKind.HOST, host)) in allowed:
        return True
    return any(str(Target.of(TargetKind.SITE, site.name)) in allowed for site in topology.sites
               if any(h.name == host for h in site.hosts))


def _link_covered(ends: tuple[str, ...], allowed: set[str], topology: Topology) -> bool:
    if str(Target.of(TargetKind.LINK, ends[1], ends[0])) in allowed:
        return True
    witness = topology.witness
    if witness is None or str(Target.of(TargetKind.WITNESS, witness.name)) not in allowed:
        return False
    data_sites = {site.name for site in topology.sites}
    witness_site = witness.site or witness.name
    return witness_site not in data_sites and witness_site in ends and not set(ends) <= data_sites
