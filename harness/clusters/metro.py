"""Metro storage as an observer reads it: one state set for every product, each product one adapter.

Every metro product exposes the same four things, in its own words (the survey is in the shared
platforms reference, section 3d): whether the replica is in sync, the link between the sites,
whether each site reaches the arbiter (witness, mediator, monitor), and which site serves I/O. A
failover's semantics differ between products, so the harness never acts through this: it only
reads, to say what the storage decided while a fault the harness injected below it (a link cut at
the router, a witness isolated, a site's power) was in effect. A product's own words stay beside
the mapped state (`words`), an unknown value among them shown as it came, never a crash.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


class ReplicaSync(enum.StrEnum):
    IN_SYNC = "in sync"
    RESYNCING = "resyncing"
    FRACTURED = "fractured"  # the copies went apart and are not catching up
    UNKNOWN = "unknown"


class PeerLink(enum.StrEnum):
    UP = "up"
    PARTIAL = "partial"
    DOWN = "down"
    UNKNOWN = "unknown"


class Arbiter(enum.StrEnum):
    REACHABLE = "reachable"
    UNREACHABLE = "unreachable"
    UNKNOWN = "unknown"


class Serving(enum.StrEnum):
    SERVING = "serving"
    STANDBY = "standby"  # up, holding a copy, not serving writes (a primary/secondary product's other site)
    SUSPENDED = "suspended"  # stopped serving on the product's own decision (a detach rule, a demotion)
    DOWN = "down"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class SiteView:
    site: str
    serving: Serving
    arbiter: Arbiter


@dataclass(frozen=True)
class MetroGroup:
    """One replicated group (a consistency group, a pod, a database formation) as its product reports it now."""

    name: str
    replica: ReplicaSync
    link: PeerLink
    sites: tuple[SiteView, ...]
    preferred: str | None = None  # the site that wins when the link fails (a detach rule's winner), if any
    words: Mapping[str, str] = field(default_factory=dict)  # the product's own states, as it said them

    @property
    def serving_sites(self) -> tuple[str, ...]:
        return tuple(s.site for s in self.sites if s.serving is Serving.SERVING)

    def describe(self) -> str:
        sites = ", ".join(f"{s.site} {s.serving.value} (arbiter {s.arbiter.value})" for s in self.sites)
        return f"{self.name}: replica {self.replica.value}, link {self.link.value}; {sites}"


@runtime_checkable
class ObservesMetro(Protocol):
    """A cluster part that reads its metro storage's states (read only, each call bounded)."""

    def metro(self) -> list[MetroGroup]: ...
