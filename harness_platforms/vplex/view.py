"""What a VPLEX / metro node adds to the cluster view, read only: its metro states, a preflight, the doctor's probes.

One class is both the platform's cluster part (`preflight`, `describe`) and its observer (`sample`,
and `metro` in the metro state set, `vplex_states`). Each reading is a handful of GETs, each bounded
by the client; nothing here can resume, detach or change a rule: the harness injects its faults
below the storage (the router's link cut, the witness isolated) and reads what the product decided.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Self, TypeVar
from urllib.parse import urlsplit

from faults.contract import (
    Assumption,
    ConfigError,
    ControlPlaneError,
    HarnessError,
    MetroGroup,
    NotFoundError,
    Probed,
    ProbeResult,
    ReplicaSync,
    Serving,
    Topology,
    Uncertain,
    section,
)
from harness_platforms.vplex.assumptions import (
    VPLEX_BASIC_AUTH,
    VPLEX_REBUILD_UNITS,
    VPLEX_REFERENCES,
    VPLEX_STATUS_WORDS,
    VPLEX_WITNESS_COMPONENTS,
)
from harness_platforms.vplex.client import VplexClient
from harness_platforms.vplex.replies import ConsistencyGroup, leaf
from harness_platforms.vplex.section import FIELD, NAME, VplexSection
from harness_platforms.vplex.states import LINK, SERVES, VplexReading, vplex_group, word

T = TypeVar("T")


def _settings(topology: Topology) -> VplexSection:
    """The section, checked against the topology: each cluster stands in one of its sites, and the management
    server is outside every site subnet (a link cut there would cut the harness off from what it reads)."""
    settings = section(topology, NAME, VplexSection)
    sites = [s.name for s in topology.sites]
    for cluster, site in settings.clusters.items():
        if site not in sites:
            raise ConfigError(f"topology {topology.name!r}: {FIELD}.clusters.{cluster}: {site!r} is no site of the "
                              f"topology ({', '.join(sites)})")
    for field_path, origin in settings.origins:
        _outside_the_sites(topology, field_path, urlsplit(origin).hostname or "")
    return settings


def _outside_the_sites(topology: Topology, field_path: str, host: str) -> None:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return  # a host name: resolved only when connecting
    for si, site_ in enumerate(topology.sites):
        for ni, subnet in enumerate(site_.subnets):
            if address in ipaddress.ip_network(subnet):
                raise ConfigError(f"topology {topology.name!r}: {field_path}: {address} is inside "
                                  f"sites[{si}].subnets[{ni}] ({subnet}): a partition would cut the harness off "
                                  "from it")


@dataclass
class VplexMetro:
    """Built from the topology alone; nothing is contacted until asked."""

    client: VplexClient
    sites: Mapping[str, str]  # VPLEX cluster -> topology site, in the topology's order
    groups: tuple[str, ...]

    @classmethod
    def from_topology(cls, topology: Topology) -> Self:
        settings = _settings(topology)
        order = [s.name for s in topology.sites]
        sites = dict(sorted(settings.clusters.items(), key=lambda item: order.index(item[1])))
        return cls(VplexClient(settings), sites, tuple(settings.consistency_groups))

    # -- reading ------------------------------------------------------------------------------
    def reading(self) -> VplexReading:
        """The system-wide reads: the clusters must answer (reach, login); a witness or device list the system
        does not offer (404) leaves its states UNKNOWN, with why."""
        missing: dict[str, str] = {}
        wan = self._optional("/health/wan_com", self.client.wan_com, missing)
        witness = self._optional("/cluster_witness", self.client.cluster_witness, missing)
        devices = self._optional("distributed_devices", self.client.distributed_devices, missing)
        return VplexReading(self.client.clusters(), wan, witness, devices, missing)

    @staticmethod
    def _optional(what: str, read: Callable[[], T], missing: dict[str, str]) -> T | None:
        try:
            return read()
        except NotFoundError as exc:
            missing[what] = str(exc)
            return None

    def group(self, index: int) -> ConsistencyGroup:
        try:
            return self.client.consistency_group(self.groups[index])
        except NotFoundError:
            raise ConfigError(f"{self.client.where}: {FIELD}.consistency_groups[{index}]: no distributed consistency "
                              f"group {self.groups[index]!r} on this system") from None

    def metro(self) -> list[MetroGroup]:
        reading = self.reading()
        return [vplex_group(self.group(i), reading, self.sites) for i in range(len(self.groups))]

    def sample(self) -> Mapping[str, float]:
        """Per group: how many sites serve and are suspended, whether in sync, and a rebuild's percent and ETA."""
        figures: dict[str, float] = {}
        for seen in self.metro():
            figures[f"{seen.name} sites serving"] = float(len(seen.serving_sites))
            figures[f"{seen.name} sites suspended"] = float(sum(s.serving is Serving.SUSPENDED for s in seen.sites))
            figures[f"{seen.name} in sync"] = float(seen.replica is ReplicaSync.IN_SYNC)
            if seen.rebuild is not None and seen.rebuild.percent_done is not None:
                figures[f"{seen.name} rebuild done %"] = seen.rebuild.percent_done
            if seen.rebuild is not None and seen.rebuild.eta_s is not None:
                figures[f"{seen.name} rebuild eta s"] = seen.rebuild.eta_s
        return figures

    # -- the cluster part -----------------------------------------------------------------------
    def preflight(self) -> None:
        """Reached with this login, the named clusters and groups exist, and every group is in sync: an
        experiment that starts from copies already apart would measure the wrong thing."""
        listed = {c.name for c in self.client.clusters()}
        for cluster in self.sites:
            if cluster not in listed:
                raise ConfigError(f"{self.client.where}: {FIELD}.clusters.{cluster}: the system lists "
                                  f"{', '.join(sorted(listed)) or 'no cluster'}")
        for seen in self.metro():
            if seen.replica is not ReplicaSync.IN_SYNC:
                raise HarnessError(f"{self.client.where}: consistency group {seen.describe()}: not in sync, an "
                                   "experiment must not start now")

    def describe(self) -> Mapping[str, str]:
        try:
            versions = ", ".join(f"{v.name} {v.version}" for v in self.client.versions()) or "none listed"
        except (NotFoundError, ControlPlaneError) as exc:
            versions = f"unread ({exc})"
        return {"vplex": f"REST API v2 at {self.client.origin}, observed read-only: "
                         f"{', '.join(self.groups)}; versions: {versions}"}


