"""A VPLEX / metro node's own states in the metro state set: one distributed consistency group, one `MetroGroup`.

What each word means is quoted in docs/reference/vplex-metro-rest-v2.md; where no document settles
it the mapping names the assumption (faults.assumptions, A-vplex-...) and keeps the word:
- the link is WAN-COM's `status` (ComStatus: full, partial, none, not-applicable);
- a site serves as its cluster's entry in the group's `operational_status` says: ok and degraded
  ("I/O is continuing") serve, suspended does not, unknown is "lost management connectivity".
  A cluster this management server does not see `connected` is UNKNOWN, never DOWN: from one side
  a partition and a dead cluster look the same, and the other side may be serving right now;
- a site reaches the arbiter when the Cluster Witness is enabled and its component named after the
  cluster is `in-contact` or `cluster-in-contact` (the two states a monitoring tool's default rule
  accepts). No document names the states of a lost witness, so anything else is UNKNOWN, not
  UNREACHABLE (A-vplex-witness-components);
- the copies are apart (FRACTURED) when WAN-COM is none or a cluster says `cluster-departure` or
  `restore-link-or-choose-winner`; resyncing while a device of the group, or the group itself,
  says it is rebuilding; in sync when every cluster says ok with the link up; otherwise unknown;
- the preferred site is the detach rule's winner (`{"type": "winner", "cluster": <uri>}`); none
  for `no_automatic_winner`.
Words are compared in lower case with `_` read as `-` (the CLI writes `no-automatic-winner`, REST
`no_automatic_winner`; A-vplex-status-words), and kept in `words` exactly as they came.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from faults.contract import Arbiter, MetroGroup, PeerLink, Rebuild, ReplicaSync, Serving, SiteView
from harness_platforms.vplex.replies import (
    CgStatus,
    Cluster,
    ClusterWitness,
    ConsistencyGroup,
    DistributedDevice,
    WanComHealth,
    leaf,
)

LINK = {"full": PeerLink.UP, "partial": PeerLink.PARTIAL, "none": PeerLink.DOWN, "not-applicable": PeerLink.UNKNOWN}
SERVES = {"ok": Serving.SERVING, "degraded": Serving.SERVING, "suspended": Serving.SUSPENDED,
          "unknown": Serving.UNKNOWN}
WITNESS_IN_CONTACT = frozenset({"in-contact", "cluster-in-contact"})
APART = frozenset({"cluster-departure", "restore-link-or-choose-winner"})
GROUP_REBUILDING = frozenset({"rebuilding-across-clusters", "rebuilding-within-cluster"})
REBUILDING = "rebuilding"
NO_WINNER = "no-automatic-winner"


def word(text: object) -> str:
    """A product word as the mapping compares it: lower case, `_` read as `-`."""
    return str(text).strip().lower().replace("_", "-")


@dataclass(frozen=True)
class VplexReading:
    """One pass over the system-wide reads; a read that failed is None (its states UNKNOWN, the reason kept)."""

    clusters: Sequence[Cluster]
    wan_com: WanComHealth | None
    witness: ClusterWitness | None
    devices: Sequence[DistributedDevice] | None
    missing: Mapping[str, str] | None = None  # read -> why it is not here


def vplex_group(group: ConsistencyGroup, reading: VplexReading, sites: Mapping[str, str]) -> MetroGroup:
    """`group` in the metro state set; `sites` maps each VPLEX cluster name to its topology site, in site order."""
    words: dict[str, str] = {f"{what} unread": why for what, why in (reading.missing or {}).items()}
    link = _link(reading.wan_com, words)
    statuses = {leaf(s.cluster): s for s in group.operational_status}
    seen = {c.name: c for c in reading.clusters}
    views, details = [], set()
    for name, site in sites.items():
        status = statuses.get(name)
        if status is not None:
            words[f"{name} cg summary"] = _said(status.summary, status.details)
            details |= {word(d) for d in status.details}
        views.append(SiteView(site, _serving(name, status, seen.get(name), words), _arbiter(name, reading.witness,
                                                                                               words)))
    rebuilding = _rebuilding(group, reading.devices, words)
    summaries = [word(statuses[n].summary) if n in statuses else "" for n in sites]
    if link is PeerLink.DOWN or details & APART:
        replica = ReplicaSync.FRACTURED
    elif rebuilding or details & GROUP_REBUILDING:
        replica = ReplicaSync.RESYNCING
    elif link is PeerLink.UP and summaries and all(s == "ok" for s in summaries):
        replica = ReplicaSync.IN_SYNC
    else:
        replica = ReplicaSync.UNKNOWN
    if group.auto_resume_at_loser is not None:
        words["auto_resume_at_loser"] = str(group.auto_resume_at_loser).lower()
    return MetroGroup(group.name, replica, link, tuple(views), _preferred(group.detach_rule, sites, words),
                      _rebuild(rebuilding) if replica is ReplicaSync.RESYNCING else None, words)


def _said(state: str | None, details: Iterable[str]) -> str:
    listed = list(details)
    return f"{state if state is not None else '(none)'}" + (f" [{', '.join(listed)}]" if listed else "")


def _link(wan: WanComHealth | None, words: dict[str, str]) -> PeerLink:
    if wan is None:
        return PeerLink.UNKNOWN
    words["wan_com"] = _said(wan.status, wan.details)
    return LINK.get(word(wan.status), PeerLink.UNKNOWN)


def _serving(name: str, status: CgStatus | None, cluster: Cluster | None, words: dict[str, str]) -> Serving:
    if cluster is None:
        words[f"{name} cluster"] = "not listed in /clusters"
        return Serving.UNKNOWN
    words[f"{name} cluster"] = (f"connected {str(cluster.connected).lower()}, operational_status "
                                f"{cluster.operational_status}, health_state {cluster.health_state}")
    if cluster.connected is not True:
        return Serving.UNKNOWN  # out of this management server's sight: a partition and a loss look alike
    if status is None or status.summary is None:
        return Serving.UNKNOWN
    return SERVES.get(word(status.summary), Serving.UNKNOWN)


def _arbiter(name: str, witness: ClusterWitness | None, words: dict[str, str]) -> Arbiter:
    if witness is None:
        return Arbiter.UNKNOWN
    words["witness"] = str(witness.admin_state)
    if word(witness.admin_state) != "enabled":
        return Arbiter.UNKNOWN
    component = next((c for c in witness.components if leaf(c.name) == name), None)
    if component is None:
        words[f"witness {name}"] = "no component of that name"
        return Arbiter.UNKNOWN
    words[f"witness {name}"] = _said(component.operational_state, [f"admin {component.admin_state}"]
                                     if component.admin_state is not None else [])
    if component.admin_state is not None and word(component.admin_state) != "enabled":
        return Arbiter.UNKNOWN
    return Arbiter.REACHABLE if word(component.operational_state) in WITNESS_IN_CONTACT else Arbiter.UNKNOWN


def _preferred(rule: object, sites: Mapping[str, str], words: dict[str, str]) -> str | None:
    if rule is None:
        return None
    if not isinstance(rule, Mapping):
        words["detach rule"] = str(rule)
        return None
    kind, cluster = rule.get("type"), rule.get("cluster")
    words["detach rule"] = " ".join(str(v) for v in (kind, cluster, rule.get("delay")) if v is not None)
    if word(kind) == "winner" and isinstance(cluster, str):
        return sites.get(leaf(cluster))
    return None  # no_automatic_winner, or a rule type no document here names


def _rebuilding(group: ConsistencyGroup, devices: Sequence[DistributedDevice] | None,
                words: dict[str, str]) -> list[DistributedDevice]:
    """The group's distributed devices (each names its virtual volume; the group lists its volumes) that say they
    are rebuilding: `rebuilding` among their health indications, or as their rebuild status."""
    if devices is None:
        return []
    volumes = {leaf(v) for v in group.virtual_volumes}
    mine = [d for d in devices if d.virtual_volume is not None and leaf(d.virtual_volume) in volumes]
    busy = [d for d in mine if REBUILDING in {word(h) for h in d.health_indications}
            or word(d.rebuild_status or "") == REBUILDING]
    for device in busy:
        words[f"{device.name} rebuild"] = (f"{device.rebuild_status}, progress {device.rebuild_progress}, "
                                           f"eta {device.rebuild_eta}")
    return busy


def _number(value: object) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _rebuild(busy: Sequence[DistributedDevice]) -> Rebuild:
    """The slowest device's percent (0-100) and the longest ETA (seconds): A-vplex-rebuild-units. A value outside
    those ranges or not a number is None; its word stays in `words`."""
    percents = [p for p in (_number(d.rebuild_progress) for d in busy) if p is not None and 0 <= p <= 100]
    etas = [e for e in (_number(d.rebuild_eta) for d in busy) if e is not None and e >= 0]
    return Rebuild(min(percents) if percents else None, max(etas) if etas else None)
