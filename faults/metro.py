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
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from harness_kernel.history import EventKind
from harness_kernel.history.timeline import Timeline

log = logging.getLogger(__name__)


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
class Rebuild:
    """The copies being rebuilt after they went apart, as the product reports it (None where it does not say)."""

    percent_done: float | None
    eta_s: float | None


@dataclass(frozen=True)
class MetroGroup:
    """One replicated group (a consistency group, a pod, a database formation) as its product reports it now."""

    name: str
    replica: ReplicaSync
    link: PeerLink
    sites: tuple[SiteView, ...]
    preferred: str | None = None  # the site that wins when the link fails (a detach rule's winner), if any
    rebuild: Rebuild | None = None  # a rebuild in progress, if the product reports one
    words: Mapping[str, str] = field(default_factory=dict)  # the product's own states, as it said them

    @property
    def serving_sites(self) -> tuple[str, ...]:
        return tuple(s.site for s in self.sites if s.serving is Serving.SERVING)

    def state(self) -> tuple[object, ...]:
        """What a change of is worth recording: the states, not the product's words (a counter inside them)."""
        return (self.replica, self.link, self.sites, self.preferred, self.rebuild is not None)

    def attrs(self) -> dict[str, Any]:
        """The group as the history keeps it (`EventKind.METRO`): plain JSON, read back by the report."""
        return {"group": self.name, "replica": self.replica.value, "link": self.link.value,
                "sites": {s.site: {"serving": s.serving.value, "arbiter": s.arbiter.value} for s in self.sites},
                "preferred": self.preferred,
                "rebuild_pct": self.rebuild.percent_done if self.rebuild else None,
                "rebuild_eta_s": self.rebuild.eta_s if self.rebuild else None,
                "words": dict(self.words)}

    def describe(self) -> str:
        sites = ", ".join(f"{s.site} {s.serving.value} (arbiter {s.arbiter.value})" for s in self.sites)
        return f"{self.name}: replica {self.replica.value}, link {self.link.value}; {sites}"


@runtime_checkable
class ObservesMetro(Protocol):
    """A cluster part that reads its metro storage's states (read only, each call bounded)."""

    def metro(self) -> list[MetroGroup]: ...


@dataclass
class MetroWatch:
    """The metro sources read about once a second into the history, a group's states recorded when they change
    (`EventKind.METRO`): the report draws the spans between, and a suite reads what the storage decided."""

    sources: dict[str, ObservesMetro]
    timeline: Timeline
    name: str = "metro"
    _last: dict[tuple[str, str], tuple[object, ...]] = field(default_factory=dict)

    def sample(self) -> None:
        """One reading of each source; one that cannot answer now leaves a gap, not an error (it only reads)."""
        for name, source in list(self.sources.items()):
            try:
                groups = source.metro()
            except Exception as exc:  # a read-only sampler's failure must not stop the experiment
                log.debug("metro %s: no sample (%s)", name, exc)
                continue
            now = self.timeline.now()
            for group in groups:
                key, state = (name, group.name), group.state()
                if self._last.get(key) != state:
                    self._last[key] = state
                    self.timeline.record(EventKind.METRO, name, t=now, **group.attrs())