def probe(topology: Topology) -> str:
    """Read-only: what the system says now, e.g. `wan_com full; cg1: cluster-1 ok, cluster-2 ok; witness enabled`."""
    metro = VplexMetro.from_topology(topology)
    reading = metro.reading()
    parts = [f"wan_com {reading.wan_com.status if reading.wan_com else 'unread'}"]
    for index, name in enumerate(metro.groups):
        statuses = {leaf(s.cluster): s.summary for s in metro.group(index).operational_status}
        parts.append(f"{name}: " + ", ".join(f"{c} {statuses.get(c, '(no status)')}" for c in metro.sites))
    parts.append(f"witness {reading.witness.admin_state if reading.witness else 'unread'}")
    return "; ".join(parts)


def assumption_probes(metro: VplexMetro) -> list[tuple[Assumption, Probed]]:
    """Each VPLEX assumption checked on what the system answers now (read only): PASS, FAIL, or UNKNOWN where the
    system's present state cannot tell (no rebuild running, the witness disabled)."""
    reading = metro.reading()  # answered with Basic auth alone, or it raises naming the login
    groups = [metro.group(i) for i in range(len(metro.groups))]
    found = [(VPLEX_BASIC_AUTH, Probed(ProbeResult.PASS, f"GET /clusters/ answered with Basic auth "
                                                         f"({len(reading.clusters)} clusters)"))]
    words = sorted({word(s.summary) for g in groups for s in g.operational_status if s.summary is not None}
                   | ({word(reading.wan_com.status)} if reading.wan_com and reading.wan_com.status else set()))
    strange = [w for w in words if w not in SERVES and w not in LINK]
    found.append((VPLEX_STATUS_WORDS, Probed(ProbeResult.FAIL if strange else ProbeResult.PASS,
                                             f"words seen: {', '.join(words) or 'none'}")))
    witness = reading.witness
    if witness is None or word(witness.admin_state) != "enabled":
        found.append((VPLEX_WITNESS_COMPONENTS, Probed(ProbeResult.UNKNOWN, "the witness is "
                                                       f"{witness.admin_state if witness else 'unread'}")))
    else:
        named = {leaf(c.name): c.operational_state for c in witness.components}
        lacking = [c for c in metro.sites if c not in named]
        found.append((VPLEX_WITNESS_COMPONENTS, Probed(
            ProbeResult.FAIL if lacking else ProbeResult.PASS,
            "components: " + ", ".join(f"{n} {s}" for n, s in sorted(named.items()))
            + (f"; none named {', '.join(lacking)}" if lacking else ""))))
    found.append((VPLEX_REFERENCES, _references(groups, reading)))
    found.append((VPLEX_REBUILD_UNITS, _rebuild_units(reading)))
    return found


def _references(groups: list[ConsistencyGroup], reading: VplexReading) -> Probed:
    clusters = {c.name for c in reading.clusters}
    devices = {leaf(d.virtual_volume) for d in reading.devices or () if d.virtual_volume}
    unknown = sorted({s.cluster for g in groups for s in g.operational_status if leaf(s.cluster) not in clusters})
    orphans = sorted({v for g in groups for v in g.virtual_volumes if leaf(v) not in devices})
    if reading.devices is None:
        return Probed(ProbeResult.UNKNOWN, "the distributed devices were not read")
    if unknown or orphans:
        return Probed(ProbeResult.FAIL, f"clusters named by no /clusters entry: {unknown or 'none'}; volumes no "
                                        f"distributed device names: {orphans or 'none'}")
    volumes = sum(len(g.virtual_volumes) for g in groups)
    return Probed(ProbeResult.PASS, f"each group's clusters listed; each of its {volumes} volumes has a device")


def _rebuild_units(reading: VplexReading) -> Probed:
    busy = [d for d in reading.devices or () if d.rebuild_progress not in (None, "")
            and word(d.rebuild_status or "") == "rebuilding"]
    if not busy:
        return Probed(ProbeResult.UNKNOWN, "unprobed: no rebuild is running (a percent outside 0-100 would be shown "
                                           "as the product's word)")
    seen = ", ".join(f"{d.name} {d.rebuild_progress}" for d in busy)
    fits = all(str(d.rebuild_progress).replace(".", "", 1).isdigit() and 0 <= float(str(d.rebuild_progress)) <= 100
               for d in busy)
    return Probed(ProbeResult.PASS if fits else ProbeResult.FAIL, f"rebuild_progress: {seen}")


def probe_assumptions(topology: Topology) -> str:
    """The doctor's row for the VPLEX assumptions: WARN (the observer shows UNKNOWN, no fault is blocked) when one
    does not hold on this system."""
    found = assumption_probes(VplexMetro.from_topology(topology))
    said = "; ".join(f"{a.id} {p.result.value}: {p.seen}" for a, p in found)
    if any(p.result is ProbeResult.FAIL for _, p in found):
        raise Uncertain(said)
    return said
